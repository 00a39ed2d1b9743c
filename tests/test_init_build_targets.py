"""The build target `selector init` writes, read from the build files that make the
benchmark program (issue 38): a top-level Makefile rule whose target is the program's
path, a CMake program whose benchmark source registers benchmarks for a harness whose
main is elsewhere, a Meson executable(); and `selector doctor`, which checks the target
before anything is built.  Real repositories made here with git, built by real make,
cmake and gcc."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from perf_selector.selector.onboarding.build_target import build_target_finding
from perf_selector.selector.onboarding.machine import FAIL, OK, WARN
from tests.helpers import run_selector
from tests.helpers.onboarding import FOO_PROJECT, built, commit, doctor, init, needs_cmake, needs_valgrind

HASH_H = "#ifndef HASH_H\n#define HASH_H\nunsigned long hash(const unsigned char *data, unsigned long n);\n#endif\n"
HASH_C = ('#include "hash.h"\n'
          "unsigned long hash(const unsigned char *data, unsigned long n) {\n"
          "    unsigned long h = 5381;\n"
          "    for (unsigned long i = 0; i < n; i++) h = h * 33 + data[i];\n"
          "    return h;\n}\n")
BENCH_HASH = ('#include <stdio.h>\n#include "hash.h"\n'
              "static unsigned char buffer[4096];\n"
              "int main(void) {\n"
              "    unsigned long sum = 0;\n"
              "    for (unsigned long i = 0; i < sizeof buffer; i++) buffer[i] = (unsigned char)(i * 7);\n"
              "    for (int round = 0; round < 200; round++) sum += hash(buffer, sizeof buffer);\n"
              '    printf("%lu\\n", sum);\n    return 0;\n}\n')
# bench/ has no Makefile: the top one's rule names the program by its path
MAKEFILE = ("CFLAGS = -O2 -Wall\n\n"
            "all: bench/bench_hash\n\n"
            "bench/bench_hash: bench/bench_hash.c src/hash.c src/hash.h\n"
            "\t$(CC) $(CFLAGS) -Isrc -o $@ bench/bench_hash.c src/hash.c\n\n"
            "clean:\n\trm -f bench/bench_hash\n\n.PHONY: all clean\n")
HASH_PROJECT = {"Makefile": MAKEFILE, "src/hash.h": HASH_H, "src/hash.c": HASH_C, "bench/bench_hash.c": BENCH_HASH,
                ".gitignore": "bench/bench_hash\n.selector/\n", "README.md": "# hash\n"}


def test_a_top_level_makefile_rule_named_by_the_program_s_path_is_the_goal(tmp_path):
    """`bench/bench_hash: ...` at the top: `make bench/bench_hash`, not `make -C bench
    bench_hash` (bench/ has no Makefile, and make's built-in rule would leave src/ out)."""
    root = tmp_path / "project"
    sha = commit(root, HASH_PROJECT, "hash and its benchmark")
    config, result = init(root)
    assert "a benchmark program: bench/bench_hash.c (target bench/bench_hash)" in result.stderr
    assert config.build.command == "make -j$(nproc) bench/bench_hash CFLAGS='-O2 -Wall -g'"
    assert config.project.binary == "bench/bench_hash"
    assert [(b.name, b.command) for b in config.benchmark] == [("bench_hash", "{binary}")]
    binary = built(root, config, sha)
    assert binary.is_file()
    ran = subprocess.run([str(binary)], capture_output=True, text=True, check=True)
    assert int(ran.stdout) > 0
    assert build_target_finding(root, config.build.command, list(HASH_PROJECT)).status == OK


@pytest.mark.parametrize("makefile, source, command, binary", [
    # a rule in the source's own folder, as before
    ({"tests/Makefile": "fullbench : fullbench.c\n\t$(CC) -o $@ fullbench.c\n"}, "tests/fullbench.c",
     "CFLAGS='-O2 -g' make -C tests -j$(nproc) fullbench", "tests/fullbench"),
    # a top-level rule named otherwise, whose prerequisites name the source
    ({"Makefile": "speed: perf/speed_test.c\n\t$(CC) -o $@ $^\n"}, "perf/speed_test.c",
     "CFLAGS='-O2 -g' make -j$(nproc) speed", "speed"),
    # no rule at all: make's built-in rule, run where the Makefile is
    ({"Makefile": "lib.o: lib.c\n"}, "bench/bench_x.c", "CFLAGS='-O2 -g' make -j$(nproc) bench/bench_x",
     "bench/bench_x"),
])
def test_the_make_goal_is_the_rule_that_makes_the_program(tmp_path, makefile, source, command, binary):
    root = tmp_path / "project"
    commit(root, {**makefile, source: "int main(void) { return 0; }\n", "lib.c": "int f(void) { return 1; }\n"}, "one")
    config, _ = init(root)
    assert (config.build.command, config.project.binary) == (command, binary)


HARNESS_H = ("#include <stddef.h>\n"
             "typedef void (*bench_fn)(long iterations);\n"
             "int register_benchmark(const char *name, bench_fn fn);\n"
             "#define BENCHMARK(f) static int registered_##f = register_benchmark(#f, f)\n")
HARNESS_CC = ('#include <cstdio>\n#include "util/benchmark.h"\n'
              "static const char *names[64]; static bench_fn fns[64]; static int count;\n"
              "int register_benchmark(const char *name, bench_fn fn) { names[count] = name; fns[count] = fn; "
              "return count++; }\n"
              'int main() { for (int i = 0; i < count; i++) { fns[i](1000); std::printf("%s\\n", names[i]); } '
              "return 0; }\n")
FOO_BENCHMARK = ('#include "util/benchmark.h"\n#include "lib/foo.h"\n'
                 "static void BM_Foo(long n) { volatile long s = 0; for (long i = 0; i < n; i++) s += foo(i); }\n"
                 "BENCHMARK(BM_Foo);\n")
BAR_BENCHMARK = FOO_BENCHMARK.replace("BM_Foo", "BM_Bar").replace("foo(i)", "foo(i + 1)")


@needs_cmake
def test_a_cmake_program_whose_benchmark_source_has_no_main_is_its_target(tmp_path):
    """The harness's main (util/benchmark.cc) is shared by every benchmark program: the
    program is the add_executable that names the source registering the benchmarks."""
    root = tmp_path / "project"
    files = {**FOO_PROJECT, "util/benchmark.h": HARNESS_H, "util/benchmark.cc": HARNESS_CC,
             "lib/foo_benchmark.cc": FOO_BENCHMARK}
    sha = commit(root, files, "foo and its benchmark")
    config, result = init(root)
    assert "a benchmark program: lib/foo_benchmark.cc (target foo_benchmark, naming 1 benchmark)" in result.stderr
    assert "util/benchmark.cc" not in result.stderr  # the harness is no benchmark of its own
    assert config.build.command.endswith("--target foo_benchmark -j$(nproc)")
    assert config.project.binary == "build/foo_benchmark"
    binary = built(root, config, sha)
    ran = subprocess.run([str(binary)], capture_output=True, text=True, check=True)
    assert ran.stdout.split() == ["BM_Foo"]
    _, checks = doctor(root, "--binary", str(binary))
    assert checks["build target"]["status"] == "ok", checks["build target"]
    assert checks["build target"]["found"] == "CMake defines foo_benchmark"


def test_among_several_harnessed_cmake_programs_each_benchmark_source_has_its_own(tmp_path):
    root = tmp_path / "project"
    commit(root, {
        "CMakeLists.txt": "project(foo CXX)\n"
                          "add_executable(bar_benchmark util/benchmark.cc lib/bar_benchmark.cc)\n"
                          "add_executable(foo_benchmark util/benchmark.cc lib/foo_benchmark.cc)\n",
        "util/benchmark.h": HARNESS_H, "util/benchmark.cc": HARNESS_CC,
        "lib/foo_benchmark.cc": FOO_BENCHMARK, "lib/bar_benchmark.cc": BAR_BENCHMARK,
    }, "two benchmark programs")
    config, result = init(root)
    assert "lib/bar_benchmark.cc (target bar_benchmark, naming 1 benchmark)" in result.stderr
    assert "lib/foo_benchmark.cc: a benchmark program, target foo_benchmark" in (root / "selector.toml").read_text()
    assert "util/benchmark.cc" not in result.stderr
    assert config.project.binary == "build/bar_benchmark"


def test_a_meson_executable_is_the_target(tmp_path):
    root = tmp_path / "project"
    commit(root, {
        "meson.build": "project('hash', 'c')\nsubdir('bench')\n",
        "bench/meson.build": "executable('bench_hash', 'bench_hash.c', '../src/hash.c',\n"
                             "           include_directories: include_directories('../src'))\n",
        "src/hash.h": HASH_H, "src/hash.c": HASH_C, "bench/bench_hash.c": BENCH_HASH,
    }, "meson")
    config, result = init(root)
    assert "bench/bench_hash.c (target bench_hash)" in result.stderr
    assert config.build.command == "meson setup build --buildtype=debugoptimized && meson compile -C build bench_hash"
    assert config.project.binary == "build/bench/bench_hash"
    finding = build_target_finding(root, config.build.command, ["meson.build", "bench/meson.build"])
    assert (finding.status, finding.found) == (OK, "Meson defines bench_hash")
    if shutil.which("meson"):
        built(root, config, subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                                           check=True).stdout.strip())



