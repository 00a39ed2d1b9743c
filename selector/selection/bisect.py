"""`selector bisect GOOD BAD --benchmark B`: which commits to test first (Perphecy's retroactive use).

Between a version known to be fine and one known to be slower, each commit is compared
with its first parent, using the profile of the last known version (GOOD, or its
closest profiled ancestor) to tell what the benchmark runs.  The commits are ranked by
the model's probability that they change the benchmark: test them in that order.
Commits missing from the store are built and analysed first (static part only).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import msgspec
import numpy as np
import pandas as pd

from perf_selector.collectors.commit_graph import closest_ancestor
from perf_selector.collectors.benchmark_suite import member_name, suite_of
from perf_selector.collectors.errors import UserError
from perf_selector.collectors.repository import Repository
from perf_selector.selector.config import Config
from perf_selector.selector.selection.function_names import readable
from perf_selector.storage.store import Store

if TYPE_CHECKING:
    from perf_selector.collectors.commit_graph import CommitInfo
    from perf_selector.selector.collection.collect import CollectSummary

    # builds commits (the configuration given, no benchmarks) into the store: (config, commits, jobs) -> summary
    BuildMissing = Callable[[Config, list[CommitInfo], int], CollectSummary]


@dataclass
class BisectResult:
    benchmark: str
    known: str  # the profiled version whose profile stands for the old side
    ranking: pd.DataFrame  # commit, subject, probability, order, drivers (text)
    model: str


def bisect(top: Path, config: Config, store: Store, good: str, bad: str, benchmark: str, bundle_path: Path | None = None,
           jobs: int = 1, build: BuildMissing | None = None, on_step: Callable[[str], None] = lambda step: None,
           ) -> BisectResult:
    """Rank the commits between `good` and `bad`.  Missing commits are built by `build`
    (the CLI's shows a progress bar; default: :func:`selector.collect.collect`, quietly);
    `on_step` hears each later step as it starts."""
    from perf_selector.features.builder import FeatureBuilder
    from perf_selector.features.catalogue import FEATURE_NAMES
    from perf_selector.models.bundle import BundleError, load_bundle
    from perf_selector.selector.collection.collect import collect
    from perf_selector.storage.history import load_history
    from perf_selector.selector.selection.selection import drivers

    build = build or (lambda config, commits, jobs: collect(top, config, store, commits, jobs=jobs))

    if benchmark not in {b.name for b in config.benchmark} and suite_of(benchmark) not in {s.name for s in config.suite}:
        known = [b.name for b in config.benchmark] + [member_name(s.name, "<name>") for s in config.suite]
        raise UserError(f"benchmark {benchmark!r} is not configured; known: {', '.join(known)}")
    repository = Repository.open(top)
    good_sha, bad_sha = repository.resolve(good), repository.resolve(bad)
    if good_sha is None or bad_sha is None:
        raise UserError(f"{good!r} or {bad!r} is not a commit")
    suspects = repository.commits(f"{good_sha}..{bad_sha}")
    suspects = [c for c in suspects if repository.is_ancestor(good_sha, c.sha)]  # the ancestry path only
    if not suspects:
        raise UserError(f"no commit between {good} and {bad}; is {good} an ancestor of {bad}?")
    try:
        bundle = load_bundle(bundle_path or Path(store.root) / "models")
    except BundleError as error:
        raise UserError(str(error)) from None
    entry = bundle.entry_for(benchmark)
    if entry is None:
        raise UserError(f"the model bundle has no model for {benchmark}; run selector train")
    if missing := bundle.missing_features(FEATURE_NAMES):
        raise UserError(f"the model bundle was trained on features this version no longer computes ({', '.join(missing)}); "
                        "run selector train")

    stored = set(store.keys("functions"))
    first_parents = {c.sha: c.parents[0] for c in suspects if c.parents}
    missing = sorted(({c.sha for c in suspects} | set(first_parents.values())) - stored)
    if missing:
        infos = {c.sha: c for c in repository.commits(bad_sha)}
        to_build = [infos[sha] for sha in missing if sha in infos]
        # built and analysed only: bisect ranks by the model, it runs no benchmark
        summary = build(msgspec.structs.replace(config, benchmark=[], suite=[]), to_build, jobs)
        failed = [o.sha[:12] for o in summary.outcomes if o.status == "failed"]
        if failed:
            raise UserError(f"could not build {', '.join(failed)}; bisect needs every suspect built")

    on_step("reading the stored history")
    history = load_history(store)
    usable = history.measured() & (history.profiled() if len(history.profiles) else history.measured())
    parents = history.parents
    known = good_sha if (good_sha, benchmark) in usable else None
    if known is None:
        found = closest_ancestor(good_sha, parents, lambda c: (c, benchmark) in usable)
        if found is None:
            raise UserError(f"neither {good} nor its ancestors have a stored profile of {benchmark}; record one first")
        known = found[0]
    tuples = pd.DataFrame([(c.sha, first_parents[c.sha], benchmark, 1, known) for c in suspects if c.sha in first_parents],
                          columns=["new", "old", "benchmark", "hops", "profiled"])
    on_step(f"comparing {len(tuples)} commits with their parents")
    builder = FeatureBuilder(history)
    table = builder.table(tuples)
    probability = bundle.score(entry, table, FEATURE_NAMES)
    subjects = {c.sha: c.subject for c in suspects}
    ranking = pd.DataFrame({
        "commit": tuples["new"], "subject": tuples["new"].map(subjects), "probability": probability,
        "drivers": [", ".join([readable(d.function) for d in drivers(builder, new, old, benchmark, known) if d.change == "changed"][:3])
                    for new, old in zip(tuples["new"], tuples["old"])],
    }).sort_values("probability", ascending=False, kind="stable").reset_index(drop=True)
    ranking.insert(0, "order", np.arange(1, len(ranking) + 1))
    return BisectResult(benchmark, known, ranking, str(bundle.settings.get("model")))
