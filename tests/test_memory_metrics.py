"""Memory metrics (collectors/metrics.py): peak resident memory from the kernel's wait4 account,
and heap bytes and blocks allocated, counted by valgrind's DHAT; on real gcc builds.

tests/programs/memory.c allocates one buffer in make_buffer and walks it in checksum, which
never allocates.  A scripted history changes checksum's step (time, not memory), then doubles
the buffer (memory); the memory benchmarks must be labelled changed and selected for the second
only, and DHAT's counts must repeat exactly (calibration calls them exact).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from perf_selector.collectors.benchmark_runner import BenchmarkRunner, BenchmarkSpec
from perf_selector.collectors.metrics import METRICS, is_count, metric_unit
from perf_selector.selector.onboarding.sample_history import commit_all
from perf_selector.storage.store import Store
from tests.helpers import gcc_config, new_project, compile_c, program_text, run_selector

CONFIG = gcc_config("""
[[benchmark]]
name = "peak"
command = "{binary}"
metric = "max_rss"
repetitions = 5

[[benchmark]]
name = "heap"
command = "{binary}"
metric = "heap_bytes"
repetitions = 2

[[benchmark]]
name = "blocks"
command = "{binary}"
metric = "heap_blocks"
repetitions = 2
""")
STEPS = [("base", {"BUFFER_KIB": "8192", "STEP": "64"}),
         ("walk", {"BUFFER_KIB": "8192", "STEP": "32"}),  # checksum reads twice as much: no allocation changed
         ("grow", {"BUFFER_KIB": "16384", "STEP": "32"})]  # the buffer doubles: peak memory and heap bytes double


def _source(values: dict[str, str]) -> str:
    text = program_text("memory.c")
    for placeholder, value in values.items():
        text = text.replace(placeholder, value)
    return text


@pytest.fixture(scope="module")
def memory_history(tmp_path_factory):
    root = new_project(tmp_path_factory.mktemp("memory") / "project", CONFIG)
    shas = {}
    for name, values in STEPS:
        (root / "prog.c").write_text(_source(values))
        shas[name] = commit_all(root, name)
    calibrated = run_selector("calibrate", shas["base"], "--repo", str(root), "--rounds", "2")
    assert calibrated.returncode == 0, calibrated.stderr
    collected = run_selector("collect", "--repo", str(root), "--format", "json")
    assert collected.returncode == 0, collected.stderr
    return root, shas


def test_the_registry_says_what_each_memory_metric_is():
    assert {"max_rss", "heap_bytes", "heap_blocks"} <= set(METRICS)
    assert metric_unit("max_rss") == "bytes" and metric_unit("heap_blocks") == "blocks"
    assert is_count("heap_bytes") and is_count("heap_blocks") and not is_count("max_rss")


def test_heap_counts_repeat_exactly_and_peak_memory_sees_the_buffer(tmp_path):
    small = compile_c(_source({"BUFFER_KIB": "4096", "STEP": "64"}), tmp_path / "small")
    large = compile_c(_source({"BUFFER_KIB": "8192", "STEP": "64"}), tmp_path / "large")

    def values(binary: Path, metric: str, repetitions: int) -> list[float]:
        spec = BenchmarkSpec(metric, "{binary}", metric, repetitions=repetitions, warmup=0)
        runs = BenchmarkRunner([spec], binary, tmp_path, workdir=tmp_path / f"runs-{binary.name}-{metric}").run().runs
        assert all(run.status == "ok" for run in runs), [run.error for run in runs]
        return [run.value for run in runs]

    small_heap, large_heap = values(small, "heap_bytes", 2), values(large, "heap_bytes", 2)
    assert small_heap[0] == small_heap[1] and large_heap[0] == large_heap[1]  # exact
    assert large_heap[0] - small_heap[0] == 4096 * 1024  # the buffer, to the byte
    assert values(small, "heap_blocks", 2) == values(large, "heap_blocks", 2)  # one buffer either way
    small_rss, large_rss = min(values(small, "max_rss", 3)), min(values(large, "max_rss", 3))
    assert 3.5 * 2**20 < large_rss - small_rss < 4.5 * 2**20  # the extra 4 MiB, touched


@pytest.mark.slow
def test_calibration_calls_heap_counts_exact(memory_history):
    root, _ = memory_history
    calibration = Store(root / ".selector", create=False).read("calibration").to_pandas().set_index("benchmark")
    assert bool(calibration.loc["heap", "exact"]) and bool(calibration.loc["blocks", "exact"])


@pytest.mark.slow
def test_a_doubled_buffer_is_labelled_changed_and_a_walk_that_never_allocates_is_not(memory_history):
    root, shas = memory_history
    labels = Store(root / ".selector", create=False).read("labels").to_pandas()
    label = {(row.new, row.benchmark): row for row in labels.itertuples()}
    for benchmark in ("peak", "heap"):
        assert label[shas["grow"], benchmark].label == True, benchmark  # noqa: E712
        assert label[shas["grow"], benchmark].effect > 0.5
        assert label[shas["walk"], benchmark].label != True, benchmark  # noqa: E712
    assert label[shas["walk"], "heap"].effect == 0.0


@pytest.mark.slow
@pytest.mark.parametrize("step, runs", [("walk", False), ("grow", True)])
def test_select_runs_memory_benchmarks_where_code_that_allocates_changed(memory_history, step, runs):
    import json

    root, shas = memory_history
    result = run_selector("select", shas[step], "--repo", str(root), "--format", "json")
    assert result.returncode == (0 if runs else 1), result.stderr  # like grep: 1 when nothing needs to run
    decisions = {d["name"]: d for d in json.loads(result.stdout)["benchmarks"]}
    for benchmark in ("peak", "heap", "blocks"):
        assert (decisions[benchmark]["decision"] == "run") == runs, decisions[benchmark]
        assert decisions[benchmark]["reason"].startswith("memory rule"), decisions[benchmark]
