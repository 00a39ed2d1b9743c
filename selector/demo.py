"""``selector demo``: the whole tool, so far, on the generated sample history."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from collectors.errors import UserError
from collectors.git_history import open_repository, select_commits
from collectors.static_diff import diff_functions, diff_objects
from selector.calibrate import calibrate
from selector.collect_report import report_collection, run_collection
from selector.config import CONFIG_NAME, load_config
from selector.sample_history import make_sample_history
from selector.store import Store
from selector.tables import print_json, print_table, records, stderr, stdout


def run_demo(directory: Path, jobs: int = 2, output_format: str = "text") -> pd.DataFrame:
    """Generate (or reuse) the sample project under `directory`, collect it, show each commit's diff."""
    project, store_path = directory / "project", directory / "store"
    if not project.exists():
        if directory.exists() and any(directory.iterdir()):
            raise UserError(f"{directory} exists and is not a selector demo; choose another --out")
        stderr.print(f"Creating the sample C project and its history in {project}")
        make_sample_history(project)
    elif not (project / CONFIG_NAME).is_file():
        raise UserError(f"{project} exists but holds no {CONFIG_NAME}; choose another --out")

    repository = open_repository(project)
    config = load_config(project / CONFIG_NAME)
    store = Store(store_path)
    commits = select_commits(repository, "HEAD")
    if not store.keys("calibration"):
        stderr.print("Calibrating the benchmarks on the first commit (A/A)")
        calibrate(project, config, store, commits[0].sha, rounds=3)
    summary = run_collection(project, config, store, commits, jobs=jobs)
    changes = commit_changes(store, [c.sha for c in commits])
    if output_format == "json":
        print_json({"project": str(project), "store": str(store_path), "commits": records(changes)})
        return changes
    report_collection(summary, store, "text")
    print_table(changes, title="what each commit changed in the binary (static analysis)")
    stdout.print(
        f"\nWhere to look:\n"
        f"  sample project   {project}\n"
        f"  store            {store_path}  (Parquet tables; docs/store.md)\n"
        f"  one commit       selector functions {store.binary_path(_binary(store, commits[-1].sha))}\n"
        f"  two commits      selector diff {store.binary_path(_binary(store, commits[0].sha))} "
        f"{store.binary_path(_binary(store, commits[-1].sha))}"
    )
    return changes


def commit_changes(store: Store, shas: list[str]) -> pd.DataFrame:
    """For each commit after the first: its functions new / deleted / changed against its parent."""
    commits = store.read("commits").set_index("sha")
    rows = []
    for previous, current in zip(shas, shas[1:]):
        row = {"commit": current[:10], "subject": commits.loc[current, "subject"]}
        if commits.loc[previous, "build_status"] != "ok" or commits.loc[current, "build_status"] != "ok":
            rows.append({**row, "new": "", "deleted": "", "changed": "(build failed)", "data": "", "build config": ""})
            continue
        functions = diff_functions(store.read_one("functions", previous), store.read_one("functions", current))
        objects = diff_objects(store.read_one("objects", previous), store.read_one("objects", current))
        names = {status: ", ".join(functions.loc[functions["status"] == status, "name"]) for status in ("new", "deleted", "changed")}
        rows.append(
            {
                **row, **names,
                "data": ", ".join(objects["name"]),
                "build config": "changed" if commits.loc[previous, "build_config"] != commits.loc[current, "build_config"] else "",
            }
        )
    return pd.DataFrame(rows)


def _binary(store: Store, sha: str) -> str:
    return store.read_one("commits", sha)["binary_sha256"].iloc[0]
