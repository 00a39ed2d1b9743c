"""What this machine has of what a configuration needs: the programs its build command
runs, valgrind, perf and the kernel's permission for it, ccache, taskset.

Each check is a :class:`Finding`, one line of `selector doctor`'s table, and a failing one
carries the command that fixes it.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

OK, FAIL, WARN, NOT_NEEDED, NOT_YET = "ok", "FAIL", "warn", "not needed", "not yet"
# The kernel's limit on perf for unprivileged users.  SELECTOR_PERF_EVENT_PARANOID names
# another file to read (the tests: they cannot change the kernel's setting).
PERF_EVENT_PARANOID = Path("/proc/sys/kernel/perf_event_paranoid")
# Up to 2, a user may sample the user-space code of their own processes, which is what a
# profile of a benchmark needs; 3 and above (Debian's and Ubuntu's patch) forbid perf to them.
PERF_PARANOID_ALLOWED = 2

# Debian package of each program a build or the collection runs.
PACKAGES = {"cc": "gcc", "gcc": "gcc", "c++": "g++", "g++": "g++", "clang": "clang", "clang++": "clang", "make": "make",
            "cmake": "cmake", "meson": "meson", "ninja": "ninja-build", "autoreconf": "autoconf automake libtool",
            "git": "git", "valgrind": "valgrind", "perf": "linux-perf", "ccache": "ccache", "taskset": "util-linux",
            "pkg-config": "pkg-config", "nasm": "nasm", "yasm": "yasm"}
COMPILER = re.compile(r"^(cc|c\+\+|gcc|g\+\+|clang|clang\+\+|icx|icpx)(-\d+(\.\d+)*)?$")
# Words that start a command without naming the program that does the work.
_WRAPPERS = {"env", "nice", "time", "ccache", "xargs", "exec", "command", "nohup", "sudo"}
_BUILTINS = {"cd", "test", "[", "true", "false", "echo", "printf", "export", "set", "if", "then", "else", "fi", "for",
             "do", "done", "while", "mkdir", "rm", "cp", "mv", "ln", "touch", "cat", "sed", "awk", "grep", "find", "sh",
             "bash", "install", "tee", "ls"}
_COMPILER_SETTINGS = re.compile(r"^(?:CC|CXX|-DCMAKE_C_COMPILER|-DCMAKE_CXX_COMPILER)=(.+)$")


@dataclass(frozen=True)
class Finding:
    check: str  # what is checked
    status: str  # OK, FAIL (needed, missing), WARN (recommended, missing), NOT_NEEDED, NOT_YET
    found: str  # what there is
    fix: str = ""  # the command that fixes it

    @property
    def failed(self) -> bool:
        return self.status == FAIL


def install_fix(program: str) -> str:
    return f"apt-get install {PACKAGES.get(program, program)}"


def programs_in(command: str) -> list[str]:
    """The programs a shell command runs (the first word of each simple command, past
    variable assignments and wrappers such as xargs) and the compilers it names (CC=...,
    -DCMAKE_C_COMPILER=...); builtins and the project's own scripts (./configure) left out."""
    found = []
    command = re.sub(r"\$\([^()]*\)|`[^`]*`", "", command)  # $(nproc): a value, not a step of the build
    for part in re.split(r"&&|\|\||[;|()\n]", command):
        try:
            words = shlex.split(part)
        except ValueError:
            words = part.split()
        found += [setting.group(1) for word in words for setting in [_COMPILER_SETTINGS.match(word)] if setting]
        words = [word for word in words if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", word)]
        while words and words[0] in _WRAPPERS:
            words = words[1:]
            while words and (words[0].startswith("-") or words[0].isdigit()):  # its options (xargs -P2 -n1)
                words = words[1:]
        if words and "/" not in words[0] and words[0] not in _BUILTINS and not words[0].startswith("$"):
            found.append(words[0])
    return list(dict.fromkeys(program.split()[0] for program in found if program.split()))


def build_programs(command: str, cxx: bool) -> tuple[list[str], list[str]]:
    """(tools, compilers) a build command needs: what it names, the tools those run in turn
    (CMake's Makefiles, Meson's ninja) and, when it names no compiler, the ones the build
    systems default to (cc, and c++ for a project with C++ sources)."""
    named = programs_in(command)
    compilers = [program for program in named if COMPILER.match(program)]
    tools = [program for program in named if program not in compilers]
    if "cmake" in tools:
        tools.append("ninja" if re.search(r"-G\s*['\"]?Ninja", command) else "make")
    if "meson" in tools:
        tools.append("ninja")
    if not compilers:
        compilers = ["cc", "c++"] if cxx else ["cc"]
    return list(dict.fromkeys(tools)), compilers


def version(program: str) -> str | None:
    """The first line `program --version` prints, or None when it does not run."""
    try:
        done = subprocess.run([program, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    lines = (done.stdout or done.stderr).strip().splitlines()
    return lines[0] if lines else ""


def program_finding(program: str, what: str, status_when_missing: str = FAIL) -> Finding:
    """Is `program` on PATH and does it run?"""
    path = shutil.which(program)
    if path is None:
        return Finding(what, status_when_missing, f"{program}: not on PATH", install_fix(program))
    found = version(program)
    return Finding(what, OK, f"{path}" + (f": {found}" if found else ""))


def valgrind_finding(needed: bool) -> Finding:
    if not needed:
        return Finding("valgrind", NOT_NEEDED, "no instructions metric, profile tool is not callgrind")
    return program_finding("valgrind", "valgrind")


def perf_finding(needed: bool, paranoid_path: Path | None = None) -> Finding:
    """perf on PATH, running for this kernel (Debian's /usr/bin/perf is a wrapper that fails
    without the kernel's own tools), and allowed by perf_event_paranoid."""
    if not needed:
        return Finding("perf", NOT_NEEDED, "profile tool is not perf")
    path = shutil.which("perf")
    if path is None:
        return Finding("perf", FAIL, "perf: not on PATH", install_fix("perf"))
    if version("perf") is None:
        return Finding("perf", FAIL, f"{path} does not run for this kernel",
                       "apt-get install linux-perf (Ubuntu: linux-tools-$(uname -r))")
    paranoid_path = paranoid_path or Path(os.environ.get("SELECTOR_PERF_EVENT_PARANOID", PERF_EVENT_PARANOID))
    try:
        level = int(paranoid_path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return Finding("perf", WARN, f"{path}; cannot read {paranoid_path}", "")
    if level > PERF_PARANOID_ALLOWED:
        return Finding("perf", FAIL, f"perf_event_paranoid = {level}: users may not record with perf",
                       "sudo sysctl kernel.perf_event_paranoid=1")
    return Finding("perf", OK, f"{path}; perf_event_paranoid = {level}")


def ccache_finding() -> Finding:
    found = program_finding("ccache", "ccache (recommended)", WARN)
    if found.status == WARN:
        return Finding(found.check, WARN, "ccache: not on PATH; every commit compiles every file", found.fix)
    return found


def taskset_finding(cpu: str | None) -> Finding:
    if cpu is None:
        return Finding("taskset", NOT_NEEDED, "[run] cpu is not set")
    return program_finding("taskset", f"taskset ([run] cpu = {cpu})")
