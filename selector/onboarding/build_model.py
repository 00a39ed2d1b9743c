"""What the build system says the build makes: every executable, its sources and where it is
written, from CMake's file API and from Meson's introspection.

`init` used to read CMakeLists.txt with regular expressions, which cannot see a target made
in a `foreach` over a list variable (`set(BENCHMARK_TARGETS x_benchmark)`, then
`add_executable(${target} testing/${target}.cc util/benchmark.cc)`), nor where a target's
binary goes when the project sets output directories.  CMake's file API answers both: a
query file in a scratch build folder, one configure (nothing is built), and the codemodel's
reply lists every target with its sources and artifacts
(https://cmake.org/cmake/help/latest/manual/cmake-file-api.7.html).

Meson answers the same question with `meson introspect --targets` on a build folder set up
once in scratch (https://mesonbuild.com/IDE-integration.html): each target's type, sources
and the files it writes.

A configure can fail where the project needs packages this machine lacks; then there is no
answer (None) and `init` falls back to reading the files.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

CONFIGURE_SECONDS = 180


@dataclass(frozen=True)
class Program:
    name: str  # the target
    folder: str  # the source folder of the build file that defines it, relative to the top ("" at the top)
    sources: frozenset[str]  # relative to the top
    artifact: str  # the executable, relative to the build folder (what building the target there writes)
    libraries: tuple[str, ...] = ()  # the project's shared libraries it loads (its direct dependencies), the same way


def cmake_programs(top: Path, options: tuple[str, ...] = ()) -> list[Program] | None:
    """The executables CMake's codemodel reports for the project at `top`, configured once in a
    scratch folder with `options` (-D settings); None when cmake is missing or the configure fails."""
    with tempfile.TemporaryDirectory(prefix="selector-cmake-") as scratch:
        build = Path(scratch)
        query = build / ".cmake" / "api" / "v1" / "query" / "codemodel-v2"
        query.parent.mkdir(parents=True)
        query.touch()
        try:
            configured = subprocess.run(["cmake", "-S", str(top), "-B", str(build), "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
                                         *options], capture_output=True, text=True, timeout=CONFIGURE_SECONDS,
                                        env={**os.environ, "CMAKE_EXPORT_COMPILE_COMMANDS": "OFF"})
        except (OSError, subprocess.TimeoutExpired):
            return None
        if configured.returncode != 0:
            return None
        return _read_reply(build / ".cmake" / "api" / "v1" / "reply", top.resolve())


def _read_reply(reply: Path, top: Path) -> list[Program] | None:
    indexes = sorted(reply.glob("index-*.json"))
    if not indexes:
        return None
    index = json.loads(indexes[-1].read_text())
    codemodel_file = next((o["jsonFile"] for o in index.get("objects", []) if o.get("kind") == "codemodel"), None)
    if codemodel_file is None:
        return None
    codemodel = json.loads((reply / codemodel_file).read_text())
    source_root = Path(codemodel.get("paths", {}).get("source", top)).resolve()
    configuration = (codemodel.get("configurations") or [{}])[0]
    targets = [json.loads((reply / entry["jsonFile"]).read_text()) for entry in configuration.get("targets", [])]
    shared = {target["id"]: _artifacts(target)[0] for target in targets
              if target.get("type") == "SHARED_LIBRARY" and _artifacts(target)}
    programs = []
    for target in targets:
        if target.get("type") != "EXECUTABLE":
            continue
        folder = target.get("paths", {}).get("source", ".")
        sources = frozenset(_relative(source["path"], source_root, top) for source in target.get("sources", []))
        artifacts = _artifacts(target)
        # a program built on the project's own shared library (an interpreter's thin main over
        # libpocketpy.so): the library holds the code the benchmarks run
        libraries = tuple(shared[d["id"]] for d in target.get("dependencies", []) if d.get("id") in shared)
        programs.append(Program(target["name"], "" if folder == "." else folder, sources,
                                artifacts[0] if artifacts else target["name"], libraries))
    return programs


def _artifacts(target: dict) -> list[str]:
    """The files a codemodel target writes, relative to the build folder (Windows' .pdb left out)."""
    return [artifact["path"] for artifact in target.get("artifacts", []) if not artifact["path"].endswith(".pdb")]


def _relative(path: str, source_root: Path, top: Path) -> str:
    """A codemodel source path (relative to the source root, or absolute) relative to the top."""
    absolute = Path(path) if os.path.isabs(path) else source_root / path
    try:
        return absolute.resolve().relative_to(top).as_posix()
    except ValueError:
        return absolute.as_posix()  # outside the repository (a generated file in the build folder)


def meson_programs(top: Path) -> list[Program] | None:
    """The executables Meson's introspection reports for the project at `top`, set up once in a
    scratch folder (debugoptimized, as init's recipe builds); None when meson is missing or the
    set-up fails."""
    with tempfile.TemporaryDirectory(prefix="selector-meson-") as scratch:
        build = Path(scratch) / "build"
        try:
            configured = subprocess.run(["meson", "setup", str(build), str(top), "--buildtype=debugoptimized"],
                                        capture_output=True, text=True, timeout=CONFIGURE_SECONDS)
            if configured.returncode != 0:
                return None
            answered = subprocess.run(["meson", "introspect", str(build), "--targets"], capture_output=True, text=True,
                                      timeout=CONFIGURE_SECONDS)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if answered.returncode != 0:
            return None
        return _meson_targets(json.loads(answered.stdout), top.resolve(), build.resolve())


def _meson_targets(targets: list[dict], top: Path, build: Path) -> list[Program]:
    programs = []
    for target in targets:
        if target.get("type") != "executable":
            continue
        sources = frozenset(_relative(source, top, top) for group in target.get("target_sources", [])
                            for source in group.get("sources", []))
        folder = _relative(str(Path(target.get("defined_in", top / "meson.build")).parent), top, top)
        artifact = next(iter(target.get("filename", [])), str(build / target["name"]))
        programs.append(Program(target["name"], "" if folder == "." else folder, sources,
                                _relative(artifact, build, build)))
    return programs


MAKE_SECONDS = 30
# make's database: the names of explicit rules after make expanded them (`$(TARGETDIR)/$(TARGET)`
# of premake's makefiles is `../../bin/prog`), which no reading of the file by pattern sees
_DATABASE_RULE = re.compile(r"^(?P<targets>[^\s#:][^:]*?)::?(?:[ \t]+(?P<rest>.*))?$")


def make_database(folder: Path) -> list[tuple[list[str], list[str]]] | None:
    """(targets, prerequisites) of each explicit rule of the Makefile in `folder`, as make reads
    it: `make -pnqr .DEFAULT` prints make's database and runs no recipe (a goal that asks for
    nothing: the default one could start a sub-make).  Phony targets, names that are no target
    and special targets (.PHONY) are left out.  None when make is missing or prints none."""
    try:
        answered = subprocess.run(["make", "-pnqr", ".DEFAULT"], cwd=folder, capture_output=True, text=True,
                                  timeout=MAKE_SECONDS, env={**os.environ, "LC_ALL": "C", "MAKEFLAGS": "",
                                                             "MAKELEVEL": "", "MFLAGS": ""})
    except (OSError, subprocess.TimeoutExpired):
        return None
    return database_rules(answered.stdout)


def database_rules(text: str) -> list[tuple[list[str], list[str]]] | None:
    """The explicit rules of a printed make database (its `# Files` section), in its order."""
    _, found, files = text.partition("\n# Files\n")
    if not found:
        return None
    rules = []
    for entry in files.split("\n# files hash-table stats")[0].split("\n\n"):
        lines = [line for line in entry.splitlines() if line]
        if not lines or lines[0] == "# Not a target:" or any(line.startswith("#  Phony target") for line in lines):
            continue
        head = next((line for line in lines if not line.startswith(("#", "\t"))), "")
        rule = _DATABASE_RULE.match(head)
        if rule is None:
            continue
        explicit = explicit_rule(rule["targets"].split(), (rule["rest"] or "").split())
        if explicit:
            rules.append(explicit)
    return rules


def explicit_rule(targets: list[str], prerequisites: list[str]) -> tuple[list[str], list[str]] | None:
    """A rule's (targets, prerequisites) as init weighs them, whether make's database or the file
    by pattern gave them: special targets (.PHONY) and pattern rules out, `./` and the order-only
    bar dropped; None when no target is left."""
    kept = [t.removeprefix("./") for t in targets if (not t.startswith(".") or "/" in t) and "%" not in t]
    return (kept, [p.removeprefix("./") for p in prerequisites if p != "|"]) if kept else None
