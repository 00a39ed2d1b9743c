"""`selector init`: a first selector.toml from what the repository holds and this machine has.

The file is commented: each section says what was found and why the setting is what it
is, and the guesses are marked CHECK.  The measurement settings are the ones that give
decided labels: callgrind's instruction counts when valgrind is installed (exact, so two
repetitions decide every label once `selector calibrate` shows it), else wall time with
ten repetitions on a pinned CPU, which the Mann-Whitney test needs to decide a 1% change.
An existing selector.toml is never overwritten.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from perf_selector.collectors.errors import UserError
from perf_selector.collectors.metrics import INSTRUCTIONS
from perf_selector.selector.onboarding.build_recipes import Recipe, build_recipe
from perf_selector.selector.config import CONFIG_NAME
from perf_selector.collectors.frameworks import FRAMEWORKS
from perf_selector.selector.onboarding.survey import DRIVER, HARNESS, PROGRAM, SCRIPTS, Candidate, Survey, survey

BUILD_SYSTEM_NAMES = {"cmake": "CMake (CMakeLists.txt)", "meson": "Meson (meson.build)", "make": "make (Makefile)",
                      "autotools": "autotools (configure.ac)", "configure": "a configure script and make"}
KIND_NAMES = {DRIVER: "a db_bench-like driver", **{f.name: f.title for f in FRAMEWORKS.values() if f.lists_itself},
              HARNESS: "a benchmark program", SCRIPTS: "benchmark scripts", PROGRAM: "a benchmark program"}
TIMED_REPETITIONS = 10
DRIVER_RECORDS = 10_000  # --num: enough work to measure, little enough to run under callgrind


@dataclass(frozen=True)
class Measurement:
    """How this machine measures: the metric, the repetitions that decide labels with it,
    the profiler, and the CPU to pin timed runs to."""

    metric: str
    repetitions: int
    profiler: str
    cpu: str | None

    @classmethod
    def on_this_machine(cls) -> "Measurement":
        if shutil.which("valgrind"):
            return cls(INSTRUCTIONS.name, 2, "callgrind", None)
        cpus = os.cpu_count() or 1
        return cls("wall_time", TIMED_REPETITIONS, "perf" if shutil.which("perf") else "none",
                   str(cpus - 1) if cpus > 1 else None)


@dataclass
class InitialConfig:
    text: str
    found: list[str] = field(default_factory=list)  # what the survey found, a line each
    checks: list[str] = field(default_factory=list)  # what the user should check, a line each


def initial_config(path: Path, measurement: Measurement | None = None) -> InitialConfig:
    """The configuration `selector init` proposes for the repository holding `path`."""
    seen = survey(path)
    measurement = measurement or Measurement.on_this_machine()
    candidate = seen.best
    recipe = build_recipe(seen, candidate)
    result = InitialConfig("")
    result.found = _found(seen, measurement)
    result.checks = _checks(seen, candidate, recipe, measurement)
    benchmarks = _benchmarks(candidate, measurement, seen)
    if recipe.program:  # the library is analysed: the benchmarks run the program from the checkout
        benchmarks = benchmarks.replace("{binary}", "{checkout}/" + recipe.program)
    sections = [_header(), _project(candidate, recipe, seen), _build(recipe, seen),
                benchmarks, _others(seen), _profile(measurement), _labels(), _run(measurement)]
    result.text = "\n".join(section for section in sections if section)
    return result


def refuse_existing(top: Path) -> None:
    """The one-line error when `top` has a selector.toml already."""
    target = top / CONFIG_NAME
    if target.exists():
        raise UserError(f"{target} already exists; init never overwrites it (move it aside to start again)")


def write_new_config(top: Path, text: str) -> Path:
    """Write selector.toml at `top`; an existing one is never replaced."""
    target = top / CONFIG_NAME
    refuse_existing(top)
    try:
        with open(target, "x", encoding="utf-8") as handle:  # "x": fails if it exists, even if made meanwhile
            handle.write(text)
    except FileExistsError:
        refuse_existing(top)
    return target


def _string(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(text, ensure_ascii=False)


COMMENT_COLUMN = 35


def _entry(assignment: str, comment: str = "", *more: str) -> str:
    """A line of the file, its comment aligned with the others; `more` continues the comment."""
    if not comment:
        return f"{assignment}\n"
    lines = [f"{assignment.ljust(COMMENT_COLUMN - 1)} # {comment}"]
    lines += [f"{'':{COMMENT_COLUMN - 1}} # {line}" for line in more]
    return "\n".join(lines) + "\n"


def _header() -> str:
    return ("# selector.toml, written by `selector init` from what it found in this repository and on\n"
            "# this machine. Lines marked CHECK are guesses. Every key: docs/configuration.md in selector's repository.\n"
            "# Then: `selector doctor` (what is missing), `selector calibrate` (how noisy each benchmark is).\n")


def _project(candidate: Candidate | None, recipe: Recipe, seen: Survey) -> str:
    if candidate is None:
        what = "# CHECK: no benchmark program found; the binary your benchmarks run (the one analysed)."
    elif candidate.kind == SCRIPTS:
        what = (f"# {KIND_NAMES[candidate.kind]} in {candidate.source}/ (*{candidate.suffix}), run by the program of "
                f"target {candidate.target}\n# (CHECK: the program that runs them).")
    else:
        how = "" if candidate.defined else " (CHECK: target guessed from the file name)"
        what = f"# {KIND_NAMES[candidate.kind]}, {candidate.source}: target {candidate.target}{how}."
    if recipe.program:
        what += (f"\n# {recipe.program} loads the project's shared library {Path(recipe.binary).name}, which "
                 "holds the code it runs:\n# the library is analysed, and the benchmarks run the program.")
    return (f"[project]\n{what}\nbinary = {_string(recipe.binary)}\n"
            + _entry('# suite = "bench-inputs"', "benchmark inputs kept outside the history: {suite} in commands"))


def _build(recipe: Recipe, seen: Survey) -> str:
    patterns = "".join(f"    {_string(pattern)},\n" for pattern in seen.unaffected)
    return (f"[build]\n# {BUILD_SYSTEM_NAMES.get(seen.build_system or '', 'no build system found (CHECK)')}; "
            f"{recipe.how}.\n"
            "# The analysis names functions from the symbol table and reads each compile unit's flags from the\n"
            "# debug information. Run in a clean checkout of every commit.\n"
            f"command = {_string(recipe.command)}\n"
            + _entry("timeout = 900", "seconds; raise it for a long cold build") +
            "# Paths no build or benchmark reads: a commit that changes only these is not built (its parent's\n"
            "# build and runs stand for it). CHECK: add folders your build does not read (tests, examples).\n"
            f"unaffected = [\n{patterns}]\n")


def _measured(measurement: Measurement) -> str:
    if measurement.metric == INSTRUCTIONS.name:
        return (_entry(f'metric = "{INSTRUCTIONS.name}"', "callgrind's count: exact once `selector calibrate` shows it")
                + _entry(f"repetitions = {measurement.repetitions}", "exact: two decide every label (the second "
                         "shows a count that is not)"))
    return (_entry(f"metric = {_string(measurement.metric)}", "timed: valgrind is not installed here")
            + _entry(f"repetitions = {measurement.repetitions}", "what the Mann-Whitney test needs for a 1% change on a "
                     "pinned CPU;", "`selector calibrate` says how many this noise needs"))


def _benchmarks(candidate: Candidate | None, measurement: Measurement, seen: Survey) -> str:
    if candidate is None:
        return ("# CHECK: no benchmark found. Describe each one (more [[benchmark]] blocks as needed):\n"
                "# [[benchmark]]\n# name = \"compress\"\n# command = \"{binary} {suite}/input.bin\"\n"
                + "".join(f"# {line}\n" for line in _measured(measurement).splitlines() if not line.startswith(" ")))
    if candidate.kind in FRAMEWORKS:
        return _framework_suite(candidate, measurement)
    if candidate.kind == DRIVER:
        return _driver(candidate, measurement)
    if candidate.kind == HARNESS and candidate.names:
        return _harness_suite(candidate, measurement)
    if candidate.kind == SCRIPTS:
        return _script_suite(candidate, measurement)
    return (f"# {candidate.source} runs as one benchmark. CHECK: the arguments it needs (inputs can live in a\n"
            "# folder outside the history: [project] suite, then {suite}/file in the command).\n"
            f"[[benchmark]]\nname = {_string(_benchmark_name(candidate.stem))}\ncommand = \"{{binary}}\"\n"
            + _measured(measurement))


def _framework_suite(candidate: Candidate, measurement: Measurement) -> str:
    framework = FRAMEWORKS[candidate.kind]
    metric = measurement if measurement.metric == INSTRUCTIONS.name else Measurement(
        framework.timed_metric, measurement.repetitions, measurement.profiler, measurement.cpu)
    return (framework.init_block(candidate.source, candidate.names) +
            f"[[suite]]\nname = {_string(framework.suite_name)}\nframework = {_string(framework.name)}\n" + _measured(metric)
            + _entry(f"# include = {_string(framework.include_example(candidate.names))}", "CHECK: every benchmark runs; keep those that matter (a regex)"))


def _driver(candidate: Candidate, measurement: Measurement) -> str:
    names = [name for name in candidate.names if name != "fillseq"]
    fill = "fillseq," if "fillseq" in candidate.names else ""
    options = "".join(f" {flag}{value}" for flag, value in (("--num=", DRIVER_RECORDS), ("--db=", "db"))
                      if flag in candidate.flags)
    listing = f"names = [{', '.join(map(_string, names))}]\n" if names else \
        _entry('list_command = "{binary} --list"', "CHECK: how the driver lists its benchmarks (or names = [...])")
    return (f"# {candidate.source}: a db_bench-like driver; each benchmark runs alone"
            + (",\n# after a fillseq that gives the reads their data" if fill else "") + ".\n"
            "[[suite]]\nname = \"db\"\nframework = \"command\"\n"
            f"command = {_string('{binary} --benchmarks=' + fill + '{name}' + options)}\n{listing}"
            + (_entry('setup = "rm -rf db"', "a fresh database for every run") if "--db=" in candidate.flags else "")
            + _entry("isolate = false", "CHECK: counts the whole run; a callgrind pattern of each benchmark's own",
                     'function ("*Benchmark::{name}*") leaves the shared set-up out')
            + _measured(measurement))


def _harness_suite(candidate: Candidate, measurement: Measurement) -> str:
    """A command suite of the benchmarks a source registers for the project's own harness, each
    run alone by a regex argument anchored on its name, isolated by its function's name as
    callgrind demangles it (`ns::BM_Foo(long)`)."""
    patterns = [f"{scope}::{{name}}(*" if scope else "{name}(*" for scope in candidate.scopes]
    common = max(patterns, key=patterns.count)
    members = [_string(name) if pattern == common else
               f"{{name = {_string(name)}, isolate = {_string(pattern.replace('{name}', name))}}}"
               for name, pattern in zip(candidate.names, patterns)]
    listed = "".join(f"    {member},\n" for member in members)
    scope = next((s for s, p in zip(candidate.scopes, patterns) if p == common), "")
    sized = candidate.parameterised
    shown = ", ".join(sized[:4]) + (f" and {len(sized) - 4} more" if len(sized) > 4 else "")
    return (f"# {candidate.source} registers {len(candidate.names)} benchmark{'s' * (len(candidate.names) > 1)} "
            f"(BENCHMARK(...)) for the project's own harness,\n# whose main is elsewhere in {candidate.target}: "
            "run without an argument it runs them all. Each runs alone here,\n"
            "# picked by a regex argument anchored on its name.\n"
            + (f"# CHECK: {shown} run{'s' * (len(sized) == 1)} with sizes (BENCHMARK_RANGE, ->Arg): `^name$` may run "
               "every size in one run,\n# or none where the harness names each size (name/size): then list each size "
               f"as a name of its own\n# (\"{sized[0]}/8\", \"{sized[0]}/64\", as the harness prints them) and isolate "
               f"by {_string(common.replace('{name}', '{function}'))},\n# {{function}} being the name up to its '/'.\n"
               if sized else "")
            + "[[suite]]\nname = \"bench\"\nframework = \"command\"\n"
            + _entry("command = \"{binary} '^{name}$'\"", "CHECK: how the harness picks one benchmark (a regex on its name)")
            + f"names = [\n{listed}]\n"
            + _entry(f"isolate = {_string(common)}", "CHECK: callgrind's name of each benchmark's function"
                     + (f" (namespace {scope})" if scope else ""), "(its own count, without the harness's)")
            + _measured(measurement))


def _script_suite(candidate: Candidate, measurement: Measurement) -> str:
    """A command suite of the benchmark scripts, one benchmark a script, each run by the
    program from the commit's checkout (a script's own change is the commit's change too)."""
    names = "".join(f"    {_string(stem)},\n" for stem in candidate.names)
    script = f"{{checkout}}/{candidate.source}/{{name}}{candidate.suffix}"
    return (f"# The scripts of {candidate.source}/, one benchmark each, run by the program. `selector calibrate` says\n"
            "# which run too long to profile on every commit; give those a smaller input through [project]\n"
            "# suite ({suite} in the command) rather than editing the project's scripts.\n"
            "[[suite]]\nname = \"scripts\"\nframework = \"command\"\n"
            + _entry(f"command = {_string('{binary} ' + script)}", "CHECK: how the program runs a script")
            + f"names = [\n{names}]\n"
            + _entry("isolate = false", "the whole run counts: the program's start-up and the script's work")
            + _measured(measurement))


