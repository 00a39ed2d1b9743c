"""The corpus's rebuild scripts (corpus/): `collect_all.sh` goes on past a project that fails,
skips those done, and says both; `collect.sh` refuses a project it has no recipe for;
`risk_bound.py` prints the conformal bound and writes the bundle `evaluate --write-model` writes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import selector_command

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
    """collect_all.sh rebuilds, and evaluate.sh evaluates, every project of the corpus (each folder
    with a recipe but the timed variants), and each has a recipe (URL and range), a selector.toml and a make_suite.sh whose
    scripts parse."""
    text = (CORPUS / "collect_all.sh").read_text()
    listed = text[text.index("projects=(lz4"):text.index(")", text.index("projects=(lz4"))].split("(", 1)[1].split()
    folders = {recipe.parent.name for recipe in CORPUS.glob("*/recipe") if not recipe.parent.name.endswith("-timed")}
    assert sorted(listed) == sorted(folders) and len(listed) == len(set(listed))
    text = (CORPUS / "evaluate.sh").read_text()  # and corpus/evaluate.sh evaluates each of them
    evaluated = text[text.index("projects=(lz4"):text.index(")", text.index("projects=(lz4"))].split("(", 1)[1].split()
    assert sorted(evaluated) == sorted(folders)
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


@pytest.mark.slow
def test_risk_bound_prints_the_bound_beside_each_projects_miss_rate_and_writes_the_shipped_bundle(
        collected_sample, evolved_sample, tmp_path):
    """The table holds, per policy and stated miss rate, each project's realized miss rate where a
    threshold keeps the bound (its mean within what the bound allows) and none where two projects
    cannot certify it, with select's runs there against the rule's; the bundle is the one
    `selector evaluate --write-model` trains."""
    stores = [str(collected_sample[0] / ".selector"), str(evolved_sample[0] / ".selector")]
    ran = subprocess.run([sys.executable, str(CORPUS / "risk_bound.py"), *stores, "--model", "perphecy", "--miss-rates", "0.05,0.5",
                          "--markdown", "--write-model", str(tmp_path / "script")], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in ran.stdout.splitlines()
            if line.startswith("| model")]
    assert len(rows) == 2 * 2 * 2  # two policies, two miss rates, two projects
    for policy, stated, projects, threshold, project, changes, realized, runs, dismiss in rows:
        assert projects == "2 (0.333)"  # two projects certify no miss rate below 1/3
        ran_here, rule_runs = (int(part) for part in runs.replace("(", "").replace(")", "").split())
        dismissed, rule_dismissed = (float(part) for part in dismiss.replace("(", "").replace(")", "").split())
        assert 0.0 <= dismissed <= 1.0 and 0.0 < rule_dismissed < 1.0
        if stated == "0.050":
            assert threshold == "none keeps it: the rule decides" and realized == "-"
            assert ran_here == rule_runs and dismissed == rule_dismissed  # no threshold keeps the bound: the rule decides
        elif policy == "model-within-rule":
            assert ran_here <= rule_runs and dismissed >= rule_dismissed  # within the rule, the model only prunes
    allowed = (0.5 * 3 - 1) / 2  # n/(n+1) * mean + 1/(n+1) <= 0.5, n = 2
    for policy in ("model", "model-within-rule"):
        kept = [float(row[6]) for row in rows if row[0] == policy and row[1] == "0.500"]
        assert len(kept) == 2 and sum(kept) / 2 <= allowed + 1e-9, (policy, kept)
    assert "shipped bundle written to" in ran.stdout
    evaluated = subprocess.run(selector_command("evaluate", *stores, "--own-only", "--models", "perphecy", "--no-report",
                                                "--out", str(tmp_path / "out"), "--write-model", str(tmp_path / "evaluate"),
                                                "--model", "perphecy"),
                               capture_output=True, text=True)
    assert evaluated.returncode == 0, evaluated.stderr
    script, command = (json.loads((tmp_path / name / "manifest.json").read_text()) for name in ("script", "evaluate"))
    assert script["settings"] == command["settings"] and script["trained_on"] == command["trained_on"]
    # the bundle records its bound whatever its policy: where it stepped aside, pruning within the rule's
    control = script["settings"]["risk_control"]
    assert control["policy"] == ("model-within-rule" if script["settings"]["policy"] == "executed-changed"
                                 else script["settings"]["policy"])
    assert control["projects"] == 2 and not control["controlled"]  # two projects cannot certify 0.05
    drop = lambda entry: {k: v for k, v in entry.items() if k != "sha256"}  # noqa: E731  (skops bytes vary run to run)
    assert [drop(e) for e in script["entries"]] == [drop(e) for e in command["entries"]]  # the same ONNX, byte for byte
    assert (tmp_path / "script.sha256").is_file()  # sealed as the shipped bundle is


@pytest.mark.slow
def test_risk_bound_with_model_auto_writes_the_bundle_evaluate_chooses_and_bounds_its_learner(
        collected_sample, evolved_sample, tmp_path):
    """corpus/evaluate.sh's first step: the learner chosen by the projects held out in turn, as
    `selector evaluate --write-model` chooses it, written and bounded; the fits it kept serve the
    command given the same folder."""
    stores = [str(collected_sample[0] / ".selector"), str(evolved_sample[0] / ".selector")]
    fits = tmp_path / "fits"
    ran = subprocess.run([sys.executable, str(CORPUS / "risk_bound.py"), *stores, "--model", "auto", "--write-model",
                          str(tmp_path / "script"), "--fits", str(fits)], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    script = json.loads((tmp_path / "script" / "manifest.json").read_text())
    chosen = script["settings"]["chosen"]
    assert f"model: {chosen['chosen']}" in ran.stdout and f"chosen: {chosen['reason']}" in ran.stdout
    kept = {path.name: path.stat().st_mtime_ns for path in fits.iterdir()}
    assert kept  # every candidate's fits on each project, kept
    evaluated = subprocess.run(selector_command("evaluate", *stores, "--own-only", "--models", "perphecy", "--no-report",
                                                "--out", str(tmp_path / "out"), "--write-model", str(tmp_path / "evaluate"),
                                                "--fits", str(fits)), capture_output=True, text=True)
    assert evaluated.returncode == 0, evaluated.stderr
    command = json.loads((tmp_path / "evaluate" / "manifest.json").read_text())
    assert command["settings"] == script["settings"]  # the same choice, for the same reasons, at the same bound
    assert {path.name: path.stat().st_mtime_ns for path in fits.iterdir()} == kept  # nothing fitted again, or written
    refused = subprocess.run([sys.executable, str(CORPUS / "risk_bound.py"), *stores, "--model", "auto"],
                             capture_output=True, text=True)
    assert refused.returncode == 2 and "give --write-model DIR" in refused.stderr


@pytest.mark.slow
def test_what_binds_prints_each_hazards_cost_and_the_runs_at_each_threshold(collected_sample, evolved_sample, tmp_path):
    """corpus/what_binds.py on two projects held out in turn: every hazard's fires (pooled and for
    each project), the bound's
    runs with each left out, runs that fall as the threshold rises and as hazards go, the floor
    and a perfect model's runs (pooled, then each project's for each change, and whether it halves
    the rule's), the decided changes scored lowest, and, for packs, the size
    estimate's errors summed over the projects."""
    from perf_selector.models.decision import HAZARDS

    packs = []
    for name, sample in (("collected", collected_sample), ("evolved", evolved_sample)):
        pack = tmp_path / name / "pack"
        made = subprocess.run(selector_command("pack", f"{sample[0] / '.selector'}={sample[0] / 'selector.toml'}",
                                               "--out", str(pack)), capture_output=True, text=True)
        assert made.returncode == 0, made.stderr
        packs.append(str(pack))
    ran = subprocess.run([sys.executable, str(CORPUS / "what_binds.py"), *packs, "--model", "perphecy"],
                         capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in ran.stdout.splitlines() if line.startswith("| ")]
    fires = {row[0]: row for row in rows if row[0] in HAZARDS}
    assert set(fires) == set(HAZARDS)
    per_project = [row for row in rows if len(row) == 1 + len(HAZARDS) and row[0] != "project"]
    assert len(per_project) == 2  # each project's firings, hazard by hazard
    for row in per_project:
        for cell in filter(None, row[1:]):  # "fires (changes); alone on non-changes"
            fired, changed, alone = (int(n) for n in cell.replace("(", "").replace(")", "").replace(";", "").split())
            assert changed <= fired and alone <= fired - changed
    bound = [row for row in rows if row[0].startswith(("every hazard", "without ", "none")) and len(row) == 5]
    assert {row[0] for row in bound} >= {f"without {name}" for name in HAZARDS} | {"every hazard", "none"}
    runs = lambda row: int(row[2].replace(",", ""))  # noqa: E731
    for hazards in ("every hazard", "none"):
        fixed = [row for row in bound if row[0] == hazards][1:]  # the bound's row first, then the fixed thresholds
        assert [float(row[1]) for row in fixed] == [0.001, 0.003, 0.01, 0.03, 0.1, 0.3]
        assert [runs(row) for row in fixed] == sorted((runs(row) for row in fixed), reverse=True)
    every, none = ([runs(row) for row in bound if row[0] == name][1:] for name in ("every hazard", "none"))
    assert all(a >= b for a, b in zip(every, none))  # a hazard only keeps runs
    (rule_runs, forced, decided, perfect, each), = [row for row in rows if len(row) == 5 and row[0].replace(",", "").isdigit()]
    number = lambda cell: int(cell.split()[0].replace(",", ""))  # noqa: E731
    assert number(perfect) == number(forced) + int(decided) <= number(rule_runs)  # the floor, and each decided change once
    by_project = [row for row in rows if len(row) == 7 and row[-1] in ("yes", "no")]
    assert 1 <= len(by_project) <= 2  # the projects with a change
    for _name, changed, rule_each, _model_each, floor_each, perfect_each, halves in by_project:
        rule_each, floor_each, perfect_each = float(rule_each), float(floor_each), float(perfect_each)
        assert int(changed) > 0 and floor_each <= perfect_each <= rule_each
        if abs(2 * perfect_each - rule_each) > 0.02:  # clear of the two decimals' rounding
            assert halves == ("yes" if 2 * perfect_each < rule_each else "no")
    lowest = [row for row in rows if len(row) == 4 and row[0] not in ("project", *HAZARDS)]
    scores = [float(row[3]) for row in lowest]
    assert scores == sorted(scores) and len(lowest) == min(10, int(decided))
    assert all(len(row[1]) == 10 and int(row[1], 16) >= 0 for row in lowest)  # a commit, abbreviated
    sizes = [row for row in rows if len(row) == 6 and row[0] != "project"]
    projects, total = sizes[:-1], sizes[-1]
    assert len(projects) == 2 and total[0] == "all"
    assert [sum(int(row[i].replace(",", "")) for row in projects) for i in range(1, 6)] == \
        [int(cell.replace(",", "")) for cell in total[1:]]
