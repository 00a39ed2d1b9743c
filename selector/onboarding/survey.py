"""What `selector init` sees in a repository: its build system, the benchmark programs it
holds and the paths no build reads.

Only tracked files are read (`git ls-files`): collection builds commits, not the working
tree, and a build folder or a vendored checkout left lying around is not the project.
Everything here is a guess from file names and a few patterns; `init` writes it down
with what the user should check, and `selector doctor` checks the rest on the machine.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from perf_selector.selector.onboarding.build_model import (
    Program, cmake_programs, explicit_rule, make_database, meson_programs,
)
from perf_selector.collectors.frameworks import DETECTED
from perf_selector.collectors.repository import Repository, submodule_paths
from perf_selector.selector.config import BuildSection

SOURCE_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".c++")
CXX_SUFFIXES = (".cc", ".cpp", ".cxx", ".c++", ".hpp", ".hh")
# Folders of someone else's code: a vendored Google Benchmark is full of BENCHMARK(...).
VENDORED = {"third_party", "third-party", "thirdparty", "3rdparty", "vendor", "vendored", "external", "extern", "deps",
            "contrib", "submodules", "subprojects"}
BENCHMARK_FOLDERS = {"bench", "benches", "benchmark", "benchmarks", "perf", "perftest"}
MAKEFILES = ("GNUmakefile", "makefile", "Makefile")  # the order make looks for them
BUILD_FILES = (*MAKEFILES, "CMakeLists.txt", "meson.build", "configure.ac", "configure.in")
LARGEST_SOURCE = 2_000_000  # bytes: a generated table is no benchmark's main

# Benchmark kinds, in the order init prefers them as the project's binary: a db_bench-like
# driver is usually the project's main harness, a framework's binaries (collectors/frameworks:
# a kind is the framework's name) its micro benchmarks, and a program named like a benchmark a guess.
# HARNESS: a source registering benchmarks (BENCHMARK(fn)) for a harness of the project's own,
# its main elsewhere in the same program (RE2's util/benchmark.cc), which picks them by argument.
# SCRIPTS: a folder of scripts that the project's own program runs (an interpreter's
# test/benchmark/*.wren, benchmarks/*.py): a suite of one benchmark a script.
DRIVER, HARNESS, SCRIPTS, PROGRAM = "driver", "harness", "scripts", "program"
KIND_ORDER = (DRIVER, *(framework.name for framework in DETECTED), HARNESS, SCRIPTS, PROGRAM)
# the kinds whose benchmarks are command lines: they can run a program other than the analysed binary
COMMAND_KINDS = (PROGRAM, SCRIPTS, DRIVER)
# Suffixes that are not scripts a program runs: sources, headers, documents, data, build files.
NOT_SCRIPTS = (*SOURCE_SUFFIXES, *CXX_SUFFIXES, ".h", ".md", ".rst", ".txt", ".json", ".csv", ".yml", ".yaml", ".toml",
               ".cmake", ".mk", ".sh", ".bat", ".ps1", ".png", ".svg", ".html", ".css", ".gitignore", "")
# Make goals that name no program.
PHONY_GOALS = {"all", "clean", "install", "uninstall", "test", "tests", "check", "dist", "distclean", "help", "default",
               "release", "debug", "lib", "libs", "static", "shared", "prepare", "format", "docs"}
_MAIN = re.compile(r"\bint\s+main\s*\(|^main\s*\(", re.MULTILINE)
_DRIVER_FLAG = re.compile(r'"--benchmarks=')
# db_bench's list of benchmarks: `FLAGS_benchmarks = "fillseq," "fillrandom," ...;` (LevelDB)
# or gflags' `DEFINE_string(benchmarks, "fillseq,...", ...)` (RocksDB)
_DRIVER_DEFAULTS = (re.compile(r"FLAGS_benchmarks\s*=\s*([^;]*);"), re.compile(r"DEFINE_string\(\s*benchmarks\s*,([^;]*?),\s*\""))


@dataclass(frozen=True)
class Candidate:
    """A benchmark program found in the sources, and the build target that makes it."""

    kind: str  # DRIVER, a framework's name or PROGRAM
    source: str  # its main source, relative to the top
    target: str  # the build target (a CMake/Meson target, a make goal)
    directory: str  # the folder of the build file that defines it ("" at the top)
    defined: bool  # a build file names the source (else the target is guessed from the file name)
    names: tuple[str, ...] = ()  # a framework's: the benchmarks registered; driver: its default --benchmarks
    flags: tuple[str, ...] = ()  # driver: the flags its source parses among --num= and --db=
    scopes: tuple[str, ...] = ()  # harness: the C++ namespace each of `names` is registered in ("a::b", "" global)
    parameterised: tuple[str, ...] = ()  # harness: those of `names` run with sizes (BENCHMARK_RANGE, ->Arg)
    artifact: str = ""  # where the build writes the program, relative to its build folder, when CMake said so
    library: str = ""  # the project's shared library the program loads, the same way: the code to analyse
    suffix: str = ""  # scripts: the scripts' suffix (".wren"); `source` is then their folder, `names` their stems

    @property
    def stem(self) -> str:
        return PurePosixPath(self.source).stem


@dataclass
class Survey:
    top: Path
    files: list[str]
    build_system: str | None  # cmake, meson, make, autotools, configure, or None
    candidates: list[Candidate]  # best first
    programs: list[tuple[str, str]]  # (target, directory) of every program a build file defines, in order
    unaffected: list[str]
    missing_submodules: list[str]  # declared in .gitmodules, not checked out
    cxx: bool  # C++ sources: the build names a C++ compiler too
    build_files: dict[str, str] = field(default_factory=dict)  # path -> text of each CMakeLists.txt, meson.build, Makefile
    make_folder: str = ""  # where make runs when the only Makefiles are in a folder (projects/make/), else ""

    def build_file(self, folder: str, *names: str) -> str:
        """The text of the first of `names` in `folder` ("" when none is there)."""
        return next((self.build_files[path] for name in names
                     for path in [f"{folder}/{name}" if folder else name] if path in self.build_files), "")

    @property
    def best(self) -> Candidate | None:
        return self.candidates[0] if self.candidates else None


def survey(path: Path) -> Survey:
    """Look at the repository holding `path`."""
    repository = Repository.open(path)
    top = repository.top
    files = [name for name in repository.git("ls-files", "-z").split("\0") if name]
    submodules = set(submodule_paths(top / ".gitmodules").values())
    ours = [name for name in files if not _vendored(name, submodules)]
    build_system = _build_system(set(files))
    texts = {name: _read(top / name) for name in ours if PurePosixPath(name).name in BUILD_FILES}
    makefiles = MakeRules(top, {_folder(name): text for name, text in texts.items() if PurePosixPath(name).name in MAKEFILES})
    make_folder = _make_folder(makefiles) if build_system is None else ""
    if make_folder:
        build_system = "make"  # generated makefiles in a folder of their own (premake's projects/make/)
    build_files = [(name, text) for name, text in texts.items() if PurePosixPath(name).name not in MAKEFILES]
    # the build system's own answer, where a configure works here (selector/onboarding/build_model.py); else the
    # files are read
    introspected = cmake_programs(top, benchmark_options(texts.get("CMakeLists.txt", ""))) if build_system == "cmake" \
        else meson_programs(top) if build_system == "meson" else None
    candidates = [found for name in ours if name.endswith(SOURCE_SUFFIXES)
                  for found in [_candidate(top, name, build_system, build_files, makefiles, introspected)] if found]
    candidates = _without_harnesses(top, candidates, build_system, build_files, introspected)
    programs = _programs(build_system, build_files)
    scripts = _script_folder(ours)
    if scripts is not None:
        program = _script_runner(programs, makefiles, make_folder)
        if program is not None:
            folder, suffix, stems = scripts
            target, directory, defined = program
            runner = next((p for p in introspected or () if p.name == target), None)
            candidates.append(Candidate(SCRIPTS, folder, target, directory, defined, stems, suffix=suffix,
                                        artifact=runner.artifact if runner else "", library=_library(runner)))
    # a program the README runs (`./build/benchmarks/benchmark -P ...`: "our default benchmarks")
    # before its siblings; then the shorter name, the shallower source
    readme = _readme_programs(top, files)
    candidates.sort(key=lambda c: (_rank(c), not c.defined, PurePosixPath(c.target).name not in readme, len(c.stem),
                                   c.source.count("/"), c.source))
    return Survey(
        top=top, files=files, build_system=build_system, candidates=[_static(c, programs) for c in candidates],
        programs=programs, unaffected=unaffected_paths(files, build_system),
        missing_submodules=sorted(p for p in submodules if not (top / p).is_dir() or not any((top / p).iterdir())),
        cxx=any(name.endswith(CXX_SUFFIXES) for name in ours), build_files=texts, make_folder=make_folder,
    )


def benchmark_options(cmakelists: str) -> tuple[str, ...]:
    """-D...=ON for the benchmark options a project may leave off (SNAPPY_BUILD_BENCHMARKS,
    LEVELDB_BUILD_BENCHMARKS): the configure that lists its targets, and the build, turn them on."""
    return tuple(f"-D{name}=ON" for name in re.findall(r"^\s*option\s*\(\s*(\w*BENCH\w*)", cmakelists,
                                                       re.MULTILINE | re.IGNORECASE))


_README_COMMAND = re.compile(r"^\s*(?:\$\s+|sudo\s+)?(?:\./|/)?(?:[\w.-]+/)+(?P<program>[\w.-]+)(?=\s|$)", re.MULTILINE)


def _readme_programs(top: Path, files: list[str]) -> set[str]:
    """The programs the top README runs by path in its examples (`./build/benchmarks/benchmark
    --help` gives "benchmark"): how a project says which of its benchmark programs is the one."""
    readmes = [name for name in files if "/" not in name and name.upper().startswith("README")]
    return {found["program"] for name in readmes for found in _README_COMMAND.finditer(_read(top / name))}


def _rank(candidate: Candidate) -> float:
    """Where a kind of candidate stands in KIND_ORDER; a benchmark program the build defines
    stands before scripts (a C++ library's benchmark program beside a folder of helper
    scripts), one whose target is only guessed from its name after them (an interpreter's
    benchmarks/primes.cpp, a comparison no build makes, beside its scripts)."""
    rank = KIND_ORDER.index(candidate.kind)
    return KIND_ORDER.index(SCRIPTS) - 0.5 if candidate.kind == PROGRAM and candidate.defined else rank


class MakeRules:
    """Each Makefile's explicit rules, by its folder: make's own database where make reads the
    Makefile (build_model.make_database: names as make expands them), else the file read by
    pattern (make_rules).  Asked for lazily and once each: a repository can hold many makefiles."""

    def __init__(self, top: Path, texts: dict[str, str]) -> None:
        self.top, self.texts = top, texts
        self._rules: dict[str, list[tuple[list[str], list[str]]]] = {}

    def __contains__(self, folder: str) -> bool:
        return folder in self.texts

    def __call__(self, folder: str) -> list[tuple[list[str], list[str]]]:
        """The rules of the Makefile in `folder` ("" at the top); none where there is no Makefile."""
        if folder not in self.texts:
            return []
        if folder not in self._rules:
            database = make_database(self.top / folder)
            self._rules[folder] = database if database is not None else make_rules(self.texts[folder])
        return self._rules[folder]


def _make_folder(makefiles: MakeRules) -> str:
    """Where make runs when the top has no build file: the shallowest folder whose Makefile
    makes a program (premake's and GENie's projects/make/, a build/ folder)."""
    shallowest_first = sorted(makefiles.texts, key=lambda folder: (folder.count("/"), folder))
    return next((folder for folder in shallowest_first if folder and _make_programs(makefiles(folder))), "")


def _make_programs(rules: list[tuple[list[str], list[str]]]) -> list[tuple[str, bool]]:
    """(goal, built from sources?) of each rule of a Makefile that makes a program: not a
    phony goal, an object or a library; those whose prerequisites are sources or objects first."""
    found = []
    for targets, prerequisites in rules:
        for target in targets:
            if "$" in target or target.endswith(_NOT_A_PROGRAM) or PurePosixPath(target).name in PHONY_GOALS:
                continue
            found.append((target, any(p.endswith((*SOURCE_SUFFIXES, ".o", ".a")) for p in prerequisites)))
    return sorted(dict.fromkeys(found), key=lambda item: not item[1])


def _script_folder(files: list[str]) -> tuple[str, str, tuple[str, ...]] | None:
    """(folder, suffix, stems) of the benchmark scripts: files of one suffix in a benchmark
    folder (test/benchmark/, benchmarks/), at least two, not sources, documents or data.  Where
    a folder holds several languages (an interpreter compared with others: fib.wren beside
    fib.lua and fib.py), the suffix the repository has most of elsewhere is the project's own."""
    groups: dict[tuple[str, str], list[str]] = {}
    for name in files:
        path = PurePosixPath(name)
        if path.suffix.lower() in NOT_SCRIPTS or path.name.startswith("."):
            continue
        if BENCHMARK_FOLDERS.intersection(part.lower() for part in path.parts[:-1]):
            groups.setdefault((_folder(name), path.suffix), []).append(path.stem)
    suffixes = Counter(PurePosixPath(name).suffix for name in files)
    found = [(key, stems) for key, stems in groups.items() if len(stems) >= 2]
    if not found:
        return None
    (folder, suffix), stems = max(found, key=lambda item: (suffixes[item[0][1]], len(item[1]), -item[0][0].count("/")))
    return folder, suffix, tuple(sorted(stems))


