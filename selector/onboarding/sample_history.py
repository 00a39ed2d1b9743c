"""A small C project with a scripted git history, built with real gcc.

Every kind of commit the tool must tell apart appears in it: neutral (comment-only),
a hot function changed, a cold function changed, a function added at the top of a
file, a function deleted, a data-only change (a global table the code reads, so only
``.data`` changes), and a compiler-flag change.  The tests use it at several
optimization levels, PIE and not; ``selector demo`` uses it as its sample history.

The program is ``prog MODE N``; each mode is one benchmark, reaching its own hot
function through ``main``: ``checksum`` (``checksum``), ``sort`` (``insertion_sort``),
``fib`` (``fib``) and ``weights`` (``weighted_work``, which reads the ``weights``
table).
"""

from __future__ import annotations

import os
import random
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

# The initial project as real files (package data): src/*.c and *.h, a Makefile whose
# @CFLAGS@ each history fills in, its selector.toml, and benchmarks.toml (the four
# benchmarks; callgrind counts are deterministic for this program, `selector calibrate`
# proves it, and then three repetitions without warm-up are plenty).
PROJECT = Path(__file__).parent.parent / "data" / "sample_project"
SOURCES = ("src/kernels.c", "src/table.c", "src/report.c", "src/main.c", "src/kernels.h")


def project_file(relative: str) -> str:
    """The text of one file of the initial sample project."""
    return (PROJECT / relative).read_text()


@dataclass(frozen=True)
class Step:
    kind: str  # what kind of change the commit makes (see KINDS)
    message: str
    edit: Callable[[Path], None]
    changed: frozenset[str] = frozenset()  # functions whose code the commit changes
    new: frozenset[str] = frozenset()
    deleted: frozenset[str] = frozenset()
    changed_objects: frozenset[str] = frozenset()


@dataclass(frozen=True)
class SampleCommit:
    sha: str
    step: Step


def _replace(relative: str, old: str, new: str) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        path = root / relative
        text = path.read_text()
        if old not in text:
            raise ValueError(f"sample history: {old!r} not found in {relative}")
        path.write_text(text.replace(old, new, 1))

    return edit


def _chain(*edits: Callable[[Path], None]) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        for one in edits:
            one(root)

    return edit


def _raise_optimization(root: Path) -> None:
    makefile = root / "Makefile"
    text = makefile.read_text()
    for level, higher in (("-O0", "-O1"), ("-O1", "-O2"), ("-O2", "-O3"), ("-O3", "-O2")):
        if level in text:
            makefile.write_text(text.replace(level, higher, 1))
            return
    makefile.write_text(text.replace("CFLAGS = ", "CFLAGS = -O1 ", 1))


