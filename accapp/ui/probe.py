"""Probe tab: one minimal pair, every method's verdict, per-token surprisal, and the benchmark beside it.

Layout and wiring only: the logic is :mod:`accapp.service.probe` (shared with the ``/probe`` API
endpoint, :func:`probe_api`, so the page and the API always agree), the HTML is
:mod:`accapp.ui.probe_view`, the model comes from :meth:`AppState.with_engine`.
"""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from accapp.methods import method_ids
from accapp.models import DEFAULT_MODEL, get_spec
from accapp.service import probe as svc
from accapp.service.probe import DEFAULT_BENCH_METHOD, method_choices
from accapp.ui import plots
from accapp.ui.common import esc, friendly, intro, note, pair_label
from accapp.ui.probe_view import TABLE_COLUMNS, context_html, styled, summary_html, verdict_frame
from accapp.ui.queues import PROBE_QUEUE
from accapp.ui.state import ANY, BENCHMARKS, get_state, model_choices, paradigms, phenomena, random_pair

EXAMPLE = ("These casseroles disgust Kayla.", "These casseroles disgusts Kayla.")


@dataclass
class ProbeTab:
    good: gr.Textbox
    bad: gr.Textbox
    meta: gr.State
    model: gr.Dropdown
    methods: gr.CheckboxGroup
    pair_label: gr.HTML
    run_event: dict  # the Compare button's event (fn, inputs, outputs, ...), for other tabs to chain


def probe_pair(good: str, bad: str, model_id: str = DEFAULT_MODEL, methods=None):
    """Check the request (before any model loads), then score the pair on the model's engine."""
    methods = svc.check_probe(get_spec(model_id).kind, good, bad, methods)
    return get_state().with_engine(model_id, svc.probe, good, bad, methods)


def _store_or_none():
    try:
        return get_state().store()
    except Exception:  # noqa: BLE001 - no store means no context, never a failed probe
        return None


def _context(model_id, method, meta, good, bad) -> str:
    ctx = svc.method_context(get_state().store(), model_id, method, meta, good, bad)
    return context_html(ctx, get_spec(model_id).name, svc.method_name(method))


# ------------------------------------------------------------------------------------------ handlers
@friendly
def run_probe(good, bad, model_id, methods, unit, bench_method, meta):
    state = get_state()
    spec = get_spec(model_id)
    if not state.is_loaded(model_id):
        gr.Info(f"Loading {spec.name} (first use: this takes a little while)…")
    lang = svc.language_mismatch(spec.languages, good, bad)
    if lang:
        gr.Warning(f"{spec.name} was trained for {', '.join(spec.languages)}, and this pair looks "
                   f"{'Chinese' if lang == 'zh' else 'English'}: expect poor judgments. "
                   "Gemma 3 270M (offline) covers Chinese.")
    result = probe_pair(good, bad, model_id, methods)
    records = svc.verdict_records(result.scores)
    run = svc.run_context(_store_or_none(), model_id, svc.pair_meta(good, bad, meta), good, bad)
    meta = run.meta
    df = verdict_frame(svc.with_run(records, run), run.has_run, meta["phenomenon"] if meta else None)
    details = svc.pll_details(result)
    if bench_method not in method_ids(spec.kind):
        bench_method = DEFAULT_BENCH_METHOD[spec.kind]
    try:
        ctx = _context(model_id, bench_method, meta, good, bad)
    except Exception as exc:  # noqa: BLE001 - the probe stands without its context
        ctx = note(f"The benchmark results could not be read: {esc(exc)}", "warn")
    saved = {"tokens": result.tokens, "details": details, "model": model_id}
    return (
        summary_html(result.pair.good, result.pair.bad, svc.majority(result.scores), records),
        plots.surprisal_figure(result.tokens, unit),
        gr.update(value=plots.pll_figure(details, unit) if details else None, visible=bool(details)),
        styled(df),
        ctx,
        saved,
        meta,
        pair_label(meta),
    )


@friendly
def replot(saved, unit):
    if not saved:
        return gr.update(), gr.update()
    details = saved.get("details")
    return plots.surprisal_figure(saved["tokens"], unit), gr.update(
        value=plots.pll_figure(details, unit) if details else None, visible=bool(details))


