"""Probe tab: one minimal pair, every method's verdict, per-token surprisal, and the benchmark beside it.

The scoring path (:func:`probe_pair`) is shared with the ``/probe`` API endpoint
(:func:`probe_api`), so the page and the API always agree.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import gradio as gr
import pandas as pd

from accapp.errors import UserError, validate_sentence
from accapp.methods import all_methods, method_ids, resolve
from accapp.methods.engine import detect_language
from accapp.models import DEFAULT_MODEL, get_spec
from accapp.ui import plots
from accapp.ui.common import esc, friendly, intro, note
from accapp.ui.state import ANY, BENCHMARKS, find_pair, get_state, model_choices, paradigms, phenomena, random_pair

EXAMPLE = ("These casseroles disgust Kayla.", "These casseroles disgusts Kayla.")
DEFAULT_BENCH_METHOD = {"causal": "lp", "masked": "pll_word_l2r"}
TABLE_COLUMNS = ["Method", "Template", "Order", "Score: good", "Score: bad", "Good − bad", "Verdict",
                 "Agrees with majority", "Votes / answers"]


# ------------------------------------------------------------------------------------------ scoring
def method_choices(kind: str) -> list[tuple[str, str]]:
    table = all_methods()
    return [(f"{table[i].name}  ({table[i].family})", i) for i in method_ids(kind)]


def probe_pair(good: str, bad: str, model_id: str = DEFAULT_MODEL, methods=None):
    """Validate, load the model if needed, and score one pair. Raises UserError on bad input."""
    spec = get_spec(model_id)
    if methods is None or methods == "all" or methods == ["all"]:
        methods = method_ids(spec.kind)
    methods = [m for m in methods if m]
    if not methods:
        raise UserError("Pick at least one method.")
    resolve(methods, spec.kind)  # unknown methods fail before any model loads
    validate_sentence(good, "good sentence")
    validate_sentence(bad, "bad sentence")
    state = get_state()
    with state.model_slot(model_id):
        engine = state.engine(model_id)
        return state.compute(engine.score_pair, good, bad, methods)


def _family(method_id: str) -> str:
    m = all_methods().get(method_id)
    return m.family if m else ""


def majority(rows: list[dict]) -> dict:
    """Majority verdict over the methods' judgments (ensemble rows are votes themselves: left out)."""
    judged = [r for r in rows if _family(r["method"]) != "ensemble"]
    counts = Counter(r["verdict"] for r in judged)
    g, b = counts.get("good", 0), counts.get("bad", 0)
    verdict = "good" if g > b else "bad" if b > g else "tie"
    return {"verdict": verdict, "good": g, "bad": b, "tie": counts.get("tie", 0), "judgments": len(judged)}


def _votes_text(r: dict) -> str:
    fam, pred = _family(r["method"]), str(r.get("prediction") or "")
    if fam == "ensemble":
        share = float(r["score_good"])
        return f"{round(share * 10)}/10 draws pick good · {pred}"
    if r["method"] == "ab_prompting" and pred:
        return f"answered {pred}"
    if pred.startswith("good:"):
        parts = dict(p.split(":", 1) for p in pred.split() if ":" in p)
        return f"good → {parts.get('good', '?')}, bad → {parts.get('bad', '?')}"
    return pred


VERDICT_TEXT = {"good": "prefers good ✓", "bad": "prefers bad ✗", "tie": "tie ="}


def verdict_records(rows: list[dict]) -> list[dict]:
    """JSON-able verdict table: one record per method x template x variant."""
    maj = majority(rows)
    table = all_methods()
    out = []
    for r in rows:
        m = table.get(r["method"])
        ens = _family(r["method"]) == "ensemble"
        agrees = None if ens or maj["verdict"] == "tie" else r["verdict"] == maj["verdict"]
        out.append({
            "method": r["method"], "name": m.name if m else r["method"], "family": m.family if m else "",
            "template": r.get("template", "-"), "variant": r.get("variant", ""),
            "score_good": float(r["score_good"]), "score_bad": float(r["score_bad"]),
            "difference": float(r["score_good"]) - float(r["score_bad"]), "verdict": r["verdict"],
            "agrees_with_majority": agrees, "prediction": r.get("prediction", ""), "votes": _votes_text(r),
        })
    return out


