"""Scripted histories of one C program under tests/programs, collected through the real CLI:
each step replaces placeholders of the program's text over the step before, one commit a step
(test_steering.py and test_hazards.py)."""

from __future__ import annotations

from pathlib import Path

from perf_selector.selector.evaluation.feature_table import feature_table
from perf_selector.selector.onboarding.sample_history import commit_all
from perf_selector.storage.store import Store

from tests.helpers import gcc_config, new_project, program_text, run_selector

CONFIG = gcc_config("""
[[benchmark]]
name = "steered"
command = "{binary}"
metric = "instructions"
repetitions = 2
warmup = 0
""")


def scripted_source(values: dict[str, str], program: str = "steering.c") -> str:
    text = program_text(program)
    for placeholder, value in values.items():
        text = text.replace(placeholder, value)
    return text


def scripted_history(root: Path, program: str, base: dict[str, str], steps: list[tuple[str, dict[str, str]]]):
    """A scripted history of `program` (each step's placeholders over the step before), collected:
    (store, sha of each step by name, the feature table by step)."""
    new_project(root, CONFIG)
    values = dict(base)
    (root / "prog.c").write_text(scripted_source(values, program))
    shas = {"base": commit_all(root, "base")}
    for name, change in steps:
        values.update(change)
        (root / "prog.c").write_text(scripted_source(values, program))
        shas[name] = commit_all(root, name)
    result = run_selector("collect", "--no-calibrate", "--repo", str(root), "--format", "json")
    assert result.returncode == 0, result.stderr
    store = Store(root / ".selector", create=False)
    step_of = {sha: name for name, sha in shas.items()}
    table = feature_table(store)
    table["step"] = table["new"].map(step_of)
    return store, shas, table.set_index("step")