@friendly
def update_context(model_id, method, meta, good, bad, saved):
    if not saved or not (good or "").strip() or not (bad or "").strip():
        return gr.update()
    return _context(model_id, method, meta, good, bad)


@friendly
def on_model_change(model_id, methods):
    kind = get_spec(model_id).kind
    choices = method_choices(kind)
    ids = [i for _, i in choices]
    keep = [m for m in (methods or []) if m in ids] or ids
    bench = DEFAULT_BENCH_METHOD[kind]
    return gr.update(choices=choices, value=keep), gr.update(choices=choices, value=bench), gr.update(
        choices=choices, value=keep[0])


@friendly
def pick_random(bench, phen, para):
    meta = random_pair(bench, phen, para)
    return meta["good"], meta["bad"], meta, pair_label(meta)


@friendly
def on_bench_change(bench):
    return (gr.update(choices=[ANY] + phenomena(bench), value=ANY),
            gr.update(choices=[ANY] + paradigms(bench), value=ANY))


@friendly
def on_phen_change(bench, phen):
    return gr.update(choices=[ANY] + paradigms(bench, phen), value=ANY)


def _prompts(engine, method, good, bad) -> list[dict]:
    return engine.prompts_for(engine.check_pair(good, bad), method)


@friendly
def show_prompts(model_id, method, good, bad):
    svc.probe_methods(get_spec(model_id).kind, [method])
    shown = get_state().with_engine(model_id, _prompts, method, good, bad)
    blocks = [f"── {i + 1}. {p['kind']} ──\n{p['text']}" for i, p in enumerate(shown)]
    return "\n\n".join(blocks) if blocks else "(this method feeds the model no extra strings)"


# ------------------------------------------------------------------------------------------ API
def probe_api(good: str, bad: str, model: str = DEFAULT_MODEL, methods: list[str] | None = None) -> dict:
    """Score one minimal pair with every selected method.

    Returns {model, good, bad, majority: {verdict, good, bad, tie, judgments}, verdicts: [
    {method, name, family, template, variant, score_good, score_bad, difference, verdict,
    agrees_with_majority, prediction, votes}], tokens: {good, bad: [{token, start, end, logprob}]}}.
    ``methods``: method ids (None or ["all"] = every method the model can run).
    """
    return _probe_api(good, bad, model, methods)


@friendly
def _probe_api(good, bad, model, methods):
    model = model or DEFAULT_MODEL
    return svc.probe_json(model, probe_pair(good, bad, model, methods or None))