def verdict_frame(records: list[dict], run: pd.DataFrame | None = None, phenomenon: str | None = None) -> pd.DataFrame:
    """The table shown in the page (plain strings and numbers; Gradio shows them as text)."""
    df = pd.DataFrame([{
        "Method": r["name"], "Template": r["template"], "Order": r["variant"] or "",
        "Score: good": r["score_good"], "Score: bad": r["score_bad"], "Good − bad": r["difference"],
        "Verdict": VERDICT_TEXT.get(r["verdict"], r["verdict"]),
        "Agrees with majority": "—" if r["agrees_with_majority"] is None else ("yes" if r["agrees_with_majority"] else "NO ⚠"),
        "Votes / answers": r["votes"],
    } for r in records], columns=TABLE_COLUMNS)
    if run is not None and not run.empty:
        key = ["method", "template", "variant"]
        run = run.copy()
        for c in key:
            run[c] = run[c].fillna("").astype(str)
        merged = pd.DataFrame({"method": [r["method"] for r in records], "template": df["Template"].astype(str),
                               "variant": df["Order"].astype(str)}).merge(run, on=key, how="left")
        if "phen_accuracy" in merged:
            df[f"Run: accuracy on {phenomenon or 'phenomenon'} (%)"] = merged["phen_accuracy"].round(1)
        if "correct" in merged:
            df["Run: this pair"] = [
                "" if pd.isna(c) else ("right" if c >= 1 else ("wrong" if c <= 0 else f"{c * 10:.0f}/10 draws right"))
                for c in merged["correct"]]
    return df


def styled(df: pd.DataFrame):
    """Colour the verdicts and mark the rows that disagree with the majority."""

    def row_style(row):
        base = "background-color: #fff4e6; font-weight: 600;" if str(row["Agrees with majority"]).startswith("NO") else ""
        out = []
        for c in row.index:
            s = base
            if c == "Verdict":
                s += "color: #1864ab;" if "good" in str(row[c]) else "color: #d9480f;" if "bad" in str(row[c]) else ""
            out.append(s)
        return out

    fmt = {c: "{:.4g}" for c in ("Score: good", "Score: bad", "Good − bad")}
    return df.style.apply(row_style, axis=1).format(fmt, na_rep="")


# ------------------------------------------------------------------------------------------ benchmark context
def _pair_meta(good: str, bad: str, meta: dict | None) -> dict | None:
    good, bad = (good or "").strip(), (bad or "").strip()
    if meta and meta.get("good") == good and meta.get("bad") == bad:
        return meta
    return find_pair(good, bad)


def run_rows_for_pair(store, model_id: str, meta: dict | None, good: str, bad: str) -> pd.DataFrame:
    """The precomputed run's rows for this very pair: by benchmark + paradigm + pair_id, else by the sentences."""
    cols = "method, template, variant, correct, score_good, score_bad, benchmark, paradigm, phenomenon, pair_id"
    if meta:
        df = store.query(
            f"SELECT {cols} FROM results WHERE model = $model AND benchmark = $benchmark AND paradigm = $paradigm "
            "AND pair_id = $pair_id", {"model": model_id, "benchmark": meta["benchmark"], "paradigm": meta["paradigm"],
                                      "pair_id": str(meta["pair_id"])})
        if not df.empty:
            return df
    return store.query(f"SELECT {cols} FROM results WHERE model = $model AND good = $good AND bad = $bad",
                       {"model": model_id, "good": (good or "").strip(), "bad": (bad or "").strip()})


def run_context(model_id: str, meta: dict | None, good: str, bad: str) -> tuple[pd.DataFrame | None, dict]:
    """Per method x template: the run's accuracy on the pair's phenomenon and its verdict on this pair."""
    from accapp.analysis import accuracy_by_phenomenon

    info: dict = {"has_run": False}
    try:
        store = get_state().store()
    except Exception:  # noqa: BLE001 - no store means no context, never a failed probe
        return None, info
    bench = meta["benchmark"] if meta else None
    pair_rows = run_rows_for_pair(store, model_id, meta, good, bad)
    if bench is None and not pair_rows.empty:
        bench = str(pair_rows.benchmark.iloc[0])
        meta = {k: str(pair_rows[k].iloc[0]) for k in ("benchmark", "paradigm", "phenomenon", "pair_id")}
    info["meta"] = meta
    if bench is None or model_id not in store.models(bench):
        return None, info
    info["has_run"] = True
    try:
        acc = accuracy_by_phenomenon(store, model_id, bench, None, template=None)
        acc = acc[acc.phenomenon == meta["phenomenon"]][["method", "template", "accuracy"]]
    except UserError:
        acc = pd.DataFrame(columns=["method", "template", "accuracy"])
    run = pair_rows[["method", "template", "variant", "correct"]].copy()
    run = run.merge(acc.rename(columns={"accuracy": "phen_accuracy"}), on=["method", "template"], how="outer")
    run["variant"] = run["variant"].fillna("")
    return run, info


