"""Running what `select` chose and comparing with the ancestor (the hook's ``--run-benchmarks``).

The selected benchmarks run on the new commit (built in a clean worktree, or the
stored binary's checkout), and each is compared with its ancestor's stored
measurements by the statistics the labels use (Mann-Whitney U and the minimum
effect; effect alone for benchmarks calibrated as exact).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pandas as pd

from collectors.benchmark_runner import BenchmarkRunner
from collectors.run_context import RunContext
from collectors.builds import Worktree, run_build
from collectors.errors import UserError
from collectors.repository import Repository
from selector.config import Config, benchmark_specs, context_settings, label_rules, require_suite
from storage.labels import PairLabeller
from selector.selection import Selection
from storage.store import Store


def verify(top: Path, config: Config, store: Store, selection: Selection) -> pd.DataFrame:
    """One row per selected benchmark that has an ancestor: old and new medians, effect, p, changed, regression."""
    chosen = {d.name: d for d in selection.benchmarks if d.decision == "run" and d.against}
    if not chosen:
        return pd.DataFrame()
    require_suite(config)
    specs = [spec for spec in benchmark_specs(config) if spec.name in chosen]
    repository = Repository.open(top)
    labeller = PairLabeller(store.read("measurements", keys=sorted({d.against for d in chosen.values()})),
                            store.read("calibration"), label_rules(config))
    with Worktree(repository, selection.commit) as checkout:
        build = run_build(checkout, selection.commit, config.build.command, config.project.binary, config.build.timeout)
        if build.status != "ok":
            raise UserError(f"building {selection.commit[:12]} to run its benchmarks failed: {build.reason}")
        with tempfile.TemporaryDirectory(prefix="selector-verify-") as workdir:
            runner = BenchmarkRunner(specs, build.binary, checkout, Path(config.project.suite) if config.project.suite else None,
                                     cpu=config.run.cpu, seed=config.run.seed, workdir=Path(workdir),
                                     context=RunContext(context_settings(config)))
            runs = runner.run().runs
    new_values = pd.DataFrame([{"benchmark": r.benchmark, "value": r.value} for r in runs if r.counts])
    rows = []
    for name, decision in chosen.items():
        labeller.values[(selection.commit, name)] = new_values[new_values["benchmark"] == name]["value"].tolist() if len(new_values) else []
        label = labeller.label(selection.commit, decision.against, name)
        if label is None:
            continue
        rows.append({"benchmark": name, "against": decision.against[:10], "old": label.median_old, "new": label.median_new,
                     "effect": label.effect, "p": label.p_value, "changed": label.label, "regression": label.regression})
    return pd.DataFrame(rows)