@pytest.mark.skipif(shutil.which("meson") is None or shutil.which("ninja") is None, reason="meson and ninja are needed")
def test_a_meson_program_declared_in_a_foreach_is_the_target_meson_names(tmp_path):
    """Meson's introspection (not the build files read by pattern) names the benchmark program
    that a `foreach` over a list declares beside the harness util/benchmark.cc, and where it
    is written; init's command builds it, and it runs its registered benchmark."""
    root = tmp_path / "project"
    sha = commit(root, {
        "meson.build": "project('foo', 'cpp')\n"
                       "benchmarks = ['foo_benchmark']\n"
                       "foreach name : benchmarks\n"
                       "  executable(name, 'lib/' + name + '.cc', 'util/benchmark.cc', 'lib/foo.cc')\n"
                       "endforeach\n",
        "lib/foo.h": "long foo(long x);\n", "lib/foo.cc": "long foo(long x) { return x * 3 + 1; }\n",
        "util/benchmark.h": HARNESS_H, "util/benchmark.cc": HARNESS_CC, "lib/foo_benchmark.cc": FOO_BENCHMARK,
    }, "foo and its benchmark, declared in a foreach")
    config, result = init(root)
    assert "a benchmark program: lib/foo_benchmark.cc (target foo_benchmark, naming 1 benchmark)" in result.stderr, \
        result.stderr
    assert "util/benchmark.cc" not in result.stderr  # the harness is no benchmark of its own
    assert config.build.command == "meson setup build --buildtype=debugoptimized && meson compile -C build foo_benchmark"
    assert config.project.binary == "build/foo_benchmark"
    binary = built(root, config, sha)
    ran = subprocess.run([str(binary)], capture_output=True, text=True, check=True)
    assert ran.stdout.split() == ["BM_Foo"]