def context_html(model_id: str, method: str, meta: dict | None, good: str, bad: str) -> str:
    """How the chosen method and model did on this pair's phenomenon, and on this very pair."""
    from accapp.analysis import accuracy_by_phenomenon, accuracy_overall, published_human

    meta = _pair_meta(good, bad, meta)
    store = get_state().store()
    spec = get_spec(model_id)
    name = esc(spec.name)
    mname = esc(all_methods()[method].name) if method in all_methods() else esc(method)
    pair_rows = run_rows_for_pair(store, model_id, meta, good, bad)
    if meta is None and not pair_rows.empty:
        meta = {k: str(pair_rows[k].iloc[0]) for k in ("benchmark", "paradigm", "phenomenon", "pair_id")}
    if meta is None:
        return note("This pair is not in BLiMP or CLiMP, so there is no benchmark result to show beside it. "
                    "Pick a benchmark pair above to see how the method does on its phenomenon.", "info")
    bench, phen = meta["benchmark"], meta["phenomenon"]
    where = (f"<b>{esc(bench.upper())}</b> · phenomenon <b>{esc(phen)}</b> · paradigm <b>{esc(meta['paradigm'])}</b> · "
             f"pair {esc(meta['pair_id'])}")
    parts = [f"<div class='acc-small'>This pair is {where}.</div>"]
    human = published_human(store, "phenomenon") if bench == "blimp" else pd.DataFrame()
    h = human[human.phenomenon == phen] if not human.empty else human
    human_txt = (f" Humans: <b>{h.accuracy.iloc[0]:.1f} %</b> (published: {esc(plots.short_source(h.source.iloc[0]))})."
                 if len(h) else "")
    if model_id not in store.models(bench) or method not in store.methods(model_id, bench):
        parts.append(f"No precomputed {esc(bench.upper())} run of <b>{mname}</b> with <b>{name}</b> yet.{human_txt}")
        return note("<br>".join(parts), "info")
    acc = accuracy_by_phenomenon(store, model_id, bench, [method], template="best")
    a = acc[acc.phenomenon == phen]
    ov = accuracy_overall(store, model_id, bench, [method], template="best")
    tmpl = str(a.template.iloc[0]) if len(a) else (str(ov.template.iloc[0]) if len(ov) else "-")
    tmpl_txt = "" if tmpl == "-" else f" (template {esc(tmpl)}, its best)"
    if len(a):
        parts.append(f"<b>{mname}</b>{tmpl_txt} with <b>{name}</b> is right on <b>{a.accuracy.iloc[0]:.1f} %</b> of "
                     f"{int(a.pairs.iloc[0])} {esc(phen)} pairs in this project's run"
                     + (f" ({ov.accuracy.iloc[0]:.1f} % over all of {esc(bench.upper())})." if len(ov) else ".") + human_txt)
    mine = pair_rows[(pair_rows.method == method) & (pair_rows.template.astype(str) == tmpl)]
    if len(mine):
        c = float(mine.correct.mean())
        verdict = "right" if c >= 1 else "wrong" if c <= 0 else f"right on {c * 100:.0f} % of its judgments"
        parts.append(f"On this very pair the precomputed run was <b>{verdict}</b>.")
        kind = "good" if c >= 1 else "bad"
    else:
        parts.append("This pair was not in the run's sample.")
        kind = "info"
    return note("<br>".join(parts), kind)


# ------------------------------------------------------------------------------------------ rendering
def summary_html(result, maj: dict, records: list[dict]) -> str:
    pair = result.pair
    g, b, n = maj["good"], maj["bad"], maj["judgments"]
    if maj["verdict"] == "good":
        head, kind = f"Most judgments prefer the acceptable sentence: {g} of {n}.", "good"
    elif maj["verdict"] == "bad":
        head, kind = f"Most judgments prefer the unacceptable sentence: {b} of {n}.", "bad"
    else:
        head, kind = f"The judgments are split: {g} for the acceptable sentence, {b} against.", "warn"
    if maj["tie"]:
        head += f" {maj['tie']} tie{'s' if maj['tie'] != 1 else ''}."
    ens = [r for r in records if r["family"] == "ensemble"]
    ens_txt = ""
    if ens:
        ens_txt = "<br>Ensemble votes: " + "; ".join(
            f"{esc(r['name'].replace('Ensemble ', ''))} {round(r['score_good'] * 10)}/10 draws for the acceptable sentence"
            for r in ens)
    dis = sorted({r["name"] for r in records if r["agrees_with_majority"] is False})
    dis_txt = f"<br>Disagree with the majority: {esc(', '.join(dis))}." if dis else ""
    return note(
        f"<div class='acc-verdict'>{esc(head)}</div>"
        f"<div class='acc-pair'><span class='g'>✓ {esc(pair.good)}</span><br><span class='b'>✗ {esc(pair.bad)}</span></div>"
        f"{ens_txt}{dis_txt}", kind)


