"""Method 4 backtesting time per tuple, per model and scope, on a synthetic feature table.

Builds the input directly (no store, no builds): a linear history of COMMITS commits x
BENCHMARKS benchmarks, the Method 4 plan (an epoch boundary every K commits from commit
FIRST; each epoch trains on every (c_i, c_i-1) tuple up to its boundary and tests the
next K commits against the boundary commit, hops 1..K), and a feature table aligned
with the plan's tuples: the catalogue's features (mostly zeros, ranks 0-100, counts),
a label (~10% positives, driven by the ranks of changed hot code) and a cost per
benchmark.  Each model is backtested alone (one `backtest` call per model and scope,
same plan), so the times sit side by side from this one run.

The full plan at the default sizes has 160 epochs; every model on all of them takes
about two hours on 2 cores (the random forest and the SVM dominate), far longer than a
benchmark run should, so by default `--epochs-limit 2` runs two epochs spread evenly
over the history (the middle epoch of each of that many equal stretches of the plan;
about 1.5 minutes).  The
figures are then per tuple over the epochs run: the table is the distinct tuples those
epochs use, and "test tuples" are theirs.  An estimate for the full plan (seconds per
epoch run x epochs) is printed in its own column and labelled as an extrapolation.
Run: python benchmarks/backtest_speed.py [--commits 1000 --benchmarks 10 --k 5 --first 200
     --models xgboost,logistic --epochs-limit 2]   (--epochs-limit 0: every epoch)
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_info

from perf_selector.features.catalogue import FEATURE_NAMES
from perf_selector.models.backtest import backtest
from perf_selector.models.names import MODEL_NAMES, SCOPES
from perf_selector.models.sampling import Plan, Split

DEFAULT_EPOCHS_LIMIT = 2


def boundaries(commits: int, k: int, first: int) -> list[int]:
    """Boundary commit positions: every k commits from `first`, each with at least one later commit to test."""
    if not 1 <= first < commits - 1:
        raise SystemExit(f"--first must be between 1 and {commits - 2}")
    return list(range(first, commits - 1, k))


def chosen_epochs(total: int, limit: int) -> list[int]:
    """All epochs, or `limit` of them spread evenly: the middle epoch of each of `limit` equal
    stretches of the plan, so their mean training size is (about) the whole plan's."""
    if limit <= 0 or limit >= total:
        return list(range(total))
    return [int((i + 0.5) * total / limit) for i in range(limit)]


def make_plan(commits: int, benchmarks: list[str], k: int, first: int, edges: list[tuple[int, int]]) -> Plan:
    """The Method 4 plan over the given boundary positions, tuples in one distinct table."""
    sha = [f"c{i}" for i in range(commits)]
    positions: dict[tuple[str, str, str], int] = {}
    rows: list[tuple[str, str, str, int]] = []

    def add(pairs: list[tuple[int, int]]) -> np.ndarray:
        found = []
        for new, old in pairs:
            for benchmark in benchmarks:
                key = (sha[new], sha[old], benchmark)
                if key not in positions:
                    positions[key] = len(rows)
                    rows.append((*key, new - old))
                found.append(positions[key])
        return np.asarray(sorted(set(found)), dtype=np.int64)

    splits = []
    start = pd.Timestamp("2024-01-01", tz="UTC")
    for epoch, boundary in edges:
        train = add([(i, i - 1) for i in range(1, boundary + 1)])
        test = add([(j, boundary) for j in range(boundary + 1, min(boundary + k, commits - 1) + 1)])
        splits.append(Split(epoch, train, test, sha[boundary], start + pd.Timedelta(hours=boundary)))
    tuples = pd.DataFrame(rows, columns=["new", "old", "benchmark", "hops"])
    return Plan("method4", tuples, splits, {"k": k, "first": first, "epoch_days": None})


