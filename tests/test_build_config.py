"""A changed build configuration is what the build ran (the compiler flags the binary
records), not a file named like a build file: real gcc builds in temporary git
repositories, collected and selected through the library."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pyarrow as pa
import pytest

from perf_selector.collectors.build_config import (
    FILES, FLAGS, binary_config, build_changed, configs_differ, files_config, kind_of, recorded_flags,
)
from perf_selector.collectors.repository import Repository
from perf_selector.selector.collection.collect import collect, upgrade_build_configs
from perf_selector.selector.config import load_config
from perf_selector.selector.onboarding.sample_history import commit_all
from perf_selector.selector.selection.selection import select
from perf_selector.storage.history import load_history, with_current_build_configs
from perf_selector.storage.store import Store

MAIN_C = """#include <stdio.h>
#include <stdlib.h>

static long work(long n)
{
    long sum = 0;
    for (long i = 0; i < n; i++)
        sum += i * i % 7;
    return sum;
}

int main(int argc, char **argv)
{
    printf("%ld\\n", work(argc > 1 ? atol(argv[1]) : 1000));
    return 0;
}
"""
MAKEFILE = "CC ?= cc\nCFLAGS = {flags}\n\nprog: main.c\n\t$(CC) $(CFLAGS) -o prog main.c\n"
CMAKELISTS = "cmake_minimum_required(VERSION 3.10)\nproject(prog C)\nadd_executable(prog main.c)\n"
SELECTOR_TOML = """[project]
binary = "prog"

[build]
command = "make -s prog"
timeout = 120
unaffected = [".github/*", "cmake/*"]

[[benchmark]]
name = "work"
command = "{binary} 1000"
metric = "wall_time"
repetitions = 1
warmup = 0

