"""What CMake says the build makes: every executable, its sources and where it is written.

`init` used to read CMakeLists.txt with regular expressions, which cannot see a target made
in a `foreach` over a list variable (`set(BENCHMARK_TARGETS x_benchmark)`, then
`add_executable(${target} testing/${target}.cc util/benchmark.cc)`), nor where a target's
binary goes when the project sets output directories.  CMake's file API answers both: a
query file in a scratch build folder, one configure (nothing is built), and the codemodel's
reply lists every target with its sources and artifacts
(https://cmake.org/cmake/help/latest/manual/cmake-file-api.7.html).

A configure can fail where the project needs packages this machine lacks; then there is no
answer (None) and `init` falls back to reading the files.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

CONFIGURE_SECONDS = 180


@dataclass(frozen=True)
class CMakeProgram:
    name: str  # the target
    folder: str  # the source folder of the CMakeLists.txt that defines it, relative to the top ("" at the top)
    sources: frozenset[str]  # relative to the top
    artifact: str  # the executable, relative to the build folder (what `cmake --build B --target name` writes)


def cmake_programs(top: Path, options: tuple[str, ...] = ()) -> list[CMakeProgram] | None:
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


def _read_reply(reply: Path, top: Path) -> list[CMakeProgram] | None:
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
    programs = []
    for entry in configuration.get("targets", []):
        target = json.loads((reply / entry["jsonFile"]).read_text())
        if target.get("type") != "EXECUTABLE":
            continue
        folder = target.get("paths", {}).get("source", ".")
        sources = frozenset(_relative(source["path"], source_root, top) for source in target.get("sources", []))
        artifacts = [artifact["path"] for artifact in target.get("artifacts", []) if not artifact["path"].endswith(".pdb")]
        programs.append(CMakeProgram(target["name"], "" if folder == "." else folder, sources,
                                     artifacts[0] if artifacts else target["name"]))
    return programs


def _relative(path: str, source_root: Path, top: Path) -> str:
    """A codemodel source path (relative to the source root, or absolute) relative to the top."""
    absolute = Path(path) if os.path.isabs(path) else source_root / path
    try:
        return absolute.resolve().relative_to(top).as_posix()
    except ValueError:
        return absolute.as_posix()  # outside the repository (a generated file in the build folder)
