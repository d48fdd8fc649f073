"""Which Gradio queue each event waits in, and the limits that keep probes fast while files are
scored (issue 22). Settings are environment variables; the defaults suit a small CPU Space.

- ``PROBE_QUEUE``: probes, prompts, the ``/probe`` API, ``ACCAPP_PROBE_CONCURRENCY`` at once
  (16, the most probes one engine call scores together, ``ACCAPP_PROBE_BATCH``: with fewer, waiting
  probes cannot join a batch; also the limit of every other event, Explore's included). They
  still take the model one batch at a time (:mod:`accapp.service.host`).
- ``FILE_QUEUE``: file jobs, ``ACCAPP_FILE_CONCURRENCY`` at once (2); at most
  ``ACCAPP_FILE_QUEUE_MAX`` (8) waiting, and ``ACCAPP_FILE_JOBS_PER_VISITOR`` (1) queued or running
  per visitor (Gradio session): another is refused at once, with where the first one stands.
  Gradio shows a waiting job its place in the queue.
- ``ACCAPP_QUEUE_MAX`` (64): events waiting in all queues together (Gradio's ``max_size``).

Both queues share the model: a file job is scored in short steps, each taking the model at low
priority and giving it back (:meth:`accapp.service.host.AppState.background`), so a probe waits for one
step at most, never for a file.
"""

from __future__ import annotations

import contextlib
import os
import threading

from accapp import settings
from accapp.errors import UserError

PROBE_QUEUE = "probe"  # interactive probes, prompts, the /probe API
FILE_QUEUE = "file"  # file scoring jobs (the tab and /score_file)


def setting(name: str, default: int | None = None) -> int:
    """An integer setting within its bounds (accapp/settings.py lists each with its default)."""
    return settings.integer(name, default)


# As many as a batch holds (state.PROBE_BATCH): fewer at once caps the batches (figures: docs/performance.md).
PROBE_CONCURRENCY = setting("ACCAPP_PROBE_CONCURRENCY")
FILE_CONCURRENCY = setting("ACCAPP_FILE_CONCURRENCY")
FILE_QUEUE_MAX = setting("ACCAPP_FILE_QUEUE_MAX")
FILE_JOBS_PER_VISITOR = setting("ACCAPP_FILE_JOBS_PER_VISITOR")
QUEUE_MAX = setting("ACCAPP_QUEUE_MAX")

_blocks = None
_running: dict[str, int] = {}  # session -> file jobs running; bounded by FILE_CONCURRENCY entries
_running_lock = threading.Lock()


def attach(blocks) -> None:
    """Remember the app, so the file queue can be looked at (app.build_app calls this)."""
    global _blocks
    _blocks = blocks


def file_jobs() -> list[dict]:
    """Every file job Gradio holds: {session, event_id, state: 'running' | 'waiting', position (1 = next)}.

    Reads Gradio 6's queue (``Blocks._queue``); [] when it is not there (no app, another Gradio).
    """
    queue = getattr(_blocks, "_queue", None)
    if queue is None:
        return []
    jobs = []
    try:
        for events in list(queue.active_jobs):
            for ev in events or []:
                if getattr(ev.fn, "concurrency_id", None) == FILE_QUEUE:
                    jobs.append({"session": ev.session_hash, "event_id": ev._id, "state": "running", "position": 0})
        waiting = queue.event_queue_per_concurrency_id.get(FILE_QUEUE)
        for n, ev in enumerate(list(waiting.queue) if waiting else [], start=1):
            jobs.append({"session": ev.session_hash, "event_id": ev._id, "state": "waiting", "position": n})
    except (AttributeError, TypeError):  # another Gradio's internals: no view of the queue
        return []
    return jobs


def file_job_refusal(session: str | None) -> str | None:
    """Why a new file job from this visitor may not join the queue now, or None."""
    jobs = file_jobs()
    mine = [j for j in jobs if session and j["session"] == session]
    with _running_lock:
        running_here = _running.get(session or "", 0)
    if len(mine) >= FILE_JOBS_PER_VISITOR or (not mine and running_here >= FILE_JOBS_PER_VISITOR):
        first = mine[0] if mine else {"state": "running"}
        where = ("is being scored now" if first["state"] == "running"
                 else f"is number {first['position']} in the queue")
        return (f"Your file {where}: one file at a time per visitor. Wait for it to finish, or press Stop "
                "to end it, then send this one.")
    waiting = sum(1 for j in jobs if j["state"] == "waiting")
    if waiting >= FILE_QUEUE_MAX:
        return f"{waiting} files are waiting to be scored, the most this app queues. Try again in a few minutes."
    return None


@contextlib.contextmanager
def file_job(session: str | None):
    """Count a running file job for its visitor; refuse one over ``FILE_JOBS_PER_VISITOR`` (the
    queue's check at submission covers queued jobs; this covers two sent at the same moment)."""
    key = session or ""
    with _running_lock:
        if session and _running.get(key, 0) >= FILE_JOBS_PER_VISITOR:
            raise UserError("You have a file being scored already: one file at a time per visitor. "
                            "Wait for it to finish, or press Stop to end it.")
        _running[key] = _running.get(key, 0) + 1
    try:
        yield
    finally:
        with _running_lock:
            _running[key] -= 1
            if _running[key] <= 0:
                del _running[key]


def uploads_in_use(exclude_session: str | None = None) -> set[str] | None:
    """Paths of the files that other file jobs in the queue (waiting or running) were sent with, so
    that a finished job never removes an upload another job still needs (identical uploads share a
    path in Gradio's cache); None when the queue cannot be seen (then nothing is removed)."""
    queue = getattr(_blocks, "_queue", None)
    if queue is None:
        return None
    paths: set[str] = set()
    try:
        events = [ev for evs in list(queue.active_jobs) for ev in evs or []]
        waiting = queue.event_queue_per_concurrency_id.get(FILE_QUEUE)
        events += list(waiting.queue) if waiting else []
        for ev in events:
            if getattr(ev.fn, "concurrency_id", None) != FILE_QUEUE or (exclude_session and ev.session_hash == exclude_session):
                continue
            for item in (getattr(ev.data, "data", None) or []):
                if isinstance(item, dict) and item.get("path"):
                    paths.add(os.path.realpath(str(item["path"])))
    except (AttributeError, TypeError):
        return None
    return paths