def token_figure(tokens: dict, unit: str):
    return plots.surprisal_figure(tokens, unit)


def details_of(result) -> dict | None:
    detail = getattr(result, "detail", None)
    if not detail:
        return None
    return {k: (v.to_dict() if hasattr(v, "to_dict") else v) for k, v in detail.items()}


@dataclass
class ProbeTab:
    good: gr.Textbox
    bad: gr.Textbox
    meta: gr.State
    model: gr.Dropdown
    methods: gr.CheckboxGroup
    pair_label: gr.HTML
    run_event: dict  # the Compare button's event (fn, inputs, outputs, ...), for other tabs to chain


def _pair_label(meta: dict | None) -> str:
    if not meta:
        return ""
    return (f"<div class='acc-small'>{esc(meta['benchmark'].upper())} · {esc(meta['phenomenon'])} · "
            f"{esc(meta['paradigm'])} · pair {esc(meta['pair_id'])}</div>")


# ------------------------------------------------------------------------------------------ handlers
@friendly
def run_probe(good, bad, model_id, methods, unit, bench_method, meta):
    state = get_state()
    spec = get_spec(model_id)
    if not state.is_loaded(model_id):
        gr.Info(f"Loading {spec.name} (first use: this takes a little while)…")
    lang = detect_language(good or "", bad or "")
    if lang not in spec.languages:
        gr.Warning(f"{spec.name} was trained for {', '.join(spec.languages)}, and this pair looks "
                   f"{'Chinese' if lang == 'zh' else 'English'}: expect poor judgments. "
                   "Gemma 3 270M (offline) covers Chinese.")
    result = probe_pair(good, bad, model_id, methods)
    records = verdict_records(result.rows)
    maj = majority(result.rows)
    meta = _pair_meta(good, bad, meta)
    run, info = run_context(model_id, meta, good, bad)
    meta = info.get("meta") or meta
    df = verdict_frame(records, run, meta["phenomenon"] if meta else None)
    details = details_of(result)
    kind = get_spec(model_id).kind
    if bench_method not in method_ids(kind):
        bench_method = DEFAULT_BENCH_METHOD[kind]
    try:
        ctx = context_html(model_id, bench_method, meta, good, bad)
    except Exception as exc:  # noqa: BLE001 - the probe stands without its context
        ctx = note(f"The benchmark results could not be read: {esc(exc)}", "warn")
    saved = {"tokens": result.tokens, "details": details, "model": model_id}
    return (
        summary_html(result, maj, records),
        token_figure(result.tokens, unit),
        gr.update(value=plots.pll_figure(details, unit) if details else None, visible=bool(details)),
        styled(df),
        ctx,
        saved,
        meta,
        _pair_label(meta),
    )


@friendly
def replot(saved, unit):
    if not saved:
        return gr.update(), gr.update()
    details = saved.get("details")
    return token_figure(saved["tokens"], unit), gr.update(value=plots.pll_figure(details, unit) if details else None,
                                                         visible=bool(details))


@friendly
def update_context(model_id, method, meta, good, bad, saved):
    if not saved or not (good or "").strip() or not (bad or "").strip():
        return gr.update()
    return context_html(model_id, method, meta, good, bad)


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
    return meta["good"], meta["bad"], meta, _pair_label(meta)


@friendly
def on_bench_change(bench):
    return (gr.update(choices=[ANY] + phenomena(bench), value=ANY),
            gr.update(choices=[ANY] + paradigms(bench), value=ANY))


@friendly
def on_phen_change(bench, phen):
    return gr.update(choices=[ANY] + paradigms(bench, phen), value=ANY)


@friendly
def show_prompts(model_id, method, good, bad):
    spec = get_spec(model_id)
    resolve([method], spec.kind)
    state = get_state()
    with state.model_slot(model_id):
        engine = state.engine(model_id)
        pair = engine.check_pair(good, bad)
        shown = engine.prompts_for(pair, method)
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
    if isinstance(methods, str):
        methods = [m.strip() for m in methods.split(",") if m.strip()]
    result = probe_pair(good, bad, model or DEFAULT_MODEL, methods or None)
    return {
        "model": model or DEFAULT_MODEL, "good": result.pair.good, "bad": result.pair.bad,
        "majority": majority(result.rows), "verdicts": verdict_records(result.rows), "tokens": result.tokens,
    }


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
              concurrency_id="score", scroll_to_output=False, show_progress_on=[summary])
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
                     concurrency_id="score")
    return ProbeTab(good, bad, meta, model, methods, pair_label, ev)
