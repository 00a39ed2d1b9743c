"""Does the build command's target exist?  `selector doctor` asks before anything is built:
a goal no Makefile has a rule for (`make -C bench bench_hash` where bench/ has no
Makefile, and make's built-in rule compiles the one file without the project), a CMake or
Meson target no build file defines, fails only after a checkout and a configure step
otherwise, once for every commit collected.

make is asked itself (`make -n GOAL`: a dry run, nothing is built); CMake's and Meson's
targets are looked for in the build files the repository tracks (a target made by a
function of the project's own, LevelDB's leveldb_benchmark("benchmarks/db_bench.cc"), is
found by its name in the build file's text).
"""

from __future__ import annotations

import difflib
import re
import shlex
import subprocess
from pathlib import Path, PurePosixPath

from perf_selector.selector.onboarding.machine import FAIL, OK, WARN, Finding
from perf_selector.selector.onboarding.survey import MAKEFILES, make_rules

CHECK = "build target"
DRY_RUN_SECONDS = 60
_DEFINES = {"cmake": re.compile(r"\b(?:add_executable|add_library|add_custom_target)\s*\(\s*\"?([^\s\")]+)", re.IGNORECASE),
            "meson": re.compile(r"\b(?:executable|library|static_library|shared_library|both_libraries|custom_target|"
                                r"run_target)\s*\(\s*['\"]([^'\"]+)['\"]")}
_SOURCE_LISTS = {"cmake": re.compile(r"\b(?:add_executable|add_library|target_sources)\s*\([^()]*(?:\([^()]*\)[^()]*)*\)",
                                     re.IGNORECASE),
                 "meson": re.compile(r"\b(?:executable|library|static_library|shared_library|both_libraries|files)\s*\("
                                     r"[^()]*(?:\([^()]*\)[^()]*)*\)")}
_BUILD_FILES = {"cmake": ("CMakeLists.txt", ".cmake"), "meson": ("meson.build",)}


def build_target_finding(top: Path, command: str, tracked: list[str]) -> Finding | None:
    """The finding on the first step of `command` that names a target, None when it names none."""
    steps = _steps(command)
    for index, words in enumerate(steps):
        if words and words[0] in ("make", "gmake"):
            # a Makefile made by an earlier step (./configure) is not there to ask
            return _make(top, words[1:]) if index == 0 else None
        if words[:2] == ["cmake", "--build"]:
            return _declared(top, "cmake", _cmake_targets(words), tracked)
        if words[:2] == ["meson", "compile"]:
            return _declared(top, "meson", _meson_targets(words), tracked)
    return None


def _steps(command: str) -> list[list[str]]:
    """The words of each simple command, past its variable assignments."""
    steps = []
    for part in re.split(r"&&|\|\||[;\n]", re.sub(r"\$\([^()]*\)", "", command)):
        try:
            words = shlex.split(part)
        except ValueError:
            words = part.split()
        while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
            words = words[1:]
        steps.append(words)
    return steps


def _make(top: Path, arguments: list[str]) -> Finding | None:
    folder, makefile, goals, options = "", None, [], []
    words = iter(arguments)
    for word in words:
        if word in ("-C", "--directory"):
            folder = next(words, "")
        elif word.startswith(("-C", "--directory=")):
            folder = word.split("=", 1)[1] if word.startswith("--") else word[2:]
        elif word in ("-f", "--file", "--makefile"):
            makefile = next(words, None)
        elif word.startswith("-") or "=" in word:
            options.append(word)
        else:
            goals.append(word)
    where = (top / folder).resolve()
    shown = f"{folder}/" if folder else "the top folder"
    if not goals:  # make's default goal: a Makefile must be there to have one
        if makefile is None and where.is_dir() and not any((where / name).is_file() for name in MAKEFILES):
            below = sorted(str(path.parent.relative_to(top)) for name in MAKEFILES for path in top.glob(f"*/*/{name}"))
            below += sorted(str(path.parent.relative_to(top)) for name in MAKEFILES for path in top.glob(f"*/{name}"))
            hint = f"; Makefiles are in {', '.join(below[:4])}" if below else ""
            return Finding(CHECK, FAIL, f"make: {shown} has no Makefile{hint}",
                           f"in [build] command: make -C {below[0]}" if below else "in [build] command, name the folder "
                           "whose Makefile builds the program (make -C FOLDER), or the build system's own command")
        return None
    if not where.is_dir():
        return Finding(CHECK, FAIL, f"make -C {folder} {' '.join(goals)}: no folder {folder}", _nearby_fix(top, folder, goals))
    if makefile is None and not any((where / name).is_file() for name in MAKEFILES):
        return Finding(CHECK, FAIL, f"{' '.join(goals)}: {shown} has no Makefile (make would only use its built-in "
                                    f"rules){_nearby(top, folder, goals)}", _nearby_fix(top, folder, goals))
    try:
        dry = subprocess.run(["make", "-n", *([] if makefile is None else ["-f", makefile]), *goals], cwd=where,
                             capture_output=True, text=True, timeout=DRY_RUN_SECONDS, check=False)
    except OSError:
        return None  # make is not installed: the build tool's line says so
    except subprocess.TimeoutExpired:
        return Finding(CHECK, WARN, f"make -n {' '.join(goals)} in {shown}: no answer in {DRY_RUN_SECONDS} s")
    if dry.returncode == 0:
        return Finding(CHECK, OK, f"make -n {' '.join(goals)} in {shown}: a rule makes {' and '.join(goals)}")
    missing = re.findall(r"No rule to make target [`'‘]([^'’]+)['’](, needed by [`'‘]([^'’]+)['’])?", dry.stderr)
    for target, needed, by in missing:
        if not needed and target in goals:
            return Finding(CHECK, FAIL, f"{target}: no rule makes it in {shown}{_nearby(top, folder, goals)}",
                           _nearby_fix(top, folder, goals))
        if needed:  # a prerequisite another step of the build may make
            return Finding(CHECK, WARN, f"make -n {' '.join(goals)} in {shown}: no rule to make {target}, needed by {by}",
                           "check the build command in a clean checkout")
    last = dry.stderr.strip().splitlines()[-1:] or [f"exit status {dry.returncode}"]
    return Finding(CHECK, WARN, f"make -n {' '.join(goals)} in {shown} failed: {last[0]}",
                   "check the build command in a clean checkout")


