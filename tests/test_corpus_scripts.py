"""The corpus's rebuild scripts (corpus/): `collect_all.sh` goes on past a project that fails,
skips those done, and says both; `collect.sh` refuses a project it has no recipe for."""

from __future__ import annotations

import subprocess
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[1] / "corpus"


def test_collect_all_skips_the_projects_done_and_goes_on_past_one_that_fails(tmp_path):
    (tmp_path / "lz4").mkdir()
    (tmp_path / "lz4" / "DONE").touch()
    ran = subprocess.run(["bash", str(CORPUS / "collect_all.sh"), str(tmp_path), "no-such-project", "lz4"],
                         capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert "no-such-project: failed (exit 2" in ran.stderr
    assert ran.stdout.splitlines()[-1] == "lz4: done before"  # after the failure, the next one is taken
    assert "no corpus project 'no-such-project'" in (tmp_path / "no-such-project.log").read_text()
    assert not (tmp_path / "no-such-project" / "DONE").exists()


def test_every_corpus_project_has_what_collect_sh_needs():
    """A recipe (URL and range), a selector.toml and a make_suite.sh for each of the fourteen
    that collect_all.sh rebuilds, and its scripts parse."""
    text = (CORPUS / "collect_all.sh").read_text()
    listed = text[text.index("projects=(lz4"):text.index(")", text.index("projects=(lz4"))].split("(", 1)[1].split()
    assert len(listed) == 14
    for project in listed:
        folder = CORPUS / project
        recipe = (folder / "recipe").read_text()
        assert "url=" in recipe and "range=" in recipe, project
        assert (folder / "selector.toml").is_file() and (folder / "make_suite.sh").is_file(), project
        for script in [folder / "make_suite.sh", *folder.glob("build_*.sh")]:
            assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0, script


def test_collect_refuses_a_project_whose_packages_are_missing_before_it_clones(tmp_path):
    """A build that fails for a missing package would be stored as a failed commit, and a later
    run would skip it: collect.sh checks the recipe's packages and python3 modules first."""
    corpus = tmp_path / "corpus"
    (corpus / "needy").mkdir(parents=True)
    (corpus / "collect.sh").write_text((CORPUS / "collect.sh").read_text())
    (corpus / "needy" / "recipe").write_text('url=/nonexistent/repository\nrange=a..b\n'
                                             'packages="bash no-such-package-0xdead"\npython_modules="json no_such_module_0xdead"\n')
    ran = subprocess.run(["bash", str(corpus / "collect.sh"), "needy", str(tmp_path / "work")],
                         capture_output=True, text=True, timeout=60)
    assert ran.returncode == 2
    missing = ran.stderr.split("missing: ", 1)[1].split(" (", 1)[0]
    expected = ["no-such-package-0xdead", "python3's", "no_such_module_0xdead"] if subprocess.run(
        ["sh", "-c", "command -v dpkg-query"], capture_output=True).returncode == 0 else ["python3's", "no_such_module_0xdead"]
    assert missing.split() == expected  # what is there (bash, json) is not named
    assert "nothing collected" in ran.stderr and not (tmp_path / "work" / "needy").exists()
