"""The executed share of changed code and the predicted effect, on real gcc builds measured by callgrind.

Each test makes a two-commit repository of tests/programs/kernel.c (one hot loop in its own
function), collects it with the real CLI (gcc, valgrind, the store) and reads the feature
table.  The expected values come from elsewhere than the code under test: the changed
block from objdump's text, its execution count from the program's input, the measured
change from callgrind's totals.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from perf_selector.collectors.block_diff import Block, NewBlock, Region, align
from perf_selector.features.builder import FeatureBuilder
from perf_selector.features.executed_code import INSTRUCTIONS, SAMPLES, FunctionChange, executed_change
from perf_selector.selector.evaluation.feature_table import feature_table
from perf_selector.selector.selection.selection import Decision, overrule_by_predicted_effect
from perf_selector.selector.onboarding.sample_history import commit_all
from perf_selector.storage.store import Store
from tests.helpers import perf_cannot_record, program_text, run_selector

N = 20_000  # loop iterations: data[i] = i, so half the elements are odd
ODD_BRANCH = "if (data[i] & 1) acc += data[i] * {k}; else acc ^= data[i];"
CONFIG = """
[project]
binary = "prog"

[build]
command = "gcc {flags} -g -o prog prog.c"
timeout = 60

[profile]
tool = "{tool}"

[[benchmark]]
name = "kernel"
command = "{{binary}} {n}"
metric = "{metric}"
repetitions = 2
warmup = 0
"""


def _history(root: Path, bodies: list[str], flags: str, tool: str = "callgrind", n: int = N) -> list[str]:
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    metric = "instructions" if tool == "callgrind" else "wall_time"
    (root / "selector.toml").write_text(CONFIG.format(flags=flags, n=n, tool=tool, metric=metric))
    (root / ".gitignore").write_text("prog\n.selector/\n")
    shas = []
    for number, body in enumerate(bodies):
        (root / "prog.c").write_text(program_text("kernel.c").replace("KERNEL_BODY", body))
        shas.append(commit_all(root, f"kernel body {number}"))
    result = run_selector("collect", "--no-calibrate", "--repo", str(root), "--format", "json")
    assert result.returncode == 0, result.stderr
    return shas


def _tuple(root: Path, new: str):
    table = feature_table(Store(root / ".selector", create=False))
    return table[table["new"] == new].iloc[0]


def _run_total(root: Path, sha: str) -> float:
    measurements = Store(root / ".selector", create=False).read_one("measurements", sha).to_pandas()
    values = measurements[measurements["repetition"] >= 0]["value"]
    assert values.nunique() == 1  # callgrind counts repeat exactly
    return float(values.iloc[0])


def _kernel_lines(binary: Path) -> list[tuple[int, str]]:
    """(address, instruction text) of kernel's instructions, as objdump prints them."""
    text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(binary)], capture_output=True, text=True, check=True).stdout
    body = text.split("<kernel>:\n", 1)[1].split("\n\n", 1)[0]
    lines = []
    for line in body.splitlines():
        address, _, instruction = line.strip().partition(":\t")
        lines.append((int(address, 16), instruction.strip()))
    return lines


def _without_addresses(instruction: str) -> str:
    return re.sub(r"\b[0-9a-f]+ <[^>]*>", "<target>", instruction)


def _objdump_block_of(lines: list[tuple[int, str]], index: int) -> int:
    """Instructions in the basic block around line `index`: bounded by jumps and jump targets."""
    targets = {int(match, 16) for _, text in lines for match in re.findall(r"\b([0-9a-f]+) <kernel\+", text)}

    def ends_block(text: str) -> bool:
        return text.startswith(("j", "ret"))

    start = index
    while start > 0 and not ends_block(lines[start - 1][1]) and lines[start][0] not in targets:
        start -= 1
    end = index
    while end + 1 < len(lines) and not ends_block(lines[end][1]) and lines[end + 1][0] not in targets:
        end += 1
    return end - start + 1


