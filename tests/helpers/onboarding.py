"""Real repositories made here with git, and `selector init` / `selector doctor` run on them
through the CLI (test_onboarding.py, test_init_build_targets.py, test_init_harness.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from perf_selector.collectors.builds import OK, run_build
from perf_selector.selector.config import load_config

from tests.helpers import run_selector

IDENTITY = {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.com", "GIT_COMMITTER_NAME": "a",
            "GIT_COMMITTER_EMAIL": "a@example.com"}
needs_valgrind = pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
needs_cmake = pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not installed")


def commit(root: Path, files: dict[str, str], message: str) -> str:
    """Write `files` under `root` (a new repository if need be) and commit them."""
    if not (root / ".git").exists():
        subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    environment = {**os.environ, **IDENTITY}
    subprocess.run(["git", "add", "-A"], cwd=root, check=True, env=environment)
    subprocess.run(["git", "commit", "-q", "-m", message], cwd=root, check=True, env=environment)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, check=True, capture_output=True, text=True).stdout.strip()


def init(root: Path):
    """`selector init --yes` through the CLI; the configuration it wrote, loaded."""
    result = run_selector("init", "--yes", "--repo", str(root))
    assert result.returncode == 0, result.stderr
    return load_config(root / "selector.toml"), result


def built(root: Path, config, sha: str) -> Path:
    """The configured build run in the checkout, as collection runs it; the program it made."""
    build = run_build(root, sha, config.build.command, config.project.binary, config.build.timeout)
    assert build.status == OK, build.log_tail
    return build.binary


def doctor(root: Path, *arguments: str, env: dict | None = None) -> tuple[subprocess.CompletedProcess, dict]:
    result = run_selector("doctor", "--repo", str(root), *arguments, "--format", "json", env=env)
    return result, {check["check"]: check for check in json.loads(result.stdout)["checks"]}


# foo, its library and a program of the harness's main and foo's benchmarks
# (test_init_build_targets.py and test_init_harness.py)
FOO_PROJECT = {
    "CMakeLists.txt": "cmake_minimum_required(VERSION 3.10)\nproject(foo CXX)\n"
                      "include_directories(${CMAKE_SOURCE_DIR})\nadd_library(foo STATIC lib/foo.cc)\n"
                      "add_executable(foo_benchmark util/benchmark.cc lib/foo_benchmark.cc)\n"
                      "target_link_libraries(foo_benchmark foo)\n",
    "lib/foo.h": "long foo(long x);\n", "lib/foo.cc": '#include "lib/foo.h"\nlong foo(long x) { return x % 7; }\n',
}