def test_doctor_fails_a_make_goal_no_makefile_has_before_anything_is_built(tmp_path):
    """What init wrote before: `make -C bench bench_hash` where bench/ has no Makefile."""
    root = tmp_path / "project"
    commit(root, HASH_PROJECT, "hash and its benchmark")
    (root / "selector.toml").write_text('[project]\nbinary = "bench/bench_hash"\n[build]\n'
                                        'command = "make -C bench -j$(nproc) bench_hash"\n'
                                        '[[benchmark]]\nname = "bench_hash"\ncommand = "{binary}"\n')
    result, checks = doctor(root)
    assert result.returncode == 1
    target = checks["build target"]
    assert target["status"] == "FAIL"
    assert target["found"] == ("bench_hash: bench/ has no Makefile (make would only use its built-in rules); "
                               "the top Makefile has bench/bench_hash")
    assert target["fix"] == "in [build] command: make bench/bench_hash (and [project] binary bench/bench_hash)"
    assert not (root / "bench" / "bench_hash").exists()  # nothing was built
    text = run_selector("doctor", "--repo", str(root))
    assert "FAIL build target: bench_hash: bench/ has no Makefile" in text.stdout


def test_doctor_names_the_rules_nearby_when_the_makefile_has_no_rule_for_the_goal(tmp_path):
    root = tmp_path / "project"
    commit(root, HASH_PROJECT, "hash and its benchmark")
    finding = build_target_finding(root, "make -j$(nproc) bench_hash CFLAGS=-g", list(HASH_PROJECT))
    assert finding.status == FAIL
    assert finding.found == "bench_hash: no rule makes it in the top folder; the top Makefile has bench/bench_hash"
    # a prerequisite another step makes (generated) only warns; so does a Makefile a configure step writes
    broken = {**HASH_PROJECT, "Makefile": MAKEFILE.replace("src/hash.h\n", "src/hash.h src/config.h\n")}
    commit(root, broken, "a generated header")
    assert build_target_finding(root, "make bench/bench_hash", list(broken)).status == WARN
    assert build_target_finding(root, "./configure && make bench_hash", list(broken)) is None


