"""The project configuration, ``selector.toml``: loading and validation.

The schema is DESIGN.md's contract; unknown keys are refused so a typo is caught
instead of silently ignored.  Any problem becomes one line naming the file, the key
and what is wrong (:class:`ConfigError`, exit status 2).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import msgspec

from perf_selector.collectors.errors import UserError
from perf_selector.collectors.frameworks import NAMES as FRAMEWORK_NAMES, framework
from perf_selector.collectors.metrics import INSTRUCTIONS, under_callgrind

if TYPE_CHECKING:
    from perf_selector.collectors.benchmark_runner import BenchmarkSpec
    from perf_selector.collectors.benchmark_suite import SuiteSpec
    from perf_selector.collectors.run_context import ContextSettings
    from perf_selector.storage.labels import LabelRules

CONFIG_NAME = "selector.toml"
# msgspec rather than pydantic: it validates the same schema, and imports in a fraction
# of pydantic's time, which `selector select` pays on every push.
_Positive = Annotated[int, msgspec.Meta(gt=0)]


class ConfigError(UserError):
    """selector.toml is missing or invalid."""


class _Section(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    pass


class ProjectSection(_Section):
    binary: Annotated[str, msgspec.Meta(min_length=1)]  # built executable or shared library, relative to the checkout
    # Benchmark inputs kept outside the history ({suite} in commands); relative to the config file.
    suite: str | None = None


class BuildSection(_Section):
    command: Annotated[str, msgspec.Meta(min_length=1)]  # run in a clean checkout of each commit
    timeout: _Positive = 900  # seconds before a build is killed
    # A commit changed its build configuration when the compiler flags its binary records
    # changed (each compile unit's DW_AT_producer; collectors/build_config.py), not when a
    # file named like a build file did.  These names are the fallback for a binary built
    # without debug information, which records no flags: then the build configuration is
    # the digest of the files so named (basename match), leaving out `unaffected` paths.
    config_files: list[str] = msgspec.field(
        default_factory=lambda: ["Makefile", "*.mk", "CMakeLists.txt", "*.cmake", "configure", "configure.ac", "meson.build",
                                 "meson_options.txt"]
    )
    # Paths whose changes touch neither the binary nor any benchmark (fnmatch patterns
    # on the path from the top; `*` crosses directories).  A commit that changes only
    # such paths is not built: it takes its parent's build and runs.  The default names
    # CI configuration only; add documentation or test folders your build does not read.
    unaffected: list[str] = msgspec.field(
        default_factory=lambda: [".github/*", ".gitlab-ci.yml", ".gitlab/*", ".circleci/*", ".travis.yml", ".cirrus.yml",
                                 "appveyor.yml", ".appveyor.yml", "azure-pipelines.yml", ".gitattributes", ".mailmap"]
    )


class _Runs(_Section):
    """How a benchmark runs, for a [[benchmark]] and for each of a [[suite]]'s."""

    direction: Literal["lower", "higher"] = "lower"
    repetitions: Annotated[int, msgspec.Meta(ge=1)] = 5
    timeout: _Positive = 300
    # Runs before the measured ones, not recorded as measurements.  Unset: none for
    # callgrind instruction counts (a warm cache cannot change them), one otherwise.
    warmup: Annotated[int, msgspec.Meta(ge=0)] | None = None
    # May an identical binary's runs stand for this benchmark's (see `selector collect
    # --help`)?  Say false when the command reads files its text does not name.
    reuse: bool = True
    # Run before every run (warm-ups too), with the same placeholders, directory and
    # environment, neither measured nor profiled: what a benchmark that changes its
    # state (a repository it adds to, a database it fills) needs to start afresh.
    setup: Annotated[str, msgspec.Meta(min_length=1)] | None = None