def _script_runner(programs: list[tuple[str, str]], makefiles: MakeRules,
                   make_folder: str) -> tuple[str, str, bool] | None:
    """(target, folder, defined) of the program that runs the benchmark scripts: the first the
    build defines (add_executable, executable, a make rule building a program), one not named
    like a test first; None when the build defines none."""
    if programs:
        ordered = sorted(programs, key=lambda item: "test" in item[0].lower())
        return ordered[0][0], ordered[0][1], True
    folder = make_folder  # "" : the top's Makefile
    goals = _make_programs(makefiles(folder))
    if not goals:
        return None
    ordered = sorted(goals, key=lambda item: (not item[1], "test" in PurePosixPath(item[0]).name.lower()))
    return ordered[0][0], folder, True


def _folder(name: str) -> str:
    """The folder of a tracked path, "" at the top."""
    return "/".join(PurePosixPath(name).parts[:-1])


def _vendored(name: str, submodules: set[str]) -> bool:
    parts = PurePosixPath(name).parts
    return bool(VENDORED.intersection(parts[:-1])) or any(name.startswith(f"{path}/") for path in submodules)


def _read(path: Path) -> str:
    try:
        if path.stat().st_size > LARGEST_SOURCE:
            return ""
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _build_system(files: set[str]) -> str | None:
    """The build system of the top folder.  CMake and Meson first (a project that has them
    and a Makefile usually keeps the Makefile for a few targets); a committed Makefile
    before autotools (git keeps configure.ac as an option beside its Makefile)."""
    if "CMakeLists.txt" in files:
        return "cmake"
    if "meson.build" in files:
        return "meson"
    if files & set(MAKEFILES) and not files & {"Makefile.am", "Makefile.in"}:
        return "make"
    if files & {"configure.ac", "configure.in"}:
        return "autotools"
    if "configure" in files:
        return "configure"
    if files & set(MAKEFILES):
        return "make"
    return None