def feature_table(plan: Plan, commits: int, benchmarks: list[str], seed: int = 7) -> pd.DataFrame:
    """Plausible features for the plan's tuples: per commit what changed, per benchmark what it reached."""
    rng = np.random.default_rng(seed)
    n, b = commits, len(benchmarks)
    # per commit (shared by every benchmark): what the commit changed in the binary
    changed = rng.poisson(2.0, n) * (rng.random(n) < 0.8)
    new = rng.poisson(0.4, n)
    deleted = rng.poisson(0.2, n)
    instructions = changed * rng.integers(1, 40, n) + new * rng.integers(10, 200, n) + deleted * rng.integers(10, 200, n)
    length_change = np.where(changed > 0, rng.exponential(8.0, n), 0.0)
    build_change = rng.random(n) < 0.01
    allocating = (changed + new > 0) & (rng.random(n) < 0.2)
    hours = np.cumsum(rng.exponential(8.0, n))
    # per commit and benchmark: how much of the change the benchmark reached, and how hot it was
    reached = rng.binomial(changed[:, None].repeat(b, axis=1), rng.uniform(0.1, 0.5, b)[None, :])
    top_rank = np.where(reached > 0, 100 * rng.beta(2.0, 1.5, (n, b)), 0.0)
    in_top = np.where(top_rank > 90, rng.integers(1, 3, (n, b)), 0)
    deleted_reached = rng.binomial(deleted[:, None].repeat(b, axis=1), 0.3)
    noise = rng.uniform(0.002, 0.03, b)
    allocator = rng.integers(1_000, 2_000_000, b)
    cost = rng.uniform(2.0, 120.0, b)

    t = plan.tuples
    newest = t["new"].str[1:].astype(int).to_numpy()
    oldest = t["old"].str[1:].astype(int).to_numpy()
    column = pd.Index(benchmarks).get_indexer(t["benchmark"]).astype(int)

    def over(values: np.ndarray, how) -> np.ndarray:
        """`how` (sum or max) of per-commit values over the commits old+1..new of each tuple."""
        if values.ndim == 1:
            return np.array([how(values[o + 1: e + 1]) for o, e in zip(oldest, newest)], dtype=float)
        return np.array([how(values[o + 1: e + 1, c]) for o, e, c in zip(oldest, newest, column)], dtype=float)

    f = pd.DataFrame(0.0, index=range(len(t)), columns=FEATURE_NAMES)
    f["new_functions"] = over(new, np.sum)
    f["deleted_functions"] = over(deleted, np.sum)
    f["changed_functions"] = over(changed, np.sum)
    f["instruction_difference"] = over(instructions, np.sum)
    f["top_function_length_change"] = over(length_change, np.max)
    f["build_config_changed"] = over(build_change.astype(float), np.max)
    f["changed_calls_allocator"] = over(allocating.astype(float), np.max)
    f["commit_hops"] = t["hops"].to_numpy(float)
    f["commit_days"] = (hours[newest] - hours[oldest]) / 24.0
    reached_count = over(reached, np.sum)
    rank = over(top_rank, np.max)
    f["top_changed_rank_by_instructions"] = rank
    f["top_changed_rank_by_calls"] = np.where(rank > 0, np.clip(rank + rng.normal(0, 15, len(t)), 1, 100), 0.0)
    f["top_changed_rank_by_calls_big_change"] = np.where(f["top_function_length_change"] >= 10, f["top_changed_rank_by_calls"], 0.0)
    f["relevance_by_instructions"] = np.where(reached_count > 0, rank * (1 + 0.5 * (reached_count - 1)), 0.0)
    f["relevance_by_calls"] = np.where(reached_count > 0, f["top_changed_rank_by_calls"] * (1 + 0.5 * (reached_count - 1)), 0.0)
    f["changed_in_top_instructions"] = over(in_top, np.sum)
    f["changed_in_top_calls"] = np.where(f["top_changed_rank_by_calls"] > 90, np.minimum(reached_count, 2), 0.0)
    f["reached_functions_deleted"] = over(deleted_reached, np.sum)
    f["deleted_in_top_instructions"] = np.where(f["reached_functions_deleted"] > 0, rng.random(len(t)) < 0.1, 0.0)
    f["reached_instruction_difference"] = np.where(reached_count > 0, f["instruction_difference"] * rng.uniform(0.1, 0.9, len(t)), 0.0)
    f["top_reached_function_length_change"] = np.where(reached_count > 0, f["top_function_length_change"] * rng.uniform(0.2, 1, len(t)), 0.0)
    f["changed_inclusive_share"] = np.where(reached_count > 0, rng.beta(0.5, 3.0, len(t)), 0.0)
    f["changed_data_reached"] = (rng.random(len(t)) < 0.03).astype(float)
    f["benchmark_noise"] = noise[column] * rng.uniform(0.8, 1.2, len(t))
    f["allocator_calls"] = allocator[column] * rng.uniform(0.95, 1.05, len(t))
    # callgrind profiles: the cycles features stay 0

    # labels: a change in hot code (or the build) likely moves the benchmark; ~10% positives
    logit = -3.7 + 0.035 * rank + 0.8 * f["changed_in_top_instructions"] + 3.0 * f["build_config_changed"] \
        + 1.5 * f["changed_data_reached"] + 0.3 * f["reached_functions_deleted"]
    label = rng.random(len(t)) < 1 / (1 + np.exp(-logit))
    # recent change rate: share of positives among the benchmark's last 10 single-hop labels up to c_o
    single = np.zeros((n, b))
    hop1 = (t["hops"] == 1).to_numpy()
    single[newest[hop1], column[hop1]] = label[hop1]
    window = np.cumsum(single, axis=0)
    window[10:] -= window[:-10].copy()
    f["benchmark_recent_change_rate"] = window[oldest, column] / np.minimum(np.maximum(oldest, 1), 10)

    table = pd.concat([t.reset_index(drop=True), f], axis=1)
    table["label"] = pd.array(label, dtype="boolean")
    table["cost"] = cost[column]
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument("--benchmarks", type=int, default=10)
    parser.add_argument("--k", type=int, default=5, help="test commits per epoch")
    parser.add_argument("--first", type=int, default=200, help="the first epoch boundary (commit position)")
    parser.add_argument("--models", default=",".join(MODEL_NAMES), help="comma-separated, from: " + ", ".join(MODEL_NAMES))
    parser.add_argument("--scopes", default=",".join(SCOPES))
    parser.add_argument("--epochs-limit", type=int, default=DEFAULT_EPOCHS_LIMIT,
                        help=f"run this many epochs spread over the history (default {DEFAULT_EPOCHS_LIMIT}; 0 = all)")
    arguments = parser.parse_args()
    models = [m for m in arguments.models.split(",") if m]
    scopes = [s for s in arguments.scopes.split(",") if s]
    for name in models:
        if name not in MODEL_NAMES:
            raise SystemExit(f"unknown model {name!r}; choose from {', '.join(MODEL_NAMES)}")
    benchmarks = [f"bench{b}" for b in range(arguments.benchmarks)]

    every = boundaries(arguments.commits, arguments.k, arguments.first)
    epochs = chosen_epochs(len(every), arguments.epochs_limit)
    capped = len(epochs) < len(every)
    full = make_plan(arguments.commits, benchmarks, arguments.k, arguments.first, list(enumerate(every)))
    plan = make_plan(arguments.commits, benchmarks, arguments.k, arguments.first, [(e, every[e]) for e in epochs]) if capped else full
    started = time.perf_counter()
    table = feature_table(plan, arguments.commits, benchmarks)
    generated = time.perf_counter() - started
    tests = sum(len(s.test) for s in plan.splits)
    full_tests = sum(len(s.test) for s in full.splits)

    print(f"history        {arguments.commits} commits x {arguments.benchmarks} benchmarks, linear; Method 4, "
          f"k={arguments.k}, first boundary c{arguments.first}")
    print(f"full plan      {len(full.splits)} epochs, {len(full.tuples)} tuples in the table, {full_tests} test tuples")
    if capped:
        print(f"CAPPED         --epochs-limit {arguments.epochs_limit}: ran epochs {', '.join(map(str, epochs))} of "
              f"{len(every)} (boundaries {', '.join(f'c{every[e]}' for e in epochs)}); the figures below are per tuple "
              "over these epochs only")
    print(f"table          {len(table)} tuples (the epochs run), {tests} test tuples, {len(plan.splits)} epoch{'s' if len(plan.splits) != 1 else ''} run; "
          f"{table['label'].mean():.1%} positive; generated in {generated:.2f} s")
    pools = ", ".join(f"{p['internal_api']} {p['num_threads']}" for p in threadpool_info())
    print(f"machine        {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; threads per pool: {pools}")
    print()
    header = f"{'model':16s} {'scope':14s} {'seconds':>9s} {'ms/test tuple':>14s} {'ms/table tuple':>15s}"
    if capped:
        header += f" {'estimate, all epochs':>21s}"
    print(header)
    totals: dict[str, float] = {scope: 0.0 for scope in scopes}
    for model in models:
        for scope in scopes:
            begun = time.perf_counter()
            backtest(plan, table, FEATURE_NAMES, models=[model], scopes=[scope], target_hit_rate=0.95, seed=0)
            seconds = time.perf_counter() - begun
            totals[scope] += seconds
            line = f"{model:16s} {scope:14s} {seconds:9.2f} {1000 * seconds / tests:14.2f} {1000 * seconds / len(table):15.2f}"
            if capped:
                line += f" {seconds / len(plan.splits) * len(full.splits):19.0f} s"
            print(line, flush=True)
    for scope in scopes:
        seconds = totals[scope]
        line = f"{'all models':16s} {scope:14s} {seconds:9.2f} {1000 * seconds / tests:14.2f} {1000 * seconds / len(table):15.2f}"
        if capped:
            line += f" {seconds / len(plan.splits) * len(full.splits):19.0f} s"
        print(line)
    if len(scopes) > 1:
        seconds = sum(totals.values())
        line = f"{'all models':16s} {'all scopes':14s} {seconds:9.2f} {1000 * seconds / tests:14.2f} {1000 * seconds / len(table):15.2f}"
        if capped:
            line += f" {seconds / len(plan.splits) * len(full.splits):19.0f} s"
        print(line)
    if capped:
        print("estimate, all epochs = seconds per epoch run x epochs in the full plan: an extrapolation, not a measurement "
              "(the epochs run are spread evenly, so their mean training size is about the full plan's)")


if __name__ == "__main__":
    main()
