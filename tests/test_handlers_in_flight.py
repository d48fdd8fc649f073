"""At SIGTERM the app waits for the event handlers in flight (service.host.HANDLERS, counted by
ui.common.friendly) before it exits: interpreter shutdown with a handler's thread inside DuckDB or torch
aborts (status -6; seen when a test stopped the shared server while an Explore render ran). Fast tier: no
model, no server; the SIGTERM itself: tests/test_app_stop.py."""

from __future__ import annotations

import threading

import gradio as gr
import pytest

from accapp.errors import UserError
from accapp.service.host import HANDLERS
from accapp.ui.common import friendly


def test_a_running_handler_is_waited_for_and_a_failed_one_is_not_counted():
    release, started = threading.Event(), threading.Event()

    @friendly
    def render():
        started.set()
        release.wait(10)
        return "drawn"

    @friendly
    def draw_stages():  # a generator handler (the probe's stages) counts until its last stage
        yield 1
        started.set()
        release.wait(10)
        yield 2

    assert HANDLERS.wait_idle(0)
    for fn in (render, lambda: list(draw_stages())):
        started.clear(), release.clear()
        worker = threading.Thread(target=fn)
        worker.start()
        assert started.wait(10)
        assert not HANDLERS.wait_idle(0.05)  # SIGTERM would wait here
        release.set()
        assert HANDLERS.wait_idle(10)
        worker.join(10)

    @friendly
    def refused():
        raise UserError("Type a sentence.")

    with pytest.raises(gr.Error, match="Type a sentence"):
        refused()
    assert HANDLERS.wait_idle(0)  # an error still ends the count