def _benchmark_name(stem: str) -> str:
    return "".join(c if c.isalnum() or c in "_.-" else "-" for c in stem) or "benchmark"


def _others(seen: Survey) -> str:
    others = seen.candidates[1:]
    if not others:
        return ""
    lines = [f"#   {c.source}: {KIND_NAMES[c.kind]}, target {c.target}" for c in others[:8]]
    if len(others) > 8:
        lines.append(f"#   and {len(others) - 8} more")
    return ("# Also found (one binary is analysed per configuration; to measure one of these instead, change\n"
            "# [project] binary, the build's target and the benchmarks):\n" + "\n".join(lines) + "\n")


def _profile(measurement: Measurement) -> str:
    why = {"callgrind": "what each benchmark executes, function by function and instruction by instruction",
           "perf": "sampled: valgrind is not installed here", "none": "no valgrind or perf here: select runs "
           "benchmarks it cannot see into (install valgrind)"}[measurement.profiler]
    return "[profile]\n" + _entry(f"tool = {_string(measurement.profiler)}", why)


def _labels() -> str:
    return ("[labels]\n" + _entry("alpha = 0.05", "Mann-Whitney U significance")
            + _entry("min_effect = 0.01", "the smallest relative change of the median that counts"))


def _run(measurement: Measurement) -> str:
    if measurement.cpu is None:
        return "[run]\n" + _entry('# cpu = "1"', "pin benchmark runs (taskset -c): counts need no pinning")
    return "[run]\n" + _entry(f"cpu = {_string(measurement.cpu)}", "pin timed runs to one CPU (taskset -c); keep other "
                                                                     "work off it")