def _candidate(top: Path, name: str, build_system: str | None, build_files: list[tuple[str, str]],
               makefiles: MakeRules, introspected: list[Program] | None = None) -> Candidate | None:
    """The benchmark program whose main source is `name`, or None when it is none."""
    path = PurePosixPath(name)
    named_like_one = "bench" in path.stem.lower() or bool(BENCHMARK_FOLDERS.intersection(p.lower() for p in path.parts[:-1]))
    text = _read(top / name)
    detected = next(((framework.name, names) for framework in DETECTED for names in [framework.detect(text)]
                     if names is not None), None)
    if detected:
        (kind, names), flags = detected, ()
    elif _MAIN.search(text) and _DRIVER_FLAG.search(text):
        kind, names = DRIVER, _driver_names(text)
        flags = tuple(flag for flag in ("--num=", "--db=") if f'"{flag}' in text)
    elif _MAIN.search(text) and named_like_one:
        kind, names, flags = PROGRAM, (), ()
    elif named_like_one and (registered := _registrations(text))[0]:
        # benchmarks registered for a harness of the project's own, its main in another source
        # of the same program (util/benchmark.cc): a candidate only where a build file names it
        # (the same BENCHMARK(fn) lines decide that it is one and give its names)
        program = _program_of(name, introspected)
        target, directory, defined = (program.name, program.folder, True) if program else \
            _target(name, build_system, build_files, makefiles)
        if not defined:
            return None
        names, scopes, parameterised = registered
        return Candidate(HARNESS, name, target, directory, True, names, scopes=scopes, parameterised=parameterised,
                         artifact=program.artifact if program else "", library=_library(program))
    else:
        return None
    program = _program_of(name, introspected)
    if program is not None:
        return Candidate(kind, name, program.name, program.folder, True, names, flags, artifact=program.artifact,
                         library=_library(program))
    target, directory, defined = _target(name, build_system, build_files, makefiles)
    return Candidate(kind, name, target, directory, defined, names, flags)


