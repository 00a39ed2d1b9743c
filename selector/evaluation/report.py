"""`selector report`: one self-contained HTML file from a backtest's results.

Figures are drawn with matplotlib and embedded as PNG data, tables as plain HTML, so
the file can be attached to a CI run or mailed around and still open anywhere.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display: CI machines and hooks have none
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from perf_selector.models.evaluation import roc_points, tradeoff_curve  # noqa: E402
from perf_selector.models.names import MODEL_NAMES, STEPPING_ASIDE_RULE  # noqa: E402
from perf_selector.models.evaluation import epoch_table, results_table  # noqa: E402

# rules that need no training: the bar, not a candidate to follow
BASELINES = ("always-run", "reached-changed", "executed-changed", "history-only", "predicted-effect")

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th { background: #f3f3f3; } td.text, th.text { text-align: left; }
.warning { background: #fff4e5; border-left: 4px solid #f0a020; padding: 0.6em 1em; }
.note { color: #555; font-size: 0.9em; }
img { max-width: 100%; }
"""


def write_report(backtest_dir: Path, output: Path | None = None) -> Path:
    """Render `report.html` (or `output`) from predictions.parquet, importances.parquet and results.json,
    and replay.json when `selector backtest` replayed the history."""
    backtest_dir = Path(backtest_dir)
    predictions = pd.read_parquet(backtest_dir / "predictions.parquet")
    importances = pd.read_parquet(backtest_dir / "importances.parquet")
    document = json.loads((backtest_dir / "results.json").read_text())
    replay_path = backtest_dir / "replay.json"
    replay = json.loads(replay_path.read_text()) if replay_path.is_file() else None
    output = output or backtest_dir / "report.html"
    output.write_text(render(predictions, importances, document, replay))
    return output


def render(predictions: pd.DataFrame, importances: pd.DataFrame, document: dict, replay: dict | None = None) -> str:
    protocol = document["protocol"]
    settings = document["settings"]
    results = results_table(predictions)
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>perf-selector backtest</title>",
        f"<style>{STYLE}</style></head><body>",
        "<h1>Backtest report</h1>",
        f"<p>Protocol <b>{html.escape(protocol['method'])}</b> ({_describe(protocol)}); "
        f"{document['tuples']['labelled']} labelled tuples, {document['tuples']['positive']} with a performance change; "
        f"operating point for a target hit rate of {settings.get('target_hit_rate')}, chosen on each split's training data. "
        f"Created {html.escape(document['created'])}.</p>",
    ]
    if protocol.get("leaks_future"):
        parts.append("<p class='warning'>This protocol lets newer commits train models that are then tested on older ones "
                     "(Sousa 1.7.1): its scores are optimistic. Method 4 is the honest estimate.</p>")
    summary = _policy_summary(results)
    deciding = _deciding(summary)
    parts += _saved_and_missed(predictions, summary, deciding)
    if replay and replay.get("steps"):
        parts += _replay_section(replay)
    parts += ["<h2>AUROC</h2>", "<p class='note'>Pooled over all splits; blank where the tests hold one class only.</p>"]
    for scope, part in results.groupby("scope", sort=False):
        parts.append(f"<h3>{html.escape(scope)}</h3>")
        parts.append(_html_table(part.pivot(index="model", columns="benchmark", values="auroc").reindex(part["model"].unique()),
                                 index=True))
    parts += ["<h2>At the operating point</h2>",
              "<p class='note'>Hit rate: share of real changes that would run. Dismiss rate: share of unchanged "
              "tuples skipped. Time saved: benchmark seconds not spent, each benchmark weighted by its measured cost.</p>"]
    overall = results[results["benchmark"] == "(all)"][["model", "scope", "tuples", "positives", "auroc", "hit_rate",
                                                       "dismiss_rate", "runs_per_change", "time_saved", "missed"]]
    parts.append(_html_table(overall))
    parts += ["<h2>ROC curves</h2>", _image(_roc_figure(predictions, set(deciding)))]
    epochs = epoch_table(predictions)
    if epochs["epoch"].nunique() > 1:
        parts += ["<h2>AUROC per epoch</h2>", "<p class='note'>All benchmarks of an epoch pooled; gaps where an epoch's "
                  "tests hold one class only.</p>", _image(_epoch_figure(epochs))]
    parts += ["<h2>Hit rate against dismiss rate</h2>",
              "<p class='note'>As the threshold sweeps the test scores (all benchmarks pooled); the marker is the "
              "operating point chosen on training data.</p>", _image(_tradeoff_figure(predictions))]
    if len(importances):
        parts += ["<h2>Feature importances</h2>", "<p class='note'>Mean over all fits: impurity importance for trees, "
                  "|coefficient| (on max-abs scaled features) for logistic regression.</p>", _image(_importance_figure(importances))]
    if document.get("notes"):
        parts += ["<h2>Notes</h2><ul>", *(f"<li>{html.escape(note)}</li>" for note in document["notes"]), "</ul>"]
    parts.append("</body></html>")
    return "\n".join(parts)


