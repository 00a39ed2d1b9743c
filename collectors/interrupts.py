"""Stops (SIGTERM, SIGINT) held back while a command makes or removes what it must not leave.

A stop is acted on between any two steps of Python code.  One that came between a folder's
removal being decided and its removal done left it behind: a `select` stopped by SIGTERM as it
tore down left its copy of the binary in the temporary directory (CI of 2026-11-30), and one
stopped while it let its worktree go left the slot's folders and git lock there.  Inside
`interrupts_deferred` a stop is only noted; it is acted on, by the handler it would have met,
when the block ends, so the block's work is whole or not begun.

Only the handlers are swapped, not the signal mask, which child processes inherit: a `git`
run inside still stops at once when its process group is stopped.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator

_STOPS = (signal.SIGTERM, signal.SIGINT)


@contextmanager
def interrupts_deferred() -> Iterator[None]:
    """SIGTERM and SIGINT arriving inside are acted on when the block ends (nested blocks pass
    them outwards).  Only the main thread receives signals: elsewhere this does nothing."""
    previous = {stop: signal.getsignal(stop) for stop in _STOPS}
    # A handler set from C (getsignal gives None) could not be put back: such a process keeps its own.
    if threading.current_thread() is not threading.main_thread() or None in previous.values():
        yield
        return
    arrived: list[int] = []
    for stop in _STOPS:
        signal.signal(stop, lambda signum, frame: arrived.append(signum))
    try:
        yield
    finally:
        for stop, handler in previous.items():
            signal.signal(stop, handler)
        if arrived:
            _act_on(arrived[0], previous[arrived[0]])


def _act_on(signum: int, handler) -> None:
    if callable(handler):
        handler(signum, None)
    elif handler == signal.SIG_DFL:
        signal.raise_signal(signum)
    # SIG_IGN: the stop is let go, as it would have been
