"""`selector init` on a C++ project with a benchmark harness of its own (issue 38): its main
in util/benchmark.cc picks benchmarks by regex arguments and runs all of them given none,
the benchmarks registered with BENCHMARK(fn) / BENCHMARK_RANGE(fn, lo, hi) inside a
namespace in another source.  init writes a command suite of the registered names, each
run alone by an anchored regex and isolated by its function's namespace-qualified name;
on the real build, calibration counts each member exactly, its own function only."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.helpers import run_selector
from tests.helpers.onboarding import (
    FOO_PROJECT,
    built,
    commit,
    init,
    needs_cmake,
    needs_valgrind,
)

HARNESS_H = ("#pragma once\n"
             "typedef void (*bench_fn)(long n);\n"
             "int register_benchmark(const char *name, bench_fn fn, long lo, long hi);\n"
             "#define BENCHMARK(f) static int registered_##f = register_benchmark(#f, f, 1000, 1000)\n"
             "#define BENCHMARK_RANGE(f, lo, hi) static int registered_##f = register_benchmark(#f, f, lo, hi)\n")
# Picks by regex (std::regex_search on the name: every size; or on "name/size": that size
# alone), every benchmark when given no argument.
HARNESS_CC = ('#include <cstdio>\n#include <regex>\n#include "util/benchmark.h"\n'
              "struct Entry { const char *name; bench_fn fn; long lo, hi; };\n"
              "static Entry entries[64]; static int count;\n"
              "int register_benchmark(const char *name, bench_fn fn, long lo, long hi) {\n"
              "  entries[count] = Entry{name, fn, lo, hi}; return count++; }\n"
              "static bool wanted(const char *name, int argc, char **argv) {\n"
              "  if (argc == 1) return true;\n"
              "  for (int i = 1; i < argc; i++) if (std::regex_search(name, std::regex(argv[i]))) return true;\n"
              "  return false; }\n"
              "int main(int argc, char **argv) {\n"
              "  for (int i = 0; i < count; i++) {\n"
              "    bool every = wanted(entries[i].name, argc, argv), any = false;\n"
              "    for (long n = entries[i].lo; n <= entries[i].hi; n *= 2) {\n"
              "      char sized[128]; std::snprintf(sized, sizeof sized, \"%s/%ld\", entries[i].name, n);\n"
              "      if (every || (entries[i].lo < entries[i].hi && wanted(sized, argc, argv))) { entries[i].fn(n); any = true; } }\n"
              '    if (any) std::printf("%s\\n", entries[i].name); }\n'
              "  return 0; }\n")
FOO_BENCHMARK = ('#include "util/benchmark.h"\n#include "lib/foo.h"\n\n'
                 "namespace mylib {\n\n"
                 "static void BM_Find(long n) { volatile long s = 0; for (long i = 0; i < n; i++) s += foo(i); }\n"
                 "BENCHMARK(BM_Find);\n\n"
                 "static void BM_Sum(long n) { volatile long s = 0; for (long i = 0; i < 20 * n; i++) s += foo(i); }\n"
                 "BENCHMARK(BM_Sum);  // { a brace in a comment\n\n"
                 "static void BM_Sized(long n) { volatile long s = 0; for (long i = 0; i < n; i++) s += foo(i); }\n"
                 "BENCHMARK_RANGE(BM_Sized, 8, 64);\n\n"
                 "}  // namespace mylib\n")
FILES = {**FOO_PROJECT, "util/benchmark.h": HARNESS_H, "util/benchmark.cc": HARNESS_CC,
         "lib/foo_benchmark.cc": FOO_BENCHMARK, ".gitignore": "build/\n.selector/\n"}


def test_init_writes_a_command_suite_of_the_registered_benchmarks_each_picked_by_its_anchored_name(tmp_path):
    root = tmp_path / "project"
    commit(root, FILES, "foo and its benchmarks")
    config, result = init(root)
    assert "a benchmark program: lib/foo_benchmark.cc (target foo_benchmark, naming 3 benchmarks)" in result.stderr
    (suite,) = config.suite
    assert (suite.name, suite.framework, suite.command) == ("bench", "command", "{binary} '^{name}$'")
    assert suite.names == ["BM_Find", "BM_Sum", "BM_Sized"]
    assert suite.isolate == "mylib::{name}(*"
    assert not config.benchmark
    text = (root / "selector.toml").read_text()
    assert "CHECK: BM_Sized runs with sizes (BENCHMARK_RANGE, ->Arg)" in text
    assert "CHECK: how the harness picks one benchmark" in text


def test_benchmarks_in_other_namespaces_name_their_own_pattern(tmp_path):
    root = tmp_path / "project"
    other = FOO_BENCHMARK + "namespace bar { namespace {\nstatic void BM_Other(long n) {}\nBENCHMARK(BM_Other);\n} }\n"
    commit(root, {**FILES, "lib/foo_benchmark.cc": other}, "a benchmark in another namespace")
    config, _ = init(root)
    (suite,) = config.suite
    assert suite.isolate == "mylib::{name}(*"
    assert suite.names[:3] == ["BM_Find", "BM_Sum", "BM_Sized"]
    (other,) = suite.names[3:]
    assert (other.name, other.isolate) == ("BM_Other", "bar::(anonymous namespace)::BM_Other(*")


@needs_cmake
@needs_valgrind
@pytest.mark.slow
def test_each_member_runs_alone_and_counts_its_own_function_exactly(tmp_path):
    root = tmp_path / "project"
    sha = commit(root, FILES, "foo and its benchmarks")
    config, _ = init(root)
    binary = built(root, config, sha)
    ran = subprocess.run([str(binary), "^BM_Sum$"], capture_output=True, text=True, check=True)
    assert ran.stdout.split() == ["BM_Sum"]  # alone: BM_Sum is no prefix of another here, but anchored anyway
    assert subprocess.run([str(binary)], capture_output=True, text=True, check=True).stdout.split() == \
        ["BM_Find", "BM_Sum", "BM_Sized"]
    calibrated = run_selector("calibrate", "--repo", str(root), "--rounds", "1", "--format", "json")
    assert calibrated.returncode == 0, calibrated.stderr
    rows = {row["benchmark"]: row for row in json.loads(calibrated.stdout)}
    assert set(rows) == {"bench/BM_Find", "bench/BM_Sum", "bench/BM_Sized"}
    for row in rows.values():
        assert row["exact"] and row["median"] > 0, row
    # the benchmark's own function only: a few instructions an iteration, nothing of the
    # process's start (a C++ program's runtime set-up alone is well over 100,000)
    assert rows["bench/BM_Find"]["median"] < 30_000, rows["bench/BM_Find"]
    assert rows["bench/BM_Sum"]["median"] > 15 * rows["bench/BM_Find"]["median"]

    # A sized benchmark listed by size, as the CHECK comment says: each size its own member,
    # isolated by its function ({function}: the name up to its '/'), counted alone.
    text = (root / "selector.toml").read_text()
    assert 'isolate by "mylib::{function}(*"' in text
    (root / "selector.toml").write_text(text + '\n[[suite]]\nname = "sized"\nframework = "command"\n'
                                        'command = "{binary} \'^{name}$\'"\nnames = ["BM_Sized/8", "BM_Sized/64"]\n'
                                        'isolate = "mylib::{function}(*"\nrepetitions = 2\n')
    calibrated = run_selector("calibrate", "--repo", str(root), "--rounds", "1", "--format", "json")
    assert calibrated.returncode == 0, calibrated.stderr
    rows = {row["benchmark"]: row for row in json.loads(calibrated.stdout)}
    small, large = rows["sized/BM_Sized/8"], rows["sized/BM_Sized/64"]
    assert small["exact"] and large["exact"] and small["median"] > 0, (small, large)
    assert 6 * small["median"] < large["median"] < 10 * small["median"]  # eight times the loop, one size each


def test_a_source_is_a_harness_candidate_only_by_its_own_benchmark_lines(tmp_path):
    """The BENCHMARK(fn) lines of the code (not of its comments or strings) both make a source a
    harness's and name its benchmarks: a source that only mentions them is no candidate."""
    from perf_selector.selector.onboarding.survey import HARNESS, survey

    mentions = ('#include "util/benchmark.h"\n// BENCHMARK(BM_Find); was here\n'
                'static const char *why = "BENCHMARK(BM_Sum);";\nBENCHMARK("quoted");\n')
    root = tmp_path / "project"
    commit(root, {**FILES, "lib/foo_benchmark.cc": mentions}, "no benchmark registered")
    assert [c for c in survey(root).candidates if c.kind == HARNESS] == []
    commit(root, FILES, "registered")
    (found,) = [c for c in survey(root).candidates if c.kind == HARNESS]
    assert found.names == ("BM_Find", "BM_Sum", "BM_Sized") and found.parameterised == ("BM_Sized",)