def _describe(protocol: dict) -> str:
    shown = {key: value for key, value in protocol.items() if key not in ("method", "leaks_future") and value is not None}
    return ", ".join(f"{key} {value}" for key, value in shown.items())


def _html_table(frame: pd.DataFrame, index: bool = False) -> str:
    frame = frame.reset_index() if index else frame
    header = "".join(f"<th class='{'text' if not _numeric(frame[c]) else ''}'>{html.escape(str(c))}</th>" for c in frame.columns)
    rows = []
    for row in frame.itertuples(index=False):
        cells = []
        for value in row:
            if isinstance(value, float):
                cells.append(f"<td>{'' if math.isnan(value) else f'{value:.2f}'}</td>")
            else:
                cells.append(f"<td class='text'>{html.escape(str(value))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><tr>{header}</tr>{''.join(rows)}</table>"


def _numeric(column: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(column)


def _image(figure, alt: str = "figure") -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    plt.close(figure)
    return f"<img alt='{html.escape(alt)}' src='data:image/png;base64,{base64.b64encode(buffer.getvalue()).decode()}'>"


def _colour(model: str) -> str:
    """One colour per model in every figure (by its place among all the models this tool
    has, not among those a figure shows); the line style tells the scopes apart."""
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    if model not in MODEL_NAMES:
        return "#000000"
    index = MODEL_NAMES.index(model)
    # tab20 holds ten hues, each dark then light: the first ten models get the dark ones
    return to_hex(colormaps["tab20"]((2 * index + index // 10) % 20))


def _legend_outside(axis) -> None:
    """The legend beside the plot, not over its data (savefig's tight box takes it in)."""
    axis.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)


def _policy_summary(results: pd.DataFrame) -> pd.DataFrame:
    """The results_table's rows of all benchmarks pooled, indexed by (model, scope): fewest changes
    missed first, then most time saved."""
    overall = results[results["benchmark"] == "(all)"].set_index(["model", "scope"])
    return overall.sort_values(["missed", "time_saved"], ascending=[True, False])


def _deciding(summary: pd.DataFrame) -> list[tuple[str, str]]:
    """The (model, scope) pairs a reader compares first (`summary`: _policy_summary): the
    executed-changed rule (the bar every model must clear) and the learnt model that missed the
    fewest changes while saving the most."""
    chosen = [key for key in summary.index if key[0] == STEPPING_ASIDE_RULE][:1]
    learnt = summary[[model not in BASELINES for model, _ in summary.index]]
    return chosen + list(learnt.index[:1])


def _saved_and_missed(predictions: pd.DataFrame, summary: pd.DataFrame, deciding: list[tuple[str, str]]) -> list[str]:
    """The first screen: what the deciding policies would have saved and which changes they missed."""
    if not deciding:
        return []
    names = {key: ("the executed-changed rule (no training)" if key[0] == STEPPING_ASIDE_RULE else f"{key[0]} ({key[1]})")
             for key in deciding}
    lines = [f"{names[key]}: {summary.loc[key, 'time_saved']:.0%} of benchmark time saved, "
             f"{summary.loc[key, 'missed']} of {summary.loc[key, 'positives']} changes missed, "
             f"{_runs_per_change(summary.loc[key, 'runs_per_change'])}" for key in deciding]
    table = pd.DataFrame([{"policy": names[key], "time_saved": summary.loc[key, "time_saved"],
                           "hit_rate": summary.loc[key, "hit_rate"], "dismiss_rate": summary.loc[key, "dismiss_rate"],
                           "runs": str(summary.loc[key, "runs"]), "runs_per_change": summary.loc[key, "runs_per_change"],
                           "missed": str(summary.loc[key, "missed"])} for key in deciding])
    oracle = int(summary["positives"].iloc[0]) if len(summary) else 0
    missed = pd.concat([group[group["label"].astype(bool) & ~group["run"].astype(bool)].assign(policy=names[key])
                        for key, group in predictions.groupby(["model", "scope"], sort=False) if key in names])
    parts = ["<h2>What it would have saved</h2>", f"<p><b>{html.escape('; '.join(lines))}.</b></p>",
             f"<p class='note'>The oracle runs the {oracle} changed tuples alone: one run for each change. "
             "Runs for each change are a policy's runs as a multiple of the oracle's.</p>", _html_table(table)]
    if len(missed):
        missed = missed.assign(commit=missed["new"].str[:10], against=missed["old"].str[:10])
        parts += ["<p class='note'>Changes skipped at their commit:</p>",
                  _html_table(missed[["policy", "commit", "against", "benchmark", "epoch"]].astype({"epoch": str}))]
    else:
        parts.append("<p class='note'>Neither missed a change.</p>")
    return parts


def _runs_per_change(value: float | None) -> str:
    return "no change to run for" if pd.isna(value) else f"{value:.1f} runs for each change (the oracle: 1)"


def _roc_figure(predictions: pd.DataFrame, strong: set[tuple[str, str]]):
    """One panel per benchmark and one of all: the deciding policies (`strong`, _deciding's) drawn
    strong, the other models faint; a legend in every panel."""
    benchmarks = sorted(predictions["benchmark"].unique())
    panels = [*benchmarks, "(all)"]
    columns = min(3, len(panels))
    rows = math.ceil(len(panels) / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.8 * rows), squeeze=False)
    for axis, panel in zip(axes.flat, panels):
        part = predictions if panel == "(all)" else predictions[predictions["benchmark"] == panel]
        faint = False
        for (model, scope), group in part.groupby(["model", "scope"], sort=False):
            curve = roc_points(group)
            if not len(curve):
                continue
            deciding = (model, scope) in strong
            axis.plot(curve["fpr"], curve["tpr"], linestyle="-" if scope == "per-benchmark" else "--",
                      label=f"{model} ({scope})" if deciding else ("other models" if not faint else None),
                      linewidth=2.0 if deciding else 0.7, alpha=1.0 if deciding else 0.25,
                      color=_colour(model) if deciding else "#777", zorder=3 if deciding else 1)
            faint = faint or not deciding
        axis.plot([0, 1], [0, 1], color="#999", linewidth=0.8, linestyle=":")
        axis.set_title(panel)
        axis.set_xlabel("false positive rate (1 - dismiss rate)")
        axis.set_ylabel("hit rate")
        axis.legend(fontsize=6, loc="lower right")
    for axis in list(axes.flat)[len(panels):]:
        axis.axis("off")
    figure.tight_layout()
    return figure


def _epoch_figure(epochs: pd.DataFrame):
    figure, axis = plt.subplots(figsize=(9, 4))
    for (model, scope), group in epochs.groupby(["model", "scope"], sort=False):
        axis.plot(group["epoch"], group["auroc"], marker="o", markersize=3, color=_colour(model),
                  linestyle="-" if scope == "per-benchmark" else "--", label=f"{model} ({scope})")
    axis.axhline(0.5, color="#999", linewidth=0.8, linestyle=":")
    axis.set_xlabel("epoch")
    axis.set_ylabel("AUROC")
    axis.set_ylim(0, 1.02)
    _legend_outside(axis)
    return figure


def _tradeoff_figure(predictions: pd.DataFrame):
    figure, axis = plt.subplots(figsize=(9, 5))
    for (model, scope), group in predictions.groupby(["model", "scope"], sort=False):
        curve = tradeoff_curve(group)
        line, = axis.plot(curve["dismiss_rate"], curve["hit_rate"], linestyle="-" if scope == "per-benchmark" else "--",
                          label=f"{model} ({scope})", linewidth=1.1, color=_colour(model))
        labels, run = group["label"].to_numpy(bool), group["run"].to_numpy(bool)
        if labels.any() and (~labels).any():
            axis.plot([(~run & ~labels).sum() / (~labels).sum()], [(run & labels).sum() / labels.sum()], marker="o",
                      color=line.get_color())
    axis.set_xlabel("dismiss rate")
    axis.set_ylabel("hit rate")
    _legend_outside(axis)
    return figure


def _importance_figure(importances: pd.DataFrame):
    """Two panels a row, each wide enough for the feature names beside its bars."""
    groups = list(importances.groupby(["model", "scope"], sort=False))
    columns = min(2, len(groups))
    rows = math.ceil(len(groups) / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(6.5 * columns, 3.6 * rows), squeeze=False)
    for axis, ((model, scope), group) in zip(axes.flat, groups):
        top = group.sort_values("importance", ascending=True).tail(12)
        share = top["importance"] / max(group["importance"].sum(), 1e-12)
        axis.barh(top["feature"], share, color=_colour(model))
        axis.set_title(f"{model} ({scope})", fontsize=9)
        axis.tick_params(axis="y", labelsize=7)
        axis.set_xlabel("share of importance")
    for axis in list(axes.flat)[len(groups):]:
        axis.axis("off")
    figure.tight_layout()
    return figure


# ------------------------------------------------------------------ the replay's timeline
TIMELINE_TITLE = "Replay timeline"
RAN, SKIPPED = "ran", "skipped"
CAUGHT_AT_COMMIT = "change caught at its commit"
CAUGHT_LATE = "change caught late (+commits later; line: to the run that saw it)"
NEVER_CAUGHT = "change never caught"
_LATE_COLOUR, _NEVER_COLOUR, _CAUGHT_COLOUR = "#e08a00", "#d62728", "#2a9d3a"


def _replay_policies(replay: dict) -> list[str]:
    """The policy that decides first, then the others worth comparing (always-run runs everything)."""
    from perf_selector.selector.evaluation.replay import ALWAYS

    others = [row["policy"] for row in replay["summary"] if row["policy"] not in (replay["decides"], ALWAYS)]
    return [replay["decides"], *others]


def _replay_headline(row: dict) -> str:
    late = f"{row['late']} late" + (f" (at most {int(row['max_commits_later'])} commits later)" if row["late"] else "")
    share = "" if row["run_share"] is None else f"ran {row['run_share']:.0%} of the decisions"
    if row.get("runs_per_change") is not None and row["runs_per_change"] == row["runs_per_change"]:
        share += f", {row['runs_per_change']:.1f} runs for each change"
    time = "" if row["time_share"] is None else f" ({row['time_share']:.0%} of benchmark time)"
    return (f"{row['policy']}: {share}{time}; of {row['changes']} changes {row['at_commit']} caught at their commit, "
            f"{late}, {row['never']} never")


def _replay_section(replay: dict) -> list[str]:
    """The history walked as a team using `select` from its first commit would have lived it
    (selector.replay): the timeline of the deciding policy, the others below it, their figures."""
    from perf_selector.selector.evaluation.replay import AT_COMMIT

    policies = _replay_policies(replay)
    summary = {row["policy"]: row for row in replay["summary"]}
    table = pd.DataFrame([summary[p] for p in [*policies, *(p for p in summary if p not in policies)]])
    table = table[["policy", "decisions", "run_share", "runs_per_change", "time_share", "changes", "at_commit", "late", "never",
                   "mean_commits_later", "max_commits_later"]]
    table = table.assign(max_commits_later=table["max_commits_later"].map(lambda n: "" if pd.isna(n) else str(int(n))))
    parts = ["<h2>The history replayed</h2>",
             f"<p class='note'>{len(replay['commits'])} commits of {html.escape(replay['project'])} walked in order as a team "
             "using <code>selector select</code> from its first commit would have lived them: a skipped benchmark is "
             "not measured, so its next run compares with the last commit where it ran, and a change skipped at its "
             "commit is seen late when that later comparison spans it, or never. The policy that decides is the one "
             "<code>select</code> applies (the project's own model, else the shipped one, else the executed-changed "
             "rule); the others are drawn below it.</p>",
             f"<p><b>{html.escape(_replay_headline(summary[policies[0]]))}.</b></p>",
             _image(_timeline_figure(replay, policies), alt=f"{TIMELINE_TITLE}: {policies[0]}"),
             _html_table(table)]
    changes = pd.DataFrame(replay["changes"])
    unseen = changes[(changes["caught"] != AT_COMMIT) & changes["policy"].isin(policies)] if len(changes) else changes
    if len(unseen):
        unseen = unseen.assign(commit=unseen["commit"].str[:10], at=unseen["at"].fillna("").str[:10],
                               later=unseen["later"].map(lambda n: "" if pd.isna(n) else str(int(n))))
        parts += ["<p class='note'>Changes not caught at their commit, and where the team saw them:</p>",
                  _html_table(unseen[["policy", "commit", "benchmark", "caught", "at", "later"]])]
    return parts


def _timeline_legend() -> list:
    from matplotlib.lines import Line2D

    return [Line2D([], [], linestyle="none", marker="s", markersize=5, color="#4a7ab5", label=RAN),
            Line2D([], [], linestyle="none", marker="o", markersize=5, markerfacecolor="none", color="#aaaaaa",
                   label=SKIPPED),
            Line2D([], [], linestyle="none", marker="o", markersize=10, markerfacecolor="none", markeredgewidth=1.8,
                   color=_CAUGHT_COLOUR, label=CAUGHT_AT_COMMIT),
            Line2D([], [], marker=">", markersize=8, linewidth=2, color=_LATE_COLOUR, label=CAUGHT_LATE),
            Line2D([], [], linestyle="none", marker="X", markersize=9, color=_NEVER_COLOUR, label=NEVER_CAUGHT)]


def _timeline_figure(replay: dict, policies: list[str]):
    """Commits (x, in the replay's order) by benchmark (y): where each policy ran and skipped,
    and each change, caught at its commit, late (a line to the commit where it was seen, and how
    many commits later) or never.  The first policy's panel is the large one."""
    from perf_selector.selector.evaluation.replay import AT_COMMIT, LATE, NEVER

    commits = replay["commits"]
    x = {sha: i for i, sha in enumerate(commits)}
    steps = pd.DataFrame(replay["steps"])
    changes = pd.DataFrame(replay["changes"], columns=["policy", "commit", "benchmark", "caught", "at", "later"])
    benchmarks = sorted(steps["benchmark"].unique())
    y = {b: i for i, b in enumerate(benchmarks)}
    heights = [max(2.4, 0.45 * len(benchmarks) + 1.2)] + [max(1.5, 0.3 * len(benchmarks) + 0.8)] * (len(policies) - 1)
    width = min(12.5, max(8.0, 0.2 * len(commits) + 3))
    figure, axes = plt.subplots(len(policies), 1, figsize=(width, sum(heights)), sharex=True, squeeze=False,
                                gridspec_kw={"height_ratios": heights})
    for index, (axis, policy) in enumerate(zip(axes[:, 0], policies)):
        scale = 1.0 if index == 0 else 0.6
        mine = steps[steps["policy"] == policy]
        ran = mine["run"].astype(bool)
        axis.scatter(mine.loc[ran, "commit"].map(x), mine.loc[ran, "benchmark"].map(y), marker="s", s=16 * scale,
                     color="#4a7ab5", zorder=2)
        axis.scatter(mine.loc[~ran, "commit"].map(x), mine.loc[~ran, "benchmark"].map(y), marker="o", s=14 * scale,
                     facecolors="none", edgecolors="#aaaaaa", linewidths=0.8, zorder=2)
        found = changes[changes["policy"] == policy]
        caught = found[found["caught"] == AT_COMMIT]
        axis.scatter(caught["commit"].map(x), caught["benchmark"].map(y), marker="o", s=110 * scale, facecolors="none",
                     edgecolors=_CAUGHT_COLOUR, linewidths=1.8, zorder=3)
        late = found[found["caught"] == LATE]
        for change in late.itertuples(index=False):
            row = y[change.benchmark]
            axis.plot([x[change.commit], x[change.at]], [row, row], color=_LATE_COLOUR, linewidth=2, zorder=3,
                      marker="|", markevery=[1], markersize=9 * scale, markeredgewidth=2)
            # beside the change (two changes seen by the same run keep their labels apart)
            axis.annotate(f"+{int(change.later)}", (x[change.commit], row), xytext=(-3, 5), textcoords="offset points",
                          fontsize=8 if index == 0 else 6, color=_LATE_COLOUR, fontweight="bold")
        axis.scatter(late["commit"].map(x), late["benchmark"].map(y), marker=">", s=80 * scale, color=_LATE_COLOUR, zorder=4)
        never = found[found["caught"] == NEVER]
        axis.scatter(never["commit"].map(x), never["benchmark"].map(y), marker="X", s=90 * scale, color=_NEVER_COLOUR,
                     zorder=4)
        axis.set_yticks(range(len(benchmarks)), benchmarks, fontsize=8 if index == 0 else 6)
        axis.set_ylim(len(benchmarks) - 0.4, -0.6)  # the first benchmark on top
        axis.set_xlim(-0.8, len(commits) - 0.2)
        axis.grid(axis="x", color="#eeeeee", linewidth=0.6)
        counts = {kind: int((found["caught"] == kind).sum()) for kind in (AT_COMMIT, LATE, NEVER)}
        title = (f"{TIMELINE_TITLE}: {policy}" + (" (decides: what select applies)" if index == 0 else "") +
                 f" - {len(found)} changes: {counts[AT_COMMIT]} at their commit, {counts[LATE]} late, {counts[NEVER]} never")
        axis.set_title(title, fontsize=10 if index == 0 else 8, loc="left")
        axis.legend(handles=_timeline_legend(), fontsize=7 if index == 0 else 6, loc="upper left",
                    bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    step = max(1, math.ceil(len(commits) / 30))
    bottom = axes[-1, 0]
    bottom.set_xticks(range(0, len(commits), step), [commits[i][:7] for i in range(0, len(commits), step)],
                      rotation=90, fontsize=6, family="monospace")
    bottom.set_xlabel("commit, in history order (oldest left)")
    figure.tight_layout()
    return figure
