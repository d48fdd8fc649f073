"""The names and limits of the Gradio queues the events wait in; the file jobs' own queue, their
order and their limits are :mod:`accapp.service.file_jobs`.

- ``PROBE_QUEUE``: probes, prompts, the ``/probe`` API, ``PROBE_QUEUE_LIMIT`` at once: two of
  ``ACCAPP_PROBE_BATCH``'s batches (32), or ``ACCAPP_PROBE_CONCURRENCY`` where that is more. They
  still take the model one batch at a time (:mod:`accapp.service.host`): while one batch scores the
  next gathers, so a class of thirty that probes together all have their first figures from the first
  two batches, instead of half of them waiting in Gradio's queue for others' last stage (the later
  stages cost many times the first). ``ACCAPP_PROBE_CONCURRENCY`` (16) is the limit of every other
  event, Explore's included: a render there is CPU-bound Python, more at once adds memory, not speed.
  :func:`admit_probes` sets it on the probe queue's events (Gradio takes a queue's limit as the
  smallest of its events').
- ``FILE_QUEUE``: file jobs. Its limit admits every job the file-job queue admits (those running
  and those waiting), so Gradio never holds one out of that queue's sight: the handler waits in
  it and shows its place itself; and ``REFUSAL_SLOTS`` more, so that a burst of jobs beyond the
  file queue's bound reaches its handler at once and is refused with a message there, instead of
  waiting unseen in Gradio's queue for a job to end.
- ``ACCAPP_QUEUE_MAX`` (64): events waiting in all Gradio queues together (Gradio's ``max_size``).
- ``MAX_THREADS``: a waiting file job holds a worker thread while it waits (asleep), and a probe
  holds one while its stage waits for the model, so the app's threads are Gradio's 40 plus one per
  file job the queue admits and one per probe admitted beyond ``ACCAPP_PROBE_CONCURRENCY``.
"""

from __future__ import annotations

from accapp import settings
from accapp.service.file_jobs import FILE_CONCURRENCY, FILE_QUEUE_MAX
from accapp.service.host import PROBE_BATCH

PROBE_QUEUE = "probe"  # interactive probes, prompts, the /probe API
FILE_QUEUE = "file"  # file scoring jobs (the tab, /score_file and /score_file_all)

# As many as a batch holds (host.PROBE_BATCH): fewer at once caps the batches (figures: docs/performance.md).
PROBE_CONCURRENCY = settings.integer("ACCAPP_PROBE_CONCURRENCY")  # its old name is read too (settings.py)
QUEUE_MAX = settings.integer("ACCAPP_QUEUE_MAX")
REFUSAL_SLOTS = 8  # file events beyond those admitted: their handlers only refuse, in milliseconds
FILE_EVENTS = FILE_CONCURRENCY + FILE_QUEUE_MAX + REFUSAL_SLOTS  # the file events' Gradio limit
PROBE_QUEUE_LIMIT = max(PROBE_CONCURRENCY, 2 * PROBE_BATCH)  # probes at once: one batch scoring, the next gathering
# Gradio's default, plus the file jobs' and the probes' beyond the default limit (launch's max_threads)
MAX_THREADS = 40 + FILE_EVENTS + (PROBE_QUEUE_LIMIT - PROBE_CONCURRENCY)


def admit_probes(demo) -> None:
    """Every event of the probe queue admits PROBE_QUEUE_LIMIT at once (before the queue starts)."""
    for fn in demo.fns.values():
        if fn.concurrency_id == PROBE_QUEUE:
            fn.concurrency_limit = PROBE_QUEUE_LIMIT
