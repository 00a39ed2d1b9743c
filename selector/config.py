"""The project configuration, ``selector.toml``: loading and validation.

The schema is DESIGN.md's contract; unknown keys are refused so a typo is caught
instead of silently ignored.  Any problem becomes one line naming the file, the key
and what is wrong (:class:`ConfigError`, exit status 2).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from collectors.errors import UserError

CONFIG_NAME = "selector.toml"
BUILTIN_METRICS = ("wall_time", "instructions")


class ConfigError(UserError):
    """selector.toml is missing or invalid."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ProjectSection(_Section):
    binary: str = Field(min_length=1, description="built executable or shared library, relative to the checkout")
    # Benchmark inputs kept outside the history ({suite} in commands); relative to the config file.
    suite: str | None = None


class BuildSection(_Section):
    command: str = Field(min_length=1, description="run in a clean checkout of each commit")
    timeout: int = Field(default=900, gt=0, description="seconds before a build is killed")
    # Files whose change means the build configuration changed (flags, toolchain files).
    config_files: list[str] = Field(
        default=["Makefile", "*.mk", "CMakeLists.txt", "*.cmake", "configure", "configure.ac", "meson.build", "meson_options.txt"]
    )


class BenchmarkSection(_Section):
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    command: str = Field(min_length=1)
    metric: str = "wall_time"
    direction: Literal["lower", "higher"] = "lower"
    repetitions: int = Field(default=5, ge=1)
    timeout: int = Field(default=300, gt=0)
    warmup: int = Field(default=1, ge=0, description="runs before the measured ones, not recorded as measurements")

    @field_validator("metric")
    @classmethod
    def _metric_is_known_or_a_regex(cls, metric: str) -> str:
        if metric in BUILTIN_METRICS:
            return metric
        import re

        try:
            groups = re.compile(metric).groups
        except re.error as error:
            raise ValueError(f"not wall_time, instructions, or a valid regex ({error})") from None
        if groups != 1:
            raise ValueError("a regex metric needs exactly one group, the number to read from stdout")
        return metric


class ProfileSection(_Section):
    tool: Literal["callgrind", "perf", "none"] = "callgrind"


class RunSection(_Section):
    cpu: str | None = Field(default=None, description="pin benchmark runs to these CPUs (taskset -c), e.g. '1'")
    seed: int = Field(default=0, description="seed of the randomized run order")


class LabelsSection(_Section):
    alpha: float = Field(default=0.05, gt=0, lt=1)
    min_effect: float = Field(default=0.01, ge=0)


class Config(_Section):
    project: ProjectSection
    build: BuildSection
    benchmark: list[BenchmarkSection] = Field(default_factory=list)
    profile: ProfileSection = ProfileSection()
    labels: LabelsSection = LabelsSection()
    run: RunSection = RunSection()

    @field_validator("benchmark")
    @classmethod
    def _names_are_unique(cls, benchmarks: list[BenchmarkSection]) -> list[BenchmarkSection]:
        names = [b.name for b in benchmarks]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"benchmark names must be unique; repeated: {', '.join(duplicates)}")
        return benchmarks


def find_config(repository: str | Path, explicit: str | Path | None = None) -> Path:
    """The configuration file: ``--config`` if given, else selector.toml at the repository's top."""
    path = Path(explicit) if explicit else Path(repository) / CONFIG_NAME
    if not path.is_file():
        if explicit:
            raise ConfigError(f"{path}: no such configuration file")
        raise ConfigError(f"no {CONFIG_NAME} in {repository}; create one (see README) or pass --config")
    return path


def load_config(path: str | Path) -> Config:
    path = Path(path)
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such configuration file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: not valid TOML: {error}") from None
    try:
        config = Config.model_validate(document)
    except ValidationError as error:
        raise ConfigError(f"{path}: {_first_problem(error)}") from None
    if config.project.suite is not None:
        suite = (path.parent / config.project.suite).resolve()
        if not suite.is_dir():
            raise ConfigError(f"{path}: project.suite: {suite} is not a directory")
        config = config.model_copy(update={"project": config.project.model_copy(update={"suite": str(suite)})})
    return config


def benchmark_specs(config: Config) -> list["BenchmarkSpec"]:
    """The benchmarks in the form the runner takes."""
    from collectors.benchmark_runner import BenchmarkSpec

    return [BenchmarkSpec(**benchmark.model_dump()) for benchmark in config.benchmark]


def _first_problem(error: ValidationError) -> str:
    problem = error.errors()[0]
    location = ".".join(str(part) for part in problem["loc"]) or "(top level)"
    message = problem["msg"].removeprefix("Value error, ")
    if problem["type"] == "extra_forbidden":
        return f"{location}: unknown key"
    if problem["type"] == "missing":
        return f"{location}: required key is missing"
    given = problem.get("input")
    if isinstance(given, (str, int, float, bool)) and problem["type"] != "value_error":
        return f"{location}: {message} (got {given!r})"
    return f"{location}: {message}"


def harness_digest(config: Config, benchmark: str) -> str:
    """What defines a benchmark's harness: its configured command, metric, runs and suite.
    A model trained under another harness is stale for that benchmark."""
    import hashlib
    import json

    spec = next((b for b in config.benchmark if b.name == benchmark), None)
    text = json.dumps([spec.model_dump() if spec else None, config.project.suite], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