# ------------------------------------------------------------------------------------------ layout
def build() -> ProbeTab:
    gr.HTML(intro(
        "Probe a minimal pair",
        "Type an acceptable sentence and a minimally different unacceptable one, or pick a pair from BLiMP "
        "(English) or CLiMP (Chinese). Every judgment method scores both sentences; the bars show how surprised "
        "the model is by each token, with the tokens where the two sentences differ highlighted."))
    meta = gr.State(None)
    saved = gr.State(None)
    with gr.Row(equal_height=False):
        with gr.Column(scale=3):
            good = gr.Textbox(label="Acceptable sentence", value=EXAMPLE[0], max_length=400, elem_id="probe-good")
            bad = gr.Textbox(label="Unacceptable sentence", value=EXAMPLE[1], max_length=400, elem_id="probe-bad")
            run_btn = gr.Button("Compare the two sentences", variant="primary", elem_id="probe-run")
        with gr.Column(scale=2):
            with gr.Group():
                bench = gr.Radio(list(BENCHMARKS), value="blimp", label="Or pick a pair from a benchmark",
                                 info="BLiMP: English · CLiMP: Chinese", elem_id="probe-bench")
                phen = gr.Dropdown([ANY] + phenomena("blimp"), value=ANY, label="Phenomenon", elem_id="probe-phen")
                para = gr.Dropdown([ANY] + paradigms("blimp"), value=ANY, label="Paradigm", elem_id="probe-para")
                rand_btn = gr.Button("🎲 Random pair", elem_id="probe-random")
            pair_label = gr.HTML("", elem_id="probe-pair-label")
    with gr.Row():
        model = gr.Dropdown(model_choices(), value=DEFAULT_MODEL, label="Model", scale=3, elem_id="probe-model",
                            info="Offline models work without a network; hub models download on first use.")
        bench_method = gr.Dropdown(method_choices("causal"), value="lp", label="Benchmark comparison uses", scale=2,
                                   elem_id="probe-bench-method", info="Whose benchmark accuracy to show below.")
        unit = gr.Radio(["bits", "nats"], value="bits", label="Surprisal in", scale=1, min_width=150,
                        info="1 bit = ln 2 nats")
    with gr.Accordion("Choose the judgment methods (all are selected at first)", open=False):
        methods = gr.CheckboxGroup(method_choices("causal"), value=method_ids("causal"), label="Judgment methods",
                                   elem_id="probe-methods")
        with gr.Row():
            all_btn = gr.Button("Select all", size="sm")
            quick_btn = gr.Button("Only LP, MeanLP, PenLP (fast)", size="sm")
    summary = gr.HTML(note("Press <b>Compare the two sentences</b>. The first comparison loads the model.", "info"),
                      elem_id="probe-summary")
    surprisal = gr.Plot(label="Per-token surprisal", elem_id="probe-surprisal")
    pll = gr.Plot(label="Masked LM: per-token PLL under each variant (multi-token words with an inflated "
                  "PLL-original are marked)", visible=False, elem_id="probe-pll")
    table = gr.Dataframe(headers=TABLE_COLUMNS, label="Every method's verdict (rows that disagree with the majority are "
                         "highlighted)", interactive=False, wrap=True, max_height=620, elem_id="probe-table", elem_classes=["acc-table"],
                         column_widths=["15%", "7%", "7%", "8%", "8%", "8%", "11%", "9%", "27%"],
                         buttons=["copy", "fullscreen"])
    context = gr.HTML("", elem_id="probe-context")
    with gr.Accordion("Prompts exactly as the model saw them", open=False):
        with gr.Row():
            prompt_method = gr.Dropdown(method_choices("causal"), value="yes_no_prob_comp", label="Method", scale=3)
            prompt_btn = gr.Button("Show prompts", scale=1)
        prompts = gr.Textbox(label="Input strings (start token included)", lines=12, max_lines=40, interactive=False,
                             buttons=["copy"], elem_id="probe-prompts", elem_classes=["acc-prompts"])

    run_inputs = [good, bad, model, methods, unit, bench_method, meta]
    run_outputs = [summary, surprisal, pll, table, context, saved, meta, pair_label]
    # One progress indicator, in the summary: a loading overlay on all eight outputs costs the
    # browser enough CPU to slow the model on a small machine.
    ev = dict(fn=run_probe, inputs=run_inputs, outputs=run_outputs, api_visibility="undocumented",
              concurrency_id=PROBE_QUEUE, scroll_to_output=False, show_progress_on=[summary])
    run_btn.click(**ev)
    good.submit(**ev)
    bad.submit(**ev)
    unit.input(replot, [saved, unit], [surprisal, pll], api_visibility="undocumented", queue=False)
    bench_method.input(update_context, [model, bench_method, meta, good, bad, saved], [context],
                       api_visibility="undocumented")
    model.input(on_model_change, [model, methods], [methods, bench_method, prompt_method], api_visibility="undocumented")
    bench.input(on_bench_change, [bench], [phen, para], api_visibility="undocumented")
    phen.input(on_phen_change, [bench, phen], [para], api_visibility="undocumented")
    rand_btn.click(pick_random, [bench, phen, para], [good, bad, meta, pair_label], api_visibility="undocumented")
    all_btn.click(lambda m: gr.update(value=method_ids(get_spec(m).kind)), [model], [methods],
                  api_visibility="undocumented")
    quick_btn.click(lambda m: gr.update(value=[i for i in ("lp", "mean_lp", "pen_lp") if i in method_ids(get_spec(m).kind)]
                                        or method_ids(get_spec(m).kind)[:1]), [model], [methods],
                    api_visibility="undocumented")
    prompt_btn.click(show_prompts, [model, prompt_method, good, bad], [prompts], api_visibility="undocumented",
                     concurrency_id=PROBE_QUEUE)
    return ProbeTab(good, bad, meta, model, methods, pair_label, ev)
