"""The one adapter to Gradio's private parts: nothing else in accapp reads them
(tests/test_no_gradio_internals.py), so a Gradio upgrade that moves them breaks here alone.

- An idle app stays idle. Gradio's queue looks for new events every millisecond when it has none
  on Linux (`Queue.sleep_when_free`, 50 ms on Windows) and for progress every 10 ms: an app nobody
  uses kept a share of a core busy (docs/performance.md, "An idle app"). A probe takes seconds, so
  picking it up 20 ms later costs a visitor nothing; progress bars move ten times a second.
- An event's data (gr.EventData): a request sent from outside the page may carry none, or data of
  any shape, where Gradio's attribute access would raise."""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)

EVENT_POLL_S = 0.02  # how soon a new event is picked up when the queue is empty
PROGRESS_POLL_S = 0.1  # how often progress is looked for while events run


def event_value(evt, key: str):
    """A value of an event's data, or None when the event carries no such value."""
    data = getattr(evt, "_data", None)
    return data.get(key) if isinstance(data, dict) else None


def calm_queue_polling(blocks) -> None:
    """Set the queue's idle polling intervals on a Blocks whose queue() was called; a Gradio whose
    queue has no such settings keeps its own (logged once)."""
    queue = getattr(blocks, "_queue", None)
    if queue is None or not hasattr(queue, "sleep_when_free"):
        log.info("Gradio's queue has no idle polling interval to set: left as it is")
        return
    queue.sleep_when_free = max(queue.sleep_when_free, EVENT_POLL_S)
    if hasattr(queue, "progress_update_sleep_when_free"):
        queue.progress_update_sleep_when_free = max(queue.progress_update_sleep_when_free, PROGRESS_POLL_S)
