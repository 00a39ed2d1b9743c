"""Profiles of real runs: callgrind and perf, and Pin proccount files read into the same shape."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from perf_selector.collectors.benchmark_runner import BenchmarkRunner, BenchmarkSpec
from perf_selector.collectors.callgrind import INSTRUCTION_COLUMNS, PROFILE_COLUMNS, callgrind_command, normalize_function, read_callgrind
from perf_selector.collectors.commit_graph import closest_ancestor
from perf_selector.collectors.errors import UserError
from perf_selector.collectors.perf_profile import perf_command, read_perf, sampling_event
from perf_selector.collectors.pin_import import read_proccount
from perf_selector.collectors.profiler import ROW_COLUMNS, profile_suite
from tests.helpers import compile_c, perf_cannot_record

PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
__attribute__((noinline)) long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
__attribute__((noinline)) long spin(long n) { long s = 0; for (long i = 0; i < n; i++) s += i ^ (s >> 3); return s; }
int main(int argc, char **argv)
{
    char *copy = malloc(64);
    strcpy(copy, argv[1]);
    long r = fib(atoi(copy)) + spin(atol(argv[2]));
    printf("%ld\n", r);
    free(copy);
    return 0;
}
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    return compile_c(PROGRAM, tmp_path_factory.mktemp("prof") / "prog", "-O1 -g")


def test_callgrind_profile_counts_calls_and_inclusive_cost(program, tmp_path):
    output = tmp_path / "cg.out"
    subprocess.run(callgrind_command([str(program), "15", "1000"], output), check=True, capture_output=True)
    profile = read_callgrind(output, program)
    table = profile.functions.to_pandas()
    assert list(table.columns) == PROFILE_COLUMNS + INSTRUCTION_COLUMNS
    own = table[table["in_binary"]].set_index("function")
    assert own.loc["fib", "calls"] == 1973  # every recursive call, merged from fib and fib'2
    assert own.loc["spin", "calls"] == 1
    assert own.loc["main", "inclusive_instructions"] >= own.loc["fib", "inclusive_instructions"] + own.loc["spin", "self_instructions"]
    assert own.loc["fib", "inclusive_instructions"] == own.loc["fib", "self_instructions"]  # recursion not counted twice
    libraries = table[~table["in_binary"]]
    assert "libc.so.6" in set(libraries["object"]) and "malloc" in set(libraries["function"])
    assert profile.total_instructions > own.loc["main", "inclusive_instructions"]  # the loader runs before main


def test_names_are_normalized_like_the_static_table():
    assert normalize_function("fib'2") == "fib"
    assert normalize_function("foo.constprop.0") == "foo"
    assert normalize_function("main.cold") == "main"
    assert normalize_function("geo::area(int) [clone .isra.0]") == "geo::area(int)"
    # profiles are read mangled (callgrind --demangle=no, perf script --no-demangle): keys as the static table's
    assert normalize_function("_ZN3geo6SquareC2Ed") == "_ZN3geo6SquareC1Ed"
    assert normalize_function("_ZN3geo6SquareD0Ev.cold'2") == "_ZN3geo6SquareD1Ev"


def test_perf_profile_uses_the_available_event(program, tmp_path):
    event = sampling_event()
    assert event in ("cycles", "cpu-clock")
    spec = BenchmarkSpec("spin", "{binary} 5 300000000", "wall_time", repetitions=1, timeout=60)
    runner = BenchmarkRunner([spec], program, tmp_path, workdir=tmp_path)
    result = profile_suite(runner, "perf")
    assert not result.failures, result.failures
    rows = result.rows.to_pandas()
    assert list(rows.columns) == ROW_COLUMNS
    assert set(rows["event"]) == {event} and set(rows["profiler"]) == {"perf"} and set(rows["count_kind"]) == {"samples"}
    top = rows[rows["in_binary"]].sort_values("samples", ascending=False).iloc[0]
    assert top["function"] == "spin" and top["samples"] > 10


@pytest.fixture(scope="module")
def perf_records(tmp_path_factory) -> None:
    reason = perf_cannot_record(tmp_path_factory.mktemp("perf"))
    if reason:
        pytest.skip(reason)


def _loop_range(binary: Path, function: str) -> tuple[int, int]:
    """The ELF addresses of `function`'s loop, from objdump's text: from the target of its one
    backward conditional jump to that jump."""
    text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(binary)], capture_output=True, text=True, check=True).stdout
    body = text.split(f"<{function}>:\n", 1)[1].split("\n\n", 1)[0]
    (loop,) = [(int(target, 16), int(address, 16)) for address, target in
               re.findall(rf"^\s*([0-9a-f]+):\s+j(?!mp)\w+\s+([0-9a-f]+) <{function}\+", body, re.MULTILINE)
               if int(target, 16) < int(address, 16)]
    return loop


def _instruction_starts(binary: Path, function: str) -> set[int]:
    text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(binary)], capture_output=True, text=True, check=True).stdout
    body = text.split(f"<{function}>:\n", 1)[1].split("\n\n", 1)[0]
    return {int(address, 16) for address in re.findall(r"^\s*([0-9a-f]+):", body, re.MULTILINE)}


@pytest.mark.parametrize("pie", ["-pie -fPIE", "-no-pie -fno-PIE"])
def test_perf_samples_per_instruction_land_in_the_hot_loop(perf_records, tmp_path, pie):
    """spin() is one loop: nearly every sample perf takes in it must fall on the loop's
    instructions, at their ELF addresses (a position-independent binary runs elsewhere)."""
    binary = compile_c(PROGRAM, tmp_path / "prog", f"-O1 -g {pie}")
    data = tmp_path / "perf.data"
    subprocess.run(perf_command([str(binary), "5", "300000000"], data, "cpu-clock"), check=True, capture_output=True)
    rows = read_perf(data, binary, "cpu-clock").to_pandas().set_index("function")
    spin = rows.loc["spin"]
    addresses, counts = list(spin["instruction_addresses"]), list(spin["instruction_counts"])
    assert addresses == sorted(addresses) and sum(counts) == spin["samples"] > 200  # every sample placed
    assert set(addresses) <= _instruction_starts(binary, "spin")
    start, end = _loop_range(binary, "spin")
    in_loop = sum(count for address, count in zip(addresses, counts) if start <= address <= end)
    assert in_loop / sum(counts) >= 0.9
    assert (rows.loc[rows["object"] != "prog", "instruction_addresses"].map(len) == 0).all()  # the binary's only


def test_pin_proccount_file_reads_into_the_callgrind_shape(tmp_path):
    proccount = tmp_path / "proccount.out"
    proccount.write_text(
        "#              Procedure                  Image            Address        Calls Instructions\n"
        "                    main           /work/prog           0x401136            1        52341\n"
        "                     fib           /work/prog           0x401100         1973        20000\n"
        "                  fib.cold           /work/prog           0x401000            2           10\n"
        "    std::vector<int>::size() const   /work/prog     0x401200           7           21\n"
        "                  malloc   /lib/x86_64-linux-gnu/libc.so.6   0x7f001000   1     140\n"
    )
    table = read_proccount(proccount, "/work/prog").to_pandas()
    assert list(table.columns) == PROFILE_COLUMNS
    rows = table.set_index("function")
    assert rows.loc["fib", "calls"] == 1975 and rows.loc["fib", "self_instructions"] == 20010  # .cold folded in
    assert rows.loc["std::vector<int>::size() const", "calls"] == 7
    assert bool(rows.loc["main", "in_binary"]) and not bool(rows.loc["malloc", "in_binary"])
    assert rows.loc["malloc", "object"] == "libc.so.6"
    bad = tmp_path / "bad.out"
    bad.write_text("main prog\n")
    with pytest.raises(UserError, match="bad.out:1: not a proccount line"):
        read_proccount(bad)


def test_closest_ancestor_walks_merges_and_skips_unusable_commits():
    #   a - b(failed) - d(merge of b, c) - e
    #    \- c --------/
    parents = {"e": ["d"], "d": ["b", "c"], "b": ["a"], "c": ["a"], "a": []}
    usable = {"a", "c", "e"}.__contains__
    assert closest_ancestor("e", parents, usable) == ("c", 2)  # d is unusable, c is nearer than a
    assert closest_ancestor("b", parents, usable) == ("a", 1)
    assert closest_ancestor("a", parents, usable) is None
