"""Scripts as benchmarks (issue 48): a repository laid out as a scripting language's, with no
build file at its top (its makefiles generated under projects/make/, a release configuration
that strips the program) and its benchmarks scripts in test/benchmark/ that the program runs.
`selector init --yes` writes a configuration that works as written: the make folder, the
override that keeps the symbol table, a suite of one benchmark a script; then calibrate,
collect and select need no hand edit, and a commit that changes one opcode's work runs the
one script that uses that opcode."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from perf_selector.selector.onboarding.init_config import Measurement, initial_config
from tests.helpers import PROGRAMS, run_selector

# premake's layout: the program is built from ../../src and written to ../../bin, stripped; its
# goal is a variable's value ($(TARGET)), which make's database gives and no pattern reads
STRIPPING_MAKEFILE = """# Release configuration, as an interpreter's generated makefile: the program is stripped.
CFLAGS ?= -O2
ALL_LDFLAGS = $(LDFLAGS) -s
TARGETDIR = ../../bin
TARGET = $(TARGETDIR)/interp

.PHONY: clean prebuild

all: $(TARGET)

$(TARGET): ../../src/interp.c | $(TARGETDIR)
\t$(CC) $(CFLAGS) -o $@ $< $(ALL_LDFLAGS)

$(TARGETDIR):
\tmkdir -p $(TARGETDIR)

clean:
\trm -f $(TARGET)
"""
SCRIPTS = {"sum": "add 200000\nadd 100000\n", "product": "mul 150000\n", "bits": "xor 120000\nadd 1000\n"}
COUNTS = Measurement("instructions", 2, "callgrind", None)


def _commit(root: Path, message: str) -> None:
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", message], cwd=root, check=True)


def _interpreter(root: Path, extra: dict[str, str] | None = None) -> Path:
    files = {"src/interp.c": (PROGRAMS / "script_interpreter.c").read_text(), "projects/make/Makefile": STRIPPING_MAKEFILE,
             "README.md": "# interp\n", "test/unit/ops.scr": "mul 10\n", "test/unit/more.scr": "add 3\n",
             **{f"test/benchmark/{name}.scr": text for name, text in SCRIPTS.items()}, **(extra or {})}
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    _commit(root, "an interpreter")
    return root


def _select_runs_the_opcodes_script_alone(root: Path) -> None:
    """One opcode's work changes (a commit): `select` runs the script that uses that opcode, alone."""
    source = root / "src" / "interp.c"
    source.write_text(source.read_text().replace("accumulator = accumulator * 3 + i;",
                                                 "accumulator = accumulator * 3 + (i ^ (i >> 2)) * 5;"))
    assert "(i >> 2)" in source.read_text()
    _commit(root, "mul: mix the index in")
    selected = run_selector("select", "HEAD", "--repo", str(root), "--format", "json")
    document = json.loads(selected.stdout)
    assert document["run"] == ["scripts/product"], [(b["name"], b["reason"]) for b in document["benchmarks"]]
    assert selected.returncode == 0, selected.stderr  # 0: some benchmark should run


def test_init_finds_the_make_folder_the_override_and_a_suite_of_the_scripts(tmp_path):
    config = initial_config(_interpreter(tmp_path / "interp"), COUNTS)
    assert "build system: make (Makefile), in projects/make/ (no build file at the top)" in config.found
    assert 'binary = "bin/interp"' in config.text
    assert "make -C projects/make -j$(nproc) ../../bin/interp ALL_LDFLAGS='$(LDFLAGS)'" in config.text
    assert "CFLAGS='-O2 -g'" in config.text  # the Makefile's default with -g
    assert 'command = "{binary} {checkout}/test/benchmark/{name}.scr"' in config.text
    assert 'names = [\n    "bits",\n    "product",\n    "sum",\n]' in config.text  # the benchmark folder's alone
    assert "isolate = false" in config.text and "CHANGE-ME" not in config.text


def test_a_benchmark_folder_of_several_languages_keeps_the_projects_own(tmp_path):
    """An interpreter compared with others (fib.scr beside fib.lua and fib.py): the suffix the
    repository holds most of is its own language."""
    others = {f"test/benchmark/{name}.{language}": "-- another language\n"
              for name in ("fib", "loop", "sum", "product") for language in ("lua", "py")}
    config = initial_config(_interpreter(tmp_path / "interp", others), COUNTS)
    assert "{name}.scr" in config.text and ".lua" not in config.text and ".py" not in config.text


