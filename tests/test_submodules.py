"""Submodules in build worktrees (collectors.submodules): real git, real submodules, real builds.

The project: app/main.c calls lib_value() of the submodule third_party/lib, whose lib.c
calls inner_value() of its own submodule inner (nested).  The Makefile compiles what is
there: without the submodule, main() returns 0; with it, 1 + 10 (lib at L1) or 2 + 10 (L2).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import NamedTuple

import pytest

from perf_selector.collectors.build_config import binary_config
from perf_selector.collectors.builds import OK, BuildResult, CompilerCache, Worktree, find_compiler_cache, run_build
from perf_selector.collectors.repository import Repository
from tests.helpers import run_selector

IDENTITY = {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.com", "GIT_COMMITTER_NAME": "a",
            "GIT_COMMITTER_EMAIL": "a@example.com"}
MAKEFILE = """\
SOURCES := main.c $(wildcard third_party/lib/lib.c third_party/lib/inner/inner.c)
CFLAGS := -g -O1 $(if $(filter third_party/lib/lib.c,$(SOURCES)),-DHAVE_LIB)
prog: $(SOURCES:.c=.o)
\tcc -o $@ $^
%.o: %.c
\tcc $(CFLAGS) -c -o $@ $<
"""
MAIN = """\
#ifdef HAVE_LIB
int lib_value(void);
#else
static int lib_value(void) { return 0; }
#endif
int main(void) { return lib_value(); }
"""


def git(root: Path, *arguments: str) -> str:
    # file transport for the test's own `submodule add` and `update` (git >= 2.38 refuses it by default)
    return subprocess.run(["git", "-c", "protocol.file.allow=always", "-C", str(root), *arguments], check=True,
                          capture_output=True, text=True, env={**os.environ, **IDENTITY}).stdout.strip()


def commit(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD")


def new_repository(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    for name, text in files.items():
        (root / name).write_text(text)
    return root


@pytest.fixture
def project(tmp_path) -> tuple[Path, dict[str, str]]:
    """app with third_party/lib (with its submodule inner), and commits by name: L1 and L2
    move lib's gitlink, none drops the submodule."""
    inner = new_repository(tmp_path / "inner", {"inner.c": "int inner_value(void) { return 10; }\n"})
    commit(inner, "inner")
    lib = new_repository(tmp_path / "lib", {"lib.c": "int inner_value(void);\nint lib_value(void) { return 1 + inner_value(); }\n"})
    git(lib, "submodule", "add", "-q", str(inner), "inner")
    lib_1 = commit(lib, "lib 1")
    (lib / "lib.c").write_text("int inner_value(void);\nint lib_value(void) { return 2 + inner_value(); }\n")
    lib_2 = commit(lib, "lib 2")
    app = new_repository(tmp_path / "app", {"Makefile": MAKEFILE, "main.c": MAIN, ".gitignore": "*.o\nprog\n"})
    git(app, "submodule", "add", "-q", str(lib), "third_party/lib")
    git(app, "submodule", "update", "-q", "--init", "--recursive")
    git(app / "third_party" / "lib", "checkout", "-q", lib_1)
    commits = {"L1": commit(app, "lib at 1")}
    git(app / "third_party" / "lib", "checkout", "-q", lib_2)
    commits["L2"] = commit(app, "lib at 2")
    git(app, "rm", "-q", "-r", "third_party/lib")
    git(app, "rm", "-q", "-f", ".gitmodules")
    commits["none"] = commit(app, "no submodule")
    git(app, "checkout", "-q", commits["L2"])
    git(app, "submodule", "update", "-q", "--init", "--recursive")
    return app, commits


class Built(NamedTuple):
    status: int  # the built program's exit status (-1: not built)
    program: bytes
    result: BuildResult
    submodules: list[str]  # the paths checked out
    config: str | None  # collectors.build_config's digest of the binary


def build(repository: Repository, sha: str, slots: Path, cache: CompilerCache | None = None) -> Built:
    worktree = Worktree(repository, sha, str(slots))
    with worktree as checkout:
        result = run_build(checkout, sha, "make -s prog", "prog", 60, cache, notes=worktree.notes)
        paths = list(worktree.submodules.paths)
        if result.status != OK:
            return Built(-1, b"", result, paths, None)
        status = subprocess.run([str(result.binary)]).returncode
        return Built(status, result.binary.read_bytes(), result, paths, binary_config(result.binary, [checkout]))


def test_each_commit_builds_with_its_gitlinks_commits_in_a_reused_slot(project, tmp_path):
    app, commits = project
    repository, slots = Repository.open(app), tmp_path / "slots"
    before = git(app, "status", "--porcelain", "--ignore-submodules=none")
    first = build(repository, commits["L1"], slots)
    assert (first.status, first.result.notes, first.submodules) == (11, (), ["third_party/lib", "third_party/lib/inner"])
    # The same slot: the moved gitlink gets its new commit, a tree without the submodule no stale one.
    moved = build(repository, commits["L2"], slots)
    assert moved.status == 12 and moved.program != first.program
    without = build(repository, commits["none"], slots)
    assert (without.status, without.result.notes, without.submodules) == (0, (), [])
    again = build(repository, commits["L1"], slots)
    assert again.status == 11 and again.program == first.program  # one slot, one path: the same bytes
    # The developer's clone is only read: no worktree bookkeeping in it or its modules, no change.
    assert git(app, "status", "--porcelain", "--ignore-submodules=none") == before
    assert not list((app / ".git").rglob("worktrees/*"))
    assert not list(slots.rglob("slot-*/*"))  # removed, the clones with them


