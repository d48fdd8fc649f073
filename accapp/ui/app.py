"""Build the Gradio Blocks from the tabs and launch it (``python app.py``).

Environment, as on a Hugging Face Space: ``PORT`` (default 7860) and ``GRADIO_SERVER_NAME``
(default 127.0.0.1; a Space sets 0.0.0.0). Also: ``ACCAPP_PRELOAD=0`` skips warming the default
model at start; ``ACCAPP_RESULTS_DIR`` points the explorer at another results folder. The limits
that keep a public Space up (queues, memory, uploads, request sizes) are listed in the README's
"Limits and settings"; the Gradio queues' are in :mod:`accapp.ui.queues`, the file jobs' queue is
:mod:`accapp.service.file_jobs`.

Requests are bounded before they reach a handler: an upload by Gradio's own ``max_file_size``
(``ACCAPP_MAX_UPLOAD_MB``, 20), any other request body by :class:`BoundedRequests`
(``ACCAPP_MAX_REQUEST_KB``, 1024), which also refuses an address over ``MAX_URL_CHARS`` (HTTP 414)
and answers a full disk with a message (HTTP 507) instead of a bare HTTP 500.
"""

from __future__ import annotations

import atexit
import contextlib
import inspect
import json
import logging
import shutil
import signal
import tempfile
import time
from pathlib import Path

from accapp import logs, settings

settings.switch_default("GRADIO_ANALYTICS_ENABLED", "False")  # no calls home: the app runs offline (before gradio loads)

import gradio as gr  # noqa: E402
from gradio.components.api_component import Api as ApiInput  # noqa: E402  (gr.api's inputs)

from accapp.benchmarks import BUILTIN, language_name  # noqa: E402
from accapp.errors import UserError, escape_controls, is_control  # noqa: E402
from accapp.files import DISK_FULL_MESSAGE, is_disk_full  # noqa: E402
from accapp.service import file_jobs, gpu  # noqa: E402
from accapp.service.file_jobs import file_queue  # noqa: E402
from accapp.service.host import get_state, stop_and_exit  # noqa: E402
from accapp.service.messages import message_of  # noqa: E402
from accapp.service.score_file import MAX_UPLOAD_BYTES  # noqa: E402
from accapp.ui import about, cite, design_view, explore, gallery, gradio_internals, links, probe, queues, score_file  # noqa: E402
from accapp.ui.common import CSS, esc  # noqa: E402
from accapp.ui.queues import PROBE_QUEUE  # noqa: E402

MAX_REQUEST_BYTES = settings.integer("ACCAPP_MAX_REQUEST_KB") * 1024  # a request body other than an upload
# A request's path and query: twice the longest link the app reads (links.MAX_QUERY_CHARS), so an
# over-long link still gets its message in the page; anything longer is refused (414) before routing.
MAX_URL_CHARS = 2 * links.MAX_QUERY_CHARS
SESSIONS = settings.integer("ACCAPP_SESSIONS")  # visitors' page state Gradio keeps (least recent dropped)

MAX_REFUSAL_CHARS = 200  # what a refused input's message keeps of Gradio's (which echoes the value sent)
log = logging.getLogger("accapp.ui")

TITLE = "Acceptability Explorer"


def header_html() -> str:
    """The page's first words: what the app does, and the shipped benchmarks by language (from their descriptor)."""
    by_language: dict[str, list[str]] = {}
    for bench in BUILTIN.values():
        by_language.setdefault(language_name(bench.name), []).append(bench.label)
    benches = "; ".join(f"{', '.join(labels)} ({language})" for language, labels in by_language.items())
    return ("<div class='acc-header'><h1>🧪 Acceptability Explorer</h1>"
            "<p>What does a language model know about grammar? Give it a minimal pair, an acceptable sentence and "
            "an unacceptable one, and see how every acceptability-judgment method from four recent papers decides "
            f"between them, token by token, next to how each method does on the benchmarks: {esc(benches)}.</p></div>")


