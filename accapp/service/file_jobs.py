"""The file-job queue: which file jobs run, which wait and in what order. Standard
library only (a lock, a condition, a list); it knows nothing of Gradio.

- At most ``ACCAPP_FILE_CONCURRENCY`` jobs run at once (2); the others wait in order of arrival,
  at most ``ACCAPP_FILE_QUEUE_MAX`` (8): one more is refused at once, with a message.
- A visitor (a session) has at most ``ACCAPP_FILE_JOBS_PER_VISITOR`` jobs waiting or running (1):
  another is refused at once, saying where the first one stands.
- Each job has a cancel event (:attr:`FileJob.cancel`): set when the job leaves the queue (it
  ended, failed or was stopped), it wakes the job if it waits and tells its steps to stop. A job
  that leaves frees its place or slot, and the next waiting job starts.
- The queue knows each job's uploads, so that a finished job never removes a file another job
  still needs (identical uploads share a path in Gradio's cache).

A job runs where it was sent (the caller's thread): :meth:`FileJob.wait_turn` blocks until it may
run, a short while at a time, so the caller can show the job's place between waits. Its model
work still goes one short step at a time through :mod:`accapp.service.host`, behind every probe.

Bounds: the running list holds at most ``concurrency`` jobs and the waiting list at most
``queue_max``; a refused job takes no place.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading

from accapp import settings
from accapp.errors import UserError

FILE_CONCURRENCY = settings.integer("ACCAPP_FILE_CONCURRENCY")
FILE_QUEUE_MAX = settings.integer("ACCAPP_FILE_QUEUE_MAX")
FILE_JOBS_PER_VISITOR = settings.integer("ACCAPP_FILE_JOBS_PER_VISITOR")
WAIT_S = 0.5  # a waiting job wakes this often to show its place (and to be stoppable)


class FileJob:
    """One file job in the queue: its visitor, the uploads it needs, its cancel event."""

    def __init__(self, queue: FileQueue, number: int, session: str | None, uploads: frozenset[str]) -> None:
        self.queue = queue
        self.number = number  # order of arrival
        self.session = session
        self.uploads = uploads  # real paths
        self.cancel = threading.Event()

    @property
    def cancelled(self) -> bool:
        return self.cancel.is_set()

    @property
    def position(self) -> int | None:
        """0 while it runs, 1.. while it waits (1 = next), None once it has left the queue."""
        return self.queue.position(self)

    def wait_turn(self, timeout: float = WAIT_S) -> bool:
        """Wait up to ``timeout`` seconds for the job's turn: True once it runs; False while it
        still waits; UserError once it was cancelled."""
        return self.queue.wait_turn(self, timeout)

    def leave(self) -> None:
        """The job ends (done, failed or stopped): its cancel event is set, the next job starts."""
        self.queue.leave(self)


class FileQueue:
    """File jobs running (at most ``concurrency``) and waiting (at most ``queue_max``), at most
    ``per_visitor`` of them per session."""

    def __init__(self, concurrency: int = FILE_CONCURRENCY, queue_max: int = FILE_QUEUE_MAX,
                 per_visitor: int = FILE_JOBS_PER_VISITOR) -> None:
        self.concurrency, self.queue_max, self.per_visitor = concurrency, queue_max, per_visitor
        self._changed = threading.Condition()  # guards the two lists; notified when a job starts or leaves
        self._running: list[FileJob] = []
        self._waiting: list[FileJob] = []  # in order of arrival
        self._numbers = itertools.count(1)

    # ---- admission ------------------------------------------------------------------------
    def _refusal(self, session: str | None) -> str | None:
        mine = [j for j in self._running + self._waiting if session and j.session == session]
        if len(mine) >= self.per_visitor:
            first = mine[0]
            where = ("is being scored now" if first in self._running
                     else f"is number {self._waiting.index(first) + 1} in the queue")
            return (f"Your file {where}: one file at a time per visitor. Wait for it to finish, or press Stop "
                    "to end it, then send this one.")
        if len(self._running) >= self.concurrency and len(self._waiting) >= self.queue_max:
            return (f"{len(self._waiting)} files are waiting to be scored, the most this app queues. "
                    "Try again in a few minutes.")
        return None

    def refusal(self, session: str | None) -> str | None:
        """Why a new file job from this visitor would be refused now, or None."""
        with self._changed:
            return self._refusal(session)

    def admit(self, session: str | None, uploads=()) -> FileJob:
        """A new job: running at once if a slot is free, else waiting last. UserError (the same
        message as :meth:`refusal`) when it may not join."""
        real = frozenset(os.path.realpath(str(p)) for p in uploads if p and isinstance(p, (str, os.PathLike)))
        with self._changed:
            why = self._refusal(session)
            if why:
                raise UserError(why)
            job = FileJob(self, next(self._numbers), session, real)
            (self._running if len(self._running) < self.concurrency else self._waiting).append(job)
            return job

    @contextlib.contextmanager
    def job(self, session: str | None, uploads=()):
        """Admit a job for the block's length: it leaves the queue when the block ends, however it ends."""
        job = self.admit(session, uploads)
        try:
            yield job
        finally:
            job.leave()

    # ---- a job's life ---------------------------------------------------------------------
    def wait_turn(self, job: FileJob, timeout: float = WAIT_S) -> bool:
        with self._changed:
            self._changed.wait_for(lambda: job in self._running or job.cancelled, timeout)
            if job.cancelled:
                raise UserError("The file job was stopped before it started.")
            return job in self._running

    def leave(self, job: FileJob) -> None:
        """Take the job out of the queue (a second call does nothing) and start the next ones."""
        job.cancel.set()
        with self._changed:
            if job in self._running:
                self._running.remove(job)
            elif job in self._waiting:
                self._waiting.remove(job)
            while self._waiting and len(self._running) < self.concurrency:
                self._running.append(self._waiting.pop(0))
            self._changed.notify_all()

    # ---- what the queue holds -------------------------------------------------------------
    def position(self, job: FileJob) -> int | None:
        with self._changed:
            if job in self._running:
                return 0
            return self._waiting.index(job) + 1 if job in self._waiting else None

    def jobs(self) -> list[dict]:
        """Every job in the queue: {session, number, state: 'running' | 'waiting', position (1 = next)}."""
        with self._changed:
            return ([{"session": j.session, "number": j.number, "state": "running", "position": 0} for j in self._running]
                    + [{"session": j.session, "number": j.number, "state": "waiting", "position": n}
                       for n, j in enumerate(self._waiting, start=1)])

    def counts(self) -> dict:
        """{running, waiting}: what ``/status`` shows."""
        with self._changed:
            return {"running": len(self._running), "waiting": len(self._waiting)}

    def uploads_in_use(self, exclude: FileJob | None = None) -> set[str]:
        """Real paths of the uploads that the jobs in the queue (but ``exclude``) were sent with."""
        with self._changed:
            return {p for j in self._running + self._waiting if j is not exclude for p in j.uploads}

    def remove_unless_in_use(self, path, remove) -> bool:
        """remove(real path) unless a job in the queue needs the file; under the queue's lock, so no
        job is admitted with that file between the check and the removal. True when removed."""
        real = os.path.realpath(str(path))
        with self._changed:  # a re-entrant lock: uploads_in_use takes it again
            if real in self.uploads_in_use():
                return False
            return bool(remove(real))


_app_queue = FileQueue()


def file_queue() -> FileQueue:
    """The app's file-job queue (one per process)."""
    return _app_queue