DEFAULT_STEPS: tuple[Step, ...] = (
    Step("neutral", "Explain the checksum constant",
         _replace("src/kernels.c", "/* Hot path of the \"checksum\" benchmark. */",
                  "/* Hot path of the \"checksum\" benchmark.\n * 5381 and 33 are Bernstein's djb2 constants. */")),
    Step("hot", "checksum: mix every byte twice",
         _replace("src/kernels.c", "sum = sum * 33u + data[i];", "sum = sum * 33u + data[i];\n        sum ^= sum >> 7;"),
         changed=frozenset({"checksum"})),
    Step("cold", "Clearer usage message",
         _replace("src/report.c", '"usage: %s checksum|sort|fib|weights N\\n"',
                  '"usage: %s MODE N\\n  MODE is checksum, sort, fib or weights\\n"'),
         changed=frozenset({"print_usage"})),
    Step("add-top", "Add clamp_value helper",
         _replace("src/report.c", '#include "kernels.h"\n',
                  '#include "kernels.h"\n\nint clamp_value(int value, int low, int high)\n'
                  "{\n    return value < low ? low : value > high ? high : value;\n}\n"),
         new=frozenset({"clamp_value"})),
    Step("delete", "Remove unused legacy_scale",
         _replace("src/report.c", "int legacy_scale(int value)\n{\n    return value * 3 + 1;\n}\n", ""),
         deleted=frozenset({"legacy_scale"})),
    Step("data", "Heavier weights table",
         _replace("src/table.c", "{3, 1, 4, 1, 5, 9, 2, 6}", "{3, 1, 4, 1, 5, 9, 2, 60}"),
         changed_objects=frozenset({"weights"})),
    Step("delete-reached", "Print results directly, drop report_result",
         _chain(
             _replace("src/main.c", "report_result(fib(n));", 'printf("%ld\\n", fib(n));'),
             _replace("src/main.c", "report_result(weighted_work(n));", 'printf("%ld\\n", weighted_work(n));'),
             _replace("src/report.c", "\nvoid report_result(long value)\n{\n    printf(\"%ld\\n\", value);\n}\n", ""),
             _replace("src/kernels.h", "void report_result(long value);\n", ""),
         ),
         changed=frozenset({"main"}), deleted=frozenset({"report_result"})),
    Step("alloc", "sort: allocate the numbers on the heap",
         _chain(
             _replace("src/main.c", "static int numbers[4096];\n", ""),
             _replace("src/main.c", "        int count = n < 4096 ? n : 4096;\n",
                      "        int count = n < 4096 ? n : 4096;\n        int *numbers = malloc(count * sizeof *numbers);\n"),
             _replace("src/main.c", "        printf(\"%d\\n\", numbers[count / 2]);\n",
                      "        printf(\"%d\\n\", numbers[count / 2]);\n        free(numbers);\n"),
         ),
         changed=frozenset({"main"}), changed_objects=frozenset({"numbers"})),
    Step("flags", "Build with a different optimization level", _raise_optimization),
)
KINDS = tuple(step.kind for step in DEFAULT_STEPS)

# ------------------------------------------------------------------ evolution
# After the scripted steps, a longer history for the models: tuning knobs in a header,
# turned by later commits.  Some turns change what a benchmark executes (positives),
# some change a hot function without changing its cost (checksum's shift amount), some
# change code every benchmark reaches but runs once (main's argument clamp), some are
# cold, new-but-unused or comment-only.  The mix is drawn from a seeded generator.


def _introduce_knobs(root: Path) -> None:
    (root / "src" / "tuning.h").write_text(project_file("src/tuning.h"))
    _chain(
        _replace("src/kernels.c", '#include "kernels.h"\n', '#include "kernels.h"\n#include "tuning.h"\n\nvolatile long sort_sink;\n'),
        _replace("src/kernels.c", "        sum ^= sum >> 7;\n", "#if CHECKSUM_MIX\n        sum ^= sum >> CHECKSUM_SHIFT;\n#endif\n"),
        _replace("src/kernels.c", "            values[j + 1] = values[j];\n",
                 "            values[j + 1] = values[j];\n            for (int p = 0; p < SORT_PAD; p++)\n                sort_sink += p;\n"),
        _replace("src/kernels.c", "return n < 2 ? n :", "return n < FIB_CUTOFF ? n :"),
        _replace("src/main.c", '#include "kernels.h"\n', '#include "kernels.h"\n#include "tuning.h"\n'),
        _replace("src/main.c", "    int n = atoi(argv[2]);\n", "    int n = atoi(argv[2]);\n#if CLAMP_N\n    if (n < 0)\n        n = 0;\n#endif\n"),
        _replace("src/report.c", '#include "kernels.h"\n', '#include "kernels.h"\n#include "tuning.h"\n'),
        _replace("src/report.c", '"usage: %s MODE N\\n', '"usage (rev %d): %s MODE N\\n'),
        _replace("src/report.c", "  MODE is checksum, sort, fib or weights\\n\", program);",
                 "  MODE is checksum, sort, fib or weights\\n\", USAGE_REV, program);"),
    )(root)


def _turn(knob: str, values: tuple[int, ...]) -> Callable[[Path], None]:
    """Move a knob of tuning.h to the next value of its cycle."""
    def edit(root: Path) -> None:
        path = root / "src" / "tuning.h"
        text = path.read_text()
        match = re.search(rf"#define {knob} (-?\d+)", text)
        current = int(match.group(1))
        following = values[(values.index(current) + 1) % len(values)] if current in values else values[0]
        path.write_text(text.replace(match.group(0), f"#define {knob} {following}"))
    return edit


