"""A stop (SIGTERM, SIGINT) that comes while a command makes or removes what it must not leave
is acted on once that work is whole: a SIGTERM met as `select` removed its copy of a binary
left the copy in the temporary directory (CI of 2026-11-30).  Real signals, sent to this
process."""

from __future__ import annotations

import fcntl
import os
import signal

import pytest

from perf_selector.collectors import file_lock
from perf_selector.collectors.interrupts import interrupts_deferred
from perf_selector.selector import temporaries


class Stopped(Exception):
    pass


@pytest.fixture
def stop_raises():
    """SIGTERM raises Stopped here, as the CLI's handler raises Terminated."""
    def handler(signum, frame):
        raise Stopped(signum)

    previous = signal.signal(signal.SIGTERM, handler)
    yield
    signal.signal(signal.SIGTERM, previous)


def test_a_stop_inside_is_acted_on_when_the_work_is_whole(stop_raises):
    done = []
    with pytest.raises(Stopped):
        with interrupts_deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            done.append("first")
            done.append("second")
    assert done == ["first", "second"]
    assert signal.getsignal(signal.SIGTERM) is not signal.SIG_IGN  # the handler is back


def test_nested_blocks_pass_a_stop_outwards(stop_raises):
    done = []
    with pytest.raises(Stopped):
        with interrupts_deferred():
            with interrupts_deferred():
                os.kill(os.getpid(), signal.SIGTERM)
            done.append("after the inner block")
    assert done == ["after the inner block"]


def test_no_stop_no_exception(stop_raises):
    with interrupts_deferred():
        pass
    with pytest.raises(Stopped):  # and stops are acted on at once again
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):  # Python runs the handler between steps of bytecode
            pass


def test_a_stop_during_the_removal_of_temporaries_removes_them_all(stop_raises, tmp_path, monkeypatch):
    monkeypatch.setattr(temporaries.tempfile, "tempdir", str(tmp_path))
    kept = [temporaries.temporary_directory("selector-select-") for _ in range(3)]
    for folder in kept:
        (folder / "binary").write_bytes(b"\x7fELF")
    real_rmtree = temporaries.shutil.rmtree

    def stopped_first(path, **options):
        os.kill(os.getpid(), signal.SIGTERM)  # the stop comes as the first folder goes
        real_rmtree(path, **options)

    monkeypatch.setattr(temporaries.shutil, "rmtree", stopped_first)
    with pytest.raises(Stopped):
        temporaries.remove_all()
    assert list(tmp_path.iterdir()) == []
    assert temporaries._kept == []


def _cut_short(monkeypatch) -> None:
    """From here a blocking wait for a lock is stopped as it starts (as SIGINT stops it); trying is not."""
    real_flock = fcntl.flock

    def stopped_while_waiting(handle, operation):
        if operation == fcntl.LOCK_EX:  # the blocking wait
            raise KeyboardInterrupt
        return real_flock(handle, operation)

    monkeypatch.setattr(file_lock.fcntl, "flock", stopped_while_waiting)


def test_a_wait_for_a_lock_cut_short_leaves_no_lock_file_nobody_holds(tmp_path, monkeypatch):
    path = tmp_path / "git.lock"
    _cut_short(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        with file_lock.held_and_removed(path):
            pass
    assert not path.exists()


def test_a_wait_cut_short_keeps_the_lock_file_another_holds(tmp_path, monkeypatch):
    path = tmp_path / "git.lock"
    holder = open(path, "a")
    fcntl.flock(holder, fcntl.LOCK_EX)
    _cut_short(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        with file_lock.held_and_removed(path):
            pass
    assert path.exists()  # its holder removes it when it lets go
    monkeypatch.undo()
    file_lock.remove_held(path, holder)
    assert not path.exists()


def test_outside_the_main_thread_it_changes_nothing():
    """Only the main thread receives signals or may set their handlers: a worker thread's block
    (a collection's worktree let go in a Dask worker) runs as it would without it."""
    import threading

    before = signal.getsignal(signal.SIGTERM)
    done, failed = [], []

    def work():
        try:
            with interrupts_deferred():
                done.append(signal.getsignal(signal.SIGTERM))
        except Exception as error:  # signal.signal outside the main thread raises ValueError
            failed.append(error)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(timeout=10)
    assert failed == [] and done == [before]