def private_temp_dir() -> str:
    """Gradio's upload and cache folder: a private temporary one, removed at exit (unless set by the user)."""
    if not settings.gradio_temp_dir():
        folder = tempfile.mkdtemp(prefix="accapp-gradio-")
        settings.set_gradio_temp_dir(folder)
        atexit.register(shutil.rmtree, folder, True)
        log.info("uploads and result files go to %s (removed at exit)", folder)
    return settings.gradio_temp_dir()


class BoundedRequests:
    """ASGI middleware: an address (path and query) over ``MAX_URL_CHARS`` is refused (414) and a
    request body over ``MAX_REQUEST_BYTES`` (413) before a handler reads them (uploads are bounded by
    Gradio's ``max_file_size`` instead), and a full disk while
    handling a request (an upload being stored) is answered with a message (507), not a bare 500."""

    def __init__(self, app, events=None) -> None:
        self.app = app
        self.events = events  # the app's event ids (Gradio's fn_index): a join naming another is refused here

    @staticmethod
    def _is_join(scope) -> bool:
        return scope.get("method") == "POST" and scope.get("path", "").rstrip("/").endswith("/queue/join")

    def _unknown_event(self, body: bytes):
        """The fn_index a queue join names when it is not one of the app's events (Gradio answers such a
        join with a bare 500 and a traceback: its queue looks the index up unchecked); None otherwise."""
        if self.events is None:
            return None
        try:
            index = json.loads(body or b"{}").get("fn_index")
        except (ValueError, AttributeError):
            return None  # not ours to read: Gradio answers a malformed body itself (422)
        return index if index is not None and index not in self.events else None

    @staticmethod
    def _is_upload(path: str) -> bool:
        return path.rstrip("/").endswith("/upload")

    async def _send_text(self, send, status: int, text: str) -> None:
        body = text.encode("utf-8")
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    @staticmethod
    def _url_chars(scope) -> int:
        return len(scope.get("raw_path") or scope.get("path", "")) + len(scope.get("query_string") or b"")

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        if self._url_chars(scope) > MAX_URL_CHARS:
            return await self._send_text(send, 414, f"The address is longer than this app reads "
                                                    f"({MAX_URL_CHARS:,} characters); use a shorter link.")
        limit = None if self._is_upload(scope.get("path", "")) else MAX_REQUEST_BYTES
        headers = dict(scope.get("headers") or [])
        too_big = (f"The request is larger than this app accepts ({MAX_REQUEST_BYTES // 1024:,} KB); "
                   "send less data at once.")
        if limit is not None:
            try:
                declared = int(headers.get(b"content-length", b"0") or 0)
            except ValueError:
                declared = 0
            if declared > limit:
                return await self._send_text(send, 413, too_big)
        seen = 0
        started = False
        since = time.time()

        async def bounded_receive():
            nonlocal seen
            message = await receive()
            if limit is not None and message.get("type") == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise _TooLarge()
            return message

        async def tracking_send(message):
            nonlocal started
            if message.get("type") == "http.response.start":
                started = True
            await send(message)

        app_receive = bounded_receive
        if self._is_join(scope):  # a join's body is small (bounded above): read it whole, check its event, replay it
            body, more = b"", True
            try:
                while more:
                    message = await bounded_receive()
                    body += message.get("body", b"")
                    more = message.get("type") == "http.request" and message.get("more_body", False)
            except _TooLarge:
                return await self._send_text(send, 413, too_big)
            unknown = self._unknown_event(body)
            if unknown is not None:
                text = "This app has no such event; reload the page."
                logs.refused(log, "a queue join", f"{text} (fn_index {logs.shown(str(unknown))})")
                return await self._send_text(send, 404, text)
            replayed = False

            async def app_receive():
                nonlocal replayed
                if not replayed:
                    replayed = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return await receive()
        try:
            await self.app(scope, app_receive, tracking_send)
        except _TooLarge:
            if not started:
                await self._send_text(send, 413, too_big)
        except OSError as exc:
            if not is_disk_full(exc) or started:
                raise
            log.warning("disk full while handling %s: %s", scope.get("path"), exc)
            if limit is None:
                self._remove_partial_uploads(since)
            await self._send_text(send, 507, DISK_FULL_MESSAGE)

    @staticmethod
    def _remove_partial_uploads(since: float) -> None:
        """The half-written files an upload cut short by a full disk leaves (Gradio streams each into
        a NamedTemporaryFile, tmp*, in its upload folder and removes it only on its own errors)."""
        from gradio.utils import get_upload_folder

        for p in Path(get_upload_folder()).glob("tmp*"):
            with contextlib.suppress(OSError):
                if p.is_file() and p.stat().st_mtime >= since - 1:
                    p.unlink()


