"""Integrity under a hostile or unlucky day: collections side by side with other git
work in the same repository, and a collector killed in the middle of a benchmark."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from perf_selector.selector.onboarding.sample_history import commit_all, make_sample_history, sample_cflags
from perf_selector.storage.store import Store
from tests.helpers import selector_command

pytestmark = pytest.mark.slow


def collect(root: Path, store: Path, revisions: str, *extra: str, temporary: Path | None = None) -> subprocess.Popen:
    """`selector collect` started; `temporary`: its TMPDIR (where its run folders go)."""
    environment = {**os.environ, "TMPDIR": str(temporary)} if temporary else None
    return subprocess.Popen(selector_command("collect", revisions, "--repo", str(root), "--store", str(store),
                             "--format", "json", *extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=environment)


def stored(store: Path):
    """What a collection stored, free of where and when it ran: per commit the build outcome
    and the code's digest, and each function's fingerprint."""
    commits = Store(store).read("commits").to_pandas().set_index("sha")[["build_status", "content_digest", "functions"]].sort_index()
    functions = Store(store).read("functions").to_pandas()[["commit", "name", "fingerprint", "size"]]
    return commits, functions.sort_values(["commit", "name"]).reset_index(drop=True)


def test_overlapping_collections_beside_other_worktree_work_store_what_a_serial_one_does(tmp_path):
    root = tmp_path / "project"
    make_sample_history(root, sample_cflags("-O1"), benchmarks=False)
    serial = tmp_path / "serial"
    process = collect(root, serial, "HEAD~8..HEAD")
    assert process.wait() == 0, process.stderr.read()
    expected = stored(serial)

    # A third program adds and removes worktrees of the same repository all the while.
    churn = subprocess.Popen(["sh", "-c", f"i=0; while true; do i=$((i+1)); git -C {root} worktree add -q --detach "
                                          f"{tmp_path}/churn-$i HEAD 2>/dev/null; git -C {root} worktree remove --force "
                                          f"{tmp_path}/churn-$i 2>/dev/null; done"], start_new_session=True)
    try:
        for round_number in range(20):
            store = tmp_path / f"store-{round_number}"
            first, second = collect(root, store, "HEAD~8..HEAD~2"), collect(root, store, "HEAD~5..HEAD", "-j", "2")
            for process in (first, second):
                out, err = process.communicate(timeout=300)
                assert process.returncode == 0 and "Traceback" not in err, err
                assert json.loads(out)["summary"]["failed"] == 0, out
            found = stored(store)
            assert found[0].equals(expected[0]) and found[1].equals(expected[1]), f"round {round_number}"
    finally:
        os.killpg(churn.pid, signal.SIGKILL)
        churn.wait()


def _tree(pid: int) -> set[int]:
    """`pid` and its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        current = todo.pop()
        found.add(current)
        todo += children.get(current, [])
    return found


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has ended; only its exit status waits to be collected


def _commands(pids: set[int]) -> list[str]:
    lines = []
    for pid in pids:
        try:
            lines.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:
            pass
    return lines


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_killed_collector_leaves_no_process_and_its_leftovers_are_swept(tmp_path, jobs):
    root = tmp_path / "project"
    make_sample_history(root, sample_cflags("-O1"), benchmarks=False)
    config = root / "selector.toml"
    config.write_text(config.read_text().replace('tool = "callgrind"', 'tool = "none"') +
                      '\n[[benchmark]]\nname = "slow"\ncommand = "sleep 37"\nrepetitions = 1\nwarmup = 0\n')
    commit_all(root, "A slow benchmark")
    # A temporary directory of its own: any collection sweeps a dead one's run folders, and
    # another test's (pytest-xdist runs them side by side) could sweep them before this one looks.
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    collector = collect(root, tmp_path / "store", "HEAD~1..HEAD", "-j", jobs, temporary=temporary)
    deadline = time.monotonic() + 120
    while not any("sleep 37" in command for command in _commands(_tree(collector.pid))):
        assert collector.poll() is None and time.monotonic() < deadline, collector.stderr.read()
        time.sleep(0.1)
    tree = _tree(collector.pid)
    collector.kill()
    collector.wait()
    time.sleep(1)
    alive = [pid for pid in tree if _running(pid)]
    assert not alive, _commands(set(alive))
    leftovers = list(temporary.glob(f"selector-runs-{collector.pid}-*"))
    leftovers += [folder for pid in tree for folder in temporary.glob(f"selector-runs-{pid}-*")]
    assert leftovers, "the killed collector's run folder should be there to sweep"

    # The next collection sweeps the dead one's run folders and worktree slot, and collects.
    config.write_text(config.read_text().replace('command = "sleep 37"', 'command = "true"'))
    rerun = collect(root, tmp_path / "store", "HEAD~1..HEAD", temporary=temporary)
    out, err = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, err
    assert not any(folder.exists() for folder in leftovers)