@needs_cmake
def test_init_asks_cmake_for_a_target_declared_in_a_foreach_over_a_list(tmp_path):
    """Issue 48's C++ regex engine: the benchmark program is declared in a foreach over a list
    variable (add_executable(${target} testing/${target}.cc util/benchmark.cc)), which no reading
    of the file resolves; CMake's file API names the real target and where its binary goes, and
    the build init writes makes that program."""
    cmakelists = ("cmake_minimum_required(VERSION 3.10)\nproject(foo CXX)\n"
                  "include_directories(${CMAKE_SOURCE_DIR})\nadd_library(foo STATIC lib/foo.cc)\n"
                  "set(BENCHMARK_TARGETS foo_benchmark)\n"
                  "set(CMAKE_RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)\n"
                  "foreach(target ${BENCHMARK_TARGETS})\n"
                  "  add_executable(${target} testing/${target}.cc util/benchmark.cc)\n"
                  "  target_link_libraries(${target} foo)\n"
                  "endforeach()\n")
    files = {**FILES, "CMakeLists.txt": cmakelists, "testing/foo_benchmark.cc": FOO_BENCHMARK}
    files.pop("lib/foo_benchmark.cc")
    root = tmp_path / "project"
    sha = commit(root, files, "benchmarks declared in a foreach")
    config, result = init(root)
    assert "--target foo_benchmark" in config.build.command and "--target benchmark" not in config.build.command
    assert config.project.binary == "build/bin/foo_benchmark"  # where CMake writes it, not where it usually goes
    (suite,) = config.suite
    assert suite.names == ["BM_Find", "BM_Sum", "BM_Sized"]
    binary = built(root, config, sha)
    assert binary.name == "foo_benchmark"
    assert subprocess.run([str(binary), "^BM_Sum$"], capture_output=True, text=True, check=True).stdout.split() == ["BM_Sum"]
