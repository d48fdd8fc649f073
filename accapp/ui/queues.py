"""The names and limits of the Gradio queues the events wait in; the file jobs' own queue, their
order and their limits are :mod:`accapp.service.file_jobs`.

- ``PROBE_QUEUE``: probes, prompts, the ``/probe`` API, ``ACCAPP_PROBE_CONCURRENCY`` at once
  (16, the most probes one engine call scores together, ``ACCAPP_PROBE_BATCH``: with fewer, waiting
  probes cannot join a batch; also the limit of every other event, Explore's included). They
  still take the model one batch at a time (:mod:`accapp.service.host`).
- ``FILE_QUEUE``: file jobs. Its limit admits every job the file-job queue admits (those running
  and those waiting), so Gradio never holds one out of that queue's sight: the handler waits in
  it and shows its place itself; and ``REFUSAL_SLOTS`` more, so that a burst of jobs beyond the
  file queue's bound reaches its handler at once and is refused with a message there, instead of
  waiting unseen in Gradio's queue for a job to end.
- ``ACCAPP_QUEUE_MAX`` (64): events waiting in all Gradio queues together (Gradio's ``max_size``).
- ``MAX_THREADS``: a waiting file job holds a worker thread while it waits (asleep), so the
  app's threads are Gradio's 40 plus one per file job the queue admits.
"""

from __future__ import annotations

from accapp import settings
from accapp.service.file_jobs import FILE_CONCURRENCY, FILE_QUEUE_MAX

PROBE_QUEUE = "probe"  # interactive probes, prompts, the /probe API
FILE_QUEUE = "file"  # file scoring jobs (the tab, /score_file and /score_file_all)

# As many as a batch holds (host.PROBE_BATCH): fewer at once caps the batches (figures: docs/performance.md).
PROBE_CONCURRENCY = settings.integer("ACCAPP_PROBE_CONCURRENCY")  # its old name is read too (settings.py)
QUEUE_MAX = settings.integer("ACCAPP_QUEUE_MAX")
REFUSAL_SLOTS = 8  # file events beyond those admitted: their handlers only refuse, in milliseconds
FILE_EVENTS = FILE_CONCURRENCY + FILE_QUEUE_MAX + REFUSAL_SLOTS  # the file events' Gradio limit
MAX_THREADS = 40 + FILE_EVENTS  # Gradio's default, plus the file jobs' (launch's max_threads)
