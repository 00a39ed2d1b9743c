"""`selector select` by hand uses the working tree's build when it is the commit's, as the
pre-push hook does (selector.working_tree_build): the commit checked out, nothing changed,
the binary newer than every tracked file.  Otherwise it builds in a clean worktree as
before.  The output says which build it used (a note, and the JSON document's `build`), and
`--run-benchmarks` runs the build it analysed instead of building the commit again."""

from __future__ import annotations

import json
import os
import subprocess

import jsonschema

from perf_selector.selector.onboarding.sample_history import commit_all
from tests.helpers import new_project, run_selector
from tests.helpers.loop_program import CONFIG, PROGRAM
from tests.helpers.schema import SCHEMA

def _select(root, *arguments: str) -> tuple[dict, str]:
    result = run_selector("select", *arguments, "--repo", str(root), "--format", "json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    jsonschema.validate(document, SCHEMA)
    return document, result.stderr


def _build_here(root, flags: str = "-O2 -g") -> None:
    """The developer's build, in the working tree, after every tracked file was written."""
    subprocess.run(["gcc", *flags.split(), "-o", "prog", "prog.c"], cwd=root, check=True, capture_output=True)
    later = (root / "prog.c").stat().st_mtime_ns + 2_000_000_000  # whatever the file system's time resolution
    os.utime(root / "prog", ns=(later, later))


def test_select_uses_the_working_tree_build_only_when_it_is_the_commits(tmp_path):
    root = new_project(tmp_path / "project", CONFIG)
    (root / ".selector").mkdir()
    (root / "prog.c").write_text(PROGRAM)
    first = commit_all(root, "a loop")
    (root / "prog.c").write_text(PROGRAM.replace("50000", "60000"))
    commit_all(root, "a longer loop")

    built, _ = _select(root)
    assert built["build"] == "clean worktree" and built["binary"] is None, built
    assert "not using the working tree's build: there is no prog in the working tree" in built["notes"]
    assert any("in a clean worktree" in note for note in built["notes"])

    _build_here(root)
    mine, _ = _select(root)
    assert mine["build"] == "working tree" and mine["binary"] == str(root / "prog"), mine
    assert any(note.startswith("using the working tree's prog") for note in mine["notes"])
    assert not any("clean worktree" in note for note in mine["notes"])
    assert [(b["name"], b["decision"], b["reason"]) for b in mine["benchmarks"]] == \
        [(b["name"], b["decision"], b["reason"]) for b in built["benchmarks"]]

    older, _ = _select(root, first)  # not the checked-out commit
    assert older["build"] == "clean worktree"
    assert any("is not the checked-out commit" in note for note in older["notes"])

    (root / "prog.c").write_text(PROGRAM.replace("50000", "70000"))  # an edit not committed
    _build_here(root)
    edited, _ = _select(root)
    assert edited["build"] == "clean worktree"
    assert "not using the working tree's build: the working tree has uncommitted changes" in edited["notes"]
    subprocess.run(["git", "checkout", "-q", "prog.c"], cwd=root, check=True)

    (root / "prog").write_text("not a program\n")  # newer than every tracked file, but no binary
    later = (root / "prog.c").stat().st_mtime_ns + 2_000_000_000
    os.utime(root / "prog", ns=(later, later))
    broken, _ = _select(root)
    assert broken["build"] == "clean worktree"
    assert any(note.startswith("not using the working tree's build:") and "not an ELF file" in note
               for note in broken["notes"]), broken["notes"]

    text = run_selector("select", "--repo", str(root))
    assert "note: not using the working tree's build:" in text.stderr and "in a clean worktree" in text.stderr


def test_run_benchmarks_runs_the_build_select_used(tmp_path):
    """A developer's -O0 build in the working tree: select analyses it and --run-benchmarks runs
    it (more instructions than the configured -O2 build a clean worktree makes)."""
    root = new_project(tmp_path / "project", CONFIG)
    (root / ".selector").mkdir()
    (root / "prog.c").write_text(PROGRAM)
    commit_all(root, "a loop")

    def compared() -> tuple[dict, float]:
        result = run_selector("select", "--repo", str(root), "--run-benchmarks", "--format", "json")
        assert result.returncode == 0, result.stderr
        document = json.loads(result.stdout)
        jsonschema.validate(document, SCHEMA)
        [row] = document["compared"]
        assert row["benchmark"] == "loop" and row["old"] is None and row["note"].startswith("nothing to compare with")
        return document, row["new"]

    _build_here(root, "-O0 -g")
    mine, unoptimised = compared()
    assert mine["build"] == "working tree"
    (root / "prog").unlink()
    clean, optimised = compared()
    assert clean["build"] == "clean worktree"
    assert unoptimised > 1.5 * optimised > 0  # each ran the build its selection analysed

    _build_here(root, "-O0 -g")
    text = run_selector("select", "--repo", str(root), "--run-benchmarks")
    assert text.returncode == 0, text.stderr
    assert "run on the build select analysed (working tree)" in text.stdout, text.stdout


SIDE_CONFIG = CONFIG.replace('command = "gcc -O2 -g -o prog prog.c"', 'command = "gcc -O2 -g -o prog prog.c && echo 1 > prog.data"')
# Needs what its build leaves beside it (as a program needs its build's shared library): prog.data.
SIDE_PROGRAM = PROGRAM.replace("int main(void)\n{\n", """int main(int argc, char **argv)
{
    char path[4096];
    snprintf(path, sizeof path, "%s.data", argv[0]);
    FILE *data = fopen(path, "r");
    if (!data) {
        fprintf(stderr, "no %s\\n", path);
        return 1;
    }
    fclose(data);
""")


def test_a_build_that_does_not_run_apart_from_its_build_folder_is_built_again(tmp_path):
    """--run-benchmarks copies the executable select analysed into a clean worktree; one that
    needs a file its build left beside it fails there, and the commit is built and run instead,
    saying why."""
    root = new_project(tmp_path / "project", SIDE_CONFIG)
    (root / ".selector").mkdir()
    (root / ".gitignore").write_text("prog\nprog.data\n.selector/\n")
    (root / "prog.c").write_text(SIDE_PROGRAM)
    commit_all(root, "a loop that reads its data")
    subprocess.run("gcc -O2 -g -o prog prog.c && echo 1 > prog.data", shell=True, cwd=root, check=True)
    later = (root / "prog.c").stat().st_mtime_ns + 2_000_000_000
    for built in ("prog", "prog.data"):
        os.utime(root / built, ns=(later, later))
    result = run_selector("select", "--repo", str(root), "--run-benchmarks", "--format", "json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["build"] == "working tree"
    [row] = document["compared"]
    assert row["new"] > 50_000 and row["note"].startswith("nothing to compare with"), row
    text = run_selector("select", "--repo", str(root), "--run-benchmarks")
    assert "run on a build in a clean worktree (the build select analysed did not run here: loop:" in text.stdout, text.stdout
