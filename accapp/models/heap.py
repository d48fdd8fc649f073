"""The garbage collector and the objects a loaded model leaves behind.

Importing torch and transformers and loading a model leave hundreds of thousands of objects the
cyclic garbage collector tracks, nearly all of them kept for the process's life. Each of its full
collections walked all of them, one every few scoring calls, and stopped that call meanwhile
(docs/performance.md). After a load, what is left is collected once and then frozen (gc.freeze):
later collections skip it. Before a model is forgotten it is thawed, so that its own cycles are freed,
and so is everything at the interpreter's exit: frozen objects are never finalised, and DuckDB's
connections must close before the interpreter goes (nanobind reports them leaked otherwise).
"""

from __future__ import annotations

import atexit
import gc

atexit.register(gc.unfreeze)  # runs before the interpreter's last collection, which skips frozen objects


def settle() -> None:
    """After a model loads: free the load's garbage, then keep the collector off what is left."""
    gc.collect()
    gc.freeze()


def release() -> None:
    """When a model is forgotten: everything back under the collector, collected, then settled again."""
    gc.unfreeze()
    settle()