def _library(program: Program | None) -> str:
    """The shared library of the project's own that `program` loads (the first), else ""."""
    return program.libraries[0] if program and program.libraries else ""


def _program_of(source: str, introspected: list[Program] | None) -> Program | None:
    """The executable the build system builds from `source` (the one with the fewest sources: the
    benchmark program rather than an all-in-one test binary)."""
    having = [program for program in introspected or () if source in program.sources]
    return min(having, key=lambda program: (len(program.sources), program.name)) if having else None


def _without_harnesses(top: Path, candidates: list[Candidate], build_system: str | None,
                       build_files: list[tuple[str, str]], introspected: list[Program] | None = None) -> list[Candidate]:
    """The candidates less the main sources of a harness: a source with main that a program
    shares with a source registering benchmarks (util/benchmark.cc in add_executable(
    foo_benchmark util/benchmark.cc lib/foo_benchmark.cc)) is the harness, not a benchmark."""
    registering = {c.source for c in candidates if c.kind == HARNESS}
    if not registering:
        return candidates
    programs = [set(program.sources) for program in introspected] if introspected else \
        _program_sources(build_system, build_files)
    harnesses = {source for sources in programs if sources & registering for source in sources - registering}
    return [c for c in candidates if c.source not in harnesses]


_HARNESS_REGISTRATION = re.compile(r"^[ \t]*BENCHMARK(_[A-Z0-9_]+)?\s*\(\s*(\w+)[^;]*;", re.MULTILINE)
_SIZED = re.compile(r"->\s*(Arg|Args|Range|Ranges|DenseRange|RangeMultiplier|ArgPair)\s*\(|^_(RANGE|WITH_ARG)")
_SCOPE = re.compile(r"\bnamespace\b\s*([\w:]*)\s*\{|[{}]")
_NOT_CODE = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.DOTALL)