def _goals_near(top: Path, folder: str, goals: list[str]) -> list[tuple[str, list[str]]]:
    """(folder, goals) of the Makefiles of `folder` and those above it: the rules whose
    target resembles the goals (the same program name), else their first rules."""
    parts = PurePosixPath(folder).parts if folder else ()
    names = {PurePosixPath(goal).name for goal in goals}
    found = []
    for end in range(len(parts), -1, -1):
        here = "/".join(parts[:end])
        path = next((top / here / name for name in MAKEFILES if (top / here / name).is_file()), None)
        if path is None:
            continue
        prefix = PurePosixPath(folder).relative_to(here) if here else PurePosixPath(folder)
        targets = list(dict.fromkeys(t for targets, _ in make_rules(path.read_text(errors="replace")) for t in targets
                                     if "$" not in t))
        close = [t for t in targets if PurePosixPath(t).name in names or PurePosixPath(t).parent == prefix and
                 str(prefix) != "."]
        close = close or [t for name in names for t in difflib.get_close_matches(name, targets, n=4, cutoff=0.6)]
        found.append((here, list(dict.fromkeys(close)) or targets[:6]))
    return found


def _nearby(top: Path, folder: str, goals: list[str]) -> str:
    shown = [f"{f'{here}/Makefile' if here else 'the top Makefile'} has {', '.join(targets)}"
             for here, targets in _goals_near(top, folder, goals) if targets]
    return "; " + "; ".join(shown) if shown else ""


def _nearby_fix(top: Path, folder: str, goals: list[str]) -> str:
    """The goal to build instead: the nearest Makefile's rule for the same program."""
    names = {PurePosixPath(goal).name for goal in goals}
    for here, targets in _goals_near(top, folder, goals):
        same = [t for t in targets if PurePosixPath(t).name in names]
        if same:
            return f"in [build] command: make {f'-C {here} ' if here else ''}{same[0]} (and [project] binary " \
                   f"{PurePosixPath(here or '.', same[0])})"
    return "in [build] command, name a goal a Makefile has a rule for (selector init writes it when it finds one)"


def _cmake_targets(words: list[str]) -> list[str]:
    targets, taking = [], False
    for word in words:
        if word in ("--target", "-t"):
            taking = True
        elif word.startswith("--target="):
            targets.append(word.split("=", 1)[1])
        elif taking and not word.startswith("-"):
            targets.append(word)
        else:
            taking = False
    return targets


def _meson_targets(words: list[str]) -> list[str]:
    words, targets = words[2:], []
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word in ("-C", "-j", "--jobs", "-l", "--load-average"):
            skip = True
        elif not word.startswith("-"):
            targets.append(word.split(":")[0].split("/")[-1])
    return targets


def _declared(top: Path, system: str, targets: list[str], tracked: list[str]) -> Finding | None:
    """Is each target defined (add_executable, executable(...)) or at least named in a build file?"""
    if not targets:
        return None
    texts = {}
    for name in tracked:
        if PurePosixPath(name).name.endswith(_BUILD_FILES[system]):
            try:
                texts[name] = (top / name).read_text(errors="replace")
            except OSError:
                continue
    if system == "cmake":
        texts = {name: re.sub(r"#[^\n]*", "", text) for name, text in texts.items()}
    defined = list(dict.fromkeys(target for text in texts.values() for target in _DEFINES[system].findall(text)
                                 if "$" not in target and "@" not in target))
    kind = "CMake" if system == "cmake" else "Meson"
    named = []
    for target in targets:
        if target in defined:
            continue
        # named outside the calls that list a program's sources: util/benchmark.cc in
        # add_executable(foo_benchmark util/benchmark.cc ...) makes no target `benchmark`
        place = next((name for name, text in texts.items()
                      if re.search(rf"(?<![\w$-]){re.escape(target)}(?![\w-])", _SOURCE_LISTS[system].sub("", text))), None)
        if place is None:
            close = difflib.get_close_matches(target, defined, n=5, cutoff=0.4) or defined[:6]
            nearby = f"; the {kind} files define {', '.join(close)}" if close else f"; no {kind} file defines a target"
            return Finding(CHECK, FAIL, f"{target}: no {kind} file defines or names it{nearby}",
                           "in [build] command, the target that makes [project] binary")
        named.append(f"{target} (named in {place}: made through a variable or a function of the project's?)")
    if named:
        return Finding(CHECK, WARN, f"not defined by name: {', '.join(named)}", "check the build command once")
    return Finding(CHECK, OK, f"{kind} defines {', '.join(targets)}")