@pytest.mark.parametrize("command, status, found", [
    ("cmake -S . -B build && cmake --build build --target foo_benchmark -j$(nproc)", OK, "CMake defines foo_benchmark"),
    ("cmake -S . -B build && cmake --build build --target benchmark", FAIL,
     "benchmark: no CMake file defines or names it; the CMake files define foo_benchmark"),
    ("cmake -S . -B build && cmake --build build --target db_bench", WARN,
     "not defined by name: db_bench (named in CMakeLists.txt: made through a variable or a function of the project's?)"),
    ("cmake -S . -B build && cmake --build build", None, None),
])
def test_doctor_looks_for_a_cmake_target_in_the_build_files(tmp_path, command, status, found):
    root = tmp_path / "project"
    files = {"CMakeLists.txt": "project(foo CXX)\nadd_library(foo STATIC lib/foo.cc)\n"
                               "add_executable(foo_benchmark util/benchmark.cc lib/foo_benchmark.cc)\n"
                               "# a function of the project's makes db_bench\nfoo_benchmark_program(\"benchmarks/db_bench.cc\")\n"}
    commit(root, files, "cmake")
    finding = build_target_finding(root, command, list(files))
    assert ((finding.status, finding.found) if finding else (None, None)) == (status, found)


@needs_valgrind
@pytest.mark.slow
def test_a_top_level_makefile_project_goes_from_init_to_select_with_no_hand_edit(tmp_path):
    """init --yes, calibrate, collect -n 4, select on a C project whose benchmark is built by
    the top Makefile's `bench/bench_hash:` rule; doctor then exits 0."""
    root = tmp_path / "project"
    commit(root, HASH_PROJECT, "hash and its benchmark")
    commit(root, {"src/hash.c": HASH_C.replace("h * 33 + data[i]", "(h << 5) + h + data[i]")}, "shift for multiply")
    commit(root, {"README.md": "# hash, documented\n"}, "documentation only")
    commit(root, {"src/hash.c": HASH_C.replace("i++) h", "i += 2) h")}, "hash every other byte")
    commit(root, {"bench/bench_hash.c": BENCH_HASH.replace("round < 200", "round < 100")}, "half the rounds")
    ran = run_selector("init", "--yes", "--repo", str(root))
    assert ran.returncode == 0, ran.stderr
    for step in (["calibrate", "--rounds", "1"], ["collect", "-n", "4"], ["select", "--format", "json"]):
        ran = run_selector(*step, "--repo", str(root))
        assert ran.returncode == 0, (step, ran.stderr)
    assert "bench_hash" in ran.stdout  # HEAD changed the benchmark's own loop
    after, checks = doctor(root)
    assert after.returncode == 0, after.stdout
    assert checks["build target"]["status"] == "ok"
    assert checks["labels"]["status"] == "ok", checks["labels"]


@needs_cmake
def test_the_benchmark_program_the_readme_runs_comes_before_its_siblings(tmp_path):
    """simdutf's layout: several benchmark programs in benchmarks/ (stream.cpp sorts first by
    name), and a README that says which is the default by running it
    (`./build/benchmarks/benchmark --procedure ...`): init chooses that one."""
    root = tmp_path / "project"
    program = "int main(int argc, char **argv) { return argc > 5; }\n"
    commit(root, {
        "CMakeLists.txt": "cmake_minimum_required(VERSION 3.10)\nproject(lib CXX)\nadd_subdirectory(benchmarks)\n",
        "benchmarks/CMakeLists.txt": "add_executable(stream stream.cpp)\nadd_executable(benchmark benchmark.cpp)\n",
        "benchmarks/stream.cpp": program, "benchmarks/benchmark.cpp": program,
        "README.md": "# lib\n\n## Benchmarks\n\nOur default benchmarks are in the `benchmark` command:\n\n```\n"
                     "cmake -B build -D LIB_BENCHMARKS=ON\ncmake --build build\n"
                     "./build/benchmarks/benchmark --procedure convert --input-file file.txt\n```\n",
    }, "a library with two benchmark programs")
    config, result = init(root)
    assert result.stderr.splitlines()[1] == "found: a benchmark program: benchmarks/benchmark.cpp (target benchmark)", \
        result.stderr
    assert config.project.binary == "build/benchmarks/benchmark"