[profile]
tool = "none"
"""


def make_project(root: Path, flags: str) -> Repository:
    root.mkdir(parents=True)
    (root / "main.c").write_text(MAIN_C)
    (root / "Makefile").write_text(MAKEFILE.format(flags=flags))
    (root / "selector.toml").write_text(SELECTOR_TOML)
    (root / ".gitignore").write_text("prog\n.selector/\n")
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    commit_all(root, "Initial project")
    return Repository.open(root)


def edit(root: Path, relative: str, text: str, message: str) -> str:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return commit_all(root, message)


def set_flags(root: Path, flags: str, message: str) -> str:
    return edit(root, "Makefile", MAKEFILE.format(flags=flags), message)


def collected(root: Path) -> tuple[Store, dict[str, str]]:
    """Collect every commit of the project (no ccache, so each build is the compiler's own); sha -> build_config."""
    config = load_config(root / "selector.toml")
    store = Store(root / ".selector")
    summary = collect(root, config, store, Repository.open(root).commits(), cache=False)
    assert not summary.failures, summary.failures
    commits = store.read("commits")
    return store, dict(zip(commits["sha"].to_pylist(), commits["build_config"].to_pylist()))


@pytest.fixture(scope="module")
def with_debug_info(tmp_path_factory):
    """A Make-built project compiled with -g: commits that touch build files the build does
    not read, then commits that change the flags it compiles with."""
    root = tmp_path_factory.mktemp("flags") / "project"
    make_project(root, "-O2 -g")
    shas = {"initial": Repository.open(root).resolve("HEAD")}
    shas["cmake"] = edit(root, "CMakeLists.txt", CMAKELISTS, "Add a CMake build")
    shas["cmake-flags"] = edit(root, "CMakeLists.txt", CMAKELISTS + 'set(CMAKE_C_FLAGS "-O3 -march=native")\n',
                               "CMake: build at -O3")
    shas["cmake-module"] = edit(root, "cmake/warnings.cmake", "add_compile_options(-Wall)\n", "A CMake module")
    shas["O3"] = set_flags(root, "-O3 -g", "Build at -O3")
    shas["no-inline"] = set_flags(root, "-O3 -g -fno-inline", "Build without inlining")
    shas["debug-level"] = set_flags(root, "-O3 -g3 -fno-inline", "More debug information")
    store, configs = collected(root)
    return root, store, shas, configs


def test_a_build_file_the_build_does_not_read_changes_no_build_configuration(with_debug_info):
    root, store, shas, configs = with_debug_info
    assert all(kind_of(configs[sha]) == FLAGS for sha in shas.values())
    # CMakeLists.txt and a CMake module: named like build files, never read by `make prog`
    assert configs[shas["initial"]] == configs[shas["cmake"]] == configs[shas["cmake-flags"]] == configs[shas["cmake-module"]]
    # the flags the Makefile compiles with
    assert configs[shas["O3"]] != configs[shas["cmake-module"]]
    assert configs[shas["no-inline"]] != configs[shas["O3"]]
    # -g3 changes the debug information, not the code
    assert configs[shas["debug-level"]] == configs[shas["no-inline"]]


def test_the_feature_follows_the_recorded_flags(with_debug_info):
    from perf_selector.features.builder import FeatureBuilder

    root, store, shas, configs = with_debug_info
    builder = FeatureBuilder(load_history(store))
    order = list(shas.values())
    changed = {name: builder.view(sha, old, "work", 1).build_config_changed
               for name, sha, old in zip(list(shas)[1:], order[1:], order)}
    assert changed == {"cmake": False, "cmake-flags": False, "cmake-module": False, "O3": True, "no-inline": True,
                       "debug-level": False}


def test_select_forces_runs_for_new_flags_only(with_debug_info, tmp_path):
    """`select` on a commit built by select, and on a given binary built in the developer's
    own checkout (other paths than collect's worktrees): a CMake-only commit is decided by
    the model (or its absence), a flags commit runs everything for its build configuration."""
    root, store, shas, configs = with_debug_info
    config = load_config(root / "selector.toml")
    subprocess.run(["git", "checkout", "-q", "-b", "cmake-only", shas["cmake-module"]], cwd=root, check=True)
    cmake_only = edit(root, "CMakeLists.txt", CMAKELISTS + 'set(CMAKE_C_FLAGS "-O0")\n', "CMake: debug build")
    built = select(root, config, store, cmake_only)
    assert built.benchmarks[0].against == shas["cmake-module"]
    assert "build configuration" not in built.benchmarks[0].reason
    subprocess.run(["make", "-s", "-B", "prog"], cwd=root, check=True)
    given = select(root, config, store, cmake_only, binary=root / "prog")
    assert "build configuration" not in given.benchmarks[0].reason

    flags = set_flags(root, "-O1 -g", "Build at -O1")
    assert "build configuration" in select(root, config, store, flags).benchmarks[0].reason
    subprocess.run(["make", "-s", "-B", "prog"], cwd=root, check=True)
    assert "build configuration" in select(root, config, store, flags, binary=root / "prog").benchmarks[0].reason
    subprocess.run(["git", "checkout", "-q", "main"], cwd=root, check=True)


def test_without_debug_information_the_build_files_the_build_reads_stand_in(tmp_path):
    root = tmp_path / "project"
    make_project(root, "-O2")
    shas = {"initial": Repository.open(root).resolve("HEAD")}
    shas["cmake-module"] = edit(root, "cmake/flags.cmake", "set(CMAKE_C_FLAGS -O3)\n", "CMake module (unaffected path)")
    shas["O3"] = set_flags(root, "-O3", "Build at -O3")
    shas["debug"] = set_flags(root, "-O3 -g", "Build with debug information")
    shas["debug-O2"] = set_flags(root, "-O2 -g", "Back to -O2")
    store, configs = collected(root)
    kinds = {name: kind_of(configs[sha]) for name, sha in shas.items()}
    assert kinds == {"initial": FILES, "cmake-module": FILES, "O3": FILES, "debug": FLAGS, "debug-O2": FLAGS}
    assert configs[shas["cmake-module"]] == configs[shas["initial"]]  # under `unaffected`: not read by the build
    assert configs[shas["O3"]] != configs[shas["cmake-module"]]  # the Makefile the build reads
    # files -> flags where -g was turned on: two kinds say nothing about each other
    assert not configs_differ(configs[shas["debug"]], configs[shas["O3"]])
    assert configs_differ(configs[shas["debug-O2"]], configs[shas["debug"]])
    toolchain = "cc (Debian 12.2.0-14) 12.2.0"
    assert not build_changed((configs[shas["debug"]], toolchain), (configs[shas["O3"]], toolchain))
    assert build_changed((configs[shas["debug"]], toolchain), (configs[shas["debug"]], "cc 13"))


def test_digests_without_a_kind_are_unknown_and_stores_are_brought_up_to_date(with_debug_info, tmp_path):
    """A store collected before digests had a kind: reading it gives each commit its binary's
    flags, `collect` rewrites the rows (files for a binary without debug information), and
    nothing counts as changed where an old digest meets a new one."""
    import shutil

    root, store, shas, configs = with_debug_info
    legacy = "0123456789abcdef"
    assert kind_of(legacy) is None and not configs_differ(configs[shas["O3"]], legacy) and not configs_differ(legacy, legacy)
    copy = Store(shutil.copytree(store.root, tmp_path / "store"))
    for sha in (shas["initial"], shas["O3"]):
        row = copy.read_one("commits", sha)
        copy.write("commits", sha, row.set_column(row.column_names.index("build_config"), "build_config",
                                                  pa.array([legacy], pa.large_string())))
    read = load_history(copy).commits
    assert dict(zip(read["sha"].to_pylist(), read["build_config"].to_pylist())) == configs
    assert upgrade_build_configs(copy, Repository.open(root), load_config(root / "selector.toml")) == 2
    assert copy.read_one("commits", shas["O3"])["build_config"][0].as_py() == configs[shas["O3"]]
    assert upgrade_build_configs(copy, Repository.open(root), load_config(root / "selector.toml")) == 0
    # only the commits asked for are read (select reads the few it compares)
    commits = pa.table({"sha": ["a", "b"], "build_config": [legacy, legacy]})
    binary = copy.binary_lookup(["a", "b"], [copy.read_one("commits", shas["O3"])["binary_sha256"][0].as_py()] * 2)
    assert with_current_build_configs(commits, binary, only=["b"])["build_config"].to_pylist() == [legacy, configs[shas["O3"]]]


def test_files_digest_leaves_out_unaffected_paths():
    listing = "\n".join(f"100644 blob {blob}\t{path}" for blob, path in [
        ("a" * 40, "Makefile"), ("b" * 40, "build/cmake/CMakeLists.txt"), ("c" * 40, "src/main.c")])
    moved = listing.replace("b" * 40, "d" * 40)
    patterns = ["Makefile", "CMakeLists.txt"]
    assert files_config(listing, patterns, []) != files_config(moved, patterns, [])
    assert files_config(listing, patterns, ["build/*"]) == files_config(moved, patterns, ["build/*"])
    assert files_config(listing, patterns, []).startswith("files:")


@pytest.mark.parametrize("flags", ["-gdwarf-4", "-gdwarf-5", "-gdwarf-5 -gz=zlib", "-gdwarf-4 -gstrict-dwarf -fPIC -shared"])
def test_the_producers_read_are_pyelftools_producers(tmp_path, flags):
    """The unit reader (top DIEs only) against pyelftools' full DWARF parser, over DWARF 4
    and 5, compressed sections, a shared library; the static binary with no debug
    information records nothing."""
    from elftools.elf.elffile import ELFFile

    from perf_selector.collectors.build_config import _compile_units, _Elf

    sources = []
    for index in range(3):
        sources.append(tmp_path / f"unit{index}.c")
        sources[-1].write_text(f"int unit{index}(int x) {{ return x * {index + 2}; }}\n" + ("int main(void) { return unit0(1); }\n"
                                                                                             if index == 0 else ""))
    (tmp_path / "unit0.c").write_text("int unit1(int); int unit2(int);\n" + sources[0].read_text())
    binary = tmp_path / "binary"
    subprocess.run(["gcc", "-O2", *flags.split(), "-o", str(binary), *map(str, sources)], check=True, capture_output=True)
    with open(binary, "rb") as handle:
        dwarf = ELFFile(handle).get_dwarf_info()
        expected = [(cu.get_top_DIE().attributes["DW_AT_producer"].value.decode(),
                     cu.get_top_DIE().attributes["DW_AT_comp_dir"].value.decode()) for cu in dwarf.iter_CUs()]
    assert _compile_units(_Elf(binary.read_bytes())) == expected
    assert kind_of(binary_config(binary)) == FLAGS
    assert any("-O2" in line for line in recorded_flags(binary))
    assert not any(" -g" in line for line in recorded_flags(binary))
    stripped = tmp_path / "stripped"
    subprocess.run(["gcc", "-O2", "-o", str(stripped), *map(str, sources)], check=True, capture_output=True)
    assert binary_config(stripped) is None and recorded_flags(stripped) == []


def test_the_checkout_path_is_not_part_of_the_flags(tmp_path):
    """A recorded option that names a path of the checkout (here -fprofile-dir) gives one
    digest wherever the checkout is, a worktree slot of collect's or the developer's own."""
    digests = []
    for place in ("/selector-worktrees/0123456789ab/slot-0", "/selector-worktrees/0123456789ab/slot-1", "/home/dev/project"):
        checkout = Path(str(tmp_path) + place)
        checkout.mkdir(parents=True)
        (checkout / "main.c").write_text(MAIN_C)
        subprocess.run(["gcc", "-O2", "-g", f"-fprofile-dir={checkout}/profiles", "-o", "prog", "main.c"], cwd=checkout,
                       check=True, capture_output=True)
        assert any(f"{checkout}/profiles" in line for line in _raw_producers(checkout / "prog"))
        digests.append(binary_config(checkout / "prog", roots=[checkout]))
        assert digests[-1] == binary_config(checkout / "prog")  # the unit's own directory: dropped without being told
    assert len(set(digests)) == 1
    (tmp_path / "other").mkdir()
    subprocess.run(["gcc", "-O2", "-g", "-fprofile-dir=/elsewhere/profiles", "-o", str(tmp_path / "other" / "prog"),
                    str(checkout / "main.c")], check=True, capture_output=True)
    assert binary_config(tmp_path / "other" / "prog") != digests[0]


def _raw_producers(binary: Path) -> list[str]:
    from perf_selector.collectors.build_config import _compile_units, _Elf

    return [producer for producer, _ in _compile_units(_Elf(binary.read_bytes()))]
