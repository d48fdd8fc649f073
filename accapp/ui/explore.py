"""Explore tab: how each method and model did on a whole benchmark, beside the published numbers.

The numbers come from the service's view model (:mod:`accapp.service.explore`: named frames for a
selection); this tab only turns them into figures (:mod:`accapp.ui.plots`), tables and notes.
Published numbers are always labelled with their source. With no precomputed run yet the tab says so
and shows the published numbers alone.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import gradio as gr
import pandas as pd

from accapp.errors import UserError
from accapp.methods import display_name
from accapp.service import explore as svc
from accapp.service.catalog import registry
from accapp.service.explore import (  # noqa: F401 - the tab's names for the view model's constants
    BENCHMARKS,
    CI_COLUMN,
    CI_NOTE,
    CSV_DIR_NAME,
    CSV_KEEP,
    DEFAULT_TEMPLATE,
    RULE_NOTE,
    WRONG_COLUMNS,
    WRONG_LIMIT,
    csv_dir,
    filter_wrong,
    model_label,
    write_csv,
)
from accapp.ui import explore_plots, hu_levy_view, links, plots, ratings_view, suites_view
from accapp.ui.common import esc, friendly, intro, message_of, note, pair_label

BEST_LABEL = "best template: chosen on these same pairs, an upper bound (Ide et al. 2025)"
TEMPLATE_CHOICES = [("mean over templates", "mean"), (BEST_LABEL, "best")] + [
    (f"template {i}", str(i)) for i in range(1, 6)]
WRONG_SORTS = [("benchmark order", "order"), ("most wrong first (margin ascending)", "margin"),
               ("nearest to a tie first (margin descending)", "-margin")]


# ------------------------------------------------------------------------------------ filters
def filter_state(bench: str, model: str | None, methods: list[str] | None):
    """The filters against what the store holds: (models, model, present methods, methods)."""
    sel = svc.select(bench, model, methods)
    return sel.models, sel.picked, sel.present, sel.methods


@friendly
def update_filters(bench, model, methods, wrong_method, also=None):
    sel = svc.select(bench, model, methods)
    models, model, present, methods = sel.models, sel.picked, sel.present, sel.methods
    wrong_choices = present if sel.model else []
    wrong_method = wrong_method if wrong_method in wrong_choices else (methods[0] if methods and sel.model else None)
    others = [m for m in models if m != model]
    return (gr.update(choices=[(model_label(m), m) for m in models], value=model),
            gr.update(choices=[(display_name(m), m) for m in present], value=methods),
            gr.update(choices=[(display_name(m), m) for m in wrong_choices], value=wrong_method),
            gr.update(choices=[(model_label(m), m) for m in others], value=[m for m in (also or []) if m in others]))


# ------------------------------------------------------------------------------------ content
def _safe(section: str, fn, fallback):
    try:
        return fn()
    except UserError as exc:
        return fallback(f"{section}: {exc}")
    except Exception as exc:  # noqa: BLE001 - one failing view never breaks the tab
        return fallback(f"{section}: {message_of(exc)}")


def status_html(bench: str, model: str | None) -> str:
    """The status line of a benchmark and model (the selection checked against the store)."""
    return _status_html(svc.select(bench, model, None))


def _status_html(sel) -> str:
    facts = svc.run_facts(sel)
    if facts is None:
        line = svc.other_run_line(sel)
        if line:
            return note(esc(line), "info")
        return note(esc(svc.missing(sel)) + " The published numbers are shown alone where there are any, each "
                    "labelled with its source.", "warn")
    total = facts.get("paradigms_total") or 0
    of = f" of its {total}" if facts["paradigms"] < total else ""  # a run shipped part way says so
    bits = [f"<b>{esc(facts['model'])}</b> on <b>{esc(facts['benchmark'])}</b>: {facts['pairs']:,} pairs in "
            f"{facts['paradigms']}{of} paradigms"]
    bits += [esc(facts["coverage"])] if facts["coverage"] else []
    bits += [f"scored on {esc(facts['ran_on'])}"] if facts["ran_on"] else []
    bits += [f"run finished {esc(facts['finished'])}"] if facts["finished"] else []
    bits.append(f"convention: {esc(facts['convention'])}")
    bits += [esc(r) for r in facts["regenerated"]]
    bits += [f"<b>not yet rescored</b>: {esc(p)}" for p in facts["pending"]]  # said, not hidden
    text = " · ".join(bits) + ". Bars are this project's results; markers and dashed lines are published numbers."
    if facts["skipped"]:
        text += f"<br>Unreadable result files left out: {esc(', '.join(facts['skipped']))}."
    return note(text, "info")


def phenomenon_view(sel, show_models, sink=None):
    ours, pub = svc.phenomenon_frames(sel, show_models, sink)  # the CSV keeps the ids; the figure shows words
    ours, pub = (f.assign(phenomenon=[svc.phenomenon_label(sel.bench, p) for p in f.phenomenon]) if len(f) else f
                 for f in (ours, pub))
    who = ", ".join(model_label(m) for m in [sel.model, *sel.also]) if sel.model else "published only"
    if ours.empty and pub.empty:
        return plots.empty_figure(svc.missing(sel) or f"No results by phenomenon for {sel.label}.")
    return plots.phenomenon_figure(ours, pub, esc(f"Accuracy by phenomenon · {sel.label} · {who}"))


def length_view(sel, sink=None):
    by_len, bias, pub = svc.length_frames(sel, sink)
    if by_len is None:
        if pub.empty:
            return plots.empty_figure(svc.missing(sel))
        txt = "; ".join(f"{display_name(m)}: r = {r:+.3f}" for m, r in zip(pub.method, pub.point_biserial_r))
        return plots.empty_figure(f"{svc.missing(sel)} Published ({plots.short_source(pub.source.iloc[0])}, Table 4): {txt}")
    return plots.length_figure(by_len, bias, pub, esc(f"Accuracy by token-length difference · {model_label(sel.model)}"))


def paradigm_view(sel, phenomenon, sink=None):
    frames = svc.paradigm_frames(sel, phenomenon, sink)
    if frames is None:
        return plots.empty_figure(svc.missing(sel))
    df, human = frames
    df = df.assign(phenomenon=[svc.phenomenon_label(sel.bench, p) for p in df.phenomenon])  # words, not ids
    return plots.paradigm_figure(df, human, esc(f"Accuracy per paradigm · {model_label(sel.model)}"))


def ensemble_view(sel):
    table, ours = svc.ensemble_frames(sel)
    if ours.empty:
        why = svc.missing(sel) or f"{model_label(sel.model)} has no ensemble results on {sel.label}."
        return table, plots.empty_figure(f"{why} The table shows the published numbers." if len(table) else why)
    fig = plots.grouped_bar_figure(ours.assign(group=model_label(sel.model)), "setting", "accuracy", "group",
                                   esc(f"Ensembles and oracles · {model_label(sel.model)}"))
    return table, fig


def ab_view(sel, sink=None):
    df, pub = svc.ab_frames(sel, sink)
    pub_tbl = pub.rename(columns={"share_A": "share of 'A' (%)"}) if not pub.empty else pub
    if df is None:
        why = svc.missing(sel) or f"{model_label(sel.model)} has no A/B prompting results on {sel.label}."
        return plots.empty_figure(f"{why} The table shows the published shares." if len(pub) else why), pub_tbl
    ref = {"50 % = no preference for A": 50.0}
    if not pub.empty:
        src = plots.short_source(pub.source.iloc[0])
        ref[f"published mean over models: {pub.share_A.mean():.1f} % ({src}, Table 12)"] = float(pub.share_A.mean())
    fig = plots.grouped_bar_figure(df, "template", "share_A", "order", esc(f"Share of 'A' answers · {model_label(sel.model)}"),
                                   y_title="answers 'A' (%)", reference=ref)
    return fig, pub_tbl


def shuffle_view(sel, sink=None):
    df = svc.shuffle_frame(sel, sink)
    if df is None:
        return plots.empty_figure(svc.missing(sel))
    if df.empty:
        return plots.empty_figure("No paradigms in this run.")
    return plots.grouped_bar_figure(df, "kind", "accuracy", "group",
                                    esc(f"Word-shuffling paradigms vs the rest · {model_label(sel.model)}"))


def attractor_view(sel, sink=None):
    df = svc.attractor_frame(sel, sink)
    if df is None:
        if not sel.model:
            return plots.empty_figure(svc.missing(sel))
        return plots.empty_figure(f"The attractor view needs a benchmark that groups its subject-verb agreement "
                                  f"paradigms by attractor (BLiMP); {sel.label} has none.")
    if df.empty:
        return plots.empty_figure("This run has none of the subject-verb agreement paradigms.")
    return plots.grouped_bar_figure(df, "attractor", "accuracy", "group",
                                    esc(f"Subject-verb agreement by attractor · {model_label(sel.model)}"))


def findings_html(sel) -> str:
    f = svc.findings(sel)
    if f.empty:
        return ""
    items = "".join(f"<li>{esc(s.replace('_', ' '))} · {esc(m)} · {esc(mod.replace('_', ' '))}: <b>{v:g} %</b> "
                    f"<span class='acc-small'>({esc(src)})</span></li>"
                    for s, m, mod, v, src in zip(f.subset, f.method, f.model, f.value, f.source))
    return note(f"Published for comparison:<ul style='margin:0.3rem 0 0 1.2rem'>{items}</ul>", "info")


def _render(bench, model, methods, template, show_models, para_phen, wrong_method, also=None, wrong_text="",
            wrong_phen="all", wrong_sort="order", with_wrong: bool = True) -> dict:
    """Everything the tab shows, by name (VIEWS), and "files": the CSV files ({name: path or None}).
    with_wrong=False: all but the wrong-pairs views (WRONG_VIEWS) and their CSV (render_wrong's)."""
    sel = svc.select(bench, model, methods, template, also)
    fig_fallback = plots.empty_figure
    df_fallback = lambda msg: pd.DataFrame({"message": [msg]})  # noqa: E731
    sink: dict = {}  # the data behind each figure, for its CSV
    status = _status_html(sel)
    overall = _safe("Overall", lambda: svc.overall_table(sel), df_fallback)
    phen = _safe("By phenomenon", lambda: phenomenon_view(sel, show_models, sink), fig_fallback)
    length = _safe("Token length", lambda: length_view(sel, sink), fig_fallback)
    phen_choices = svc.phenomena(sel)
    phen_labelled = svc.phenomenon_choices(sel)  # words on screen, ids as values
    para_phen = para_phen if para_phen in phen_choices else "all"
    para = _safe("Per paradigm", lambda: paradigm_view(sel, para_phen, sink), fig_fallback)
    ens_tbl, ens_fig = _safe("Ensembles", lambda: ensemble_view(sel), lambda m: (df_fallback(m), fig_fallback(m)))
    ab_fig, ab_tbl = _safe("A/B", lambda: ab_view(sel, sink), lambda m: (fig_fallback(m), df_fallback(m)))
    shuffle = _safe("Word shuffling", lambda: shuffle_view(sel, sink), fig_fallback)
    attract = _safe("Attractors", lambda: attractor_view(sel, sink), fig_fallback)
    wrong = (wrong_views(sel, phen_choices, phen_labelled, wrong_method, wrong_text, wrong_phen, wrong_sort)
             if with_wrong else {})
    tag = csv_tag(sel)
    tables = {"overall-accuracy": overall, "ensembles": ens_tbl, "ab-share-published": ab_tbl}
    files = {k: _safe("CSV", lambda v=v, k=k: write_csv(v, f"{k}-{tag}"), lambda m: None)
             for k, v in {**tables, **sink}.items()}
    findings = _safe("Findings", lambda: findings_html(sel), lambda m: note(esc(m), "warn"))
    if with_wrong:
        files["wrong-pairs"] = wrong.pop("file")
    return {"status": status, "overall": overall, "phenomenon": phen, "length": length,
            "paradigm_phenomena": gr.update(choices=phen_labelled, value=para_phen), "paradigm": para,
            "ensembles_table": ens_tbl, "ensembles_figure": ens_fig, "ab_figure": ab_fig, "ab_table": ab_tbl,
            "shuffle": shuffle, "attractors": attract, "findings": findings, **wrong, "files": files}


def csv_tag(sel) -> str:
    """The part of a CSV's name that says which selection it holds."""
    return f"{sel.bench}-{sel.model or 'published'}-{sel.template}"


def wrong_views(sel, phen_choices, phen_labelled, wrong_method, wrong_text, wrong_phen, wrong_sort) -> dict:
    """The "Pairs it gets wrong" views (WRONG_VIEWS) and "file", their CSV (all of them, not just those shown)."""
    wrong_method = wrong_method if wrong_method in sel.present else (sel.methods[0] if sel.methods else None)
    every_wrong = _safe("Wrong pairs", lambda: svc.wrong_pairs(sel, wrong_method), lambda m: pd.DataFrame(columns=WRONG_COLUMNS))
    wrong_phen = wrong_phen if wrong_phen in phen_choices else "all"
    kept = filter_wrong(every_wrong, wrong_text, wrong_phen, wrong_sort)
    wrong = kept.head(WRONG_LIMIT)
    shown = display_name(wrong_method) if wrong_method else ""
    more = f" (the first {WRONG_LIMIT:,} shown; the CSV has them all)" if len(kept) > WRONG_LIMIT else ""
    filtered = f" of {len(every_wrong):,}" if len(kept) != len(every_wrong) else ""
    unit = svc.units.unit_label(wrong_method, svc.DEFAULT_UNIT) if wrong_method else ""
    wrong_note = (note(esc(svc.missing(sel)), "info") if not sel.model else
                  note(f"{len(kept):,}{filtered} pair judgments that <b>{esc(shown)}</b> gets wrong (or ties){more}. "
                       f"Margin = score of the acceptable minus the unacceptable sentence, in {esc(unit)} (as the "
                       "Probe shows it by default; the CSV keeps the method's own unit, named in its Score unit "
                       "column). "
                       "<b>Click a row</b> to open the pair in the probe.", "info"))
    table = kept.assign(Method=wrong_method, Model=sel.model,
                        **{"Score unit": svc.units.file_unit(wrong_method)}) if len(kept) else None
    file = _safe("CSV", lambda: write_csv(table, f"wrong-pairs-{csv_tag(sel)}"), lambda m: None) if table is not None else None
    return {"wrong_note": wrong_note, "wrong": svc.wrong_display(wrong, sel.bench, wrong_method), "wrong_state": wrong,
            "wrong_phenomena": gr.update(choices=phen_labelled, value=wrong_phen), "file": file}


@dataclass(frozen=True)
class View:
    """One thing the tab shows: its name (what a render returns it under, and build gives a component),
    whether the wrong-pairs step fills it (render_wrong) rather than the figures' step, and the name of
    its CSV download ("": none)."""

    name: str
    wrong: bool = False
    download: str = ""


# Every view of the tab, once, in order: render, render_page, render_wrong, build and the downloads read
# this list (VIEWS, WRONG_VIEWS, DOWNLOADS), so adding a view is a line here, its frame in _render and
# its component in build().
REGISTRY = (
    View("status"), View("overall", download="overall-accuracy"), View("phenomenon", download="accuracy-by-phenomenon"),
    View("length", download="accuracy-by-length"), View("paradigm_phenomena"),
    View("paradigm", download="accuracy-by-paradigm"), View("ensembles_table", download="ensembles"),
    View("ensembles_figure"), View("ab_figure", download="ab-share"), View("ab_table", download="ab-share-published"),
    View("shuffle", download="word-shuffling"), View("attractors", download="sv-agreement-by-attractor"),
    View("findings"), View("wrong_note", wrong=True), View("wrong", wrong=True, download="wrong-pairs"),
    View("wrong_state", wrong=True), View("wrong_phenomena", wrong=True),
)
VIEWS = tuple(v.name for v in REGISTRY)
WRONG_VIEWS = tuple(v.name for v in REGISTRY if v.wrong)
DOWNLOADS = tuple(v.download for v in REGISTRY if v.download)
WRONG_DOWNLOADS = tuple(v.download for v in REGISTRY if v.wrong and v.download)


@friendly
def render_wrong(bench, model, methods, template, show_models, para_phen, wrong_method, also, wrong_text, wrong_phen,
                 wrong_sort):
    """Only the wrong-pairs views and their CSV button, for a change of the list's own method, filter or sort:
    the figures and their bootstrap intervals stay as they are (a whole render is seconds; this, a query)."""
    sel = svc.select(bench, model, methods, template, also)
    out = wrong_views(sel, svc.phenomena(sel), svc.phenomenon_choices(sel), wrong_method, wrong_text, wrong_phen,
                      wrong_sort)
    file = out.pop("file")
    return {**out, "csv:wrong-pairs": gr.update(value=file, interactive=bool(file))}


@friendly
def render(bench, model, methods, template, show_models, para_phen, wrong_method, also=None):
    """The tab's views (status, tables, figures, wrong pairs) for a selection, by name (VIEWS)."""
    out = _render(bench, model, methods, template, show_models, para_phen, wrong_method, also)
    return {k: out[k] for k in VIEWS}




@friendly
def render_page(bench, model, methods, template, show_models, para_phen, wrong_method, also, wrong_text, wrong_phen,
                wrong_sort, with_wrong: bool = True):
    """render()'s views and one download button per table / figure ("csv:<name>"), by name; with_wrong=False:
    all but the wrong-pairs list's (the tab's events chain render_wrong after it)."""
    out = _render(bench, model, methods, template, show_models, para_phen, wrong_method, also, wrong_text,
                  wrong_phen, wrong_sort, with_wrong)
    files = out.pop("files")
    return {**out, **{f"csv:{k}": gr.update(value=files.get(k), interactive=bool(files.get(k))) for k in DOWNLOADS
                      if with_wrong or k not in WRONG_DOWNLOADS}}


def render_figures(*inputs):
    """The tab's views but the wrong-pairs list: an event then runs render_wrong with the list's controls as
    they are by then, so a filter typed while the figures are drawn is neither lost nor undone."""
    return render_page(*inputs, with_wrong=False)


def by_component(fn, components: dict):
    """A handler that returns fn's named values as {component: value} (Gradio updates those alone)."""

    @functools.wraps(fn)
    def handler(*args):
        out = {components[k]: v for k, v in fn(*args).items() if k in components}
        # Gradio reads an empty dict as one value for many outputs: "nothing changes" is one no-op update.
        return out or {next(iter(components.values())): gr.update()}

    return handler


# ------------------------------------------------------------------------------------ Hu & Levy's measures
# Hu & Levy 2023's own measures of their metalinguistic prompts (Exp. 3a balanced accuracy, Exp. 3b
# per order) beside this project's pairwise accuracy: a tab of its own, rendered apart from render()
# (when the tab opens, and whenever the status line changes: a new benchmark, model or reload).
@friendly
def hu_levy_section(bench, model):
    sel = svc.select(bench, model, None)
    return _safe("Hu & Levy's measures",
                 lambda: hu_levy_view.explore_html(svc.hu_levy_measures(sel), svc.HU_LEVY_COLUMNS, sel.label, sel.model),
                 lambda msg: note(esc(msg), "warn"))


# ------------------------------------------------------------------------------------ Prediction 3, across datasets
# Both are drawn when their tab opens (and, while it is open, when the selection changes), never in the
# first render: a separation AUC's interval is a bootstrap over every sentence of the run.
SEPARATION_TAB = "Separation (Prediction 3)"
CROSS_TAB = "Across datasets"
SEPARATION_TABLE = ["Measure", "Separation AUC", "95 % CI", "Sentences", "Acceptable", "Unacceptable", "Source"]
CROSS_TABLE = ["Dataset", "Measure", "Accuracy (%)", "Accuracy: 95 % CI (%)", "Pairs", "Separation AUC", "AUC: 95 % CI",
               "Sentences", "Hu et al. 2025 (Table 1a)"]


def _paper_refs() -> dict:
    """Hu et al. 2025's stated numbers, by what they are of: {"accuracy": [...], "auc": [...]} (those with a value)."""
    refs = [r for r in svc.published_hu2025()["references"] if r.get("value") is not None]
    return {"accuracy": [r for r in refs if r["what"] == "accuracy"], "auc": [r for r in refs if r["what"] == "separation_auc"]}


def _paper_notes() -> str:
    """What Hu et al. 2025 state in words, each with its source, as a list."""
    items = "".join(f"<li>“{esc(r['quote'])}” <span class='acc-small'>({esc(r['models'])}; {esc(r['datasets'])}; "
                    f"source: {esc(r['source'])})</span></li>" for r in svc.published_hu2025()["references"])
    return (f"<div class='acc-small'><b>Hu et al. 2025 state</b> (their per-dataset values are drawn in figures only, "
            f"so none is copied here):<ul style='margin:0.2rem 0 0 1.2rem'>{items}</ul></div>")


def _ci(lo, hi, digits: int) -> str:
    return f"[{lo:.{digits}f}, {hi:.{digits}f}]" if pd.notna(lo) and pd.notna(hi) else ""


def _no_file():
    return gr.update(value=None, interactive=False)


def _file(df, name):
    path = _safe("CSV", lambda: write_csv(df, name), lambda m: None)
    return gr.update(value=path, interactive=bool(path))


@friendly
def separation_section(bench, model):
    """The Separation view of a selection: (note, figure, table, CSV button update)."""
    sel = svc.select(bench, model, None)
    empty = pd.DataFrame(columns=SEPARATION_TABLE)
    if not sel.picked:
        why = svc.missing(sel)
        return note(esc(why), "warn"), plots.empty_figure(why), empty, _no_file()
    df = svc.separation_frame(sel)
    if df is None or df.empty:
        why = svc.no_separation(sel)
        return note(esc(why), "warn"), plots.empty_figure(why), empty, _no_file()
    fig = explore_plots.separation_figure(df, _paper_refs()["auc"],
                                          esc(f"Separation AUC · {sel.label} · {model_label(sel.picked)}"))
    table = pd.DataFrame({"Measure": df.measure, "Separation AUC": df.auc.round(3),
                          "95 % CI": [_ci(lo, hi, 3) for lo, hi in zip(df.auc_ci_low, df.auc_ci_high)],
                          "Sentences": df.strings.astype(int), "Acceptable": df.n_good.astype(int),
                          "Unacceptable": df.n_bad.astype(int), "Source": df.source})[SEPARATION_TABLE]
    html = note(esc(svc.SEPARATION_NOTE), "info") + _paper_notes()
    return html, fig, table, _file(df, f"separation-auc-{sel.bench}-{sel.picked}")


def separation_if_shown(current, bench, model):
    """separation_section while its tab is the one shown; nothing otherwise (it stays lazy)."""
    if current != SEPARATION_TAB:
        return gr.update(), gr.update(), gr.update(), gr.update()
    return separation_section(bench, model)


@friendly
def cross_section(explore_model, model):
    """The view across datasets for one model (its own picker's, else Explore's, else the first with runs):
    (model picker update, note, figure, table, CSV button update)."""
    models = svc.cross_models()
    model = model if model in models else (explore_model if explore_model in models else (models[0] if models else None))
    choices = gr.update(choices=[(model_label(m), m) for m in models], value=model)
    if model is None:
        why = "No results shipped yet with any model."
        return choices, note(why, "warn"), plots.empty_figure(why), pd.DataFrame(columns=CROSS_TABLE), _no_file()
    df = svc.cross_dataset_frame(model)
    fig = explore_plots.cross_dataset_figure(df, _paper_refs(), esc(f"Across datasets · {model_label(model)}"))
    paper = {d["dataset"]: d for d in svc.published_hu2025()["datasets"]}

    def table1a(bench):
        d = paper.get(bench)
        return f"{d['items']:,} items; predictions {', '.join(map(str, d['predictions']))}" if d else "not in the paper"

    table = pd.DataFrame({
        "Dataset": df.dataset, "Measure": df.measure, "Accuracy (%)": df.accuracy.astype(float).round(1),
        "Accuracy: 95 % CI (%)": [_ci(lo, hi, 1) for lo, hi in zip(df.accuracy_ci_low, df.accuracy_ci_high)],
        "Pairs": df.pairs.astype("Int64"), "Separation AUC": df.auc.astype(float).round(3),
        "AUC: 95 % CI": [_ci(lo, hi, 3) for lo, hi in zip(df.auc_ci_low, df.auc_ci_high)],
        "Sentences": df.strings.astype("Int64"), "Hu et al. 2025 (Table 1a)": df.benchmark.map(table1a)})[CROSS_TABLE]
    shown = set(df.benchmark)
    waiting = [svc.label_of(b) for b in svc.BENCHMARKS if b not in shown]
    lines = [f"Each dataset {esc(model_label(model))} has a run on, and each measure that scores a sentence on its "
             "own: the share of pairs where the acceptable sentence scores higher (left; a mean over paradigms, LI's "
             "over pairs) beside the separation AUC of every sentence pooled (right). Whiskers: 95 % intervals ("
             f"{esc(svc.CI.SOURCE)}; {esc(svc.SEP.INTERVAL_SOURCE)})."]
    if waiting:
        lines.append(f"No run of this model shipped yet on: {esc(', '.join(waiting))}.")
    html = note(" ".join(lines), "info") + _paper_notes()
    return choices, html, fig, table, _file(df, f"across-datasets-{model}")


def human_note_html(bench: str) -> str:
    """What a benchmark's published human figure is, where it is not a per-phenomenon forced choice
    (CLiMP's: an agreement figure only), said on the page ('' where there is nothing to say)."""
    text = svc.human_note(bench)
    if not text:
        return ""
    return note(esc(text) + " It is in the overall table, labelled; the phenomenon figure has no "
                f"human markers for {esc(svc.label_of(bench))}.", "info")


# ------------------------------------------------------------------------------------ links
def selection_from_query(params: dict) -> dict | None:
    """An Explore link's selection, checked against the store (unknown values fall back to the defaults),
    or None when the link is not an Explore link."""
    if not links.is_explore_link(params):
        return None
    raw = links.explore_values(params)
    found = svc.select(raw["bench"], raw["model"], raw["methods"])
    bench, models, model, present, methods = found.bench, found.models, found.picked, found.present, found.methods
    template = raw["template"] if raw["template"] in {v for _, v in TEMPLATE_CHOICES} else DEFAULT_TEMPLATE
    phen_choices = svc.phenomena(found)
    phenomenon = raw["phenomenon"] if raw["phenomenon"] in phen_choices else "all"
    return {"bench": bench, "model": model, "models": models, "present": present, "methods": methods,
            "pairs": bool(found.model),
            "template": template, "phenomenon": phenomenon, "phen_choices": phen_choices,
            "phen_labelled": svc.phenomenon_choices(found)}


@friendly
def restore_from_link(request: gr.Request):
    """demo.load: an Explore link (?tab=explore&bench=...&model=...&methods=a,b&template=...&phenomenon=...)
    selects the tab and fills the selection; any other page load changes nothing."""
    try:
        params = links.parse_query(dict(request.query_params) if request is not None else {})
    except UserError:
        params = {}
    sel = selection_from_query(params)
    if sel is None:
        return [gr.update()] * 8 + [False]
    model, present, methods = sel["model"], sel["present"], sel["methods"]
    wrong_method = methods[0] if methods and sel["pairs"] else None
    return (gr.Tabs(selected="explore"), gr.update(value=sel["bench"]),
            gr.update(choices=[(model_label(m), m) for m in sel["models"]], value=model),
            gr.update(choices=[(display_name(m), m) for m in present], value=methods),
            gr.update(value=sel["template"]), gr.update(choices=sel["phen_labelled"], value=sel["phenomenon"]),
            gr.update(choices=[(model_label(m), m) for m in sel["models"] if m != model], value=[]),
            gr.update(choices=[(display_name(m), m) for m in (present if sel["pairs"] else [])], value=wrong_method), True)


def render_if_restored(restored, *inputs):
    """After demo.load: the views of a restored selection but the wrong-pairs list (then_event's next step);
    nothing to do on a plain page load."""
    if not restored:
        return {}
    return render_figures(*inputs)


def wrong_if_restored(restored, *inputs):
    return render_wrong(*inputs) if restored else {}


HIDDEN = dict(api_visibility="undocumented")


@dataclass
class ExploreTab:
    filters_inputs: list
    filters_outputs: list
    figures: dict  # event.then(**figures).then(**wrong): the tab's views, then its wrong-pairs list
    wrong: dict
    load_event: dict  # demo.load(**load_event).then(**restored_figures).then(**restored_wrong): a link restored
    restored_figures: dict
    restored_wrong: dict

    def refresh_after(self, event):
        """The whole tab redrawn after `event`: the figures and tables, then the wrong-pairs list."""
        return event.then(**self.figures, **HIDDEN).then(**self.wrong, **HIDDEN)

    def restore_on(self, demo):
        """An Explore link's selection restored and drawn when the page loads."""
        demo.load(**self.load_event, **HIDDEN).then(**self.restored_figures, **HIDDEN).then(**self.restored_wrong, **HIDDEN)


def _shown_tab(evt: gr.SelectData):
    """The label of the Explore view just opened."""
    return str(evt.value) if evt is not None else ""


def csv_button(name: str, label: str) -> gr.DownloadButton:
    """A download button for one table's or one figure's CSV (filled by render_page)."""
    return gr.DownloadButton(f"⬇ CSV: {label}", value=None, interactive=False, size="sm", elem_id=f"explore-csv-{name}")


def build(probe, tabs, probe_tab_id: str, design=None) -> ExploreTab:
    gr.HTML(intro(
        "Explore the benchmark results",
        f"How each judgment method and model did on all of {' or '.join(svc.label_of(b) for b in BENCHMARKS)}: "
        "accuracy by phenomenon beside the human "
        "baseline, the effect of sentence length, paradigms, ensembles, and the pairs a method gets wrong. "
        "Published numbers from the papers are always labelled with their source."))
    with gr.Row():
        bench = gr.Radio([(svc.label_of(b), b) for b in BENCHMARKS], value=BENCHMARKS[0], label="Benchmark", scale=1,
                         elem_id="explore-bench")
        model = gr.Dropdown([], value=None, label="Model (runs of this project)", scale=2, elem_id="explore-model")
        methods = gr.Dropdown([], value=[], multiselect=True, label="Methods", scale=3, elem_id="explore-methods")
        also = gr.Dropdown([], value=[], multiselect=True, label="Compare with models (phenomenon view)", scale=2,
                           elem_id="explore-also")
    with gr.Row():
        template = gr.Radio(TEMPLATE_CHOICES, value=DEFAULT_TEMPLATE, scale=3, elem_id="explore-template",
                            label="Template (methods with Ide et al.'s five templates)",
                            info="The best template is picked on the very pairs it is then scored on, so its accuracy "
                                 "is an upper bound (Ide et al. 2025), not an estimate for new pairs.")
        shown = "; ".join(f"{svc.label_of(b)}: {svc.published_models_label(b)}" for b in BENCHMARKS
                          if svc.published_models_label(b))
        show_models = gr.Checkbox(value=False, label=f"Show published models too ({shown})", scale=2)
        refresh_btn = gr.Button("↻ Reload results", scale=1, size="sm")
    with gr.Row():
        link = gr.Textbox("", label="Link to this selection", interactive=False, scale=5, elem_id="explore-link",
                          max_lines=1)
        copy_btn = gr.Button("🔗 Copy link", scale=1, size="sm", elem_id="explore-copy-link")
    status = gr.HTML("", elem_id="explore-status")
    gr.HTML(note(esc(CI_NOTE + " " + RULE_NOTE), "info"), elem_id="explore-ci-note")
    human_note = gr.HTML("", elem_id="explore-human-note")
    with gr.Tabs(overflow_behavior="wrap", elem_id="explore-views") as views_tabs:  # every label in sight on a phone
        with gr.Tab("By phenomenon"):
            phen_plot = gr.Plot(label="Accuracy by phenomenon", elem_id="explore-phenomenon")
            overall = gr.Dataframe(elem_classes=["acc-table"], label="Overall accuracy (mean over paradigms), ours and published",
                                   interactive=False, wrap=True, max_height=480, elem_id="explore-overall",
                                   column_widths=["13%", "14%", "9%", "8%", "10%", "7%", "6%", "33%"])
            with gr.Row():
                dl_phen = csv_button("accuracy-by-phenomenon", "accuracy by phenomenon (figure data)")
                dl_overall = csv_button("overall-accuracy", "overall accuracy (table)")
        with gr.Tab("Token length"):
            gr.Markdown("Accuracy against the difference in length, in the model's tokens, between the acceptable and "
                        "the unacceptable sentence; the legend gives the point-biserial r between being right and "
                        "the difference (Ide et al. 2025, §6 and Table 4).")
            length_plot = gr.Plot(label="Accuracy by token-length difference", elem_id="explore-length")
            dl_length = csv_button("accuracy-by-length", "accuracy by token-length difference (figure data)")
        with gr.Tab("By paradigm"):
            para_phen = gr.Dropdown([("all phenomena", "all")], value="all", label="Phenomenon")
            para_plot = gr.Plot(label="Accuracy per paradigm", elem_id="explore-paradigm")
            dl_para = csv_button("accuracy-by-paradigm", "accuracy per paradigm (figure data)")
        with gr.Tab("Ensembles & A/B"):
            ens_tbl = gr.Dataframe(elem_classes=["acc-table"], interactive=False, wrap=True, elem_id="explore-ensembles",
                                   label="Ensembles and oracles: accuracy (%), this project and Ide et al. 2025 Table 5")
            ens_plot = gr.Plot(label="Ensembles")
            ab_plot = gr.Plot(label="A/B prompting: share of 'A' answers")
            ab_tbl = gr.Dataframe(elem_classes=["acc-table"], interactive=False,
                                  label="Published share of 'A' answers (Ide et al. 2025, Table 12)")
            with gr.Row():
                dl_ens = csv_button("ensembles", "ensembles (table and figure data)")
                dl_ab_ours = csv_button("ab-share", "share of 'A' answers (figure data)")
                dl_ab = csv_button("ab-share-published", "published share of 'A' (table)")
        with gr.Tab("Word order & attractors"):
            shuffle_plot = gr.Plot(label="Word-shuffling paradigms")
            attract_plot = gr.Plot(label="Subject-verb agreement by attractor")
            findings = gr.HTML("")
            with gr.Row():
                dl_shuffle = csv_button("word-shuffling", "word-shuffling paradigms (figure data)")
                dl_attract = csv_button("sv-agreement-by-attractor", "attractors (figure data)")
        with gr.Tab("Pairs it gets wrong"):
            with gr.Row():
                wrong_method = gr.Dropdown([], value=None, label="Method", elem_id="explore-wrong-method", scale=2)
                wrong_text = gr.Textbox("", label="Filter: text in either sentence or the paradigm", scale=3,
                                        elem_id="explore-wrong-text", max_lines=1)
                wrong_phen = gr.Dropdown([("all phenomena", "all")], value="all", label="Phenomenon", scale=2,
                                         elem_id="explore-wrong-phenomenon")
                wrong_sort = gr.Dropdown(WRONG_SORTS, value="order", label="Sort", scale=2, elem_id="explore-wrong-sort")
            wrong_note = gr.HTML("")
            dl_wrong = csv_button("wrong-pairs", "wrong pairs, all of them (table)")
            wrong = gr.Dataframe(elem_classes=["acc-table"], headers=WRONG_COLUMNS, interactive=False, wrap=True,
                                 max_height=600, elem_id="explore-wrong",
                                 column_widths=["13%", "5%", "6%", "5%", "19%", "19%", "6%", "6%", "7%", "14%"])
        with gr.Tab("Hu & Levy's measures", elem_id="explore-hu-levy-tab") as hu_levy_tab:  # Hu & Levy 2023, Exp. 3a/3b
            hu_levy_html = gr.HTML("", elem_id="explore-hu-levy")
        with gr.Tab("Human ratings", elem_id="explore-ratings-tab") as ratings_tab:  # Hu et al. 2025, prediction 2
            ratings_io = ratings_view.build_explore(probe, tabs, probe_tab_id)
        with gr.Tab(SEPARATION_TAB, elem_id="explore-separation-tab") as separation_tab:  # Hu et al. 2025, §6.3
            separation_html = gr.HTML("", elem_id="explore-separation-note")
            separation_plot = gr.Plot(label="Separation AUC", elem_id="explore-separation")
            separation_table = gr.Dataframe(elem_classes=["acc-table"], interactive=False, wrap=True,
                                            elem_id="explore-separation-table", label="Separation AUC per measure")
            dl_separation = csv_button("separation-auc", "separation AUC (table)")
        with gr.Tab(CROSS_TAB, elem_id="explore-cross-tab") as cross_tab:  # Hu et al. 2025, predictions 1 and 3
            cross_model = gr.Dropdown([], value=None, label="Model", elem_id="explore-cross-model")
            cross_html = gr.HTML("", elem_id="explore-cross-note")
            cross_plot = gr.Plot(label="Accuracy and separation across datasets", elem_id="explore-cross")
            cross_table = gr.Dataframe(elem_classes=["acc-table"], interactive=False, wrap=True, max_height=480,
                                       elem_id="explore-cross-table", label="Across datasets, per measure")
            dl_cross = csv_button("across-datasets", "across datasets (table)")
        with gr.Tab("SyntaxGym test suites", elem_id="explore-suites-tab") as suites_tab:  # ui/suites_view.py
            suites_section = suites_view.build(tabs, design)
    ratings_inputs, ratings_outputs = ratings_io
    ratings_tab.select(ratings_view.follow_explore, [bench, model, *ratings_inputs],
                       [*ratings_outputs, ratings_inputs[0], ratings_inputs[1]], **HIDDEN)
    suites_tab.select(**suites_section)
    wrong_state = gr.State(None)

    filters_inputs = [bench, model, methods, wrong_method, also]
    filters_outputs = [model, methods, wrong_method, also]
    refresh_inputs = [bench, model, methods, template, show_models, para_phen, wrong_method, also, wrong_text,
                      wrong_phen, wrong_sort]
    by_name = {"overall-accuracy": dl_overall, "accuracy-by-phenomenon": dl_phen, "accuracy-by-length": dl_length,
               "accuracy-by-paradigm": dl_para, "ensembles": dl_ens, "ab-share": dl_ab_ours, "ab-share-published": dl_ab,
               "word-shuffling": dl_shuffle, "sv-agreement-by-attractor": dl_attract, "wrong-pairs": dl_wrong}
    views = {"status": status, "overall": overall, "phenomenon": phen_plot, "length": length_plot,
             "paradigm_phenomena": para_phen, "paradigm": para_plot, "ensembles_table": ens_tbl,
             "ensembles_figure": ens_plot, "ab_figure": ab_plot, "ab_table": ab_tbl, "shuffle": shuffle_plot,
             "attractors": attract_plot, "findings": findings, "wrong_note": wrong_note, "wrong": wrong,
             "wrong_state": wrong_state, "wrong_phenomena": wrong_phen,
             **{f"csv:{k}": by_name[k] for k in DOWNLOADS}}
    assert set(views) == set(VIEWS) | {f"csv:{k}" for k in DOWNLOADS}  # every registered view has its component
    # Two steps a refresh: the figures and tables (seconds: bootstrap intervals), then the wrong-pairs list
    # (a query), which reads its controls when the figures are done; the list's own controls redo it alone.
    wrong_views_ = {k: views[k] for k in (*WRONG_VIEWS, *(f"csv:{d}" for d in WRONG_DOWNLOADS))}
    figure_views = {k: v for k, v in views.items() if k not in wrong_views_}
    figures = dict(fn=by_component(render_figures, figure_views), inputs=refresh_inputs,
                   outputs=list(figure_views.values()))
    wrong_step = dict(fn=by_component(render_wrong, wrong_views_), inputs=refresh_inputs,
                      outputs=list(wrong_views_.values()))
    for comp in (bench, model, methods):
        comp.input(update_filters, filters_inputs, filters_outputs, **HIDDEN).then(**figures, **HIDDEN).then(
            **wrong_step, **HIDDEN)
    for comp in (template, show_models, para_phen, also):
        comp.input(**figures, **HIDDEN).then(**wrong_step, **HIDDEN)
    for comp in (wrong_method, wrong_phen, wrong_sort):
        comp.input(**wrong_step, **HIDDEN)
    wrong_text.submit(**wrong_step, **HIDDEN)
    refresh_btn.click(update_filters, filters_inputs, filters_outputs, **HIDDEN).then(**figures, **HIDDEN).then(
        **wrong_step, **HIDDEN)
    bench.change(human_note_html, [bench], [human_note], **HIDDEN)
    # The selection in the page URL (history.replaceState, no reload) and the link box; only while the
    # Explore tab is shown, so the Probe tab's own link is left alone.
    gr.on([bench.change, model.change, methods.change, template.change, para_phen.change], None,
          [bench, model, methods, template, para_phen, link], [link], js=links.EXPLORE_URL_JS, **HIDDEN)
    copy_btn.click(None, [link], None, js=links.COPY_LINK_JS, **HIDDEN)
    # Hu & Levy's measures: apart from render (its outputs stay as they are)
    hu_levy_tab.select(hu_levy_section, [bench, model], [hu_levy_html], **HIDDEN)
    # Separation and the view across datasets: drawn when their tab opens; separation again on a new selection
    # while its tab is the one shown (the tab shown kept in `shown_view`)
    shown_view = gr.State("")
    views_tabs.select(_shown_tab, None, [shown_view], **HIDDEN)
    separation_outputs = [separation_html, separation_plot, separation_table, dl_separation]
    separation_tab.select(separation_section, [bench, model], separation_outputs, **HIDDEN)
    status.change(separation_if_shown, [shown_view, bench, model], separation_outputs, **HIDDEN)
    cross_outputs = [cross_model, cross_html, cross_plot, cross_table, dl_cross]
    cross_tab.select(cross_section, [model, cross_model], cross_outputs, **HIDDEN)
    cross_model.input(cross_section, [model, cross_model], cross_outputs, **HIDDEN)
    status.change(hu_levy_section, [bench, model], [hu_levy_html], **HIDDEN)

    def open_in_probe(df, bench_value, model_value, evt: gr.SelectData):
        if df is None or len(df) == 0 or evt is None or evt.index is None:
            return [gr.update()] * 6
        i = evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index
        row = df.iloc[int(i)]
        meta = {"benchmark": bench_value, "paradigm": str(row["Paradigm"]), "phenomenon": str(row["Phenomenon"]),
                "pair_id": str(row["Pair"]), "good": str(row["Acceptable sentence"]),
                "bad": str(row["Unacceptable sentence"])}
        model_update = gr.update(value=model_value) if model_value in registry() else gr.update()
        return meta["good"], meta["bad"], meta, pair_label(meta), model_update, gr.Tabs(selected=probe_tab_id)

    wrong.select(open_in_probe, [wrong_state, bench, model], [probe.good, probe.bad, probe.meta, probe.pair_label,
                                                              probe.model, tabs], **HIDDEN).then(
        **probe.run_event)
    restored = gr.State(False)
    load_event = dict(fn=restore_from_link, inputs=None,
                      outputs=[tabs, bench, model, methods, template, para_phen, also, wrong_method, restored])
    restored_figures = dict(fn=by_component(render_if_restored, figure_views), inputs=[restored, *refresh_inputs],
                            outputs=list(figure_views.values()))
    restored_wrong = dict(fn=by_component(wrong_if_restored, wrong_views_), inputs=[restored, *refresh_inputs],
                          outputs=list(wrong_views_.values()))
    return ExploreTab(filters_inputs, filters_outputs, figures, wrong_step, load_event, restored_figures, restored_wrong)
