"""How `select` turns a model's scores and a tuple's features into run or skip: the one
decision rule that `select`, `train`, `evaluate` and the corpus scripts all apply.

Around a model's score stand the rules that need no training:
- the build configuration or toolchain changed: run;
- the predicted instruction change reaches `min_effect`: run;
- the executed-changed rule (a changed basic block executed in the ancestor's run, a reached
  function deleted, a data object it reads changed, the build changed): where a policy lets
  the model decide only among the rule's runs, nothing else runs;
- a hazard: a feature that flags a kind of change which steers what runs rather than how
  often (CPU-feature dispatch, a changed constant in executed code, start-up code whose
  callees carry the run, changed code writing data hot code reads, a reached function
  deleted, the build configuration).  A model has learnt only what its corpus showed it, so
  such a tuple runs whenever the rule runs it, unless the project's own labelled history
  shows that hazard harmless for that benchmark (`harmless_hazards`).

One precision decides: a score reaches its threshold when it is at most SCORE_RESOLUTION
below it.  The ONNX form of a model scores in float32 while `train` sets thresholds on
float64 scores; the two differ by a few units in the last place of a float32 (seen: a
change scored 0.3974410236 by ONNX against the 0.3974410594 train had set to include it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from perf_selector.features.catalogue import FEATURE_NAMES
from perf_selector.models.design import any_positive
from perf_selector.models.names import EXECUTED_CHANGE_COLUMNS, STEPPING_ASIDE_RULE, WITHIN_RULE

BUILD_CONFIG_CHANGED = FEATURE_NAMES.index("build_config_changed")
PREDICTED_EFFECT = FEATURE_NAMES.index("predicted_effect")
EXECUTED_RULE_COLUMNS = [FEATURE_NAMES.index(name) for name in EXECUTED_CHANGE_COLUMNS]
EXECUTED_SHARE = FEATURE_NAMES.index("executed_changed_share")
STEERING_SHARE = FEATURE_NAMES.index("executed_steering_share")
CHANGED_DATA = FEATURE_NAMES.index("changed_data_reached")
DEFAULT_MIN_EFFECT = 0.01  # the configuration's default (selector.config.Labels)
# Straight-line work is priced exactly in instructions, but a metric of time pays more for some
# instructions (a division) than for those they replace: it is skipped only an order of
# magnitude below min_effect.
STRAIGHT_LINE_MARGIN = 0.1
# Far above a float32's rounding of a probability (6e-8 near 1), far below any gap between
# two operating points that mean different things.
SCORE_RESOLUTION = 1e-6

# The hazard features and the value from which each fires (a share or a count above it).
HAZARDS: dict[str, float] = {
    "build_config_changed": 0.0,
    "changed_cpu_dispatch": 0.0,
    "executed_constant_change": 0.0,
    "changed_startup_share": 0.5,  # start-up code whose callees carry at least half the run
    # Code that writes data read by code carrying at least a hundredth of the usual minimum effect
    # (1%) of the run: "hot" code.  Below it the readers are cold: on Duktape, whose amalgamated
    # source stores to the heap state, they carried 2e-7 to 4e-7 of the run on every one of the
    # rule's runs (docs/studies/2026-11-28-what-the-rules-runs-are.md).
    "changed_writes_hot_data": 1e-4,
    "changed_field_constant_readers": 0.0,
    "reached_functions_deleted": 0.0,
    # Changed code that calls the allocator and that the run executed: it moves the heap's state
    # (what a garbage collector finds and when it runs, pages initialised before use), whose cost
    # lands outside the changed blocks, so their executed share cannot price it.  Held out in
    # turn on 24 packs, the shipped model within the rule missed two changes, both of this kind:
    # MuJS's start-up code allocating its scriptArgs array (calls, -1.5%), LMDB's page allocator
    # whose memset's condition was inverted (readseq, +1.9%); on the tuples that model skips it
    # fires on 156 of 1,130 (docs/studies/2026-11-29-allocating-changes.md).  It counts a function
    # only where the run went through its changed code and that code steers (issue 47): on the nine
    # packs made again from their stores it fired on 2,045 of the rule's runs instead of 4,913, and
    # kept both misses (docs/studies/2026-11-30-allocating-hazard-on-what-steers.md).
    "reached_changed_allocating": 0.0,
}
HAZARD_COLUMNS = [FEATURE_NAMES.index(name) for name in HAZARDS]
_HAZARD_FLOORS = np.array(list(HAZARDS.values()))
# A memory metric's rule (peak RSS, heap allocations): what can change how much a run allocates.
MEMORY_RULE_COLUMNS = [FEATURE_NAMES.index(name) for name in
                       ("reached_changed_allocating", "reached_functions_deleted", "changed_data_reached", "build_config_changed")]
# A hazard is shown harmless for a benchmark by this many labelled pairs of the project's own
# history where it fired and the rule ran, none of them a change: with none in 30, the chance
# that the next firing is a change is under 0.1 at 95% confidence (the rule of three).  Walked
# in commit order over the 24 corpus packs, 10 such pairs would have stripped the hazard from 13
# of the 244 changes it kept, 20 from 1, 30 from none
# (docs/studies/2026-11-29-what-binds-the-pruning.md).
HARMLESS_AFTER = 30


@dataclass
class RowDecisions:
    """select's decisions for rows of features, and what decided each."""

    run: np.ndarray  # bool
    probability: np.ndarray  # the model's probability of a change (nan: no model for the benchmark)
    threshold: np.ndarray  # its operating point
    model_runs: np.ndarray  # bool: the model alone says run
    why: np.ndarray  # "build configuration", "no model", "model", "predicted effect", "hazard" or "skip"


