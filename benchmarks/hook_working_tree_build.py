"""What the pre-push hook saves by selecting with the developer's build: the whole hook
(`selector hook run`, as git runs it) on a new commit, with the working tree's binary
and building the commit in a clean worktree, alternating.

A shared clone of REPO gets the configuration (untracked, as a developer keeps it) and a
new commit no store has (empty: the tree of HEAD), built in the working tree with the
configured command.  Each round times the hook twice: once with the binary newer than
every tracked file (the hook uses it), once with a tracked file newer (the hook builds the
commit from scratch, as it did before).  Both must select alike.

Run: python benchmarks/hook_working_tree_build.py REPO --config selector.toml --store STORE [--rounds 3]
(the store is copied: select may write snapshot files into the one it reads)
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _common import interleaved, median  # noqa: E402

from perf_selector.selector.config import load_config  # noqa: E402

ZERO = "0" * 40


def git(root: Path, *arguments: str) -> str:
    return subprocess.run(["git", *arguments], cwd=root, check=True, capture_output=True, text=True).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=3)
    arguments = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="hook-build-"))
    clone, store = work / "clone", work / "store"
    git(work, "clone", "-q", "--shared", str(arguments.repo.resolve()), str(clone))
    shutil.copytree(arguments.store, store)
    shutil.copy(arguments.config, clone / "selector.toml")
    git(clone, "-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-q", "--allow-empty", "-m", "new")
    sha = git(clone, "rev-parse", "HEAD")
    config = load_config(clone / "selector.toml")
    started = time.perf_counter()
    subprocess.run(config.build.command, shell=True, cwd=clone, check=True, capture_output=True)
    print(f"working-tree build: {time.perf_counter() - started:.1f} s (`{config.build.command}`)")
    binary, tracked = clone / config.project.binary, clone / git(clone, "ls-files").splitlines()[0]
    outputs: dict[str, str] = {}

    def hook(newer: Path, name: str) -> None:
        os.utime(newer)  # now: the other one is older
        done = subprocess.run([sys.executable, "-m", "perf_selector", "hook", "run", "--store", str(store)], cwd=clone,
                              input=f"refs/heads/main {sha} refs/heads/main {ZERO}\n", capture_output=True, text=True)
        outputs[name] = done.stdout + done.stderr

    times = interleaved({"the working tree's build": lambda: hook(binary, "used"),
                         "a clean worktree's build": lambda: hook(tracked, "built")}, arguments.rounds)
    assert "using the working tree's" in outputs["used"] and "in a clean worktree" in outputs["built"], outputs
    decisions = {name: [line for line in text.splitlines() if " RUN " in line or " SKIP " in line or line.startswith("run:")]
                 for name, text in outputs.items()}
    for name, values in times.items():
        print(f"{name:26s} {median(values):6.2f} s  (median of {arguments.rounds}; {', '.join(f'{v:.2f}' for v in values)})")
    print(f"same decisions: {decisions['used'] == decisions['built']}; load average {os.getloadavg()[0]:.1f}")
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