@pytest.mark.skipif(shutil.which("ccache") is None, reason="ccache is not installed")
def test_ccache_and_the_build_configuration_see_the_submodules_code_as_any_other(project, tmp_path, monkeypatch):
    app, commits = project
    monkeypatch.setenv("CCACHE_DIR", str(tmp_path / "ccache"))
    cache, repository, slots = find_compiler_cache(), Repository.open(app), tmp_path / "slots"
    first = build(repository, commits["L1"], slots, cache)
    moved = build(repository, commits["L2"], slots, cache)
    again = build(repository, commits["L1"], slots, cache)
    assert (first.result.cache_hits, first.result.cache_misses) == (0, 3)
    assert (moved.result.cache_hits, moved.result.cache_misses) == (2, 1)  # only lib.c moved
    assert (again.result.cache_hits, again.result.cache_misses, again.program) == (3, 0, first.program)
    # Same flags, other submodule code: one build configuration (the slot's paths are dropped from it).
    assert first.config == moved.config == again.config and first.config.startswith("flags:")


def test_neither_a_hooks_git_dir_nor_a_removed_submodule_checkout_misdirects_it(project, tmp_path, monkeypatch):
    app, commits = project
    head = git(app, "rev-parse", "HEAD")
    # The developer's checkouts of the submodules are gone (their repositories' core.worktree
    # names a missing directory), and a hook that runs us has set GIT_DIR to the project's.
    shutil.rmtree(app / "third_party")
    monkeypatch.setenv("GIT_DIR", str(app / ".git"))
    assert build(Repository.open(app), commits["L1"], tmp_path / "slots").status == 11
    monkeypatch.delenv("GIT_DIR")
    assert git(app, "rev-parse", "HEAD") == head and not (app / "third_party").exists()


def test_a_submodule_not_in_the_clone_is_left_out_with_one_line_saying_why(project, tmp_path):
    app, commits = project
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(app), str(clone))  # no `submodule update --init`: no .git/modules
    alone = build(Repository.open(clone), commits["L2"], tmp_path / "slots")
    assert (alone.status, alone.submodules) == (0, [])  # what it can: main.c alone
    assert alone.result.notes == (f"submodule third_party/lib not checked out: no local repository of 'third_party/lib' in the "
                           f"clone at {clone} (git submodule update --init makes one); the build goes on without it",)
    assert alone.result.log_tail.startswith(alone.result.notes[0])

    # lib's repository but not inner's: lib is checked out, the nested one named, the link fails and says so.
    git(clone, "submodule", "update", "-q", "--init")
    unlinked = build(Repository.open(clone), commits["L2"], tmp_path / "slots")
    assert (unlinked.result.status, unlinked.submodules) == ("failed", ["third_party/lib"])
    notes = unlinked.result.notes
    assert len(notes) == 1 and notes[0].startswith("submodule third_party/lib/inner not checked out: no local repository of 'inner'")
    assert unlinked.result.log_tail.startswith(notes[0]) and "inner_value" in unlinked.result.log_tail

    # A gitlink to a commit the local repository lacks (pushed upstream, not fetched here).
    upstream = tmp_path / "lib"
    (upstream / "lib.c").write_text("int lib_value(void) { return 3; }\n")
    newer = commit(upstream, "lib 3")
    git(clone, "update-index", "--cacheinfo", f"160000,{newer},third_party/lib")
    git(clone, "commit", "-q", "-m", "lib at 3")
    lacking = build(Repository.open(clone), git(clone, "rev-parse", "HEAD"), tmp_path / "slots")
    assert lacking.status == 0 and lacking.result.notes == (
        f"submodule third_party/lib not checked out: {clone}/.git/modules/third_party/lib lacks its commit {newer[:12]} "
        "(git submodule update fetches it); the build goes on without it",)

    # A .gitmodules is anyone's text: a name that would lead out of .git/modules is refused.
    git(clone, "config", "--file", ".gitmodules", "--rename-section", "submodule.third_party/lib", "submodule.../../x")
    git(clone, "commit", "-q", "-a", "-m", "a name out of .git/modules")
    outside = build(Repository.open(clone), git(clone, "rev-parse", "HEAD"), tmp_path / "slots")
    assert outside.result.notes == ("submodule third_party/lib not checked out: its name '../../x' leaves .git/modules "
                                    "(git refuses such a name too); the build goes on without it",)


def test_collect_reports_a_missing_submodule_once(project, tmp_path):
    app, commits = project
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(app), str(clone))
    (clone / "selector.toml").write_text('[project]\nbinary = "prog"\n\n[build]\ncommand = "make -s prog"\ntimeout = 60\n')
    result = run_selector("collect", "--repo", str(clone), "--format", "json", "--store", str(tmp_path / "store"),
                          "-n", "2", commits["L2"])
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["summary"]["built"] == 2
    assert report["build_notes"] == [f"submodule third_party/lib not checked out: no local repository of 'third_party/lib' "
                                     f"in the clone at {clone} (git submodule update --init makes one); "
                                     "the build goes on without it"]