@pytest.mark.slow
def test_init_calibrate_collect_select_need_no_hand_edit_and_select_runs_the_opcodes_script(tmp_path):
    root = _interpreter(tmp_path / "interp")
    initialised = run_selector("init", "--repo", str(root), "--yes")
    assert initialised.returncode == 0, initialised.stderr
    _commit(root, "selector.toml, as init wrote it")
    calibrated = run_selector("calibrate", "--rounds", "2", "--repo", str(root), "--format", "json")
    assert calibrated.returncode == 0, calibrated.stderr
    assert all(0 < row["run_seconds"] < 60 for row in json.loads(calibrated.stdout))  # each script's run, timed
    collected = run_selector("collect", "-n", "1", "--repo", str(root))
    assert collected.returncode == 0, collected.stderr
    doctor = json.loads(run_selector("doctor", "--repo", str(root), "--format", "json").stdout)
    symbols = next(check for check in doctor["checks"] if check["check"] == "symbols")
    assert symbols["status"].lower() == "ok", symbols  # the stripping release build was overridden
    _select_runs_the_opcodes_script_alone(root)


def test_calibration_says_which_benchmarks_run_too_long_to_measure_on_every_commit():
    """`calibrate` records each benchmark's run time (run_seconds) and names those over
    LONG_RUN_SECONDS with what they cost on every commit and how to make them cheaper."""
    import pandas as pd

    from perf_selector.selector.collection.calibrate import LONG_RUN_SECONDS, too_long_to_measure

    table = pd.DataFrame({"benchmark": ["scripts/sum", "scripts/fib", "wall"], "metric": ["instructions"] * 2 + ["wall_time"],
                          "repetitions": [2, 2, 10], "rounds": [10, 10, 10],
                          "run_seconds": [1.5, 24.0, LONG_RUN_SECONDS + 1]})
    lines = too_long_to_measure(table)
    assert len(lines) == 2 and lines[0].startswith("scripts/fib: one run takes 24 s under callgrind, 2 repetitions 48 s")
    assert "{suite}" in lines[0] and "rather than editing the project's script" in lines[0]
    assert lines[1].startswith("wall: one run takes 11 s, 10 repetitions 110 s")


def test_a_benchmark_program_the_build_defines_comes_before_helper_scripts(tmp_path):
    """A C++ library's benchmark program beside a folder of helper scripts in another language
    (simdutf's benchmarks/competition/.../scripts/*.py): init chooses the program."""
    root = tmp_path / "library"
    files = {"CMakeLists.txt": "cmake_minimum_required(VERSION 3.10)\nproject(lib CXX)\n"
                               "add_executable(throughput benchmarks/throughput.cpp)\n",
             "benchmarks/throughput.cpp": "int main() { return 0; }\n",
             "benchmarks/tools/scripts/plot.py": "print(1)\n", "benchmarks/tools/scripts/table.py": "print(2)\n"}
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    _commit(root, "a library")
    config = initial_config(root, COUNTS)
    assert config.found[1].startswith("a benchmark program: benchmarks/throughput.cpp (target throughput")
    assert '[[benchmark]]\nname = "throughput"' in config.text and 'name = "scripts"' not in config.text


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is needed")
def test_a_program_over_the_projects_shared_library_has_the_library_analysed(tmp_path):
    """pocketpy's layout: CMake builds the interpreter as a shared library and `main`, a thin
    program over it, runs the scripts.  Analysing `main` would see none of the interpreter's
    code: init (from CMake's codemodel) analyses the library and runs the program from the
    checkout, and a change of one opcode's work runs that script's benchmark alone."""
    root = _interpreter(tmp_path / "interp", {
        "CMakeLists.txt": "cmake_minimum_required(VERSION 3.10)\nproject(interp C)\n"
                          "add_library(interp SHARED src/interp.c)\ntarget_compile_definitions(interp PRIVATE main=interp_main)\n"
                          "add_executable(main src/main.c)\ntarget_link_libraries(main interp)\n",
        "src/main.c": "int interp_main(int argc, char **argv);\nint main(int argc, char **argv) { return interp_main(argc, argv); }\n",
        "projects/make/Makefile": "# not this build\n"})
    initialised = run_selector("init", "--repo", str(root), "--yes")
    assert initialised.returncode == 0, initialised.stderr
    config = (root / "selector.toml").read_text()
    assert 'binary = "build/libinterp.so"' in config, config
    assert 'command = "{checkout}/build/main {checkout}/test/benchmark/{name}.scr"' in config, config
    _commit(root, "selector.toml, as init wrote it")
    for step in (["calibrate", "--rounds", "1"], ["collect", "-n", "1"]):
        ran = run_selector(*step, "--repo", str(root))
        assert ran.returncode == 0, ran.stderr
    _select_runs_the_opcodes_script_alone(root)
    # collected, the change is labelled, and it holds when re-measured in perturbed run contexts:
    # those build the commit to have build/main beside the stored library
    collected = run_selector("collect", "-n", "1", "--repo", str(root))
    assert collected.returncode == 0, collected.stderr
    labels = json.loads(run_selector("labels", "--repo", str(root), "--format", "json").stdout)
    product = [row for row in labels if row["benchmark"] == "scripts/product" and row["label"] is not None]
    assert [row["label"] for row in product] == ["changed"], labels
    assert "perturbed" in product[0]["reason"] and "held" in product[0]["reason"], product[0]
