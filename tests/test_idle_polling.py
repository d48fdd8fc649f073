"""An idle app stays idle (accapp/ui/gradio_internals.py): Gradio's queue polled its empty queue every
millisecond, 9 % of a core for an app nobody used; the app sets it to EVENT_POLL_S. The effect, an
idle server's CPU, is measured by bench/idle_cpu.py (docs/performance.md, "An idle app")."""

from __future__ import annotations

import gradio as gr

from accapp.ui import gradio_internals as idle


def _queued_blocks() -> gr.Blocks:
    with gr.Blocks() as demo:
        gr.Textbox()
    return demo.queue()


def test_the_queue_polls_every_20_ms_when_idle_and_progress_ten_times_a_second():
    demo = _queued_blocks()
    assert demo._queue.sleep_when_free < idle.EVENT_POLL_S  # Gradio's own: 1 ms on Linux (the defect)
    idle.calm_queue_polling(demo)
    assert demo._queue.sleep_when_free == idle.EVENT_POLL_S == 0.02
    assert demo._queue.progress_update_sleep_when_free == idle.PROGRESS_POLL_S == 0.1


def test_a_queue_without_the_setting_is_left_as_it_is(caplog):
    demo = _queued_blocks()
    demo._queue = object()  # a Gradio whose queue has no such attribute
    with caplog.at_level("INFO"):
        idle.calm_queue_polling(demo)
    assert "left as it is" in caplog.text


def test_the_app_sets_it_where_it_starts_the_queue():
    from pathlib import Path

    source = (Path(__file__).resolve().parents[1] / "accapp" / "ui" / "app.py").read_text(encoding="utf-8")
    queue_at = source.index("demo.queue(")
    assert source.index("gradio_internals.calm_queue_polling(demo)", queue_at) < source.index("demo.launch(", queue_at)
