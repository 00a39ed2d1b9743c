"""The build command `selector init` writes: the project's own build system, asked for an
optimised build with debug information, making the one program the benchmarks run.

Debug information (-g) is what lets the analysis read each compile unit's flags, so a
commit that changes the build configuration is known for one (collectors/build_config.py);
the symbol table names the functions.  Each build system has its own way to ask for it:
CMake's RelWithDebInfo, Meson's debugoptimized, autoconf's CFLAGS, and for a plain
Makefile whichever of its variables carries the flags (see :func:`make_flags`).
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from perf_selector.selector.onboarding.survey import COMMAND_KINDS, MAKEFILES, Candidate, Survey, benchmark_options

JOBS = "-j$(nproc)"  # the build command runs in a shell

PLACEHOLDER = "CHANGE-ME"  # what init writes where it found nothing; `doctor` refuses it


@dataclass
class Recipe:
    command: str
    binary: str  # relative to the checkout: what the analysis reads
    how: str  # how the command asks for -g, for the file's comment
    checks: list[str] = field(default_factory=list)  # what the user should check
    program: str = ""  # the program the benchmarks run, relative to the checkout, where it is not `binary`


def build_recipe(survey: Survey, candidate: Candidate | None) -> Recipe:
    """How to build `candidate`'s program (or, with none, the project's default target)."""
    system = survey.build_system
    if system == "cmake":
        return _cmake(survey, candidate)
    if system == "meson":
        return _meson(candidate)
    if system in ("autotools", "configure"):
        return _configure(survey, candidate)
    return _make(survey, candidate)


def _cmake(survey: Survey, candidate: Candidate | None) -> Recipe:
    build = "cmake-build" if any(name.startswith("build/") for name in survey.files) else "build"
    top = survey.build_file("", "CMakeLists.txt")
    # Benchmark options the project may leave off (SNAPPY_BUILD_BENCHMARKS, LEVELDB_BUILD_BENCHMARKS)
    options = list(benchmark_options(top))
    configure = " ".join(["cmake -S . -B", build, "-DCMAKE_BUILD_TYPE=RelWithDebInfo", *options])
    target = f" --target {candidate.target}" if candidate else ""
    binary = str(PurePosixPath(build, candidate.artifact)) if candidate and candidate.artifact else \
        _binary(build, candidate, survey)  # where CMake said it writes it, else where it usually does
    recipe = Recipe(f"{configure} && cmake --build {build}{target} {JOBS}", binary,
                    "CMake's RelWithDebInfo: optimised (-O2) with debug information (-g)")
    if candidate and candidate.library and candidate.kind in COMMAND_KINDS:
        # the program is a thin main over the project's shared library: the library is analysed,
        # and the benchmarks run the program from the checkout (a framework's suite runs the
        # binary itself: the program it stays)
        recipe.binary, recipe.program = str(PurePosixPath(build, candidate.library)), binary
    if "CMAKE_RUNTIME_OUTPUT_DIRECTORY" in top:
        recipe.checks.append(f"CMakeLists.txt sets CMAKE_RUNTIME_OUTPUT_DIRECTORY: check that the build puts the "
                             f"program at {recipe.binary}")
    if re.search(r"set\s*\(\s*CMAKE_BUILD_TYPE\s+\w+\s*\)", top) and not re.search(r"if\s*\(\s*NOT\s+CMAKE_BUILD_TYPE", top):
        recipe.checks.append("CMakeLists.txt sets CMAKE_BUILD_TYPE itself: check that the build keeps -g")
    return recipe


def _meson(candidate: Candidate | None) -> Recipe:
    target = f" {candidate.target}" if candidate else ""
    binary = str(PurePosixPath("build", candidate.artifact)) if candidate and candidate.artifact else \
        _binary("build", candidate)  # where Meson said it writes it, else where it usually does
    return Recipe(f"meson setup build --buildtype=debugoptimized && meson compile -C build{target}",
                  binary, "Meson's debugoptimized: -O2 with debug information (-g)")


def _configure(survey: Survey, candidate: Candidate | None) -> Recipe:
    """./configure (made first by autoreconf when only configure.ac is committed), then make.
    Libtool's shared builds leave a wrapper script where the program should be: static it is."""
    files = set(survey.files)
    script = survey.build_file("", "configure.ac", "configure.in")
    steps = [] if "configure" in files else ["autoreconf -fi"]
    static = " --disable-shared" if re.search(r"\b(LT_INIT|AC_PROG_LIBTOOL)\b", script) else ""
    flags = "CFLAGS='-O2 -g'" + (" CXXFLAGS='-O2 -g'" if survey.cxx else "")
    if survey.build_system == "autotools":
        steps.append(f"./configure{static} {flags}")
    else:  # a hand-written configure (zlib's) reads the flags from the environment
        steps.append(f"{flags} ./configure")
    steps.append(f"make {JOBS}" + (_goal(candidate) if candidate else ""))
    return Recipe(" && ".join(steps), _binary("", candidate), "configure with CFLAGS='-O2 -g': optimised with debug information")


