"""Python's cycle collector, spaced out while pairs are scored.

A call of score_pairs makes and drops many small objects (requests, rows, results). Python runs a young
collection every 700 net allocations, and each one that finds them alive moves them up a generation,
where the older collections walk them again, beside every object of the loaded model. While a call runs
the young threshold is YOUNG_THRESHOLD: far fewer collections, most of a call's objects gone before one
runs. Nothing is kept longer than the call: plain reference counting frees what holds no cycle, and the
collector's own threshold is back when the last call running leaves. The threshold is the whole
process's, so calls on several threads share one setting: the first in raises it, the last out restores it.
"""

from __future__ import annotations

import contextlib
import gc
import threading

YOUNG_THRESHOLD = 20_000  # net allocations between young collections while a call runs (Python's default: 700)

_lock = threading.Lock()
_running = 0  # calls inside spaced_collections now
_saved: tuple[int, ...] = ()  # the thresholds before the first of them


@contextlib.contextmanager
def spaced_collections():
    """Run the body with the young collection threshold at YOUNG_THRESHOLD (or higher where it already is;
    a collector set off stays off)."""
    global _running, _saved
    with _lock:
        if _running == 0:
            _saved = gc.get_threshold()
            if _saved[0]:  # 0: the collector is off, and stays off
                gc.set_threshold(max(_saved[0], YOUNG_THRESHOLD), *_saved[1:])
        _running += 1
    try:
        yield
    finally:
        with _lock:
            _running -= 1
            if _running == 0:
                gc.set_threshold(*_saved)
