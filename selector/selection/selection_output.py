"""Printing a selection: text for people, JSON for scripts, GitHub Actions outputs and a
GitLab CI dotenv report for CI.

Exit statuses of `selector select` (like grep): 0 when some benchmark should run,
1 when none needs to, 2 for a usage or input error, 3 for an internal error in
``--strict`` mode (without it, an internal error selects every benchmark, exit 0).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from perf_selector.collectors.benchmark_suite import EVERY_MEMBER, member_name, suite_of
from perf_selector.collectors.frameworks import COMMAND, FRAMEWORKS
from perf_selector.collectors.errors import UserError
from perf_selector.selector.selection.function_names import readable, shortened
from perf_selector.selector.selection.selection import Decision, Selection
from perf_selector.selector.tables import print_json, print_rows, stderr, stdout

EXIT_RUN, EXIT_NOTHING, EXIT_ERROR, EXIT_INTERNAL = 0, 1, 2, 3
SKIPS_LISTED = 20  # beyond this many skipped benchmarks, the text groups them by reason
GITHUB_MATRIX_LIMIT = 256  # jobs GitHub Actions allows a matrix to make
GITLAB_DOTENV_LIMIT = 5 * 1024  # bytes GitLab accepts in a dotenv report (artifacts:reports:dotenv)


def exit_status(selection: Selection) -> int:
    return EXIT_RUN if selection.run else EXIT_NOTHING


def print_selection(selection: Selection, output_format: str, compared: list[dict] | None = None) -> None:
    """`compared`: the rows of `--run-benchmarks` (selector.verify), which the JSON document
    carries as ``compared`` so that stdout stays one JSON document; other formats print
    them as a table afterwards."""
    if output_format == "json":
        print_json(selection.document() | ({"compared": compared} if compared is not None else {}))
    elif output_format == "github":
        write_github_outputs(selection)
    elif output_format == "gitlab":
        print_gitlab_dotenv(selection)
    else:
        print_text(selection)


def print_text(selection: Selection) -> None:
    """The runs first, one row each; the skips after them, one row each, or grouped by reason
    when there are many (a suite of hundreds)."""
    runs = [d for d in selection.benchmarks if d.decision == "run"]
    skips = [d for d in selection.benchmarks if d.decision != "run"]
    grouped = len(skips) > SKIPS_LISTED
    rows = [_text_row(d) for d in (runs if grouped else runs + skips)]
    print_rows(rows, title=f"benchmarks for {selection.commit[:12]}" + (f": {len(runs)} run, {len(skips)} skip" if grouped else ""))
    if grouped:
        by_reason: dict[str, list[str]] = {}
        for d in skips:
            by_reason.setdefault(d.reason, []).append(d.name)
        print_rows([{"skipped": len(names), "why": reason, "benchmarks": _few(names)}
                    for reason, names in sorted(by_reason.items(), key=lambda item: -len(item[1]))],
                   title="skipped, by reason")
    for d in runs + ([] if grouped else skips):
        if d.drivers:
            shown = ", ".join(
                f"{_name(x.function)} ({x.change}, rank {x.rank_instructions:.0f}, {x.instruction_delta:+d} instr)"
                if x.change != "data" else f"{_name(x.function)} (data it reads changed)" for x in d.drivers)
            stdout.print(f"  {d.name}: {shown}")
    for note in [*comparison_notes(selection), *selection.notes]:
        stderr.print(f"note: {note}")
    stdout.print(f"run: {' '.join(selection.run) if selection.run else '(nothing)'}")


def comparison_notes(selection: Selection) -> list[str]:
    """What a comparison with an ancestor several commits back means: the changes of every
    commit since it are in what changed (a RUN may be for one of them), one note per ancestor."""
    benchmarks: dict[tuple[str, int], list[str]] = {}
    for d in selection.benchmarks:
        if d.against and d.hops is not None and d.hops > 1:
            benchmarks.setdefault((d.against, d.hops), []).append(d.name)
    every = len(selection.benchmarks)
    return [f"{'every benchmark is' if len(names) == every else _few(names) + (' is' if len(names) == 1 else ' are')} "
            f"compared with {against[:10]}, {hops} commits back (the closest collected ancestor): the changes of the "
            f"{hops - 1} commit{'s' if hops > 2 else ''} between it and {selection.commit[:10]} are included, not only "
            f"{selection.commit[:10]}'s own (collect them to compare with its parent)"
            for (against, hops), names in sorted(benchmarks.items(), key=lambda item: item[0][1])]


def _few(names: list[str], shown: int = 3) -> str:
    return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")


def _text_row(d: Decision) -> dict:
    return {
            "benchmark": d.name, "decision": d.decision.upper(),
            "p": "-" if d.probability is None else f"{d.probability:.2f}",  # "-": no model scored it
            "threshold": "-" if d.threshold is None or d.threshold == float("-inf") else f"{d.threshold:.2f}",
            "against": f"{d.against[:10]} ({d.hops} back)" if d.against else "", "why": d.reason,
    }


def suite_filters(selection: Selection) -> dict[str, str]:
    """suite -> what its framework's filter option takes to run its selected benchmarks (Google
    Benchmark's --benchmark_filter regex, Catch2's test spec: `Framework.filter`): every
    suite, those with nothing selected included (a filter that runs none)."""
    selected: dict[str, list[str]] = {}
    for d in selection.benchmarks:
        suite = suite_of(d.name)
        if suite is not None:
            names = selected.setdefault(suite, [])
            if d.decision == "run":
                names.append(d.name[len(suite) + 1:])
    return {suite: _framework(selection, suite).filter(None if EVERY_MEMBER in names else names)
            for suite, names in selected.items()}


def _framework(selection: Selection, suite: str):
    """The framework of a [[suite]] of the selection (a plain command's where it is not known)."""
    return FRAMEWORKS.get(selection.suite_frameworks.get(suite, ""), COMMAND)


def print_filter(selection: Selection, suite: str) -> None:
    """`select --filter [SUITE]`: the suite's filter regex alone on stdout."""
    filters = suite_filters(selection)
    if not filters:
        raise UserError("--filter: the configuration has no [[suite]] (a filter selects among a suite's benchmarks)")
    if not suite and len(filters) > 1:
        raise UserError(f"--filter: name the suite, one of {', '.join(sorted(filters))}")
    suite = suite or next(iter(filters))
    if suite not in filters:
        raise UserError(f"--filter: no suite {suite!r} (suites: {', '.join(sorted(filters))})")
    stdout.print(filters[suite], markup=False, highlight=False, soft_wrap=True)
    stderr.print(f"run: {sum(1 for d in selection.benchmarks if d.decision == 'run' and suite_of(d.name) == suite)} "
                 f"of the {sum(1 for d in selection.benchmarks if suite_of(d.name) == suite)} benchmarks of {suite}")


def github_matrix(run: list[str]) -> dict:
    """The matrix of the benchmarks to run: one job each, or, past GitHub's 256 jobs, the names in
    256 chunks (space-separated in `benchmark`), so that every selected benchmark has a job."""
    if len(run) <= GITHUB_MATRIX_LIMIT:
        return {"benchmark": run}
    size = -(-len(run) // GITHUB_MATRIX_LIMIT)
    return {"benchmark": [" ".join(run[start:start + size]) for start in range(0, len(run), size)]}


DRIVER_WIDTH = 70  # characters of a changed function's name in the text output (demangled, shortened)


def _name(key: str) -> str:
    return shortened(readable(key), DRIVER_WIDTH)


def write_github_outputs(selection: Selection) -> None:
    """`run`, `matrix` (for strategy.matrix: fromJSON) and `any` into $GITHUB_OUTPUT; a summary table
    into $GITHUB_STEP_SUMMARY when GitHub provides one.  Outside Actions, the outputs go to stdout."""
    lines = [
        f"run={json.dumps(selection.run)}",
        f"matrix={json.dumps(github_matrix(selection.run))}",
        f"any={'true' if selection.run else 'false'}",
    ]
    filters = suite_filters(selection)
    if filters:  # one job per suite can run its selected benchmarks with the framework's filter flag
        lines.append(f"filters={json.dumps(filters)}")
    target = os.environ.get("GITHUB_OUTPUT")
    if target:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")
    else:
        stdout.print("\n".join(lines), markup=False, highlight=False)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        table = ["| benchmark | decision | p | why |", "|---|---|---|---|"] + [
            f"| {d.name} | {d.decision} | {'' if d.probability is None else f'{d.probability:.2f}'} | {d.reason} |"
            for d in selection.benchmarks
        ]
        Path(summary).open("a", encoding="utf-8").write(f"### perf-selector: {selection.commit[:12]}\n\n" + "\n".join(table) + "\n")
    stderr.print(f"run: {' '.join(selection.run) if selection.run else '(nothing)'}")


def print_gitlab_dotenv(selection: Selection) -> None:
    """A dotenv report for GitLab CI on stdout (`> selector.env`, artifacts:reports:dotenv): later
    jobs read SELECTOR_ANY (true/false), SELECTOR_RUN (the names, space-separated) and, per
    [[suite]], SELECTOR_FILTER_<SUITE> (the filter of its selected benchmarks, in its framework's form)."""
    text = gitlab_dotenv(selection.run, suite_filters(selection))
    if len(text.encode()) > GITLAB_DOTENV_LIMIT:
        # Too many names for GitLab to take: everything runs, in the form of a selection that
        # could not be made ("<suite>/*": all its benchmarks), which the jobs read already.
        plain = [d.name for d in selection.benchmarks if suite_of(d.name) is None]
        suites = sorted({suite_of(d.name) for d in selection.benchmarks} - {None})
        text = gitlab_dotenv(plain + [member_name(suite, EVERY_MEMBER) for suite in suites],
                             {suite: _framework(selection, suite).filter(None) for suite in suites})
        stderr.print(f"note: the selection is too large for a GitLab dotenv report ({GITLAB_DOTENV_LIMIT} bytes): "
                     "every benchmark runs; `--format json` has it whole")
    stdout.print(text, end="", markup=False, highlight=False, soft_wrap=True)
    for note in selection.notes:
        stderr.print(f"note: {note}", markup=False, highlight=False)
    stderr.print(f"run: {' '.join(selection.run) if selection.run else '(nothing)'}", markup=False, highlight=False)


def gitlab_dotenv(run: list[str], filters: dict[str, str]) -> str:
    """The dotenv lines; a suite's name becomes upper case letters, digits and underscores."""
    lines = [f"SELECTOR_ANY={'true' if run else 'false'}", f"SELECTOR_RUN={' '.join(run)}"]
    lines += [f"SELECTOR_FILTER_{re.sub(r'[^A-Za-z0-9_]', '_', suite).upper()}={regex}" for suite, regex in filters.items()]
    return "\n".join(lines) + "\n"