def _make(survey: Survey, candidate: Candidate | None) -> Recipe:
    folder = candidate.directory if candidate else survey.make_folder
    makefile = survey.build_file(folder, *MAKEFILES)
    languages = ["CFLAGS"] + (["CXXFLAGS"] if survey.cxx else [])
    settings = [make_flags(makefile, variable) for variable in languages]
    environment = " ".join(dict.fromkeys(e for e, _, _ in settings if e))
    arguments = " ".join(dict.fromkeys(a for _, a, _ in settings if a))
    how = "; ".join(dict.fromkeys(h for _, _, h in settings))
    unstripped = strip_overrides(makefile)
    arguments = " ".join([arguments, *(argument for argument, _ in unstripped)]).strip()
    how = "; ".join([how, *(why for _, why in unstripped)])
    words = [environment, "make", f"-C {folder}" if folder else "", JOBS, candidate.target if candidate else "", arguments]
    recipe = Recipe(" ".join(w for w in words if w), _binary("", candidate), how)
    recipe.checks.append(f"the Makefile's flags: {how}; `selector doctor` says whether the built program has debug "
                         "information")
    return recipe


def _goal(candidate: Candidate) -> str:
    return f" -C {candidate.directory} {candidate.target}" if candidate.directory else f" {candidate.target}"


def _binary(build: str, candidate: Candidate | None, survey: Survey | None = None) -> str:
    """Where the build puts the program: CMake and Meson mirror the source folders in the
    build folder; make leaves it beside its Makefile.  With no candidate, the first program
    the build files define, else a name to replace."""
    if candidate is None:
        programs = survey.programs if survey else []
        target, folder = programs[0] if programs else (PLACEHOLDER, "")
    else:
        target, folder = candidate.target, candidate.directory
    # a make goal may name the program from its Makefile's folder (projects/make: ../../bin/prog)
    return os.path.normpath(PurePosixPath(build or ".", folder or ".", target))


def make_flags(makefile: str, variable: str) -> tuple[str, str, str]:
    """(environment assignment, make argument, how) that adds -g to a Makefile's `variable`
    (CFLAGS or CXXFLAGS) without losing the flags it sets.

    A variable given on make's command line replaces every assignment of the Makefile, so
    it is the last resort, and carries the Makefile's own value with -g added; one from
    the environment is overridden by a plain assignment but kept by `?=` and `+=`.
    """
    if re.search(r"\$[({]MOREFLAGS[)}]", makefile):
        return "", "MOREFLAGS=-g", "MOREFLAGS=-g, which the Makefile adds to its flags"
    assignments = re.findall(rf"^[ \t]*(?:override[ \t]+)?{variable}[ \t]*(\?=|\+=|::?=|=)[ \t]*(.*)$", makefile, re.MULTILINE)
    if not assignments and re.search(r"\$[({]MAKE[)}]", makefile):
        # it hands the work to Makefiles below, whose flags (lz4's -O3) -g must not replace
        return f"{variable}=-g", "", f"-g in {variable} from the environment, for the Makefiles it runs"
    if not assignments:
        return f"{variable}='-O2 -g'", "", f"the Makefile sets no {variable}: -O2 -g from the environment"
    operator, value = assignments[0]
    value = value.split("#")[0].strip()
    if operator == "?=":
        return f"{variable}={shlex.quote(f'{value} -g')}", "", f"the Makefile's default {variable} with -g, from the environment"
    first = re.search(rf"^[ \t]*(?:override[ \t]+)?{variable}[ \t]*(?:\?=|\+=|::?=|=)", makefile, re.MULTILINE)
    if operator == "+=" or re.search(rf"\$[({{]{variable}[)}}]", makefile[:first.start()] + value):
        return f"{variable}=-g", "", f"-g in {variable} from the environment, which the Makefile adds to its own"
    return "", f"{variable}={shlex.quote(f'{value} -g')}", f"the Makefile's {variable} with -g added, on make's command line"


# The link flags that strip a program of its symbol table: the analysis then names no function.
_STRIPPING = re.compile(r"(?<!\S)(?:-s|-Wl,-s|-Wl,--strip-all|--strip-all)(?!\S)")


def strip_overrides(makefile: str) -> list[tuple[str, str]]:
    """(make argument, how) for each variable of `makefile` whose value strips the program
    (`-s` among its link flags, as release configurations append after $(LDFLAGS)): the same
    value without it, given on make's command line, which overrides every assignment."""
    found = {}
    for variable, value in re.findall(r"^[ \t]*(?:override[ \t]+)?([A-Za-z_][A-Za-z0-9_]*)[ \t]*(?:\?=|\+=|::?=|=)[ \t]*(.*)$",
                                      makefile, re.MULTILINE):
        value = value.split("#")[0].strip()
        if variable not in found and _STRIPPING.search(value):
            kept = " ".join(_STRIPPING.sub("", value).split())
            found[variable] = (f"{variable}={shlex.quote(kept)}",
                               f"{variable} without -s (the Makefile strips the program, whose functions then have no names)")
    return list(found.values())
