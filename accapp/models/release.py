"""Giving freed memory back to the system after a model is unloaded.

Python and torch free a model's tensors when its last reference goes, but the allocators keep
what was freed for reuse. glibc keeps the freed pages of its arenas: ``malloc_trim(0)`` returns
them. Python keeps its small objects in arenas of its own (pymalloc) and returns one only when
every object in it is gone, so the few that outlive each load pin many; and glibc's heap, with
small objects scattered among a model's large blocks, cannot return the pages around them.
:func:`restart_with_returning_allocator` therefore starts the app on allocators that give memory
back: Python's objects on the C allocator, and jemalloc (which keeps small and large blocks apart)
where it is installed. docs/performance.md has the measurements. Elsewhere (macOS, musl) there is
nothing to call.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import sys

from accapp import settings

JEMALLOC_CONF = "background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0"  # freed pages back after 1 s (not 10), on its own thread
ALL_ARENAS = 4096  # jemalloc's MALLCTL_ARENAS_ALL: "arena.4096.purge" purges every arena


@functools.lru_cache(maxsize=1)
def _libc():
    name = ctypes.util.find_library("c")
    try:
        lib = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    return lib if lib is not None and hasattr(lib, "malloc_trim") else None


@functools.lru_cache(maxsize=1)
def _jemalloc_mallctl():
    """jemalloc's mallctl where jemalloc is the process's allocator (preloaded), else None."""
    try:
        return getattr(ctypes.CDLL(None), "mallctl", None)
    except OSError:
        return None


def release_freed_memory() -> bool:
    """Return the allocator's free pages to the system (glibc's, or jemalloc's every arena); True when it
    could be asked."""
    mallctl = _jemalloc_mallctl()
    if mallctl is not None:
        mallctl(f"arena.{ALL_ARENAS}.purge".encode(), None, None, None, 0)
        return True
    lib = _libc()
    if lib is None:
        return False
    lib.malloc_trim(0)
    return True


def returning_allocator() -> dict[str, str]:
    """The environment that puts the process on allocators that give freed memory back: Python's objects on
    the C allocator, and that allocator jemalloc where the system has it (else glibc's, with two arenas, not
    eight a core: each arena a thread used keeps its own free pages)."""
    env = {"PYTHONMALLOC": "malloc"}
    jemalloc = ctypes.util.find_library("jemalloc")
    if jemalloc and not settings.preloaded():  # a library the user preloads stays theirs alone
        env |= {"LD_PRELOAD": jemalloc, "MALLOC_CONF": JEMALLOC_CONF}
    else:
        env["MALLOC_ARENA_MAX"] = "2"
    return env


def restart_with_returning_allocator() -> None:
    """Restart this process in place (the same pid, its own argv) on :func:`returning_allocator`, once, before
    anything is loaded; nothing on a system other than glibc Linux, where PYTHONMALLOC is set (a restart sets it),
    or with ACCAPP_ALLOCATOR_RESTART=0."""
    if sys.platform != "linux" or _libc() is None or settings.python_allocator() or not settings.flag(
            "ACCAPP_ALLOCATOR_RESTART"):
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, sys.orig_argv, settings.environment_with(returning_allocator()))


def allocator_in_use() -> str:
    """The allocators this process runs on, in words (the app's log at start)."""
    python = settings.python_allocator() or "pymalloc"
    c = "jemalloc" if _jemalloc_mallctl() is not None else "glibc"  # the symbol, as release_freed_memory asks it
    return f"Python objects: {python}; C: {c}"


def release_idle_memory() -> bool:
    """After work, once idle: glibc's free pages back to the system. jemalloc returns its idle pages on its own
    thread, unasked (a purge of every arena after each probe costs the next one its page faults)."""
    return False if _jemalloc_mallctl() is not None else release_freed_memory()


def resident_mb(field: str = "VmRSS") -> float:
    """This process's memory (MB) from /proc/self/status: VmRSS resident now, VmHWM its peak,
    RssAnon the heap, RssFile mapped files (NaN where there is no /proc)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")