class _TooLarge(Exception):
    pass


class CheckedBlocks(gr.Blocks):
    """gr.Blocks whose refusals of a request's inputs (too few values, a value not among a
    dropdown's choices, one a component cannot read) are a short message and one log line:
    Gradio's own print a traceback per request, so one visitor could flood the log."""

    async def preprocess_data(self, block_fn, inputs, state, explicit_call=False):
        inputs = with_defaults(block_fn, inputs)
        bad = surrogate_in(inputs)
        if bad is not None:  # cannot be stored, shown or sent back as UTF-8: refused here, for every event
            where = f"/{block_fn.api_name}" if block_fn.api_name else (block_fn.name or "an event")
            text = (f"The request holds text that is not valid Unicode (a lone surrogate, {escape_controls(bad)}); "
                    "type or paste the text again.")
            logs.refused(log, where, text)
            raise gr.Error(text, print_exception=False)
        try:
            return await super().preprocess_data(block_fn, inputs, state, explicit_call)
        except OSError:  # the machine's trouble (a full disk), not the visitor's input
            raise
        except Exception as exc:  # noqa: BLE001 - bad input, answered with a message
            raise refusal(block_fn, inputs, exc) from None


    async def process_api(self, block_fn, inputs, state, *args, **kwargs):
        """Every event, API endpoint or not: an error that is not already a message becomes one, and one
        log line (logs.failed), never a traceback per request (Gradio prints one for any other error)."""
        try:
            return await super().process_api(block_fn, inputs, state, *args, **kwargs)
        except gr.Error:
            raise
        except Exception as exc:  # noqa: BLE001 - a message, the error in one log line
            fn = block_fn if not isinstance(block_fn, int) else self.fns.get(block_fn)
            where = getattr(fn, "name", None) or "an event"
            if isinstance(exc, UserError):
                logs.refused(log, where, str(exc))
            else:
                logs.failed(log, where, exc)
            raise gr.Error(message_of(exc), print_exception=False) from None


def surrogate_in(value, depth: int = 0):
    """The first lone surrogate in a request's values (strings, lists, dicts, nested), or None."""
    if isinstance(value, str):
        return next((ch for ch in value if is_control(ch) and "\ud800" <= ch <= "\udfff"), None)
    if depth < 8 and isinstance(value, (list, tuple)):
        return next((s for s in (surrogate_in(v, depth + 1) for v in value) if s is not None), None)
    if depth < 8 and isinstance(value, dict):
        return next((s for s in (surrogate_in(v, depth + 1) for v in [*value.keys(), *value.values()]) if s is not None), None)
    return None


def _defaults(block_fn) -> list:
    """The defaults of an API function's trailing optional parameters (gr.api endpoints only: an
    event's inputs are components, whose values the page always sends)."""
    if not block_fn.inputs or not all(isinstance(c, ApiInput) for c in block_fn.inputs):
        return []
    try:
        params = list(inspect.signature(block_fn.fn).parameters.values())[: len(block_fn.inputs)]
    except (TypeError, ValueError):
        return []
    defaults = []
    for param in reversed(params):
        if param.default is inspect.Parameter.empty:
            break
        defaults.insert(0, param.default)
    return defaults


