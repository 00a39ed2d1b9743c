"""Tuples ``(c_n, c_o, b)``: which old version each new version is compared with.

The default rule (DESIGN.md, Sousa 1.2): `c_o` is the closest ancestor of `c_n`,
walking the commit graph with merges, that has measurements *and* a profile of `b`;
failed builds and unmeasured commits are walked through.  Methods 1-3 of Sousa 1.7
pair any ancestor with any descendant instead: :func:`ancestor_pairs`.
"""

from __future__ import annotations

import pandas as pd

from perf_selector.storage.history import History, closest_pairs  # the pairing rule lives with the history: labels use it too

__all__ = ["TUPLE_KEYS", "ancestor_pairs", "ancestors", "closest_pairs", "closest_tuples"]

TUPLE_KEYS = ["new", "old", "benchmark"]


def closest_tuples(history: History, benchmarks: list[str], new_commits: list[str] | None = None) -> pd.DataFrame:
    """One row per (built commit, benchmark) that has a usable ancestor: new, old, benchmark, hops."""
    profiled = history.profiled() if len(history.profiles) else None
    pairs = closest_pairs(new_commits if new_commits is not None else history.built(), benchmarks,
                          history.parents, history.measured(), profiled)
    return pd.DataFrame(pairs, columns=[*TUPLE_KEYS, "hops"])


def ancestor_pairs(history: History, benchmarks: list[str], commits: list[str] | None = None) -> pd.DataFrame:
    """Every (descendant, ancestor) pair among `commits` (default: all measured and profiled
    commits), for Sousa's Methods 1-3, with the hop distance between them."""
    parents = history.parents
    measured, profiled = history.measured(), history.profiled()
    rows = []
    for benchmark in benchmarks:
        usable = {c for c, b in measured if b == benchmark and (not len(history.profiles) or (c, b) in profiled)}
        pool = [c for c in (commits if commits is not None else history.built()) if c in usable]
        pool_set = set(pool)
        for sha in pool:
            for ancestor, hops in ancestors(sha, parents).items():
                if ancestor in pool_set:
                    rows.append((sha, ancestor, benchmark, hops))
    return pd.DataFrame(rows, columns=[*TUPLE_KEYS, "hops"])


def ancestors(sha: str, parents: dict[str, list[str]]) -> dict[str, int]:
    """All proper ancestors with their shortest hop distance."""
    distance: dict[str, int] = {}
    frontier = [(p, 1) for p in parents.get(sha, ())]
    while frontier:
        following = []
        for commit, hops in frontier:
            if commit in distance:
                continue
            distance[commit] = hops
            following.extend((p, hops + 1) for p in parents.get(commit, ()))
        frontier = following
    return distance