def executed_rule_scores(features: np.ndarray, min_effect: float = DEFAULT_MIN_EFFECT) -> np.ndarray:
    """The executed-changed rule (models.baselines): 1 when a changed block executed in c_o's run,
    a reached function was deleted, a data object it reads changed or the build changed, unless
    the executed change is straight-line work too small to reach `min_effect` (straight_line_below);
    else 0."""
    features = np.atleast_2d(features)
    touched = any_positive(features, EXECUTED_RULE_COLUMNS)
    return (touched & ~straight_line_below(features, min_effect)).astype(float)


def straight_line_below(features: np.ndarray, min_effect: float = DEFAULT_MIN_EFFECT) -> np.ndarray:
    """Rows whose only change is straight-line work the old run's counts price exactly, far below
    `min_effect`: changed code ran, none of it steers (executed_steering_share 0: its control flow
    is the old one and its changed values reach no decision), no data object read changed, the
    build did not, no hazard fires, and the predicted instruction change is under a tenth of
    `min_effect` (STRAIGHT_LINE_MARGIN).  A row without executed_steering_share (features of an
    older catalogue) is taken to steer."""
    features = np.atleast_2d(np.asarray(features, dtype=float))
    steering = np.nan_to_num(features[:, STEERING_SHARE], nan=1.0)
    others = np.nan_to_num(features[:, [CHANGED_DATA, BUILD_CONFIG_CHANGED]]).any(axis=1)
    small = np.abs(np.nan_to_num(features[:, PREDICTED_EFFECT], nan=np.inf)) < 100 * min_effect * STRAIGHT_LINE_MARGIN
    return (np.nan_to_num(features[:, EXECUTED_SHARE]) > 0) & (steering <= 0) & ~others & small \
        & ~hazards_firing(features).any(axis=1)


def memory_rule_runs(features: np.ndarray) -> np.ndarray:
    """The rule that decides a memory metric's benchmarks (no model has learnt memory): run when a
    changed function that calls an allocator ran in c_o's run, a reached function was deleted, a
    data object it reads changed, or the build changed.  The models and the predicted instruction
    change speak of instructions, not of memory."""
    return any_positive(np.atleast_2d(features), MEMORY_RULE_COLUMNS)


def predicted_effect_reaches(predicted_percent, min_effect: float):
    """Whether a predicted instruction change (percent; a number or an array) reaches `min_effect`
    (a fraction): the rule by which select runs what a model would skip."""
    return np.abs(predicted_percent) >= 100 * min_effect


def score_reaches(probability, threshold):
    """Whether a model's score reaches its operating point, at the one precision that decides."""
    return np.nan_to_num(probability, nan=-np.inf) >= np.asarray(threshold, dtype=float) - SCORE_RESOLUTION


def hazards_firing(features: np.ndarray) -> np.ndarray:
    """(rows, len(HAZARDS)) bool: which hazard features fire on each row."""
    values = np.nan_to_num(np.atleast_2d(features)[:, HAZARD_COLUMNS])
    return (values > 0) & (values >= _HAZARD_FLOORS)


def fired_hazards(row: Sequence[float], harmless: Sequence[str] = ()) -> list[str]:
    """The names of the hazards that fire on one row of features, those shown harmless left out."""
    fired = hazards_firing(np.asarray([row], dtype=float))[0]
    return [name for name, on in zip(HAZARDS, fired) if on and name not in harmless]


