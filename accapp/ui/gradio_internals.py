"""The one adapter to Gradio's private parts: nothing else in accapp reads them
(tests/test_no_gradio_internals.py), so a Gradio upgrade that moves them breaks here alone.

- An idle app stays idle. Gradio's queue looks for new events every millisecond when it has none
  on Linux (`Queue.sleep_when_free`, 50 ms on Windows) and for progress every 10 ms: an app nobody
  uses kept a share of a core busy (docs/performance.md, "An idle app"). A probe takes seconds, so
  picking it up 20 ms later costs a visitor nothing; progress bars move ten times a second.
- An event's data (gr.EventData): a request sent from outside the page may carry none, or data of
  any shape, where Gradio's attribute access would raise.
- A busy machine does not stop the app starting. Before it serves, `launch` asks its own local URL
  once (`networking.url_ok`: a HEAD with a 3 s timeout, a timeout counting as "not reachable") and
  exits when that fails; while a model preloads on a loaded machine the answer can take longer."""

from __future__ import annotations

import logging
import time

import httpx

log = logging.getLogger(__name__)

EVENT_POLL_S = 0.02  # how soon a new event is picked up when the queue is empty
PROGRESS_POLL_S = 0.1  # how often progress is looked for while events run
LAUNCH_CHECK_S = 120.0  # how long launch's check of the app's own URL waits for an answer, in all


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


def url_answers(url: str, within_s: float = LAUNCH_CHECK_S) -> bool:
    """Whether `url` answers a HEAD with 200 (or a redirect, or 401 where auth is set) within `within_s`
    seconds: a late answer is waited for and a refused connection tried again until then; any other
    status, five times in a row, is no (as in Gradio's own check). verify=False as Gradio's: a local
    server may use a self-signed certificate."""
    deadline, other = time.monotonic() + within_s, 0
    while True:
        try:
            r = httpx.head(url, timeout=max(deadline - time.monotonic(), 0.1), verify=False)
            if r.status_code in (200, 401, 301, 302, 303, 307, 308):
                return True
            other += 1
        except httpx.HTTPError:
            pass
        if other >= 5 or time.monotonic() + 0.5 > deadline:
            return False
        time.sleep(0.5)


def patient_launch_check() -> None:
    """Make `launch`'s check of the app's own URL wait for a busy server (`url_answers`); a Gradio
    without that check keeps its own (logged)."""
    from gradio import networking

    if not callable(getattr(networking, "url_ok", None)):
        log.info("Gradio has no launch check of its own URL: nothing to make patient")
        return
    networking.url_ok = url_answers
