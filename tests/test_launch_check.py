"""A busy machine does not stop the app starting (accapp/ui/gradio_internals.py): Gradio's `launch`
asks the app's own URL once before it serves, with a 3 s timeout, and raises "When localhost is not
accessible, a shareable link must be created" when the answer is late. On CI's two busy cores, with a
model preloading, the app exited that way. These tests launch a real Blocks whose first HEAD answers
after 4 s (a starlette middleware), on loopback, with Gradio's own check and with the patient one."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import gradio as gr
import pytest
from gradio import networking
from starlette.middleware import Middleware

from accapp.ui import gradio_internals

pytestmark = pytest.mark.slow
SLOW_S = 4.0  # past Gradio's 3 s


class FirstHeadSlow:
    """An ASGI middleware: the first HEAD request is answered SLOW_S seconds late."""

    def __init__(self, app):
        self.app, self.waited = app, False

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["method"] == "HEAD" and not self.waited:
            self.waited = True
            await asyncio.sleep(SLOW_S)
        await self.app(scope, receive, send)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch_slow_blocks():
    with gr.Blocks() as demo:
        gr.Textbox()
    try:
        demo.launch(server_name="127.0.0.1", server_port=_free_port(), prevent_thread_lock=True, quiet=True,
                    app_kwargs={"middleware": [Middleware(FirstHeadSlow)]})
    finally:
        demo.close()


@pytest.fixture
def gradio_check():
    """Gradio's own check, put back after the test (the patient one replaces it for the process)."""
    own = networking.url_ok
    yield own
    networking.url_ok = own


def test_gradio_alone_refuses_to_start_when_its_first_answer_is_late(gradio_check):
    assert networking.url_ok is not gradio_internals.url_answers
    with pytest.raises(ValueError, match="localhost is not accessible"):
        _launch_slow_blocks()


def test_the_patient_check_lets_the_same_app_start(gradio_check):
    gradio_internals.patient_launch_check()
    assert networking.url_ok is gradio_internals.url_answers
    started = time.monotonic()
    _launch_slow_blocks()  # raises if the check failed
    assert time.monotonic() - started >= SLOW_S  # the late answer was waited for, not skipped


def test_no_answer_within_the_bound_is_no():
    with socket.socket() as listener:  # accepts connections, never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/"
        started = time.monotonic()
        assert gradio_internals.url_answers(url, within_s=1.5) is False
        assert 1.4 <= time.monotonic() - started < 5
    refused = f"http://127.0.0.1:{_free_port()}/"  # nothing listens
    assert gradio_internals.url_answers(refused, within_s=1.0) is False


def _answering(status: int):
    from http.server import BaseHTTPRequestHandler

    class Handler(BaseHTTPRequestHandler):
        def do_HEAD(self):
            self.send_response(status)
            self.end_headers()

        def log_message(self, *args):
            pass

    return Handler


def test_an_error_status_five_times_is_no_without_waiting_out_the_bound():
    from http.server import ThreadingHTTPServer

    server = ThreadingHTTPServer(("127.0.0.1", 0), _answering(500))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        started = time.monotonic()
        assert gradio_internals.url_answers(f"http://127.0.0.1:{server.server_address[1]}/", within_s=60) is False
        assert time.monotonic() - started < 10
    finally:
        server.shutdown()


def test_a_server_that_starts_listening_late_is_waited_for():
    from http.server import ThreadingHTTPServer

    port = _free_port()
    servers = []

    def serve_later():
        time.sleep(1.0)
        servers.append(ThreadingHTTPServer(("127.0.0.1", port), _answering(200)))
        servers[0].serve_forever()

    threading.Thread(target=serve_later, daemon=True).start()
    try:
        assert gradio_internals.url_answers(f"http://127.0.0.1:{port}/", within_s=10) is True
    finally:
        if servers:
            servers[0].shutdown()


def test_the_app_makes_the_check_patient_before_it_launches():
    from pathlib import Path

    source = (Path(__file__).resolve().parents[1] / "accapp" / "ui" / "app.py").read_text(encoding="utf-8")
    assert source.index("gradio_internals.patient_launch_check()") < source.index("demo.launch(")
