"""Scripted histories of one C program under tests/programs, collected through the real CLI:
each step replaces placeholders of the program's text over the step before, one commit a step
(test_steering.py, test_hazards.py, test_straight_line.py, test_loop_bound.py,
test_jump_table.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from perf_selector.features.catalogue import FEATURE_NAMES
from perf_selector.models.decision import decide_by_policy
from perf_selector.models.names import STEPPING_ASIDE_RULE
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


def measured_effect(store: Store, sha: str) -> float:
    """The measured relative change of the commit's benchmark count from its parent (uncalibrated,
    two runs a side leave a change's label undecided; the count is exact)."""
    labels = store.read_one("labels", sha).to_pandas()
    return float(labels["effect"].iloc[0])


def rule_runs_step(table, step: str, min_effect: float) -> bool:
    """Whether select's decision code, as the executed-changed rule decides, runs the step's benchmark."""
    row = table.loc[[step], FEATURE_NAMES].to_numpy(float)
    return bool(decide_by_policy(STEPPING_ASIDE_RULE, np.zeros(1), np.full(1, 0.5), row, min_effect)[0])