@pytest.mark.slow
def test_executed_share_of_a_changed_branch_is_exact(tmp_path):
    root = tmp_path / "project"
    old, new = _history(root, [ODD_BRANCH.format(k=3), ODD_BRANCH.format(k=5)], "-O0")

    # objdump's view of the old and new kernel: the lines that differ, the block around them
    binaries = {}
    for sha in (old, new):
        subprocess.run(["git", "checkout", "-q", sha], cwd=root, check=True)
        subprocess.run(["gcc", "-O0", "-g", "-o", f"prog-{sha[:8]}", "prog.c"], cwd=root, check=True)
        binaries[sha] = _kernel_lines(root / f"prog-{sha[:8]}")
    old_lines, new_lines = binaries[old], binaries[new]
    assert len(old_lines) == len(new_lines)
    differing = [i for i, (a, b) in enumerate(zip(old_lines, new_lines)) if _without_addresses(a[1]) != _without_addresses(b[1])]
    assert differing, "the two kernels compiled alike"
    blocks = {_objdump_block_of(old_lines, i) for i in differing}
    assert len(blocks) == 1  # one block changed: the odd branch
    block_length = blocks.pop()

    expected = block_length * (N // 2) / _run_total(root, old)  # the odd branch runs N/2 times
    row = _tuple(root, new)
    assert row["executed_changed_share"] == pytest.approx(expected, rel=1e-12)
    assert row["executed_changed_share"] < 0.5 * row["changed_inclusive_share"]  # the function level sees far more
    assert abs(row["predicted_effect"]) < 1e-9  # `* 3` and `* 5` take as many instructions


@pytest.mark.slow
def test_executed_share_from_perf_samples_is_near_callgrinds(tmp_path):
    """The same two commits profiled by callgrind (instructions) and by perf (cpu-clock
    samples, over the run's samples): the changed branch's share of the run agrees.

    Samples measure time and callgrind counts instructions: the multiply in the changed
    branch costs more cycles for each instruction than the other side, by an amount that
    depends on the processor (0.25 by instructions, 0.36 by time on CI's machine). So the
    two agree within a factor of two, and both see a part of the loop, not all of it."""
    reason = perf_cannot_record(tmp_path)
    if reason:
        pytest.skip(reason)
    inner = "for (unsigned r = 0; r < 100; r++) {{ if ((data[i] + r) & 1) acc += (data[i] + r) * {k}; else acc ^= data[i] + r; }}"
    bodies = [inner.format(k=3), inner.format(k=5)]
    shares = {}
    for tool, n in (("callgrind", 2_000), ("perf", 1_000_000)):  # perf needs a long run to sample
        root = tmp_path / tool
        _, new = _history(root, bodies, "-O0", tool=tool, n=n)
        shares[tool] = _tuple(root, new)["executed_changed_share"]
    print(f"executed_changed_share: callgrind {shares['callgrind']:.4f}, perf {shares['perf']:.4f}")
    assert 0.05 < shares["callgrind"] < 0.5  # the odd branch: a part of the loop, not all of it
    assert 0.5 < shares["perf"] / shares["callgrind"] < 2.0
    assert shares["perf"] < 0.75  # block level: the function level would see the whole loop


@pytest.mark.slow
@pytest.mark.parametrize("flags", ["-O0", "-O2"])
def test_predicted_effect_of_doubling_a_hot_loop_body(tmp_path, flags):
    root = tmp_path / "project"
    body = "acc = acc * 31 + (data[i] ^ (acc >> 3));"
    old, new = _history(root, [body, body + " " + body], flags)

    measured = _run_total(root, new) / _run_total(root, old) - 1.0
    row = _tuple(root, new)
    predicted = row["predicted_effect"] / 100.0
    assert measured > 0.05  # the loop is most of the run
    assert predicted == pytest.approx(measured, rel=0.10)
    assert row["predicted_effect_size"] == pytest.approx(abs(row["predicted_effect"]))
    assert 0 < row["executed_changed_share"] <= 1

    # select (on the core install) computes the same prediction on the push path and prints it
    result = run_selector("select", new, "--repo", str(root), "--format", "json")
    assert result.returncode in (0, 1), result.stderr
    (decision,) = json.loads(result.stdout)["benchmarks"]
    assert decision["predicted_effect"] == pytest.approx(row["predicted_effect"], rel=1e-3)
    assert decision["decision"] == "run"


def test_a_skip_becomes_a_run_when_the_predicted_effect_reaches_min_effect():
    def decided(choice: str, predicted: float | None) -> Decision:
        return overrule_by_predicted_effect(Decision("b", choice, "p=0.10 < 0.50", predicted_effect=predicted), 0.01)

    overruled = decided("skip", -1.5)
    assert overruled.decision == "run" and "-1.50% reaches min_effect 1%" in overruled.reason and "p=0.10" in overruled.reason
    assert decided("skip", 0.99).decision == "skip"
    assert decided("skip", None).decision == "skip"
    assert decided("run", 0.0).decision == "run"


def test_blocks_the_compiler_only_moved_are_not_changed_code():
    def block(key: int, address: int, length: int = 3) -> Block:
        return Block(key, tuple(range(address, address + length)), (key,) * length, key)

    loop, setup, exit_, cold = block(1, 100), block(2, 200), block(3, 300), block(4, 400)
    old = [setup, loop, exit_, cold]
    # the new layout puts the loop after the exit path, and adds a block after the loop
    added = block(9, 1000, length=5)
    new = [block(2, 10), block(3, 20), block(1, 30), added, block(4, 50)]
    regions = align(old, new)
    changed = [a for region in regions for a in region.old_addresses.tolist()]
    assert changed == []  # every old block is still there, moved or in place
    (inserted,) = [b for region in regions for b in region.new_blocks]
    assert inserted == (5, loop.addresses[0], loop.addresses[-1], 3)  # runs as often as the loop it follows


def test_sampled_blocks_count_their_samples_over_their_length():
    """Samples spread over a block's instructions (here: none on its first), so under perf a
    new block anchored to it costs the block's samples per instruction times its length."""
    old_block = np.array([100, 104, 108, 112], dtype=np.int64)
    function = FunctionChange(
        regions=[Region(old_block, (NewBlock(8, 100, 112, 4),))],  # the block rewritten twice as long
        addresses=np.array([104, 108, 112, 200]), counts=np.array([10, 20, 10, 60]),
        own_count=100.0, old_length=10, new_length=14,
    )
    sampled = executed_change([function], 0.0, 200.0, SAMPLES)
    assert sampled.share == pytest.approx(40 / 200)
    assert sampled.predicted_effect == pytest.approx((40 / 4 * 8 - 40) / 200)  # the block's time doubles
    counted = executed_change([function], 0.0, 200.0, INSTRUCTIONS)
    assert counted.predicted_effect == pytest.approx(-40 / 200)  # its first instruction never ran: as if deleted


def test_run_totals_are_of_the_profiles_own_kind_and_older_stores_say_it_by_their_profiler():
    old_store = pa.table({"commit": ["a", "a", "b", "b"], "benchmark": ["x"] * 4,
                          "self_instructions": pa.array([10, 5, None, None], pa.int64()),
                          "samples": pa.array([None, None, 3, 4], pa.int64()), "profiler": ["callgrind"] * 2 + ["perf"] * 2})
    expected = {("a", "x"): (INSTRUCTIONS, 15.0), ("b", "x"): (SAMPLES, 7.0)}
    assert FeatureBuilder._run_table(old_store) == expected
    stated = old_store.append_column("count_kind", pa.array(["instructions"] * 2 + ["samples"] * 2, pa.large_string()))
    assert FeatureBuilder._run_table(stated) == expected
