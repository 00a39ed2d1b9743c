"""The lock that keeps timed benchmark runs alone on this machine (collection's suites,
`selector confirm`'s interleaved sessions, the re-measurement of changed labels under
perturbed contexts)."""

from __future__ import annotations

import fcntl
from contextlib import contextmanager

from perf_selector.collectors.cache_home import cache_home


@contextmanager
def machine_lock(timing: bool, exclusive: bool):
    """Keep timed benchmark runs alone on this machine.

    Builds take the lock shared, a timed suite takes it exclusive: parallel jobs may
    build side by side, but a suite is timed only while no build (and no other suite)
    runs.  Measured on lz4 with -j 2 and no such lock, wall-time labels gave 2 false
    positives in 22 pairs of identical code.  Callgrind counts need no lock.
    """
    if not timing:
        yield
        return
    # In the user's cache, which lasts: a shared lock cannot be removed by whoever lets it go.
    with open(cache_home() / "measurement.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