def _registrations(text: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(names, the namespace each is registered in, those run with sizes) of the BENCHMARK(fn)
    lines of a source registering benchmarks for a harness of the project's own."""
    code = _NOT_CODE.sub(lambda found: " " * len(found.group()), text)  # same offsets, no braces of comments
    names: dict[str, str] = {}
    sized = []
    for found in _HARNESS_REGISTRATION.finditer(code):
        name = found.group(2)
        names.setdefault(name, _scope(code, found.start()))
        if _SIZED.search(found.group(1) or "") or _SIZED.search(found.group()):
            sized.append(name)
    return tuple(names), tuple(names.values()), tuple(dict.fromkeys(sized))


def _scope(code: str, position: int) -> str:
    """The C++ namespace open at `position` of `code` ("a::b", "" when global), anonymous ones
    as callgrind names them."""
    stack: list[str | None] = []
    for found in _SCOPE.finditer(code, 0, position):
        if found.group() == "}":
            if stack:
                stack.pop()
        elif found.group().startswith("namespace"):
            stack.append(found.group(1) or "(anonymous namespace)")
        else:
            stack.append(None)
    return "::".join(name for name in stack if name)


def _program_sources(build_system: str | None, build_files: list[tuple[str, str]]) -> list[set[str]]:
    """The sources (relative to the top) each CMake or Meson program names (target_sources too)."""
    if build_system not in ("cmake", "meson"):
        return []
    wanted = "CMakeLists.txt" if build_system == "cmake" else "meson.build"
    programs: dict[str, set[str]] = {}
    for build_file, text in build_files:
        if PurePosixPath(build_file).name == wanted:
            for target, arguments in _calls(text, build_system):
                programs.setdefault(target, set()).update(
                    os.path.normpath(os.path.join(_folder(build_file), a)) for a in arguments if a.endswith(SOURCE_SUFFIXES))
    return list(programs.values())


def _static(candidate: Candidate, programs: list[tuple[str, str]]) -> Candidate:
    """The static variant of the candidate's program when the build defines one (libjpeg-turbo's
    tjbench-static): a program linked to the project's shared library keeps the project's
    code out of its own binary, where the analysis looks."""
    for name in (f"{candidate.target}-static", f"{candidate.target}_static"):
        if (name, candidate.directory) in programs:
            return replace(candidate, target=name, artifact="")  # where the static one goes: as the build usually puts it
    return candidate


def _driver_names(text: str) -> tuple[str, ...]:
    for pattern in _DRIVER_DEFAULTS:
        found = pattern.search(text)
        if found:
            literal = "".join(re.findall(r'"([^"]*)"', re.sub(r"//[^\n]*", "", found.group(1))))
            return tuple(dict.fromkeys(name.strip() for name in literal.split(",") if name.strip()))
    return ()


_CMAKE_CALL = re.compile(r"\b(add_executable|target_sources)\s*\(([^()]*(?:\([^()]*\)[^()]*)*)\)", re.IGNORECASE)
_MESON_CALL = re.compile(r"\bexecutable\s*\(([^()]*(?:\([^()]*\)[^()]*)*)\)")


def _target(name: str, build_system: str | None, build_files: list[tuple[str, str]],
            makefiles: MakeRules) -> tuple[str, str, bool]:
    """(target, folder of the build file defining it, found?) for the program of source `name`."""
    source = PurePosixPath(name)
    if build_system in ("cmake", "meson"):
        wanted = "CMakeLists.txt" if build_system == "cmake" else "meson.build"
        for build_file, text in build_files:
            if PurePosixPath(build_file).name != wanted:
                continue
            folder = _folder(build_file)
            for target, arguments in _calls(text, build_system):
                if any(_names_source(argument, folder, source) for argument in arguments) and "$" not in target:
                    return target, folder, True
            # a function of the project's own that makes a target of the file's stem
            # (LevelDB: leveldb_benchmark("benchmarks/db_bench.cc"))
            if name in text:
                return source.stem, folder, True
        return source.stem, "", False
    folders = _ancestors(_folder(name))
    for folder in folders:
        goal = make_goal(makefiles(folder), folder, source)
        if goal:
            return goal, folder, True
    # no rule names it: make's built-in rule, run where the nearest Makefile is (a folder of
    # sources without one, bench/, is not where make runs)
    nearest = next((folder for folder in folders if folder in makefiles), None)
    if nearest is None:
        return source.stem, _folder(name), False
    return _relative(source.with_suffix(""), nearest), nearest, False


def _ancestors(folder: str) -> list[str]:
    """`folder` and the folders above it, nearest first, ending with the top ("")."""
    parts = PurePosixPath(folder).parts if folder else ()
    return ["/".join(parts[:end]) for end in range(len(parts), -1, -1)]


def _relative(path: PurePosixPath, folder: str) -> str:
    return str(path.relative_to(folder)) if folder else str(path)


_MAKE_RULE = re.compile(r"^(?P<targets>[^\t#:=\s][^#:=\n]*?)[ \t]*::?(?!=)(?P<rest>.*)$", re.MULTILINE)
_NOT_A_PROGRAM = (".o", ".a", ".so", ".lo", ".la", ".h", *SOURCE_SUFFIXES)


def make_rules(text: str) -> list[tuple[list[str], list[str]]]:
    """(targets, prerequisites) of each explicit rule of a Makefile; pattern rules, special
    targets (.PHONY) and target-specific variables left out."""
    text = re.sub(r"\\\n", " ", text)
    rules = []
    for found in _MAKE_RULE.finditer(text):
        rest = found.group("rest").split(";")[0].split("#")[0]
        if "=" in re.sub(r"\$[({][^)}]*[)}]", "", rest):  # target: VARIABLE = value
            continue
        explicit = explicit_rule(found.group("targets").split(), rest.split())
        if explicit:
            rules.append(explicit)
    return rules


def make_goal(rules: list[tuple[list[str], list[str]]], folder: str, source: PurePosixPath) -> str | None:
    """The goal among the `rules` of the Makefile in `folder` that makes the program of `source`:
    a rule whose target is the program's path (`bench/bench_hash:` at the top, `bench_hash$(EXT):`
    beside it), else the first rule that builds a program from the source itself."""
    if not rules:
        return None
    try:
        program = _relative(source.with_suffix(""), folder)
        source_name = _relative(source, folder)
    except ValueError:
        return None
    for targets, _ in rules:
        for target in targets:
            if target == program or re.fullmatch(rf"{re.escape(program)}\$[({{][A-Za-z_]+[)}}]", target):
                return program
    for targets, prerequisites in rules:
        if source_name in prerequisites:
            for target in targets:
                if "$" not in target and not target.endswith(_NOT_A_PROGRAM):
                    return target
    # a rule named after the source, its prerequisites in variables (`fullbench$(EXT): $(OBJS)`)
    stem = re.compile(rf"{re.escape(source.stem)}(?:\$[({{][A-Za-z_]+[)}}])?")
    return next((source.stem for targets, _ in rules for target in targets if stem.fullmatch(target)), None)


def _calls(text: str, build_system: str) -> list[tuple[str, list[str]]]:
    """(target, its other arguments) of each call that defines a program or adds it sources."""
    text = re.sub(r"#[^\n]*", "", text)
    pattern = _CMAKE_CALL if build_system == "cmake" else _MESON_CALL
    calls = []
    for found in pattern.finditer(text):
        arguments = [a.strip("'\"") for a in re.findall(r"'[^']*'|\"[^\"]*\"|[^\s,()\[\]]+", found.group(found.lastindex))]
        if arguments:
            calls.append((arguments[0], arguments[1:]))
    return calls


def _names_source(argument: str, folder: str, source: PurePosixPath) -> bool:
    """Does a build file's argument name `source` (relative to the build file's folder)?"""
    if not argument.endswith(SOURCE_SUFFIXES):
        return False
    return os.path.normpath(os.path.join(folder, argument)) == str(source) or PurePosixPath(argument).name == source.name \
        and "/" not in argument and folder == _folder(str(source))


def _programs(build_system: str | None, build_files: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """(target, folder) of every program the build files define (add_executable, executable)."""
    if build_system not in ("cmake", "meson"):
        return []
    wanted = "CMakeLists.txt" if build_system == "cmake" else "meson.build"
    found = []
    for build_file, text in sorted(build_files, key=lambda item: (item[0].count("/"), item[0])):
        if PurePosixPath(build_file).name == wanted:
            folder = _folder(build_file)
            defining = "add_executable" if build_system == "cmake" else "executable"
            found += [(target, folder) for target, _ in _calls(_only(text, defining), build_system) if "$" not in target]
    return list(dict.fromkeys(found))


def _only(text: str, call: str) -> str:
    """The calls of `call` in a build file (target_sources names programs defined elsewhere)."""
    return "\n".join(m.group(0) for m in re.finditer(rf"\b{call}\s*\([^()]*(?:\([^()]*\)[^()]*)*\)", text))


# Paths no build reads, when they are in the tree: documentation, licences, editor and
# other build systems' files (Bazel, Visual Studio).  `*` crosses folders, so `*.md` is
# every Markdown file.
_DOCUMENTATION_FOLDERS = ("doc", "docs", "documentation", "man")
_TOP_FILES = ("README*", "LICENSE*", "LICENCE*", "COPYING*", "AUTHORS*", "CONTRIBUTORS*", "CONTRIBUTING*", "NEWS*",
              "ChangeLog*", "CHANGELOG*", "CHANGES*", "CODE_OF_CONDUCT*", "SECURITY*", "CITATION*", ".gitignore",
              ".clang-format", ".clang-tidy", ".editorconfig", ".pre-commit-config.yaml", ".readthedocs.y*ml")
_ANYWHERE = ("*.md", "*.rst", "BUILD.bazel", "*/BUILD.bazel", "*.bzl", "WORKSPACE*", "MODULE.bazel*", "*.sln", "*.vcxproj*")


def unaffected_paths(files: list[str], build_system: str | None) -> list[str]:
    """The default CI paths and those of the tree that no build reads."""
    import fnmatch

    patterns = list(BuildSection(command="-").unaffected)
    tops = {PurePosixPath(name).parts[0] for name in files if "/" in name}
    patterns += [f"{folder}/*" for folder in _DOCUMENTATION_FOLDERS if folder in tops]
    patterns += [pattern for pattern in (*_TOP_FILES, *_ANYWHERE)
                 if any(fnmatch.fnmatchcase(name, pattern) for name in files)]
    return list(dict.fromkeys(patterns))