def _found(seen: Survey, measurement: Measurement) -> list[str]:
    found = [f"build system: {BUILD_SYSTEM_NAMES.get(seen.build_system or '', 'none found')}"
             + (f", in {seen.make_folder}/ (no build file at the top)" if seen.make_folder else "")]
    for candidate in seen.candidates[:5]:
        registered = f", naming {len(candidate.names)} benchmark{'s' * (len(candidate.names) > 1)}" if candidate.names else ""
        found.append(f"{KIND_NAMES[candidate.kind]}: {candidate.source} (target {candidate.target}{registered})")
    if len(seen.candidates) > 5:
        found.append(f"and {len(seen.candidates) - 5} more benchmark programs")
    if not seen.candidates:
        frameworks = ", ".join(f.title for f in FRAMEWORKS.values() if f.lists_itself)
        found.append(f"benchmarks: none found (no source of {frameworks}, db_bench-like driver or *bench* program)")
    if any(name.startswith(".github/") for name in seen.files):
        found.append("CI: .github/ (left out of builds: [build] unaffected)")
    found.append(f"measured by: {measurement.metric} ({measurement.repetitions} repetitions), profiled by "
                 f"{measurement.profiler}")
    return found


def _checks(seen: Survey, candidate: Candidate | None, recipe: Recipe, measurement: Measurement) -> list[str]:
    checks = [f"the build: run `{recipe.command}` once in a clean checkout; it should make {recipe.binary}"]
    checks += recipe.checks
    if seen.missing_submodules:
        checks.append(f"submodules not checked out: {', '.join(seen.missing_submodules)}; the build may need them: "
                      "git submodule update --init (collect takes them from your clone, never the network)")
    if candidate is None:
        checks.append("no benchmark found: fill in the commented [[benchmark]] and [project] binary")
    elif not candidate.defined:
        checks.append(f"the target {candidate.target} is guessed from {candidate.source}'s name")
    elif candidate.kind == HARNESS and candidate.names:
        checks.append(f"how {candidate.target} picks one benchmark (its [[suite]] runs it with '^name$') and the "
                      "callgrind pattern of each benchmark's function (isolate)")
    elif candidate.kind == SCRIPTS:
        checks.append(f"that {candidate.target} runs a script given as its argument ({len(candidate.names)} scripts of "
                      f"{candidate.source}/ in the [[suite]])")
    elif candidate.kind in (PROGRAM, HARNESS):
        checks.append(f"the arguments {candidate.stem} needs (its [[benchmark]] command runs it without any)")
    if measurement.metric != INSTRUCTIONS.name:
        checks.append("valgrind is not installed: benchmarks are timed (10 repetitions, a pinned CPU); "
                      "apt-get install valgrind and run init again for exact instruction counts")
    return checks