def with_defaults(block_fn, inputs):
    """A raw API request may leave out trailing optional values (a client written when /probe took
    4 values still works now it takes 5): they take the function's defaults."""
    missing = len(block_fn.inputs) - len(inputs or [])
    defaults = _defaults(block_fn) if missing > 0 else []
    if 0 < missing <= len(defaults):
        return list(inputs or []) + defaults[-missing:]
    return inputs


def refusal(block_fn, inputs, exc: Exception) -> gr.Error:
    """The message (and the one log line) for inputs Gradio refused before a handler ran."""
    where = f"/{block_fn.api_name}" if block_fn.api_name else (block_fn.name or "an event")
    wanted, got = len(block_fn.inputs), len(inputs or [])
    detail = str(getattr(exc, "message", exc) or type(exc).__name__).splitlines()[0]
    if got < wanted:
        optional = len(_defaults(block_fn))
        takes = f"{wanted - optional} to {wanted}" if optional else f"{wanted}"
        text = f"{where} takes {takes} input values; the request sent {got}."
    elif "not in the list of choices" in detail:  # Gradio's own message echoes the value and every choice
        text = f"{where} was sent a value that is not one of its choices."
    else:
        if len(detail) > MAX_REFUSAL_CHARS:
            detail = detail[:MAX_REFUSAL_CHARS] + "…"
        text = f"{where} cannot take a value it was sent: {detail}"
    log.warning("refused a request to %s: %s", where, text)
    return gr.Error(text, print_exception=False)


def status() -> dict:
    """The app's load and memory: the models loaded (least recently used first, with the memory each
    is counted for), the memory budget, this process's resident memory and its allocators, the file jobs queued, and
    whether the `spaces` package is imported and the app runs on ZeroGPU."""
    state = get_state()
    try:
        import psutil

        rss = int(psutil.Process().memory_info().rss)
    except Exception:  # noqa: BLE001 - psutil is optional
        rss = None
    return {"models": state.loaded_models(), "memory_budget_bytes": state.pool.budget, "rss_bytes": rss,
            "allocator": state.allocator(),
            "gpu": {"spaces": gpu.spaces is not None, "zero_gpu": gpu.on_zero_gpu()},
            "file_jobs": file_queue().counts(),
            "limits": {"probe_concurrency": queues.PROBE_CONCURRENCY, "probe_queue_limit": queues.PROBE_QUEUE_LIMIT,
                       "file_concurrency": file_jobs.FILE_CONCURRENCY, "file_queue_max": file_jobs.FILE_QUEUE_MAX,
                       "file_jobs_per_visitor": file_jobs.FILE_JOBS_PER_VISITOR,
                       "max_upload_bytes": MAX_UPLOAD_BYTES, "max_request_bytes": MAX_REQUEST_BYTES}}


def theme():
    return gr.themes.Soft(
        primary_hue="indigo", secondary_hue="blue", neutral_hue="slate", text_size="lg",
        font=["ui-sans-serif", "system-ui", "Segoe UI", "Noto Sans", "Noto Sans CJK SC", "sans-serif"],
        font_mono=["ui-monospace", "DejaVu Sans Mono", "monospace"],
    )


API_ENDPOINTS = ("probe", "status", "score_file", "score_file_all")  # what gradio_client may call by name