def _append_comment(root: Path) -> None:
    path = root / "src" / "table.c"
    path.write_text(path.read_text() + f"/* reviewed: {path.read_text().count('reviewed') + 1} */\n")


def _add_helper(root: Path) -> None:
    path = root / "src" / "report.c"
    text = path.read_text()
    number = text.count("int helper_") + 1
    path.write_text(text + f"\nint helper_{number}(int value)\n{{\n    return value * {number + 2} - {number};\n}}\n")


def _weights_value(root: Path) -> None:
    path = root / "src" / "table.c"
    text = path.read_text()
    match = re.search(r"int weights\[8\] = \{([^}]*)\}", text)
    values = [int(v) for v in match.group(1).split(",")]
    values[7] = {60: 30, 30: 45, 45: 60}.get(values[7], 60)
    path.write_text(text.replace(match.group(0), "int weights[8] = {" + ", ".join(map(str, values)) + "}"))


EVOLUTION_KINDS: dict[str, tuple[float, str, Callable[[Path], None]]] = {
    # kind: (weight in the draw, commit message, edit)
    "neutral": (0.18, "Review notes in table.c", _append_comment),
    "cold": (0.10, "Number the usage message", _turn("USAGE_REV", (1, 2, 3, 4, 5, 6, 7, 8, 9))),
    "unused-helper": (0.10, "Add a helper", _add_helper),
    "reached-once": (0.10, "Toggle the argument clamp in main", _turn("CLAMP_N", (0, 1))),
    "hot-same-cost": (0.12, "checksum: another shift amount", _turn("CHECKSUM_SHIFT", (7, 9, 11, 5))),
    "checksum-mix": (0.08, "checksum: toggle the extra mixing step", _turn("CHECKSUM_MIX", (1, 0))),
    "sort-pad": (0.08, "sort: change the padding work", _turn("SORT_PAD", (0, 1, 2))),
    "fib-cutoff": (0.08, "fib: change the recursion cutoff", _turn("FIB_CUTOFF", (2, 3))),
    "weights-data": (0.08, "weights: retune the last weight", _weights_value),
    "sort-and-fib": (0.04, "Tune sort and fib together", _chain(_turn("SORT_PAD", (0, 1, 2)), _turn("FIB_CUTOFF", (2, 3)))),
}


# Months later (the demo's history, not the tests'): guards at the kernels' entry, toggled.
# A guard runs once for each call of a kernel that loops thousands of times: the rule runs
# it (its control flow changed, in code the benchmark executed), and its size is nil.  This
# is what a project's own model learns to prune within the rule once its history holds
# enough changes to certify it.


def _introduce_guards(root: Path) -> None:
    _chain(
        _replace("src/tuning.h", "#endif\n", "#define NULL_GUARDS 0\n#endif\n"),
        _replace("src/kernels.c", "    unsigned long sum = 5381;\n",
                 "#if NULL_GUARDS\n    if (!data)\n        return 0;\n#endif\n    unsigned long sum = 5381;\n"),
        _replace("src/kernels.c", "void insertion_sort(int *values, int n)\n{\n",
                 "void insertion_sort(int *values, int n)\n{\n#if NULL_GUARDS\n    if (!values)\n        return;\n#endif\n"),
    )(root)


LATER_WEIGHTS = {  # a season of tuning: the kernels' knobs turn more often than before
    "neutral": 0.08, "cold": 0.04, "unused-helper": 0.04, "reached-once": 0.06, "hot-same-cost": 0.06,
    "checksum-mix": 0.12, "sort-pad": 0.12, "fib-cutoff": 0.10, "weights-data": 0.10, "sort-and-fib": 0.08,
}
LATER_KINDS: dict[str, tuple[float, str, Callable[[Path], None]]] = {
    **{kind: (LATER_WEIGHTS[kind], message, edit) for kind, (_, message, edit) in EVOLUTION_KINDS.items()},
    "guard": (0.20, "Toggle the NULL guards of checksum and sort", _turn("NULL_GUARDS", (0, 1))),
}


