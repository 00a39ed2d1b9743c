"""Which tuples train and which test: Sousa 1.7's Methods 1-4, and k-fold (Perphecy 6.5).

Every protocol returns a :class:`Plan`: the distinct tuples it needs (new, old,
benchmark, hops) and its splits, each a pair of row positions into those tuples.

* **Method 4** (default, Algorithm 2): the history, in author-time order, is cut at
  epoch boundaries.  An epoch trains on every commit up to its boundary, each paired
  with its closest ancestor *among those commits* (measured and profiled), and tests
  the next ``k`` commits, each paired with its closest ancestor among the same known
  commits: on a linear history, the boundary commit itself, as in Sousa.  Nothing
  authored after the boundary reaches the epoch's training data (tested).
* **Method 1**: every (descendant, ancestor) pair, split at random 70/30.
* **Method 2**: commits split at random 70/30, then paired within each side.
* **Method 3**: the oldest 70% of commits train (all pairs among them); each later
  commit is tested against its closest ancestor among the training commits.
* **k-fold**: the closest-ancestor tuples split into k random folds.

Methods 1-3 and k-fold let future commits teach the past; they are here for comparison
with the literature, and the report says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

import numpy as np
import pandas as pd
from sklearn.model_selection import KFold

from perf_selector.storage.history import History
from perf_selector.features.tuples import TUPLE_KEYS, ancestors, closest_pairs

METHODS = ("method4", "method1", "method2", "method3", "kfold", "full")
TUPLE_COLUMNS = [*TUPLE_KEYS, "hops"]


@dataclass(frozen=True)
class Split:
    epoch: int
    train: np.ndarray  # row positions into Plan.tuples
    test: np.ndarray
    boundary: str | None = None  # Method 4 and 3: the newest commit whose data training may use
    boundary_time: pd.Timestamp | None = None


@dataclass
class Plan:
    method: str
    tuples: pd.DataFrame  # new, old, benchmark, hops; distinct
    splits: list[Split]
    parameters: dict = field(default_factory=dict)
    leaks_future: bool = False  # the protocol lets newer commits train for older tests


class _TupleIndex:
    """Collects tuples from several splits into one distinct table."""

    def __init__(self) -> None:
        self._positions: dict[tuple, int] = {}
        self._rows: list[tuple[str, str, str, int]] = []

    def add(self, rows: Iterable[tuple[str, str, str, int]]) -> np.ndarray:
        positions = []
        for row in rows:
            key = row[:3]
            if key not in self._positions:
                self._positions[key] = len(self._positions)
                self._rows.append(row)
            positions.append(self._positions[key])
        return np.asarray(sorted(set(positions)), dtype=np.int64)

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self._rows, columns=TUPLE_COLUMNS)


class _Usable:
    """The commits (oldest first) and which (commit, benchmark) can be c_o."""

    def __init__(self, history: History, benchmarks: list[str]) -> None:
        self.benchmarks = benchmarks
        self.parents = history.parents
        self.measured = history.measured()
        self.profiled = history.profiled() if len(history.profiles) else None
        commits = history.commits
        self.time = dict(zip(commits["sha"].to_pylist(), pd.to_datetime(commits["author_time"].to_pandas(), utc=True)))
        self.commits = [sha for sha in history.built() if any((sha, b) in self.measured for b in benchmarks)]

    def pairs(self, new: Iterable[str], known: Iterable[str]) -> list[tuple[str, str, str, int]]:
        """Closest-ancestor tuples for `new`, with c_o restricted to `known` commits."""
        known = set(known)
        measured = {(c, b) for c, b in self.measured if c in known}
        profiled = None if self.profiled is None else {(c, b) for c, b in self.profiled if c in known}
        return [
            row for row in closest_pairs(new, self.benchmarks, self.parents, measured, profiled)
            if (row[0], row[2]) in self.measured  # the new commit needs its own measurement to be labelled
        ]

    def all_pairs(self, commits: list[str]) -> list[tuple[str, str, str, int]]:
        """Every (descendant, ancestor) pair within `commits`, both measured (and profiled) for b."""
        pool = set(commits)
        rows = []
        for sha in commits:
            for ancestor, hops in ancestors(sha, self.parents).items():
                if ancestor not in pool:
                    continue
                for benchmark in self.benchmarks:
                    if (sha, benchmark) in self.measured and (ancestor, benchmark) in self.measured and (
                        self.profiled is None or (ancestor, benchmark) in self.profiled
                    ):
                        rows.append((sha, ancestor, benchmark, hops))
        return rows


def method4(history: History, benchmarks: list[str], k: int = 5, first: int | None = None,
            epoch_days: float | None = None) -> Plan:
    """Epoch backtesting (Sousa Algorithm 2): train on commits up to each boundary, test the next k.

    Boundaries step by `k` commits from the `first` commit (default: a fifth of the
    history, at least 5), or, with `epoch_days`, fall on the last commit of each period
    of that many days.
    """
    if k < 1:
        raise ValueError("k (test commits per epoch) must be at least 1")
    usable = _Usable(history, benchmarks)
    commits = usable.commits
    first = first if first is not None else max(5, len(commits) // 5)
    if first < 1:
        raise ValueError("the first epoch needs at least one training commit")
    index = _TupleIndex()
    splits = []
    for epoch, boundary in enumerate(_boundaries(commits, usable.time, k, first, epoch_days)):
        known = commits[: boundary + 1]
        test_commits = commits[boundary + 1: boundary + 1 + k]
        train = index.add(usable.pairs(known, known))
        test = index.add(usable.pairs(test_commits, known))
        if len(test):
            splits.append(Split(epoch, train, test, commits[boundary], usable.time[commits[boundary]]))
    return Plan("method4", index.frame(), splits, {"k": k, "first": first, "epoch_days": epoch_days})


def _boundaries(commits: list[str], time: dict, k: int, first: int, epoch_days: float | None) -> list[int]:
    last = len(commits) - 1
    if epoch_days is None:
        return list(range(first - 1, last, k))
    if epoch_days <= 0:
        raise ValueError("epoch_days must be positive")
    period = pd.Timedelta(days=epoch_days)
    boundaries, edge = [], time[commits[first - 1]] if first - 1 <= last else None
    while edge is not None:
        position = max(i for i, sha in enumerate(commits) if time[sha] <= edge)
        if position >= last:
            break
        if not boundaries or position > boundaries[-1]:
            boundaries.append(position)
        edge = edge + period
    return boundaries


def method1(history: History, benchmarks: list[str], train_share: float = 0.7, seed: int = 0) -> Plan:
    """All ancestor pairs, tuples split at random."""
    usable = _Usable(history, benchmarks)
    index = _TupleIndex()
    everything = index.add(usable.all_pairs(usable.commits))
    shuffled = np.random.default_rng(seed).permutation(everything)
    cut = int(round(train_share * len(shuffled)))
    return Plan("method1", index.frame(), [Split(0, np.sort(shuffled[:cut]), np.sort(shuffled[cut:]))],
                {"train_share": train_share, "seed": seed}, leaks_future=True)


def method2(history: History, benchmarks: list[str], train_share: float = 0.7, seed: int = 0) -> Plan:
    """Commits split at random; tuples are pairs within each side."""
    usable = _Usable(history, benchmarks)
    shuffled = list(np.random.default_rng(seed).permutation(usable.commits))
    cut = int(round(train_share * len(shuffled)))
    train_commits, test_commits = _in_order(shuffled[:cut], usable.commits), _in_order(shuffled[cut:], usable.commits)
    index = _TupleIndex()
    train = index.add(usable.all_pairs(train_commits))
    test = index.add(usable.all_pairs(test_commits))
    return Plan("method2", index.frame(), [Split(0, train, test)], {"train_share": train_share, "seed": seed}, leaks_future=True)


def method3(history: History, benchmarks: list[str], train_share: float = 0.7) -> Plan:
    """The oldest commits train (all pairs); the rest are tested against the newest of them."""
    usable = _Usable(history, benchmarks)
    cut = max(1, int(round(train_share * len(usable.commits))))
    known, later = usable.commits[:cut], usable.commits[cut:]
    index = _TupleIndex()
    train = index.add(usable.all_pairs(known))
    test = index.add(usable.pairs(later, known))
    return Plan("method3", index.frame(), [Split(0, train, test, known[-1], usable.time[known[-1]])], {"train_share": train_share})


def kfold(history: History, benchmarks: list[str], folds: int = 10, seed: int = 0) -> Plan:
    """Closest-ancestor tuples in `folds` random folds (Perphecy's evaluation)."""
    usable = _Usable(history, benchmarks)
    index = _TupleIndex()
    everything = index.add(usable.pairs(usable.commits, usable.commits))
    if len(everything) < folds:
        raise ValueError(f"{len(everything)} tuples cannot make {folds} folds")
    splits = [
        Split(fold, everything[train], everything[test])
        for fold, (train, test) in enumerate(KFold(folds, shuffle=True, random_state=seed).split(everything))
    ]
    return Plan("kfold", index.frame(), splits, {"folds": folds, "seed": seed}, leaks_future=True)


def full(history: History, benchmarks: list[str]) -> Plan:
    """Every closest-ancestor tuple trains and is tested: de Oliveira's "Full" rows (Table 6.3),
    how well a predictor fits the data it was made from; an upper bound, not a forecast."""
    usable = _Usable(history, benchmarks)
    index = _TupleIndex()
    everything = index.add(usable.pairs(usable.commits, usable.commits))
    return Plan("full", index.frame(), [Split(0, everything, everything)], {}, leaks_future=True)


def make_plan(method: str, history: History, benchmarks: list[str], **options) -> Plan:
    protocols = {"method4": method4, "method1": method1, "method2": method2, "method3": method3, "kfold": kfold,
                 "full": full}
    if method not in protocols:
        raise ValueError(f"unknown protocol {method!r}; choose from {', '.join(METHODS)}")
    return protocols[method](history, benchmarks, **options)


def _in_order(subset: list[str], ordered: list[str]) -> list[str]:
    chosen = set(subset)
    return [sha for sha in ordered if sha in chosen]
