"""Build the Gradio Blocks from the tabs and launch it (``python app.py``).

Environment, as on a Hugging Face Space: ``PORT`` (default 7860) and ``GRADIO_SERVER_NAME``
(default 127.0.0.1; a Space sets 0.0.0.0). Also: ``ACCAPP_PRELOAD=0`` skips warming the default
model at start; ``ACCAPP_CONCURRENCY`` (default 4) events run at once, while requests for one
model queue behind each other (``ACCAPP_PER_MODEL_CONCURRENCY``, default 1);
``ACCAPP_RESULTS_DIR`` points the explorer at another results folder.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import sys
import tempfile

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # no calls home: the app runs offline

import gradio as gr  # noqa: E402

from accapp.ui import about, explore, probe, score_file  # noqa: E402
from accapp.ui.common import CSS  # noqa: E402
from accapp.ui.queues import PROBE_QUEUE  # noqa: E402
from accapp.ui.state import get_state  # noqa: E402

TITLE = "Acceptability Explorer"
HEADER = (
    "<div class='acc-header'><h1>🧪 Acceptability Explorer</h1>"
    "<p>What does a language model know about grammar? Give it a minimal pair, an acceptable sentence and an "
    "unacceptable one, and see how every acceptability-judgment method from four recent papers decides between "
    "them, token by token, next to how each method does on BLiMP (English) and CLiMP (Chinese).</p></div>"
)


def private_temp_dir() -> str:
    """Gradio's upload and cache folder: a private temporary one, removed at exit (unless set by the user)."""
    if not os.environ.get("GRADIO_TEMP_DIR"):
        folder = tempfile.mkdtemp(prefix="accapp-gradio-")
        os.environ["GRADIO_TEMP_DIR"] = folder
        atexit.register(shutil.rmtree, folder, True)
        print(f"[accapp] uploads and result files go to {folder} (removed at exit)", flush=True)
    return os.environ["GRADIO_TEMP_DIR"]


def theme():
    return gr.themes.Soft(
        primary_hue="indigo", secondary_hue="blue", neutral_hue="slate", text_size="lg",
        font=["ui-sans-serif", "system-ui", "Segoe UI", "Noto Sans", "Noto Sans CJK SC", "sans-serif"],
        font_mono=["ui-monospace", "DejaVu Sans Mono", "monospace"],
    )


def build_app() -> gr.Blocks:
    private_temp_dir()
    # Uploads and result files older than an hour are removed every 30 minutes (and all at exit).
    with gr.Blocks(title=TITLE, analytics_enabled=False, delete_cache=(1800, 3600)) as demo:
        gr.HTML(HEADER)
        with gr.Tabs(selected="probe", elem_id="main-tabs") as tabs:
            with gr.Tab("Probe a pair", id="probe", elem_id="tab-probe"):
                probe_tab = probe.build()
            with gr.Tab("Explore results", id="explore", elem_id="tab-explore") as explore_tab:
                ex = explore.build(probe_tab, tabs, "probe")
            with gr.Tab("Score a file", id="file", elem_id="tab-file"):
                score_file.build()
            with gr.Tab("About", id="about", elem_id="tab-about"):
                about.build()
        gr.api(probe.probe_api, api_name="probe", concurrency_id=PROBE_QUEUE,
               api_description="Score one minimal pair with every selected method; returns the verdict table.")
        explore_tab.select(explore.update_filters, ex.filters_inputs, ex.filters_outputs,
                           api_visibility="undocumented").then(
            explore.render, ex.refresh_inputs, ex.refresh_outputs, api_visibility="undocumented")
    return demo


def _exit_on_sigterm() -> None:
    """SIGTERM (a Space or a container stopping) exits normally, so the temporary folders are removed."""
    try:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    except ValueError:  # not the main thread (tests calling main())
        pass


def main() -> None:
    _exit_on_sigterm()
    host = os.environ.get("GRADIO_SERVER_NAME") or "127.0.0.1"
    port = int(os.environ.get("PORT") or os.environ.get("GRADIO_SERVER_PORT") or 7860)
    demo = build_app()
    demo.queue(default_concurrency_limit=int(os.environ.get("ACCAPP_CONCURRENCY", "4") or 4), max_size=64)
    if os.environ.get("ACCAPP_PRELOAD", "1") != "0":
        get_state().preload()
    demo.launch(server_name=host, server_port=port, theme=theme(), css=CSS, show_error=False, ssr_mode=False,
                footer_links=["api", "settings"])


if __name__ == "__main__":
    main()
