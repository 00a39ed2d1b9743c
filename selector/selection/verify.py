"""Running what `select` chose and comparing with the ancestor (the hook's ``--run-benchmarks``).

The selected benchmarks run on the new commit, in a clean worktree of it: with the binary
`select` analysed when it was given or the working tree's own build (copied to the
configured path of the checkout), else built there.  A suite's selected benchmarks
(``<suite>/<name>``) are listed from that binary and each runs alone, as `collect` runs
them.  Each is compared with its ancestor's stored measurements by the statistics the
labels use (Mann-Whitney U and the minimum effect; effect alone for benchmarks calibrated
as exact).  A selected benchmark that cannot be compared (no ancestor, its run failed, its
suite could not be listed) still has its row, and the row's note says why.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
from pathlib import Path

import pandas as pd

from perf_selector.collectors.benchmark_runner import BenchmarkRunner, BenchmarkSpec
from perf_selector.collectors.benchmark_suite import EVERY_MEMBER, suite_of
from perf_selector.collectors.builds import Worktree, run_build
from perf_selector.collectors.errors import UserError
from perf_selector.collectors.repository import Repository
from perf_selector.collectors.run_context import RunContext
from perf_selector.selector.benchmarks import build_benchmarks
from perf_selector.selector.config import Config, context_settings, label_rules, require_suite
from perf_selector.selector.selection.selection import Decision, Selection
from perf_selector.storage.labels import PairLabeller
from perf_selector.storage.store import Store

COLUMNS = ["benchmark", "against", "old", "new", "effect", "p", "changed", "regression", "note"]


def verify(top: Path, config: Config, store: Store, selection: Selection) -> pd.DataFrame:
    """One row per selected benchmark (a suite's "<suite>/*" stands for each of its members):
    old and new medians, effect, p, changed, regression, and a note; what could not be
    measured or compared is None, and the note says why."""
    chosen = [d for d in selection.benchmarks if d.decision == "run"]
    if not chosen:
        return pd.DataFrame(columns=COLUMNS)
    require_suite(config)
    repository = Repository.open(top)
    selected = chosen
    with Worktree(repository, selection.commit) as checkout:
        copied = _copied(checkout, config, selection)
        if copied is not None:
            built_how = f"the build select analysed ({selection.build})"
            found, specs, chosen, values, failures = _measured(selected, copied, checkout, config)
        if copied is None or failures or found.problems:
            # Only the executable was copied: one that needs what its build left beside it (a
            # shared library) fails here, and a build of the commit runs instead.
            why = f" (the build select analysed did not run here: {_first_problem(failures, found.problems)})" \
                if copied is not None else ""
            built_how = f"a build in a clean worktree{why}"
            if copied is not None:
                copied.unlink()  # or a build that goes by the files' times would take it as built
            found, specs, chosen, values, failures = _measured(selected, _built(checkout, config, selection), checkout,
                                                              config)
    labeller = PairLabeller(store.read("measurements", keys=sorted({d.against for d in chosen if d.against})),
                            store.read("calibration"), label_rules(config))
    rows = []
    for decision in chosen:
        name = decision.name
        row = dict.fromkeys(COLUMNS)
        row |= {"benchmark": name, "against": decision.against[:10] if decision.against else None}
        new = values.get(name, [])
        row["new"] = statistics.median(new) if new else None
        if name not in specs:
            row["note"] = _why_not_listed(name, selection.commit, found.problems)
        elif name in failures:
            row["note"] = f"its run failed on {selection.commit[:12]}: {failures[name]}"
        elif not decision.against:
            row["note"] = f"nothing to compare with: {decision.reason}"
        else:
            labeller.values[(selection.commit, name)] = new
            label = labeller.label(selection.commit, decision.against, name)
            if label is None:
                row["note"] = f"{decision.against[:10]} has no stored runs of it in its configured metric to compare with"
            else:
                row |= {"old": label.median_old, "effect": label.effect, "p": label.p_value, "changed": label.label,
                        "regression": label.regression,
                        "note": f"undecided: {label.reason}" if label.label is None else ""}
        rows.append(row)
    compared = pd.DataFrame(rows, columns=COLUMNS)
    compared.attrs["ran_on"] = built_how
    return compared


def print_verification(compared: pd.DataFrame) -> None:
    """The comparison as a table for people: what is unknown shows as "-", its note says why;
    then the regressions, named."""
    from perf_selector.selector.tables import print_table, stdout

    if not len(compared):
        return
    shown = compared.astype(object).where(compared.notna(), "-")
    ran_on = f", run on {compared.attrs['ran_on']}" if compared.attrs.get("ran_on") else ""
    print_table(shown, title=f"the selected benchmarks against the ancestor (label statistics{ran_on})",
                justify={column: "right" for column in ("old", "new", "effect", "p")})
    regressions = compared[compared["regression"] == True]  # noqa: E712
    if len(regressions):
        stdout.print(f"[bold red]regression[/]: {', '.join(regressions['benchmark'])}")


def _measured(selected: list[Decision], binary: Path, checkout: Path, config: Config):
    """The benchmarks of `binary` (a suite's listed from it), the selected ones ("<suite>/*"
    expanded), and their runs: values and failures."""
    found = build_benchmarks(config, checkout, binary)
    specs = {spec.name: spec for spec in found.specs}
    chosen = _expanded(selected, specs)
    values, failures = _run([specs[d.name] for d in chosen if d.name in specs], binary, checkout, config)
    return found, specs, chosen, values, failures


def _first_problem(failures: dict[str, str], problems: dict[str, str]) -> str:
    name, problem = next(iter(failures.items())) if failures else next(iter(problems.items()))
    first = (problem.strip().splitlines() or [""])[0]
    return f"{name}: {first[:200]}"


def _copied(checkout: Path, config: Config, selection: Selection) -> Path | None:
    """The build `select` analysed (given, the working tree's own, or its build in a clean
    worktree), copied to the configured path of `checkout`; None when it has none here (stored)."""
    if not selection.local_binary or not Path(selection.local_binary).is_file():
        return None
    target = checkout / config.project.binary
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(selection.local_binary, target)
    return target


def _built(checkout: Path, config: Config, selection: Selection) -> Path:
    """The commit built in `checkout`."""
    build = run_build(checkout, selection.commit, config.build.command, config.project.binary, config.build.timeout)
    if build.status != "ok":
        raise UserError(f"building {selection.commit[:12]} to run its benchmarks failed: {build.reason}")
    return build.binary


def _expanded(chosen: list[Decision], specs: dict[str, BenchmarkSpec]) -> list[Decision]:
    """`chosen` with each "<suite>/*" (every benchmark of a suite, when select could not know
    them) replaced by the suite's benchmarks listed from the build."""
    expanded = []
    for decision in chosen:
        suite = suite_of(decision.name)
        if suite and decision.name == f"{suite}/{EVERY_MEMBER}":
            members = [Decision(name, "run", decision.reason) for name in sorted(specs) if suite_of(name) == suite]
            expanded.extend(members or [decision])
        else:
            expanded.append(decision)
    return expanded


def _run(specs: list[BenchmarkSpec], binary: Path, checkout: Path, config: Config
         ) -> tuple[dict[str, list[float]], dict[str, str]]:
    """Each benchmark's measured values, and why a benchmark's runs failed (its first error)."""
    if not specs:
        return {}, {}
    context = RunContext(context_settings(config))
    try:
        with tempfile.TemporaryDirectory(prefix="selector-verify-") as workdir:
            runner = BenchmarkRunner(specs, binary, checkout, Path(config.project.suite) if config.project.suite else None,
                                     cpu=config.run.cpu, seed=config.run.seed, workdir=Path(workdir), context=context)
            runs = runner.run().runs
    finally:
        context.release()
    values: dict[str, list[float]] = {}
    failures: dict[str, str] = {}
    for run in runs:
        if run.counts:
            values.setdefault(run.benchmark, []).append(run.value)
        elif not run.warmup and run.status != "ok":
            failures.setdefault(run.benchmark, run.error or run.status)
    return values, failures


def _why_not_listed(name: str, sha: str, problems: dict[str, str]) -> str:
    suite = suite_of(name)
    if suite in problems:
        return f"suite {suite}: its benchmarks could not be listed at {sha[:12]} ({problems[suite]})"
    if suite:
        return f"the build of {sha[:12]} does not list it among suite {suite}'s benchmarks"
    return f"not a benchmark of the configuration at {sha[:12]}"