def evolution_steps(count: int = 28, seed: int = 36, later: int = 0) -> tuple[Step, ...]:
    """The knobs' introduction, then `count` commits drawn from EVOLUTION_KINDS; with `later`,
    the guards' introduction and that many more drawn from LATER_KINDS.  One generator draws
    them all, so the first `count` are the same whatever `later` is."""
    rng = random.Random(seed)
    steps = [Step("knobs", "Move tuning constants into tuning.h", _introduce_knobs)]
    steps += _drawn(rng, EVOLUTION_KINDS, count)
    if later:
        steps.append(Step("guards", "Add NULL guards to checksum and sort, off", _introduce_guards))
        steps += _drawn(rng, LATER_KINDS, later)
    return tuple(steps)


def _drawn(rng: random.Random, kinds: dict[str, tuple[float, str, Callable[[Path], None]]], count: int) -> list[Step]:
    names = list(kinds)
    weights = [kinds[name][0] for name in names]
    steps = []
    for _ in range(count):
        kind = rng.choices(names, weights)[0]
        _, message, edit = kinds[kind]
        steps.append(Step(kind, message, edit))
    return steps


# The tests' evolved history (39 commits) and the demo's, which goes on for some months more:
# enough changes for the conformal bound of its own backtest to certify a miss rate of 0.05
# (measured: 55 test changes in the epochs trained on 19 or more, none missed, bound 0.018).
EVOLVED_STEPS = DEFAULT_STEPS + evolution_steps()
DEMO_STEPS = DEFAULT_STEPS + evolution_steps(later=40)


def sample_cflags(optimization: str = "-O2", pie: bool = True) -> str:
    position = "-fPIE -pie" if pie else "-fno-pie -no-pie"
    return f"{optimization} -g {position}"


def make_sample_history(
    root: str | os.PathLike[str], cflags: str | None = None, steps: tuple[Step, ...] = DEFAULT_STEPS,
    benchmarks: bool = True,
) -> list[SampleCommit]:
    """Create the project in a new git repository at `root`; returns its commits, oldest first.

    The first commit is the initial project (its step has kind "initial").  Without
    `benchmarks`, its selector.toml configures only the build (static collection).
    """
    root = Path(root)
    (root / "src").mkdir(parents=True, exist_ok=True)
    files = {relative: project_file(relative) for relative in SOURCES}
    files["Makefile"] = project_file("Makefile.in").replace("@CFLAGS@", cflags or sample_cflags())
    files["selector.toml"] = project_file("selector.toml") + ("\n" + project_file("benchmarks.toml") if benchmarks else "")
    files[".gitignore"] = "prog\n.selector/\n"
    for relative, text in files.items():
        (root / relative).write_text(text)
    _git(root, "init", "-q", "-b", "main")
    commits = [SampleCommit(commit_all(root, "Initial sample project"), Step("initial", "Initial sample project", lambda _: None))]
    for step in steps:
        step.edit(root)
        commits.append(SampleCommit(commit_all(root, step.message), step))
    return commits


_IDENTITY = {
    "GIT_AUTHOR_NAME": "Sample Author", "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Sample Author", "GIT_COMMITTER_EMAIL": "author@example.com",
}


def _git(root: Path, *arguments: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run(
        ["git", *arguments], cwd=root, check=True, capture_output=True, text=True, env={**os.environ, **_IDENTITY, **(env or {})}
    ).stdout.strip()


def commit_all(root: Path, message: str) -> str:
    """Commit everything in the working tree of `root`; returns the new commit's id."""
    # A fixed, increasing clock keeps the history's dates (and so its order) reproducible.
    count = int(_git(root, "rev-list", "--count", "--all") or 0) if (root / ".git" / "refs" / "heads" / "main").exists() else 0
    stamp = f"{1_700_000_000 + 3600 * count} +0000"
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", message, env={"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp})
    return _git(root, "rev-parse", "HEAD")
