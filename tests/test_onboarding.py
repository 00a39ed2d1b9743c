"""From a clone to a first selection: `selector init` on real repositories made here with
git (a make project with a db_bench-like driver, a CMake project, a CMake project with a
Google Benchmark binary), whose configurations load and whose build commands build; and
`selector doctor`, which names each missing piece on one line with its fix."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from perf_selector.selector.benchmarks import build_benchmarks
from perf_selector.selector.config import load_config
from tests.helpers import assert_one_line_error, program_text, run_selector, selector_command
from tests.helpers.onboarding import built, commit, doctor, init, needs_cmake, needs_valgrind

MAKEFILE = "CFLAGS = -O2 -Wall\n\ndb_bench: db_bench.c\n\t$(CC) $(CFLAGS) -o $@ db_bench.c\n"
DOCUMENTS = {"README.md": "# demo\n", "docs/guide.md": "how\n", ".github/workflows/ci.yml": "on: push\n"}


@needs_valgrind
def test_a_make_project_with_a_driver_goes_from_init_to_a_doctor_with_nothing_missing(tmp_path):
    """init writes a make build that keeps the Makefile's flags and adds -g, a command suite
    for the driver; then calibrate and collect give what doctor asks for, and it exits 0."""
    root = tmp_path / "project"
    first = commit(root, {"Makefile": MAKEFILE, "db_bench.c": program_text("suite_driver.c"), **DOCUMENTS}, "driver")
    config, result = init(root)
    assert "db_bench-like driver: db_bench.c" in result.stderr
    assert config.project.binary == "db_bench"
    assert config.build.command == "make -j$(nproc) db_bench CFLAGS='-O2 -Wall -g'"
    assert {"docs/*", "*.md", ".github/*", "README*"} <= set(config.build.unaffected)
    (suite,) = config.suite
    assert (suite.framework, suite.command, suite.list_command) == ("command", "{binary} --benchmarks={name}",
                                                                    "{binary} --list")
    assert (suite.metric, suite.repetitions, config.profile.tool) == ("instructions", 2, "callgrind")

    before, checks = doctor(root, "--binary", str(built(root, config, first)))
    assert before.returncode == 1
    assert checks["symbols"]["status"] == "ok", checks["symbols"]  # the Makefile's -O2 -Wall kept, -g added
    assert [name for name, check in checks.items() if check["status"] == "FAIL"] == ["calibration", "labels"]
    assert checks["calibration"]["fix"].startswith("selector calibrate")

    subprocess.run(["git", "clean", "-qfdx", "-e", "selector.toml"], cwd=root, check=True)
    source = program_text("suite_driver.c").replace("i < 20000; i++) sum", "i < 10000; i++) sum")
    commit(root, {"db_bench.c": source}, "sum half the table")
    commit(root, {"docs/guide.md": "how, again\n"}, "documentation only")
    for step in (["calibrate", "--rounds", "1"], ["collect"]):
        ran = run_selector(*step, "--repo", str(root))
        assert ran.returncode == 0, ran.stderr
    after, checks = doctor(root)
    assert after.returncode == 0, after.stdout
    assert checks["symbols"]["found"].endswith("symbol table and debug information")
    assert "stored build" in checks["symbols"]["found"]
    # exact, or near-exact should a run move by a few instructions: either labels by the count,
    # and none is unfit or noisy
    found = checks["calibration"]["found"]
    assert found.startswith("2 benchmarks: ") and found.endswith(", 0 noisy") and "unfit" not in found, found
    assert sum(int(part.split()[0]) for part in found.removeprefix("2 benchmarks: ").split(", ")[:2]) == 2, found
    assert checks["labels"]["status"] == "ok" and checks["model"]["status"] == "ok"
    text = run_selector("doctor", "--repo", str(root))
    assert text.returncode == 0 and "everything needed is there" in text.stdout


@needs_cmake
def test_a_cmake_project_is_built_with_debug_information_and_its_benchmark_option_on(tmp_path):
    root = tmp_path / "project"
    sha = commit(root, {
        "CMakeLists.txt": "cmake_minimum_required(VERSION 3.10)\nproject(demo C)\n"
                          "option(DEMO_BUILD_BENCHMARKS \"Build the benchmarks\" OFF)\n"
                          "add_library(demo STATIC src/demo.c)\n"
                          "if(DEMO_BUILD_BENCHMARKS)\n  add_executable(bench_demo bench/bench_demo.c)\n"
                          "  target_link_libraries(bench_demo demo)\nendif()\n",
        "src/demo.c": "long demo(long n) { long s = 0; for (long i = 0; i < n; i++) s += i % 7; return s; }\n",
        "bench/bench_demo.c": "long demo(long);\nint main(void) { return demo(100000) < 0; }\n",
        "tests/test_demo.c": "int main(void) { return 0; }\n",
    }, "library and its benchmark")
    config, _ = init(root)
    assert config.project.binary == "build/bench_demo"
    assert "-DCMAKE_BUILD_TYPE=RelWithDebInfo -DDEMO_BUILD_BENCHMARKS=ON" in config.build.command
    assert [(b.name, b.command) for b in config.benchmark] == [("bench_demo", "{binary}")]
    binary = built(root, config, sha)
    checked = run_selector("doctor", "--repo", str(root), "--binary", str(binary), "--format", "json")
    symbols = next(c for c in json.loads(checked.stdout)["checks"] if c["check"] == "symbols")
    assert symbols["status"] == "ok", symbols


@needs_cmake
@pytest.mark.skipif(not Path("/usr/include/benchmark/benchmark.h").exists(), reason="Google Benchmark is not installed")
def test_a_google_benchmark_binary_becomes_a_suite_whose_benchmarks_the_built_binary_lists(tmp_path):
    root = tmp_path / "project"
    sha = commit(root, {
        "CMakeLists.txt": "cmake_minimum_required(VERSION 3.10)\nproject(gbdemo CXX)\n"
                          "find_package(benchmark REQUIRED)\nadd_subdirectory(bench)\n",
        "bench/CMakeLists.txt": "add_executable(suite_bench suite_bench.cpp)\n"
                                "target_link_libraries(suite_bench benchmark::benchmark)\n",
        "bench/suite_bench.cpp": program_text("suite_bench.cpp"),
    }, "a Google Benchmark binary")
    config, result = init(root)
    assert "Google Benchmark: bench/suite_bench.cpp (target suite_bench, naming 3 benchmarks)" in result.stderr  # BM_c too (#ifdef)
    assert config.project.binary == "build/bench/suite_bench"  # CMake mirrors the source folders
    (suite,) = config.suite
    assert (suite.name, suite.framework) == ("gb", "google-benchmark")
    binary = built(root, config, sha)
    found = build_benchmarks(config, root, binary)
    assert not found.problems
    assert [spec.name for spec in found.specs] == ["gb/BM_a", "gb/BM_b/500", "gb/BM_b/5000"]


def test_without_benchmarks_init_writes_a_template_that_loads_and_never_overwrites(tmp_path):
    root = tmp_path / "project"
    commit(root, {"Makefile": "prog: prog.c\n\t$(CC) $(CFLAGS) -o $@ prog.c\n", "prog.c": "int main(void) { return 0; }\n"},
           "a program")
    config, result = init(root)
    assert not config.benchmark and not config.suite
    assert "CFLAGS='-O2 -g' make" in config.build.command  # the Makefile sets no CFLAGS
    written = (root / "selector.toml").read_text()
    assert "# [[benchmark]]" in written and "no benchmark found" in result.stdout
    (root / "selector.toml").write_text("# mine\n")
    again = run_selector("init", "--yes", "--repo", str(root))
    assert_one_line_error(again, "selector.toml already exists", "never overwrites")
    assert (root / "selector.toml").read_text() == "# mine\n"


def test_doctor_names_each_missing_piece_on_one_line_with_its_fix(tmp_path):
    """valgrind not on PATH, perf forbidden by perf_event_paranoid = 3, and a program built
    without -g and stripped: three failing lines, each with the command that fixes it."""
    root = tmp_path / "project"
    commit(root, {"selector.toml": '[project]\nbinary = "prog"\n[build]\ncommand = "make prog"\n'
                                   '[[benchmark]]\nname = "run"\ncommand = "{binary}"\nmetric = "instructions"\n'
                                   '[profile]\ntool = "perf"\n'}, "configured")
    tools = tmp_path / "bin"  # this machine's tools but valgrind, and a perf that runs
    tools.mkdir()
    for program in ("git", "make", "cc", "c++"):
        (tools / program).symlink_to(shutil.which(program))
    (tools / "perf").write_text("#!/bin/sh\necho perf version 6.1\n")
    (tools / "perf").chmod(0o755)
    (tmp_path / "paranoid").write_text("3\n")
    stripped = tmp_path / "prog"
    (tmp_path / "prog.c").write_text("int main(void) { return 0; }\n")
    subprocess.run(["gcc", "-O2", "-o", str(stripped), str(tmp_path / "prog.c")], check=True)
    subprocess.run(["strip", str(stripped)], check=True)
    environment = {"PATH": str(tools), "SELECTOR_PERF_EVENT_PARANOID": str(tmp_path / "paranoid")}

    result = run_selector("doctor", "--repo", str(root), "--binary", str(stripped), env=environment)
    assert result.returncode == 1, result.stderr
    failing = [line for line in result.stdout.splitlines() if line.startswith("FAIL ")]
    assert "FAIL valgrind: valgrind: not on PATH -> apt-get install valgrind" in failing
    assert "FAIL perf: perf_event_paranoid = 3: users may not record with perf -> sudo sysctl kernel.perf_event_paranoid=1" \
        in failing
    assert any(line.startswith("FAIL symbols: ") and "stripped" in line and "-> build with -g" in line for line in failing)
    assert all(" -> " in line for line in failing)
    _, checks = doctor(root, "--binary", str(stripped), env=environment)
    assert checks["ccache (recommended)"]["status"] == "warn"  # recommended: it does not fail
    assert checks["compiler cc"]["status"] == "ok"


@pytest.mark.parametrize("makefile, expected", [
    ("CFLAGS = -O3 -Wall\n", ("", "CFLAGS='-O3 -Wall -g'")),  # a command-line value replaces theirs: keep it
    ("CFLAGS ?= -O3\n", ("CFLAGS='-O3 -g'", "")),
    ("CFLAGS += -Wall\n", ("CFLAGS=-g", "")),
    ("USERCFLAGS := -O3 $(CFLAGS)\nCFLAGS = $(USERCFLAGS)\n", ("CFLAGS=-g", "")),  # lz4's tests/Makefile
    ("lz4:\n\t$(MAKE) -C programs $@\n", ("CFLAGS=-g", "")),  # the Makefiles below decide the flags
    ("CFLAGS = -O2 $(MOREFLAGS)\n", ("", "MOREFLAGS=-g")),
    ("prog: prog.c\n", ("CFLAGS='-O2 -g'", "")),
])
def test_make_flags_add_debug_information_and_keep_the_makefile_s_own(makefile, expected):
    from perf_selector.selector.onboarding.build_recipes import make_flags

    assert make_flags(makefile, "CFLAGS")[:2] == expected


def test_the_programs_a_build_command_runs():
    from perf_selector.selector.onboarding.machine import build_programs

    zlib = ("printf '%s\\n' a.c b.c | xargs -P2 -n1 cc -O2 -g -c && cc -o minigzip *.o")
    assert build_programs(zlib, cxx=False) == ([], ["cc"])
    cmake = "cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build build --target x -j$(nproc)"
    assert build_programs(cmake, cxx=True) == (["cmake", "make"], ["cc", "c++"])
    assert build_programs("CFLAGS=-g make -C tests -j$(nproc) bench CC=clang-15", cxx=False) == (["make"], ["clang-15"])
    assert build_programs("meson setup build && meson compile -C build", cxx=False) == (["meson", "ninja"], ["cc"])


@pytest.mark.skipif(shutil.which("setarch") is None, reason="setarch is not installed")
def test_doctor_fails_a_google_benchmark_that_executes_itself_again_unless_randomisation_is_off(tmp_path):
    """Google Benchmark 1.9's main executes the program again with ASLR off, and callgrind does
    not follow: doctor says to run selector under setarch -R, and is content under it."""
    root = tmp_path / "project"
    commit(root, {"selector.toml": '[project]\nbinary = "bench"\n[build]\ncommand = "make bench"\n'
                                   '[[suite]]\nname = "gb"\nframework = "google-benchmark"\n'}, "configured")
    (tmp_path / "bench.c").write_text("void MaybeReenterWithoutASLR(int argc, char **argv) {}\nint main(void) { return 0; }\n")
    subprocess.run(["gcc", "-g", "-o", str(tmp_path / "bench"), str(tmp_path / "bench.c")], check=True)
    command = ["doctor", "--repo", str(root), "--binary", str(tmp_path / "bench"), "--format", "json"]
    row = next(c for c in json.loads(run_selector(*command).stdout)["checks"] if c["check"] == "Google Benchmark re-entry")
    assert row["status"] == "FAIL" and row["fix"].startswith("run selector under setarch -R")
    under = subprocess.run(["setarch", "-R", *selector_command(*command)],
                           capture_output=True, text=True)
    row = next(c for c in json.loads(under.stdout)["checks"] if c["check"] == "Google Benchmark re-entry")
    assert row["status"] == "ok"


def test_without_valgrind_init_times_the_benchmarks_with_enough_repetitions_on_a_pinned_cpu(tmp_path):
    root = tmp_path / "project"
    commit(root, {"CMakeLists.txt": "project(gbdemo CXX)\nadd_executable(suite_bench suite_bench.cpp)\n",
                  "suite_bench.cpp": program_text("suite_bench.cpp")}, "a Google Benchmark binary")
    tools = tmp_path / "bin"  # git, and neither valgrind nor perf
    tools.mkdir()
    (tools / "git").symlink_to(shutil.which("git"))
    result = run_selector("init", "--yes", "--repo", str(root), env={"PATH": str(tools)})
    assert result.returncode == 0, result.stderr
    config = load_config(root / "selector.toml")
    (suite,) = config.suite
    assert (suite.metric, suite.repetitions, config.profile.tool) == ("real_time", 10, "none")
    assert config.run.cpu == (str(os.cpu_count() - 1) if os.cpu_count() > 1 else None)
    assert "valgrind is not installed" in result.stdout


def test_a_benchmark_linked_to_the_project_s_shared_library_is_built_static_when_the_build_can(tmp_path):
    """libjpeg-turbo defines tjbench and tjbench-static: the static one holds the library's code."""
    from perf_selector.selector.onboarding.init_config import Measurement, initial_config

    root = tmp_path / "project"
    commit(root, {"CMakeLists.txt": "if(NOT CMAKE_BUILD_TYPE)\n  set(CMAKE_BUILD_TYPE Release)\nendif()\n"
                                    "add_library(turbo SHARED src/turbo.c)\n"
                                    "add_executable(tjbench src/tjbench.c)\nadd_executable(tjbench-static src/tjbench.c)\n",
                  "src/turbo.c": "int turbo(void) { return 1; }\n",
                  "src/tjbench.c": "int turbo(void);\nint main(void) { return turbo(); }\n"}, "two variants")
    proposal = initial_config(root, Measurement("instructions", 2, "callgrind", None))
    assert 'binary = "build/tjbench-static"' in proposal.text
    assert "--target tjbench-static" in proposal.text
    assert not any("sets CMAKE_BUILD_TYPE itself" in check for check in proposal.checks)  # a default: ours is given
