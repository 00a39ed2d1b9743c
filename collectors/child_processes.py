"""Children that die with the collector.

Builds and benchmarks run in sessions of their own (a timeout kills the whole tree), so
a collector killed with SIGKILL would leave them running, re-parented to init: a `make`
or a 5-minute benchmark going on for nobody.  Linux's parent-death signal kills a child
when the thread that started it dies; collectors set it in every build, benchmark and
profiler process and in the pool's worker processes.  (A grandchild, such as the second
command of a shell pipeline, does not inherit it.)
"""

from __future__ import annotations

import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """In a child (a Popen preexec_fn, a pool initializer): be killed when the parent dies."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes  # here, not with the module: `select` imports this module and never starts a child

    parent = os.getppid()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the signal was set
        os._exit(1)


def process_alive(pid: int) -> bool:
    """Is a process of this machine still running?  A zombie is not: it has ended, and only
    its exit status waits for a parent (in a container without an init, for ever)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state != "Z"