def harmless_hazards(features: np.ndarray, labels: np.ndarray, benchmarks: Sequence[str]) -> dict[str, dict[str, dict]]:
    """From a project's own labelled tuples: for each benchmark, the hazards its history shows
    harmless (fired, with the rule running, on HARMLESS_AFTER pairs or more, none a change), each
    with its evidence {"fired": n, "changes": 0}.  What `train` records in the bundle's settings."""
    features, labels = np.atleast_2d(np.asarray(features, dtype=float)), np.asarray(labels, dtype=bool)
    fired = hazards_firing(features) & (executed_rule_scores(features) > 0)[:, None]
    names = np.asarray(benchmarks, dtype=object)
    shown: dict[str, dict[str, dict]] = {}
    for benchmark in sorted(set(benchmarks)):
        rows = names == benchmark
        for column, hazard in enumerate(HAZARDS):
            on = rows & fired[:, column]
            if on.sum() >= HARMLESS_AFTER and not labels[on].any():
                shown.setdefault(benchmark, {})[hazard] = {"fired": int(on.sum()), "changes": 0}
    return shown


def harmless_mask(harmless: Mapping[str, Mapping[str, dict]] | None, benchmarks: Sequence[str]) -> np.ndarray | None:
    """(rows, len(HAZARDS)) bool from harmless_hazards' record, for the rows' benchmarks; None without one."""
    if not harmless:
        return None
    return np.array([[hazard in harmless.get(b, {}) for hazard in HAZARDS] for b in benchmarks], dtype=bool)


def decide(probability: np.ndarray, threshold: np.ndarray, features: np.ndarray, min_effect: float,
           within: np.ndarray | None = None, harmless: np.ndarray | None = None) -> RowDecisions:
    """The decisions from a policy's probabilities and operating points (nan: no model) and the
    rules around it (see the module's docstring).  `within`: the rows the model may run at all
    (the executed-changed rule's runs, for WITHIN_RULE); `harmless`: harmless_mask's hazards
    that the project's history shows harmless for each row's benchmark."""
    features = np.atleast_2d(np.asarray(features, dtype=float))
    no_model = np.isnan(probability)
    model_runs = ~no_model & score_reaches(probability, threshold)
    if within is not None:
        model_runs &= within
    forced = features[:, BUILD_CONFIG_CHANGED] > 0
    by_effect = predicted_effect_reaches(np.nan_to_num(features[:, PREDICTED_EFFECT]), min_effect)
    hazards = hazards_firing(features)
    if harmless is not None:
        hazards &= ~harmless
    by_hazard = hazards.any(axis=1) & (executed_rule_scores(features, min_effect) > 0)
    why = np.select([forced, no_model, model_runs, by_effect, by_hazard],
                    ["build configuration", "no model", "model", "predicted effect", "hazard"], "skip")
    return RowDecisions(why != "skip", probability, threshold, model_runs, why)


def decide_by_policy(policy: str, scores: np.ndarray, thresholds: np.ndarray, features: np.ndarray,
                     min_effect: float, harmless: np.ndarray | None = None) -> np.ndarray:
    """Which tuples run under `policy` ("model", WITHIN_RULE or STEPPING_ASIDE_RULE), as `select` decides them."""
    rule = executed_rule_scores(features, min_effect)
    if policy == STEPPING_ASIDE_RULE:
        return decide(rule, np.full(len(rule), 0.5), features, min_effect).run
    return decide(scores, thresholds, features, min_effect, within=rule > 0 if policy == WITHIN_RULE else None,
                  harmless=harmless).run


def steps_aside(bundle) -> bool:
    """Whether the bundle's policy lets the executed-changed rule decide."""
    return bundle is not None and bundle.settings.get("policy") == STEPPING_ASIDE_RULE


def within_rule(bundle) -> bool:
    """Whether the bundle's policy lets its model decide only among what the executed-changed
    rule runs (it prunes the rule's runs, never adds to them)."""
    return bundle is not None and bundle.settings.get("policy") == WITHIN_RULE


def decide_rows(bundle, features: np.ndarray, benchmarks: Sequence[str], min_effect: float) -> RowDecisions:
    """select's rule for rows of features (FEATURE_NAMES order) of `benchmarks`, with a current
    `bundle`: the bundle's policy, its models' scores against their operating points, and the
    hazards its project's history shows harmless (its settings' "harmless_hazards")."""
    features = np.atleast_2d(np.asarray(features, dtype=float))
    if steps_aside(bundle):
        return decide(executed_rule_scores(features, min_effect), np.full(len(features), 0.5), features, min_effect)
    probability, threshold = np.full(len(features), np.nan), np.full(len(features), np.nan)
    for entry, rows in _rows_by_entry(bundle, benchmarks):
        probability[rows] = bundle.score_rows(entry, features[rows], [benchmarks[r] for r in rows], list(FEATURE_NAMES))
        threshold[rows] = entry.threshold
    within = executed_rule_scores(features, min_effect) > 0 if within_rule(bundle) else None
    return decide(probability, threshold, features, min_effect, within,
                  harmless_mask(bundle.settings.get("harmless_hazards"), benchmarks))


