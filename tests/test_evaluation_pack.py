"""`selector pack`: a store's evaluation pack gives `evaluate`, `evaluate --shipped` and the
shipped-style bundle the figures the store gives, without its binaries and profiles (two
small real stores: the sample and the demo histories, built with gcc, measured under
valgrind); and what a pack cannot answer is refused with the store named."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from perf_selector.models.bundle import load_bundle
from perf_selector.selector.evaluation.evaluation_pack import MANIFEST
from tests.helpers import selector_command

pytestmark = pytest.mark.slow
MODELS = "xgboost,perphecy,effect,executed-changed"


def run(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(selector_command(*arguments), capture_output=True, text=True)


def cli(*arguments: str) -> dict:
    result = run(*arguments, "--format", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def packs(collected_sample, evolved_sample, tmp_path_factory):
    """Each store and its pack, under a folder named as its project (evaluate names a pack after its parent)."""
    folder = tmp_path_factory.mktemp("packs")
    pairs = []
    for name, root in (("sample", collected_sample[0]), ("demo", evolved_sample[0])):
        manifest = cli("pack", str(root / ".selector"), "--out", str(folder / name / "pack"))
        assert manifest["tuples"] > 0 and manifest["labelled"] > 0
        pairs.append((root / ".selector", folder / name / "pack"))
    return pairs


def test_a_pack_is_small_and_holds_no_binary_or_profile(packs):
    for store, pack in packs:
        files = {path.name for path in pack.iterdir()}
        assert {MANIFEST, "features.parquet", "commits.parquet", "measurements.parquet", "selector.toml"} <= files
        packed = sum(path.stat().st_size for path in pack.iterdir())
        stored = sum(path.stat().st_size for path in store.rglob("*") if path.is_file())
        assert packed * 10 < stored, (packed, stored)
        profiles = pd.read_parquet(pack / "profiles.parquet")
        assert list(profiles.columns) == ["commit", "benchmark"]


def test_a_pack_names_the_code_that_computed_its_features(packs):
    from perf_selector import selector

    head = subprocess.run(["git", "-C", str(Path(selector.__file__).parent), "rev-parse", "--short=12", "HEAD"],
                          capture_output=True, text=True)
    for _, pack in packs:
        features_by = json.loads((pack / MANIFEST).read_text())["features_by"]
        assert features_by.startswith(selector.__version__)
        if head.returncode == 0:  # tests run from the checkout: its commit is named
            assert head.stdout.strip() in features_by


def test_evaluate_gives_from_packs_the_figures_it_gives_from_stores(packs, tmp_path):
    stores = [str(store) for store, _ in packs]
    packed = [str(pack) for _, pack in packs]
    from_stores = cli("evaluate", *stores, "--models", MODELS, "--no-report", "--out", str(tmp_path / "stores"),
                      "--write-model", str(tmp_path / "model-stores"))
    from_packs = cli("evaluate", *packed, "--models", MODELS, "--no-report", "--out", str(tmp_path / "packs"),
                     "--write-model", str(tmp_path / "model-packs"), "--jobs", "2")  # side by side: the same figures
    # the same projects by name: a store's is its repository's folder, a pack's its parent folder
    names = dict(zip([p["name"] for p in from_stores["projects"]], [p["name"] for p in from_packs["projects"]]))
    rename = lambda rows: sorted(json.dumps({**r, "project": names.get(r["project"], r["project"])}, sort_keys=True)  # noqa: E731
                                 for r in rows)
    assert from_packs["results"] and rename(from_stores["results"]) == sorted(json.dumps(r, sort_keys=True)
                                                                              for r in from_packs["results"])
    # the shipped-style bundle trained on the packs is the one trained on the stores
    bundles = [load_bundle(tmp_path / f"model-{kind}", load_models=False) for kind in ("stores", "packs")]
    assert [(e.threshold, e.training_tuples, e.training_positives) for e in bundles[0].entries] == [
        (e.threshold, e.training_tuples, e.training_positives) for e in bundles[1].entries]
    controls = [dict(b.settings["risk_control"]) for b in bundles]
    realized = [sorted(control.pop("realized").values()) for control in controls]  # keyed by project names
    assert bundles[0].settings["policy"] == bundles[1].settings["policy"] and controls[0] == controls[1]
    assert realized[0] == realized[1]
    # no fixed learner: the projects held out in turn chose it among train's candidates, and the bundle says why
    from perf_selector.selector.evaluation.project_evaluation import SHIPPED_CANDIDATES as CANDIDATES

    chosen = bundles[0].settings["chosen"]
    assert chosen == bundles[1].settings["chosen"] and chosen["chosen"] == bundles[0].settings["model"]
    assert list(chosen["candidates"]) == list(CANDIDATES) and chosen["by"] == "projects held out in turn"
    assert "2 projects" in chosen["reason"], chosen["reason"]
    if bundles[0].settings["policy"] == "executed-changed":  # two projects cannot certify 0.05
        assert chosen["reason"].startswith(f"none of {len(CANDIDATES)} learners"), chosen["reason"]
    day_one = [cli("evaluate", "--shipped", *given, "--out", str(tmp_path / f"day-one-{i}"))
               for i, given in enumerate((stores, packed))]
    assert rename(day_one[0]["results"]) == sorted(json.dumps(r, sort_keys=True) for r in day_one[1]["results"])


def test_what_a_pack_cannot_answer_is_refused_naming_the_store(packs, tmp_path):
    store, pack = packs[1]
    other_k = run("evaluate", str(pack), "-k", "3", "--own-only", "--no-report", "--out", str(tmp_path / "k3"))
    assert other_k.returncode != 0 and "packed for Method 4" in other_k.stderr and str(store.resolve()) in other_k.stderr
    replay = run("evaluate", "--replay", str(pack), "--out", str(tmp_path / "replay"))
    assert replay.returncode != 0 and "needs the store" in replay.stderr
    nothing = run("pack", str(tmp_path / "nowhere"), "--out", str(tmp_path / "x"))
    assert nothing.returncode != 0 and "no configuration" in nothing.stderr


def test_a_pack_trains_the_held_out_replays_bundles_beside_the_stores_walked(packs, tmp_path):
    """`evaluate --replay --held-out` with a pack among the stores: the pack trains the held-out
    bundle of the store walked beside it (as a corpus without every store replays the ones it
    has), and is not walked; the walk is the one both stores give.  Packs alone are refused."""
    (sample_store, sample_pack), (demo_store, _) = packs
    both = cli("evaluate", "--replay", "--held-out", str(sample_store), str(demo_store), "--out", str(tmp_path / "stores"))
    mixed = run("evaluate", "--replay", "--held-out", str(sample_pack), str(demo_store), "--out", str(tmp_path / "mixed"),
                "--format", "json")
    assert mixed.returncode == 0, mixed.stderr
    assert "training only (not walked): sample" in mixed.stderr
    walked = json.loads(mixed.stdout)
    (demo,) = walked["projects"]  # the pack is not walked
    assert walked["held_out"] and demo["bundles"]["shipped"]["trained_on"].endswith("1 projects: sample)")
    same = both["projects"][1]  # the demo's store, second there (both repositories' folders are named alike)
    unnamed = lambda rows: [{k: v for k, v in row.items() if k != "project"} for row in rows]  # noqa: E731
    assert unnamed(demo["summary"]) == unnamed(same["summary"]) and unnamed(demo["changes"]) == unnamed(same["changes"])
    assert any(row["policy"] == "shipped" for row in demo["summary"])
    assert not (tmp_path / "mixed" / "held-out" / "sample").exists()  # no bundle for a project not walked
    packs_only = run("evaluate", "--replay", "--held-out", str(sample_pack), str(packs[1][1]), "--out", str(tmp_path / "x"))
    assert packs_only.returncode == 2 and "give the store of at least one project" in packs_only.stderr