class BenchmarkSection(_Runs, kw_only=True):
    name: Annotated[str, msgspec.Meta(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")]
    command: Annotated[str, msgspec.Meta(min_length=1)]
    metric: str = "wall_time"  # wall_time, cpu_time (user + system seconds), instructions, or a regex with one group read from stdout


class SuiteMember(_Section):
    name: Annotated[str, msgspec.Meta(min_length=1)]
    isolate: str | None = None  # the callgrind function pattern of this benchmark's own code


class SuiteSection(_Runs, kw_only=True):
    """One binary holding many named benchmarks, discovered at each commit
    (collectors/benchmark_suite.py); each is stored as "<suite>/<benchmark>"."""

    name: Annotated[str, msgspec.Meta(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")]
    framework: Literal[FRAMEWORK_NAMES]  # type: ignore[valid-type]  # collectors/frameworks
    command: Annotated[str, msgspec.Meta(min_length=1)] = "{binary}"
    metric: str = INSTRUCTIONS.name
    include: str | None = None  # regex: keep the discovered benchmarks whose names it finds
    exclude: str | None = None  # regex: drop those whose names it finds
    # Count only the benchmark's own code under callgrind: true (a framework's: its timed
    # part), false, or (command) a callgrind function pattern with {name} (or {function}: the
    # name up to its first '/', for a benchmark listed by size, "BM_Find/64").
    isolate: bool | str = True
    names: list[str | SuiteMember] = msgspec.field(default_factory=list)  # command: the benchmarks' names
    list_command: str | None = None  # command: prints the names, one a line


class ProfileSection(_Section):
    tool: Literal["callgrind", "perf", "none"] = "callgrind"


class RunSection(_Section):
    cpu: str | None = None  # pin benchmark runs to these CPUs (taskset -c), e.g. '1'
    seed: int = 0  # seed of the randomized run order
    # Benchmarks run in a fixed, minimal environment (PATH, HOME, LANG, LC_ALL, PWD) so that
    # two commits never differ by the caller's environment (its size moves the stack:
    # collectors/run_context.py).  Variables a benchmark needs are set here, or copied from
    # the caller's environment by name.
    environment: dict[str, str] = msgspec.field(default_factory=dict)
    pass_environment: list[str] = msgspec.field(default_factory=list)
    # A deterministic clock for harnesses that loop until a time has passed (Google Benchmark
    # without a fixed count, lz4's fullbench, tjbench, Catch2, a hand-written loop): every clock
    # reading advances a fixed step (true: one second; a number: that many seconds) from a fixed
    # date (libfaketime, Debian package faketime), so their iteration counts, and the
    # instruction counts with them, repeat.  A harness timing batches then runs one batch; one
    # that checks a total duration before its first iteration runs duration / step iterations
    # (none when the step exceeds it: choose a smaller step).  Limits: reported times mean
    # nothing (count instructions), sleeps and timeouts run on the fake clock, and a statically
    # linked program or one reading the TSC (rdtsc) is not affected.
    fixed_clock: bool | Annotated[float, msgspec.Meta(gt=0)] = False


class LabelsSection(_Section):
    alpha: Annotated[float, msgspec.Meta(gt=0, lt=1)] = 0.05
    min_effect: Annotated[float, msgspec.Meta(ge=0)] = 0.01
    # A changed label is re-measured on both sides in this many perturbed run contexts
    # (collectors/run_context.py LABEL_PERTURBATIONS, the first N; none of calibration's) and
    # stays changed only if it holds in all; 0 turns it off.  Three: an environment size, a path
    # length and both at once, a page apart, for six runs per changed pair of a count.
    perturbed_contexts: Annotated[int, msgspec.Meta(ge=0, le=6)] = 3


class SelectSection(_Section):
    # Who decides what `select` skips: "auto" follows the evidence the model bundle carries
    # (its model against the executed-changed rule, on projects left out in turn or on the
    # project's own backtest); "rule" the executed-changed rule alone (no model is loaded,
    # no training is needed); "within-rule" the model, pruning only among the rule's runs;
    # "model" the model alone.  Hazards (models/decision.py) run whenever the rule runs them
    # under every policy.
    policy: Literal["auto", "rule", "within-rule", "model"] = "auto"


class Config(_Section):
    project: ProjectSection
    build: BuildSection
    benchmark: list[BenchmarkSection] = msgspec.field(default_factory=list)
    suite: list[SuiteSection] = msgspec.field(default_factory=list)
    profile: ProfileSection = msgspec.field(default_factory=ProfileSection)
    labels: LabelsSection = msgspec.field(default_factory=LabelsSection)
    run: RunSection = msgspec.field(default_factory=RunSection)
    select: SelectSection = msgspec.field(default_factory=SelectSection)


def find_config(repository: str | Path, explicit: str | Path | None = None) -> Path:
    """The configuration file: ``--config`` if given, else selector.toml at the repository's top."""
    path = Path(explicit) if explicit else Path(repository) / CONFIG_NAME
    if not path.is_file():
        if explicit:
            raise ConfigError(f"{path}: no such configuration file")
        raise ConfigError(f"no {CONFIG_NAME} in {repository}; create one (`selector init`; docs/configuration.md) or pass --config")
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
        config = msgspec.convert(document, Config)
    except msgspec.ValidationError as error:
        raise ConfigError(f"{path}: {_described(error, document)}") from None
    problem = _benchmark_problem(config.benchmark) or _suite_problem(config.suite)
    if problem:
        raise ConfigError(f"{path}: {problem}")
    if config.project.suite is not None:
        # Resolved, not required: only commands that run a benchmark need the inputs
        # (require_suite); a store moved without them (a CI cache) is still evaluated.
        suite = (path.parent / config.project.suite).resolve()
        config = msgspec.structs.replace(config, project=msgspec.structs.replace(config.project, suite=str(suite)))
    return config


def require_suite(config: Config) -> None:
    """What a command that runs benchmarks checks first: the suite folder is there."""
    suite = config.project.suite
    if suite is not None and not Path(suite).is_dir():
        raise ConfigError(f"project.suite: {suite} is not a directory: the benchmarks' inputs, needed to run them "
                          "(evaluate, backtest, train and select without --run-benchmarks read the store alone)")


def benchmark_specs(config: Config) -> list[BenchmarkSpec]:
    """The [[benchmark]]s in the form the runner takes (a suite's are found at each commit:
    selector/benchmarks.py)."""
    from perf_selector.collectors.benchmark_runner import BenchmarkSpec

    return [BenchmarkSpec(**_effective(benchmark)) for benchmark in config.benchmark]


def suite_specs(config: Config) -> list[SuiteSpec]:
    """The [[suite]]s in the form discovery takes."""
    from perf_selector.collectors.benchmark_suite import SuiteSpec

    specs = []
    for suite in config.suite:
        settings = _effective(suite)
        names = settings.pop("names")
        settings["names"] = tuple((n, None) if isinstance(n, str) else (n.name, n.isolate) for n in names)
        specs.append(SuiteSpec(**settings))
    return specs


def configured_metrics(config: Config) -> list[str]:
    """The metric of every [[benchmark]] and [[suite]]."""
    return [b.metric for b in config.benchmark] + [s.metric for s in config.suite]


def has_benchmarks(config: Config) -> bool:
    """Does the configuration measure anything ([[benchmark]]s or [[suite]]s)?"""
    return bool(config.benchmark or config.suite)


class BySuite(dict):
    """benchmark -> a setting, where a suite's benchmarks ("<suite>/<name>", found at each
    commit) take their suite's: labelling asks for names no configuration lists."""

    def __init__(self, explicit: dict[str, str], by_suite: dict[str, str]) -> None:
        super().__init__(explicit)
        self.by_suite = by_suite

    def __missing__(self, benchmark: str) -> str:
        from perf_selector.collectors.benchmark_suite import suite_of

        suite = suite_of(benchmark) if isinstance(benchmark, str) else None
        if suite in self.by_suite:
            return self.by_suite[suite]
        raise KeyError(benchmark)

    def __contains__(self, benchmark: object) -> bool:
        try:
            self[benchmark]
        except KeyError:
            return False
        return True

    def get(self, benchmark, default=None):
        return self[benchmark] if benchmark in self else default

    def __reduce__(self):
        return BySuite, (dict(self), self.by_suite)


def benchmark_metrics(config: Config) -> BySuite:
    """benchmark -> its metric, a suite's benchmarks taking their suite's."""
    return BySuite({b.name: b.metric for b in config.benchmark}, {s.name: s.metric for s in config.suite})


def label_rules(config: Config) -> LabelRules:
    """What labelling (storage.labels) needs of the configuration."""
    from perf_selector.collectors.benchmark_suite import member_spec
    from perf_selector.collectors.benchmark_runner import names_checkout
    from perf_selector.collectors.run_context import LABEL_PERTURBATIONS
    from perf_selector.storage.labels import LabelRules

    reading = {spec.name for spec in benchmark_specs(config) if names_checkout(spec)}
    reading_suites = {suite.name for suite in suite_specs(config) if names_checkout(member_spec(suite, f"{suite.name}/any"))}
    return LabelRules(alpha=config.labels.alpha, min_effect=config.labels.min_effect,
                      metrics=benchmark_metrics(config),
                      directions=BySuite({b.name: b.direction for b in config.benchmark},
                                         {s.name: s.direction for s in config.suite}),
                      profiled=config.profile.tool != "none",
                      reads_checkout=BySuite({name: name for name in reading}, {name: name for name in reading_suites}),
                      perturbed_contexts=LABEL_PERTURBATIONS[:config.labels.perturbed_contexts])


def context_settings(config: Config) -> ContextSettings:
    """What the configuration adds to the benchmarks' normalised run context."""
    from perf_selector.collectors.run_context import ContextSettings

    from perf_selector.collectors.run_context import fixed_clock

    step = config.run.fixed_clock
    clock = None if step is False else fixed_clock(1.0 if step is True else float(step))
    return ContextSettings(environment=dict(config.run.environment), pass_environment=tuple(config.run.pass_environment),
                           clock=clock)


def default_warmup(metric: str) -> int:
    """Warm-up runs of a benchmark that does not set them: a warm-up primes caches and
    frequency, which moves times but cannot change an instruction count under callgrind."""
    from perf_selector.collectors.metrics import default_warmup as metric_warmup

    return metric_warmup(metric)


def _effective(benchmark: BenchmarkSection | SuiteSection) -> dict:
    """A benchmark's settings with the defaults that depend on others filled in."""
    settings = msgspec.structs.asdict(benchmark)
    if settings["warmup"] is None:
        settings["warmup"] = default_warmup(benchmark.metric)
    return settings


def _described(error: msgspec.ValidationError, document: dict) -> str:
    """msgspec's "Expected `int` >= 1 - at `$.build.timeout`" as "build.timeout: expected
    `int` >= 1 (got -5)": the key as written in the file, and the value found there."""
    message, _, at = str(error).partition(" - at `$")
    path = [int(part) if part.isdigit() else part for part in re.findall(r"[^.\[\]`]+", at)]
    unknown = re.match(r"Object contains unknown field `(.+)`", message)
    missing = re.match(r"Object missing required field `(.+)`", message)
    if unknown or missing:
        path.append((unknown or missing).group(1))
    location = ".".join(map(str, path)) or "(top level)"
    if unknown:
        return f"{location}: unknown key"
    if missing:
        return f"{location}: required key is missing"
    given = document
    for part in path:
        given = given[part] if isinstance(given, (dict, list)) else None
    message = message[0].lower() + message[1:]
    if isinstance(given, (str, int, float, bool)) and "got" not in message and repr(given) not in message:
        message += f" (got {given!r})"
    return f"{location}: {message}"


def _benchmark_problem(benchmarks: list[BenchmarkSection]) -> str | None:
    """What the schema cannot say: a metric must be built in or a regex with one group,
    and benchmark names must be unique."""
    from perf_selector.collectors.benchmark_suite import metric_problem

    for position, benchmark in enumerate(benchmarks):
        for key in ("command", "setup"):
            problem = _placeholder_problem(getattr(benchmark, key) or "")
            if problem:
                return f"benchmark.{position}.{key}: {problem} in benchmark {benchmark.name!r}"
        problem = metric_problem("command", benchmark.metric)  # read from the output, as a command suite's
        if problem:
            return f"benchmark.{position}.metric: {problem}"
    return _repeated("benchmark", [b.name for b in benchmarks])


def _repeated(section: str, names: list[str]) -> str | None:
    """What is wrong when a section's names repeat, or None."""
    duplicates = sorted({n for n in names if names.count(n) > 1})
    return f"{section}: {section} names must be unique; repeated: {', '.join(duplicates)}" if duplicates else None


def _suite_problem(suites: list[SuiteSection]) -> str | None:
    """What the schema cannot say of suites: how each framework finds and reads its benchmarks."""
    from perf_selector.collectors.benchmark_suite import metric_problem

    for position, suite in enumerate(suites):
        where = f"suite.{position}"
        kind = framework(suite.framework)
        command_kind = not kind.lists_itself
        for key in ("command", "setup", "list_command"):
            problem = _placeholder_problem(getattr(suite, key) or "", (*PLACEHOLDERS, "name") if key != "list_command"
                                           else PLACEHOLDERS)
            if problem:
                return f"{where}.{key}: {problem} in suite {suite.name!r}"
        problem = metric_problem(suite.framework, suite.metric)
        if problem:
            return f"{where}.metric: {problem}"
        for key in ("include", "exclude"):
            try:
                re.compile(getattr(suite, key) or "")
            except re.error as error:
                return f"{where}.{key}: not a valid regex ({error})"
        if command_kind and "{name}" not in suite.command:
            return f"{where}.command: a command suite's command names the benchmark it runs with {{name}}"
        if command_kind and bool(suite.names) == bool(suite.list_command):
            return f"{where}: a command suite gives its benchmarks by `names` or by `list_command` (one of the two)"
        if not command_kind and (suite.names or suite.list_command):
            return f"{where}: a {kind.name} suite lists its benchmarks itself; choose among them with include and exclude"
        if kind.pattern_isolation and suite.isolate is True:
            # true (the default) names no function of a driver's own: each benchmark must name its own
            bare = [n for n in suite.names if isinstance(n, str) or not n.isolate] if suite.names else ["(listed ones)"]
            if bare:
                return (f"{where}.isolate: a command suite isolates each benchmark by a callgrind function pattern: "
                        f"give `isolate` a pattern with {{name}}, each name its own (no pattern for {', '.join(map(str, bare[:3]))}"
                        f"{' ...' if len(bare) > 3 else ''}), or isolate = false to count the whole process")
        if not kind.pattern_isolation and isinstance(suite.isolate, str):
            return f"{where}.isolate: true or false for a {kind.name} suite (its benchmarks' functions are known)"
    return _repeated("suite", [s.name for s in suites])


PLACEHOLDERS = ("binary", "checkout", "suite")


def _placeholder_problem(command: str, placeholders: tuple[str, ...] = PLACEHOLDERS) -> str | None:
    """What is wrong with the {...} placeholders of a command (str.format syntax: {{ and }}
    are literal braces), or None."""
    import string

    known = ", ".join(f"{{{name}}}" for name in placeholders)
    try:
        fields = [(field, spec, conversion) for _, field, spec, conversion in string.Formatter().parse(command) if field is not None]
    except ValueError as error:
        return f"{error} (placeholders are {known}; write {{{{ and }}}} for a literal brace)"
    for field, spec, conversion in fields:
        if field not in placeholders or spec or conversion:
            return f"unknown placeholder {{{field}}} (placeholders are {known}; write {{{{ and }}}} for a literal brace)"
    return None


def harness_digest(config: Config, benchmark: str) -> str:
    """What defines a benchmark's harness: its configured command, metric, runs and suite.
    A model trained under another harness is stale for that benchmark."""
    import hashlib
    import json

    from perf_selector.collectors.benchmark_suite import suite_of

    spec = next((b for b in config.benchmark if b.name == benchmark), None)
    if spec is None and suite_of(benchmark):  # a suite's benchmark: its harness is the suite's
        spec = next((s for s in config.suite if s.name == suite_of(benchmark)), None)
    settings = _effective(spec) if spec else None
    if settings:
        del settings["reuse"]  # how a run was obtained, not what it measures
        if settings["setup"] is None:
            del settings["setup"]  # as digested before there were set-up commands
        if settings.get("framework") and framework(settings["framework"]).timed_loop and settings["isolate"] is True \
                and under_callgrind(settings["metric"]):
            settings["counts"] = "timed loop"  # before, the whole benchmark function: runs of then are not runs of now
    text = json.dumps([settings, config.project.suite], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