def build_app() -> gr.Blocks:
    logs.configure()  # every accapp log line escaped, one line per event
    private_temp_dir()
    # Uploads and result files older than an hour are removed every 30 minutes (and all at exit).
    with CheckedBlocks(title=TITLE, analytics_enabled=False, delete_cache=(1800, 3600)) as demo:
        gr.HTML(header_html())
        # overflow_behavior="wrap": on a phone the six tabs wrap onto two lines, every label in view
        # (Gradio's default hides those that do not fit behind an unlabelled "•••")
        with gr.Tabs(selected="probe", elem_id="main-tabs", overflow_behavior="wrap") as tabs:
            with gr.Tab("Probe a pair", id="probe", elem_id="tab-probe"):
                probe_tab = probe.build()
            with gr.Tab("Design (2-4 conditions)", id=design_view.TAB_ID, elem_id="tab-design"):
                design_tab = design_view.build()
            with gr.Tab("Explore results", id="explore", elem_id="tab-explore") as explore_tab:
                ex = explore.build(probe_tab, tabs, "probe", design_tab)
            with gr.Tab("Score a file", id="file", elem_id="tab-file"):
                score_file.build(probe_tab, tabs, "probe")
            with gr.Tab("Teaching gallery", id="gallery", elem_id="tab-gallery"):
                gallery.build(probe_tab, tabs, "probe")
            with gr.Tab("About", id="about", elem_id="tab-about"):
                about.build()
        cite.build()
        probe.wire_links(demo, probe_tab)  # a shared probe link fills the Probe tab and runs it
        design_view.wire_links(demo, design_tab, tabs)  # a shared design link fills the Design tab and runs it
        gr.api(probe.probe_api, api_name="probe", concurrency_id=PROBE_QUEUE,
               api_description="Score one minimal pair with every selected method; returns the verdict table.")
        gr.api(status, api_name="status", queue=False, api_visibility="undocumented",
               api_description="The models loaded, the memory budget, resident memory and the file jobs queued.")
        ex.refresh_after(explore_tab.select(explore.update_filters, ex.filters_inputs, ex.filters_outputs,
                                            api_visibility="undocumented"))
        ex.restore_on(demo)
    for fn in demo.fns.values():  # the page's own events are not API endpoints: not listed, not offered to clients
        if fn.api_name not in API_ENDPOINTS:
            fn.api_visibility = "private"
    return demo


def _exit_on_sigterm() -> None:
    """SIGTERM (a Space or a container stopping) exits normally, so the temporary folders are removed."""
    try:
        signal.signal(signal.SIGTERM, stop_and_exit)
    except ValueError:  # not the main thread (tests calling main())
        pass


def main() -> None:
    _exit_on_sigterm()
    host, port = settings.server_address()
    demo = build_app()
    # Probes and every other event: PROBE_CONCURRENCY at once; file jobs wait in their own queue
    # (accapp.service.file_jobs; their events' limit admits them all); max_size bounds the events waiting.
    queues.admit_probes(demo)  # the probe queue admits two batches at once: a class's first stages before anyone's last
    demo.queue(default_concurrency_limit=queues.PROBE_CONCURRENCY, max_size=queues.QUEUE_MAX)
    gradio_internals.calm_queue_polling(demo)  # Gradio polls its empty queue every millisecond otherwise
    gradio_internals.patient_launch_check()  # a model preloading on a busy machine can delay the first answer past 3 s
    if settings.flag("ACCAPP_PRELOAD"):
        warmup = get_state().preload()
        if gpu.on_zero_gpu():  # ZeroGPU packs the weights loaded before launch: none may be loading meanwhile
            warmup.join()
    from starlette.middleware import Middleware

    now = status()
    log.info("limits: %s; memory: %s", json.dumps(now["limits"]), now["allocator"])
    demo.launch(server_name=host, server_port=port, theme=theme(), css=CSS, show_error=False, ssr_mode=False,
                footer_links=["api", "settings"], max_file_size=MAX_UPLOAD_BYTES, state_session_capacity=SESSIONS,
                max_threads=queues.MAX_THREADS, app_kwargs={"middleware": [Middleware(BoundedRequests, events=frozenset(demo.fns))]})


if __name__ == "__main__":
    main()