def _rows_by_entry(bundle, benchmarks: Sequence[str]) -> list[tuple]:
    """(entry, the row positions it scores) for each bundle entry that scores some benchmark
    (rows of a benchmark without an entry are left out)."""
    groups: dict = {}
    for row, benchmark in enumerate(benchmarks):
        entry = bundle.entry_for(benchmark)
        if entry is not None:
            groups.setdefault(id(entry), (entry, []))[1].append(row)
    return [(entry, np.asarray(rows)) for entry, rows in groups.values()]


def policy_summary(bundle, shipped: bool) -> str:
    """One line: which model decides under the bundle's policy and what it saves against the
    executed-changed rule on its evidence, or why the rule decides.  The whole reason, with
    every project's figures, stays in the bundle's settings (`selector doctor`, JSON)."""
    settings = bundle.settings
    model = settings.get("model", "model")
    who = f"the shipped {model}" if shipped else f"this project's {model}"
    mine = _evidence_rates(settings.get("evidence"))
    if steps_aside(bundle):
        return f"the executed-changed rule decides: {who} steps aside ({_why_aside(settings, mine)})"
    how = "within the rule" if within_rule(bundle) else "alone"
    if mine is None:
        return f"{who} decides ({how})"
    policy = WITHIN_RULE if within_rule(bundle) else "model"
    return (f"{who} decides ({how}): it dismissed {mine[policy]:.2f} of unchanged pairs against the rule's "
            f"{mine['rule']:.2f} on its evidence, at a hit rate of {mine[policy + ' hit']:.2f}")


def _evidence_rates(evidence: Mapping | None) -> dict | None:
    """Hit and dismiss rates of the model, the model within the rule and the rule, pooled over the
    evidence's projects (weighted by their unchanged and changed tuples); None without evidence."""
    if not evidence:
        return None
    rates = {}
    for name in ("model", WITHIN_RULE, "rule"):
        rates[name] = pooled_rate(evidence, name, "dismiss_rate")
        rates[name + " hit"] = pooled_rate(evidence, name, "hit_rate")
    return rates


def pooled_rate(evidence: Mapping, name: str, rate: str) -> float:
    """A policy's "dismiss_rate" or "hit_rate" pooled over the evidence's projects, each weighted by
    what the rate is of (its unchanged tuples, or its changes); projects without it left out: a
    dismiss rate of 0 and a hit rate of nan when none has it."""
    def weight(e: Mapping) -> int:
        return e["tuples"] - e["changes"] if rate == "dismiss_rate" else e["changes"]

    kept = [(e[name][rate], weight(e)) for e in evidence.values() if e.get(name) and e[name][rate] is not None]
    if not kept:
        return 0.0 if rate == "dismiss_rate" else float("nan")
    return sum(value * w for value, w in kept) / max(sum(w for _, w in kept), 1)


def _why_aside(settings: Mapping, rates: dict | None) -> str:
    """The short reason the rule decides: the bound, where it turned the evidence's pruning into the
    rule (bundles written before "decided" was recorded say so in their reason), else the evidence:
    for a learner chosen among several, that of the epochs it was chosen on, or the epochs missing;
    without any, that nothing judged it."""
    own, risk = settings.get("own_bound"), settings.get("risk_control")
    if own and own.get("decided"):
        return f"its {own['changes']} changes certify no miss rate below {own['bound']:.3f}, above {own['miss_rate']:.2f}"
    decided = risk and risk.get("decided", str(settings.get("policy_reason", "")).startswith("conformal risk control"))
    if decided and not risk.get("controlled") and risk.get("least_certifiable", 0) > risk["miss_rate"]:
        return (f"{risk['projects']} projects with changes certify no miss rate below {risk['least_certifiable']:.3f}, "
                f"above {risk['miss_rate']:.2f}")
    if decided and not risk.get("controlled"):
        return f"no threshold keeps a miss rate of {risk['miss_rate']:.2f} over the projects held out"
    chosen_on = settings.get("chosen_on")
    if chosen_on is not None:  # a learner chosen on its backtest's earlier epochs, bounded on the later ones
        if chosen_on.get("evidence") is None:
            return "its backtest had no earlier epoch to choose a learner on"
        if chosen_on.get("policy") != STEPPING_ASIDE_RULE:  # it earned pruning there; nothing later bounded it
            return "its backtest had no later epoch to certify it"
        rates = _evidence_rates(chosen_on["evidence"])  # the epochs it was judged on
    if rates is None:
        return "no backtest judged it, so no miss rate is certified"
    if rates[WITHIN_RULE] <= rates["rule"]:
        return "it dismissed no more than the rule on its evidence"
    return "it did worse than the rule on its evidence"
