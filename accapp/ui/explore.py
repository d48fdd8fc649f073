"""Explore tab: how each method and model did on a whole benchmark, beside the published numbers.

Everything comes from the DuckDB store over ``precomputed/`` (:mod:`accapp.store`) through the
analyses of :mod:`accapp.analysis`; the helpers here only pick templates and shape frames for
:mod:`accapp.ui.plots`. Published numbers are always labelled with their source. With no
precomputed run yet the tab says so and shows the published numbers alone.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

import gradio as gr
import pandas as pd

from accapp import analysis as A
from accapp.analysis import intervals as CI
from accapp.errors import UserError
from accapp.files import csv_bytes
from accapp.methods import display_name
from accapp.service.catalog import convention_label, registry
from accapp.service.host import BENCHMARKS, get_state
from accapp.ui import hu_levy_view, links, plots
from accapp.ui.common import esc, friendly, intro, message_of, note, pair_label

PREFERRED = ("lp", "in_template_lp", "yes_no_prob_comp")
DEFAULT_TEMPLATE = "mean"  # Ide et al. 2025 Table 3 reports the mean over the five templates
BEST_LABEL = "best template: chosen on these same pairs, an upper bound (Ide et al. 2025)"
TEMPLATE_CHOICES = [("mean over templates", "mean"), (BEST_LABEL, "best")] + [
    (f"template {i}", str(i)) for i in range(1, 6)]
WRONG_LIMIT = 500  # rows shown in the table (the CSV has every wrong row up to WRONG_FETCH)
WRONG_FETCH = 50_000  # wrong rows read from the store for sorting and filtering
WRONG_COLUMNS = ["Paradigm", "Pair", "Template", "Order", "Acceptable sentence", "Unacceptable sentence",
                 "Score: good", "Score: bad", "Margin (good − bad)", "Phenomenon"]
WRONG_SORTS = [("benchmark order", "order"), ("most wrong first (margin ascending)", "margin"),
               ("nearest to a tie first (margin descending)", "-margin")]
CI_COLUMN = "95 % CI (%)"
CI_NOTE = ("Intervals: 95 % percentile bootstrap over pairs (1,000 resamples, seed 0; the overall accuracy "
           "resampled within each paradigm), this project's runs only; published numbers come without one.")
CLIMP_HUMAN_NOTE = ("CLiMP's human figure is its label validation (Xiang et al. 2021: human agreement with the "
                    "labels is 95.8 %, benchmark-wide); no per-phenomenon human accuracy is shipped here.")
CSV_DIR_NAME = "accapp-explore-csv"
CSV_KEEP = 200  # CSV files kept in the folder; the oldest beyond this are removed on each write
_NUM = re.compile(r"^[0-9]+$")


# ------------------------------------------------------------------------------------ template selection
def _numbered(s: pd.Series) -> pd.Series:
    return s.astype(str).str.fullmatch(r"[0-9]+")


def pick_template(df: pd.DataFrame, template: str, keys: list[str]) -> pd.DataFrame:
    """From rows of every template (an analysis run with template=None), keep the chosen one.

    'mean': methods with numbered templates get their mean over them (template "mean");
    an id: that template for methods that have it; other methods keep their single template.
    """
    if df.empty or template in (None, "best"):
        return df
    num = _numbered(df["template"])
    with_numbered = set(df.loc[num, "method"])
    rest = df[~df["method"].isin(with_numbered)]
    sel = df[num]
    if template == "mean":
        group = ["method"] + [k for k in keys if k in sel]
        agg = {}
        for c in sel.columns:
            if c in group or c == "template":
                continue
            if c in ("accuracy", "human_accuracy", "r", "share_A"):
                agg[c] = "mean"
            elif pd.api.types.is_numeric_dtype(sel[c]):
                agg[c] = "max"
            else:
                agg[c] = "first"
        sel = sel.groupby(group, sort=False, dropna=False).agg(agg).reset_index()
        sel["template"] = "mean"
    else:
        sel = sel[sel["template"].astype(str) == str(template)]
    out = pd.concat([sel, rest], ignore_index=True)
    return out[[c for c in df.columns if c in out.columns]]


def by_template(fn, store, model, bench, methods, template, keys, **kw) -> pd.DataFrame:
    if template in (None, "best"):
        return fn(store, model, bench, methods, template="best", **kw)
    return pick_template(fn(store, model, bench, methods, template=None, **kw), template, keys)


def with_intervals(df: pd.DataFrame, ci: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """``df`` with ci_low / ci_high (and pairs where it has none) joined on method, template and ``keys``."""
    if df.empty or ci.empty:
        return df.assign(ci_low=float("nan"), ci_high=float("nan")) if not df.empty else df
    on = ["method", "template", *keys]
    right = ci[on + CI.CI_COLUMNS + ([] if "pairs" in df else ["pairs"])].copy()
    left = df.drop(columns=[c for c in CI.CI_COLUMNS if c in df])
    left["template"], right["template"] = left.template.astype(str), right.template.astype(str)
    return left.merge(right, on=on, how="left")


def ci_label(lo, hi) -> str:
    """'[61.2, 65.8]' or '' without an interval."""
    return f"[{lo:.1f}, {hi:.1f}]" if pd.notna(lo) and pd.notna(hi) else ""


# ------------------------------------------------------------------------------------ CSV downloads
def csv_dir() -> Path:
    """The folder Explore's CSV files go to: under Gradio's temp folder (the app's private one)."""
    base = os.environ.get("GRADIO_TEMP_DIR") or tempfile.gettempdir()
    return Path(base) / CSV_DIR_NAME


def prune(folder: Path, keep: int = CSV_KEEP) -> None:
    """Remove all but the ``keep`` most recently written CSV files (the folder stays bounded)."""
    files = sorted(folder.glob("*.csv"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in files[keep:]:
        try:
            old.unlink()
        except OSError:
            pass


def write_csv(df: pd.DataFrame | None, name: str, folder: Path | None = None) -> str | None:
    """Write ``df`` as the app's CSV (accapp.files.csv_bytes: formula cells neutralised, UTF-8 with a
    BOM) atomically (a temp file renamed into place); the file is named by its content, so the same
    table is written once. None for no data."""
    if df is None or df.empty:
        return None
    folder = folder or csv_dir()
    folder.mkdir(parents=True, exist_ok=True)
    data = csv_bytes(df)
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:80]
    path = folder / f"{safe}-{hashlib.sha256(data).hexdigest()[:12]}.csv"
    if not path.exists():
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".part")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    else:
        os.utime(path)  # a fresh use keeps it among the newest
    prune(folder)
    return str(path)


# ------------------------------------------------------------------------------------ filters
def filter_state(bench: str, model: str | None, methods: list[str] | None):
    """Normalise the filters against what the store holds: (models, model, present methods, methods)."""
    store = get_state().store()
    models = store.models(bench)
    if model not in models:
        model = default_model(store, bench, models)
    if model:
        present = store.methods(model, bench)
    else:  # published numbers only: the methods the papers report for this benchmark
        present = sorted(set(A.published_ide_accuracy(store, bench).method))
    methods = [m for m in (methods or []) if m in present]
    if not methods:
        methods = [m for m in PREFERRED if m in present] or present[:3]
    return models, model, present, methods


def default_model(store, bench: str, models: list[str]) -> str | None:
    """The app's default model when it has a run, else the model with the most result rows."""
    from accapp.service.catalog import DEFAULT_MODEL

    if not models:
        return None
    if DEFAULT_MODEL in models:
        return DEFAULT_MODEL
    cat = store.catalog()
    sizes = cat[cat.benchmark == bench].groupby("model")["n_rows"].sum()
    return str(sizes.sort_values(ascending=False, kind="stable").index[0]) if len(sizes) else models[0]


def model_label(model_id: str) -> str:
    spec = registry().get(model_id)
    return f"{spec.name} ({model_id})" if spec else model_id


@friendly
def update_filters(bench, model, methods, wrong_method, also=None):
    models, model, present, methods = filter_state(bench, model, methods)
    wrong_choices = present if model else []
    wrong_method = wrong_method if wrong_method in wrong_choices else (methods[0] if methods and model else None)
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
    store = get_state().store()
    if model is None:
        return note(f"No precomputed results for <b>{esc(bench.upper())}</b> yet (the benchmark runs are still being "
                    "computed, or none has been shipped). The published numbers are shown alone, each labelled with "
                    "its source.", "warn")
    man = store.manifest(model, bench)
    units = store.units(model, bench)
    bits = [f"<b>{esc(model_label(model))}</b> on <b>{esc(bench.upper())}</b>: {int(units.pairs.sum()):,} pairs in "
            f"{len(units)} paradigms"]
    per = man.get("per_paradigm_by_method") or {}
    if man.get("whole_benchmark"):  # every method on every pair (scripts/gpu/merge_full.py checked it)
        bits.append("every pair of the benchmark for every method, not a sample")
    elif per:  # runs of several sizes merged: every method on at least lo pairs a paradigm, some on more
        lo, hi = min(per.values()), max(per.values())
        more = sorted(m for m, n in per.items() if n == hi)
        size = (f"at least {lo} pairs per paradigm for every method" if lo == hi else
                f"at least {lo} pairs per paradigm for every method, {hi} for {esc(', '.join(more))}")
        bits.append(f"{size} (seeded sample, seed {esc(man.get('seed', 0))})")
    elif man.get("per_paradigm"):
        bits.append(f"a sample of {int(man['per_paradigm'])} pairs per paradigm (seed {esc(man.get('seed', 0))})")
    if man.get("gpu"):  # where it ran (issue 32's whole-benchmark runs)
        bits.append(f"scored on {esc(man['gpu'])} in {esc(man.get('dtype') or 'fp32')}")
    if man.get("finished"):
        bits.append(f"run finished {esc(str(man['finished'])[:10])}")
    # Which details follow the papers' code (README "What is scored, exactly"); older runs are the default.
    bits.append(f"convention: {esc(convention_label(man.get('convention')))}")
    for regen in man.get("regenerated", []):
        what = regen.get("methods")
        what = ", ".join(what) if isinstance(what, list) else str(what)
        bits.append(f"rescored {esc(str(regen.get('date', ''))[:10])}: {esc(what)} ({esc(str(regen.get('reason', '')))})")
    for later in man.get("pending", []):  # rows a change has outdated, not yet rescored: said, not hidden
        bits.append(f"<b>not yet rescored</b>: {esc(', '.join(later.get('methods', [])))}: {esc(str(later.get('why', '')))}")
    skipped = ", ".join(store.skipped_files) if store.skipped_files else ""
    text = " · ".join(bits) + ". Bars are this project's results; markers and dashed lines are published numbers."
    if skipped:
        text += f"<br>Unreadable result files left out: {esc(skipped)}."
    return note(text, "info")


def _runs(store, bench, models, methods, fn, template, keys, **kw) -> list[pd.DataFrame]:
    """One analysis over several models, each with the selected methods it has (others left out)."""
    out = []
    for m in models:
        have = [x for x in (methods or []) if x in store.methods(m, bench)]
        if have:
            out.append(by_template(fn, store, m, bench, have, template, keys, **kw))
    return out


OVERALL_COLUMNS = ["Model", "Method", "Template", "Accuracy (%)", CI_COLUMN, "Pairs", "Source"]


def template_label(template: str) -> str:
    """How a template reads in tables: the best one says it is an upper bound."""
    t = str(template)
    return {"max": "max (best template, upper bound)"}.get(t, t)


def template_cell(template, view: str) -> str:
    """A template id as the overall table shows it: under the "best" view a picked (numbered) template
    says it was chosen on the same pairs, an upper bound."""
    t = str(template)
    return f"{t} (best: chosen on these pairs, upper bound)" if view == "best" and _NUM.match(t) else t


def overall_table(store, bench, model, methods, template, also=()) -> pd.DataFrame:
    parts = []
    if model:
        for ours in _runs(store, bench, [model, *also], methods, A.accuracy_overall, template, []):
            m = str(ours.model.iloc[0]) if len(ours) else model
            have = [x for x in methods if x in store.methods(m, bench)]
            ours = with_intervals(ours, CI.overall_intervals(store, m, bench, have, template), [])
            finished = store.manifest(m, bench).get("finished", "")
            src = "this project" + (f", run finished {finished[:10]}" if finished else "") + "; interval: " + CI.SOURCE
            tmpl = [template_cell(t, template) for t in ours.template]
            parts.append(pd.DataFrame({"Model": m, "Method": ours.method.map(display_name), "Template": tmpl,
                                       "Accuracy (%)": ours.accuracy.round(1),
                                       CI_COLUMN: [ci_label(lo, hi) for lo, hi in zip(ours.ci_low, ours.ci_high)],
                                       "Pairs": ours.pairs, "Source": src}))
    if bench == "blimp":
        hum = A.published_human(store, "overall")
        if not hum.empty:
            parts.append(pd.DataFrame({"Model": "humans", "Method": "human judgment", "Template": "-",
                                       "Accuracy (%)": hum.accuracy.round(1), CI_COLUMN: "", "Pairs": None,
                                       "Source": hum.source}))
    if bench == "climp":
        hum = A.published_climp_human()
        parts.append(pd.DataFrame({"Model": "humans", "Method": hum.measure, "Template": "-",
                                   "Accuracy (%)": hum.accuracy.round(1), CI_COLUMN: "", "Pairs": None,
                                   "Source": hum.source}))
    pub = A.published_ide_accuracy(store, bench)
    if not pub.empty and methods:
        pub = pub[pub.method.isin(methods) & pub.template.isin(["-", "mean", "max"])]
        parts.append(pd.DataFrame({"Model": pub.model, "Method": pub.method.map(display_name),
                                   "Template": pub.template.map(template_label), "Accuracy (%)": pub.accuracy.round(1),
                                   CI_COLUMN: "", "Pairs": None, "Source": pub.source}))
    parts = [p for p in parts if not p.empty]
    if not parts:
        return pd.DataFrame(columns=OVERALL_COLUMNS)
    return pd.concat(parts, ignore_index=True)[OVERALL_COLUMNS]


def published_for_phenomena(store, bench, methods, show_models: bool) -> pd.DataFrame:
    if bench != "blimp":
        return pd.DataFrame(columns=A.LONG_COLUMNS)
    parts = [A.published_human(store, "phenomenon")]
    if show_models:
        parts.append(A.published_blimp_models(store, "phenomenon"))
        kauf = A.published_kauf(store, "phenomenon")
        parts.append(kauf[kauf.method.isin(methods or [])])
    parts = [p for p in parts if not p.empty]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=A.LONG_COLUMNS)


def phenomenon_view(store, bench, model, methods, template, show_models, also=(), sink=None):
    ours = None
    if model:
        runs = _runs(store, bench, [model, *also], methods, A.accuracy_by_phenomenon, template, ["phenomenon"])
        runs = [with_intervals(r, CI.phenomenon_intervals(store, str(r.model.iloc[0]), bench, sorted(set(r.method)),
                                                          template), ["phenomenon"]) for r in runs if len(r)]
        ours = pd.concat(runs, ignore_index=True) if runs else pd.DataFrame()
    pub = published_for_phenomena(store, bench, methods, show_models)
    if sink is not None:
        mine = ours.assign(source="this project; interval: " + CI.SOURCE) if ours is not None and len(ours) else None
        parts = [f for f in (mine, pub) if f is not None and len(f)]
        sink["accuracy-by-phenomenon"] = pd.concat(parts, ignore_index=True) if parts else None
    who = ", ".join(model_label(m) for m in [model, *also]) if model else "published only"
    title = f"Accuracy by phenomenon · {bench.upper()} · {who}"
    if (ours is None or ours.empty) and pub.empty:
        return plots.empty_figure(f"No results for {bench.upper()} yet, and no published per-phenomenon numbers.")
    return plots.phenomenon_figure(ours if ours is not None else pd.DataFrame(), pub, esc(title))


def length_view(store, bench, model, methods, template, sink=None):
    pub = A.published_ide_length_bias(store, bench)
    if not model:
        if pub.empty:
            return plots.empty_figure("No results yet.")
        txt = "; ".join(f"{display_name(m)}: r = {r:+.3f}" for m, r in zip(pub.method, pub.point_biserial_r))
        return plots.empty_figure(f"No results yet. Published ({plots.short_source(pub.source.iloc[0])}, Table 4): {txt}")
    by_len = by_template(A.accuracy_by_length, store, model, bench, methods, template, ["len_diff", "label"], clip=4)
    by_len = with_intervals(by_len, CI.length_intervals(store, model, bench, methods, template, clip=4), ["len_diff"])
    bias = by_template(A.length_bias, store, model, bench, methods, template, [])
    if sink is not None:
        sink["accuracy-by-length"] = by_len.assign(source="this project; interval: " + CI.SOURCE)
    return plots.length_figure(by_len, bias, pub, esc(f"Accuracy by token-length difference · {model_label(model)}"))


def paradigm_view(store, bench, model, methods, template, phenomenon, sink=None):
    if not model:
        return plots.empty_figure("No results yet: the per-paradigm view needs a precomputed run.")
    df = by_template(A.accuracy_by_paradigm, store, model, bench, methods, template, ["paradigm", "phenomenon"])
    if phenomenon and phenomenon != "all":
        df = df[df.phenomenon == phenomenon]
    df = with_intervals(df, CI.paradigm_intervals(store, model, bench, methods, template), ["paradigm"])
    if sink is not None:
        sink["accuracy-by-paradigm"] = df.assign(source="this project; interval: " + CI.SOURCE)
    human = A.published_human(store, "paradigm") if bench == "blimp" else pd.DataFrame()
    if not human.empty:
        human = human[human.paradigm.isin(set(df.paradigm))]
    return plots.paradigm_figure(df, human, esc(f"Accuracy per paradigm · {model_label(model)}"))


def ensemble_view(store, bench, model):
    pub = A.published_ide_ensembles(store, bench)
    table = pd.DataFrame()
    if not pub.empty:
        table = pub.pivot_table(index="setting", columns="model", values="accuracy", aggfunc="first")
        table.columns = [f"{c} (Ide et al. 2025)" for c in table.columns]
    ours = A.ensembles(store, model, bench) if model else pd.DataFrame()
    if not ours.empty:
        ours = ensemble_intervals(store, bench, model, ours)
        mine = ours.set_index("setting")[["accuracy", "ci_low", "ci_high", "pairs"]]
        mine = pd.DataFrame({f"{model} (this project)": mine.accuracy,
                             f"{model}: {CI_COLUMN}": [ci_label(lo, hi) for lo, hi in zip(mine.ci_low, mine.ci_high)],
                             f"{model}: pairs": mine.pairs}, index=mine.index)
        table = mine.join(table, how="outer") if not table.empty else mine
    if table.empty:
        return pd.DataFrame({"setting": []}), plots.empty_figure("No ensemble results yet.")
    order = ["p_only", "mix_p3", "mix_l3", "l_only", "in_template_lp_oracle", "yes_no_prob_comp_oracle"]
    table = table.reindex([s for s in order if s in table.index] + [s for s in table.index if s not in order])
    table = table.round(1).reset_index().rename(columns={"index": "setting"})
    if ours.empty:
        fig = plots.empty_figure("No ensemble results of this project yet; the table shows the published numbers.")
    else:
        df = ours.assign(group=model_label(model))
        fig = plots.grouped_bar_figure(df, "setting", "accuracy", "group",
                                       esc(f"Ensembles and oracles · {model_label(model)}"))
    return table, fig


def ensemble_intervals(store, bench, model, ours: pd.DataFrame) -> pd.DataFrame:
    """The ensembles' rows with the interval of each setting's overall accuracy (its method, its template)."""
    rows = []
    for method, template in zip(ours.method, ours.template):
        ci = CI.overall_intervals(store, model, bench, [method], str(template))
        rows.append(ci.iloc[0][["pairs", *CI.CI_COLUMNS]] if len(ci) else pd.Series(
            {"pairs": None, "ci_low": float("nan"), "ci_high": float("nan")}))
    return pd.concat([ours.reset_index(drop=True), pd.DataFrame(rows).reset_index(drop=True)], axis=1)


def ab_view(store, bench, model, sink=None):
    pub = A.published_ide_ab_share(store, bench)
    pub_tbl = pub.rename(columns={"share_A": "share of 'A' (%)"}) if not pub.empty else pub
    if not model or "ab_prompting" not in store.methods(model, bench):
        return plots.empty_figure("No A/B prompting results of this project yet; the table shows the published shares."), pub_tbl
    df = A.ab_prompting(store, model, bench)
    df = df.assign(order=df.variant.map({"good=A": "good sentence is A", "good=B": "good sentence is B",
                                         "both": "both orders"}))
    if sink is not None:
        sink["ab-share"] = df.assign(source="this project")
    ref = {"50 % = no preference for A": 50.0}
    if not pub.empty:
        src = plots.short_source(pub.source.iloc[0])
        ref[f"published mean over models: {pub.share_A.mean():.1f} % ({src}, Table 12)"] = float(pub.share_A.mean())
    fig = plots.grouped_bar_figure(df, "template", "share_A", "order", esc(f"Share of 'A' answers · {model_label(model)}"),
                                   y_title="answers 'A' (%)", reference=ref)
    return fig, pub_tbl


def _with_humans(df: pd.DataFrame, key: str) -> pd.DataFrame:
    keep = [c for c in (key, "accuracy", "pairs", "ci_low", "ci_high") if c in df]
    parts = [df[keep].assign(group=[f"{m} [{t}]" if t not in ("-", "") else m
                                    for m, t in zip(df.method, df.template)])]
    if "human_accuracy" in df and df.human_accuracy.notna().any():
        h = df.drop_duplicates(key)[[key, "human_accuracy"]].rename(columns={"human_accuracy": "accuracy"})
        parts.append(h.assign(group="Humans (published: Warstadt et al. 2020)"))
    return pd.concat(parts, ignore_index=True)


def shuffle_view(store, bench, model, methods, template, sink=None):
    if not model:
        return plots.empty_figure("No results yet: the word-shuffling view needs a precomputed run.")
    df = by_template(A.paradigm_type_summary, store, model, bench, methods, template, ["word_shuffling"])
    if df.empty:
        return plots.empty_figure("No paradigms in this run.")
    df = df.assign(kind=df.word_shuffling.map({True: "word-shuffling paradigms", False: "other paradigms"}))
    flags = A.word_shuffling_paradigms(store, model, bench)
    kinds = dict(zip(flags.paradigm, flags.word_shuffling.map({True: "word-shuffling paradigms",
                                                               False: "other paradigms"})))
    ci = CI.grouped_paradigm_intervals(store, model, bench, methods, template, kinds, "kind")
    df = with_intervals(df.drop(columns="pairs"), ci, ["kind"])
    if sink is not None:
        sink["word-shuffling"] = df.assign(source="this project; interval: " + CI.SOURCE)
    fig = plots.grouped_bar_figure(_with_humans(df, "kind"), "kind", "accuracy", "group",
                                   esc(f"Word-shuffling paradigms vs the rest · {model_label(model)}"))
    return fig


def attractor_view(store, bench, model, methods, template, sink=None):
    if not model or bench != "blimp":
        return plots.empty_figure("The attractor view needs a precomputed BLiMP run.")
    df = by_template(A.sv_agreement_by_attractor, store, model, bench, methods, template, ["attractor"])
    if df.empty:
        return plots.empty_figure("This run has none of the subject-verb agreement paradigms.")
    ci = CI.grouped_paradigm_intervals(store, model, bench, methods, template, A.SV_ATTRACTOR, "attractor")
    df = with_intervals(df.drop(columns="pairs"), ci, ["attractor"])
    if sink is not None:
        sink["sv-agreement-by-attractor"] = df.assign(source="this project; interval: " + CI.SOURCE)
    return plots.grouped_bar_figure(_with_humans(df, "attractor"), "attractor", "accuracy", "group",
                                    esc(f"Subject-verb agreement by attractor · {model_label(model)}"))


def findings_html(store, bench) -> str:
    f = A.published_ide_findings(store)
    if f.empty:
        return ""
    f = f[(f.benchmark == bench) & f.subset.str.contains("shuffling|other_paradigms|attractor", regex=True)]
    if f.empty:
        return ""
    items = "".join(f"<li>{esc(s.replace('_', ' '))} · {esc(m)} · {esc(mod.replace('_', ' '))}: <b>{v:g} %</b> "
                    f"<span class='acc-small'>({esc(src)})</span></li>"
                    for s, m, mod, v, src in zip(f.subset, f.method, f.model, f.value, f.source))
    return note(f"Published for comparison:<ul style='margin:0.3rem 0 0 1.2rem'>{items}</ul>", "info")


def wrong_pairs(store, bench, model, method, template) -> pd.DataFrame:
    if not model or not method:
        return pd.DataFrame(columns=WRONG_COLUMNS)
    tmpl = None
    templates = store.templates(model, bench, method)
    if template == "best":
        tmpl = A.best_template(store, model, bench, method)
    elif template != "mean" and template in templates:
        tmpl = template
    elif len(templates) == 1:
        tmpl = templates[0]
    cols = ["paradigm", "phenomenon", "pair_id", "template", "variant", "good", "bad", "score_good", "score_bad"]
    df = store.rows(model, bench, [method], template=tmpl, wrong_only=True, columns=cols, limit=WRONG_FETCH)
    return pd.DataFrame({"Paradigm": df.paradigm, "Pair": df.pair_id, "Template": df.template, "Order": df.variant,
                         "Acceptable sentence": df.good, "Unacceptable sentence": df.bad,
                         "Score: good": df.score_good.round(4), "Score: bad": df.score_bad.round(4),
                         # > 0 only for a tie inside the tie tolerance (counted wrong, accapp/methods/formulas.py)
                         "Margin (good − bad)": (df.score_good - df.score_bad).round(4),
                         "Phenomenon": df.phenomenon}, columns=WRONG_COLUMNS)


def filter_wrong(df: pd.DataFrame, text: str | None = None, phenomenon: str | None = None,
                 sort: str | None = "order") -> pd.DataFrame:
    """Wrong pairs kept by a case-insensitive text (in either sentence or the paradigm) and a phenomenon
    ("all" = any), sorted: "order" (benchmark order), "margin" (most wrong first), "-margin" (nearest a tie)."""
    if df.empty:
        return df
    keep = pd.Series(True, index=df.index)
    needle = (text or "").strip().casefold()
    if needle:
        hay = (df["Acceptable sentence"].astype(str) + "\n" + df["Unacceptable sentence"].astype(str) + "\n"
               + df["Paradigm"].astype(str)).str.casefold()
        keep &= hay.str.contains(needle, regex=False)
    if phenomenon and phenomenon != "all":
        keep &= df["Phenomenon"] == phenomenon
    out = df[keep]
    if sort in ("margin", "-margin"):
        out = out.sort_values("Margin (good − bad)", ascending=sort == "margin", kind="stable")
    return out.reset_index(drop=True)


def _render(bench, model, methods, template, show_models, para_phen, wrong_method, also=None, wrong_text="",
            wrong_phen="all", wrong_sort="order") -> dict:
    """Everything the tab shows, by name (VIEWS), and "files": the CSV files ({name: path or None})."""
    store = get_state().store()
    models, model, present, methods = filter_state(bench, model, methods)
    also = [m for m in (also or []) if m in models and m != model]
    template = template or DEFAULT_TEMPLATE
    fig_fallback = plots.empty_figure
    df_fallback = lambda msg: pd.DataFrame({"message": [msg]})  # noqa: E731
    sink: dict = {}  # the data behind each figure, for its CSV
    status = status_html(bench, model)
    overall = _safe("Overall", lambda: overall_table(store, bench, model, methods, template, also), df_fallback)
    phen = _safe("By phenomenon", lambda: phenomenon_view(store, bench, model, methods, template, show_models, also,
                                                          sink), fig_fallback)
    length = _safe("Token length", lambda: length_view(store, bench, model, methods, template, sink), fig_fallback)
    phen_choices = ["all"] + (sorted(set(store.units(model, bench).phenomenon)) if model else [])
    para_phen = para_phen if para_phen in phen_choices else "all"
    para = _safe("Per paradigm", lambda: paradigm_view(store, bench, model, methods, template, para_phen, sink),
                 fig_fallback)
    ens_tbl, ens_fig = _safe("Ensembles", lambda: ensemble_view(store, bench, model),
                             lambda m: (df_fallback(m), fig_fallback(m)))
    ab_fig, ab_tbl = _safe("A/B", lambda: ab_view(store, bench, model, sink), lambda m: (fig_fallback(m), df_fallback(m)))
    shuffle = _safe("Word shuffling", lambda: shuffle_view(store, bench, model, methods, template, sink), fig_fallback)
    attract = _safe("Attractors", lambda: attractor_view(store, bench, model, methods, template, sink), fig_fallback)
    wrong_method = wrong_method if wrong_method in present else (methods[0] if methods else None)
    every_wrong = _safe("Wrong pairs", lambda: wrong_pairs(store, bench, model, wrong_method, template),
                        lambda m: pd.DataFrame(columns=WRONG_COLUMNS))
    wrong_phen = wrong_phen if wrong_phen in phen_choices else "all"
    kept = filter_wrong(every_wrong, wrong_text, wrong_phen, wrong_sort)
    wrong = kept.head(WRONG_LIMIT)
    shown = display_name(wrong_method) if wrong_method else ""
    more = f" (the first {WRONG_LIMIT:,} shown; the CSV has them all)" if len(kept) > WRONG_LIMIT else ""
    filtered = f" of {len(every_wrong):,}" if len(kept) != len(every_wrong) else ""
    wrong_note = (note("No precomputed run yet, so no pairs to list.", "info") if not model else
                  note(f"{len(kept):,}{filtered} pair judgments that <b>{esc(shown)}</b> gets wrong (or ties){more}. "
                       "Margin = score of the acceptable minus the unacceptable sentence, in the method's own unit "
                       "(for LP and its variants a log-probability in nats). "
                       "<b>Click a row</b> to open the pair in the probe.", "info"))
    tag = f"{bench}-{model or 'published'}-{template}"
    tables = {"overall-accuracy": overall, "ensembles": ens_tbl, "ab-share-published": ab_tbl,
              "wrong-pairs": kept.assign(Method=wrong_method, Model=model) if len(kept) else None}
    files = {k: _safe("CSV", lambda v=v, k=k: write_csv(v, f"{k}-{tag}"), lambda m: None)
             for k, v in {**tables, **sink}.items()}
    return {"status": status, "overall": overall, "phenomenon": phen, "length": length,
            "paradigm_phenomena": gr.update(choices=phen_choices, value=para_phen), "paradigm": para,
            "ensembles_table": ens_tbl, "ensembles_figure": ens_fig, "ab_figure": ab_fig, "ab_table": ab_tbl,
            "shuffle": shuffle, "attractors": attract, "findings": findings_html(store, bench), "wrong_note": wrong_note,
            "wrong": wrong, "wrong_state": wrong, "wrong_phenomena": gr.update(choices=phen_choices, value=wrong_phen),
            "files": files}


# What the tab shows, by name: build() gives each name its component, and a handler returns
# {component: value} (by_component), so adding a view is a name here, in _render and in build().
VIEWS = ("status", "overall", "phenomenon", "length", "paradigm_phenomena", "paradigm", "ensembles_table",
         "ensembles_figure", "ab_figure", "ab_table", "shuffle", "attractors", "findings", "wrong_note", "wrong",
         "wrong_state", "wrong_phenomena")


@friendly
def render(bench, model, methods, template, show_models, para_phen, wrong_method, also=None):
    """The tab's views (status, tables, figures, wrong pairs) for a selection, by name (VIEWS)."""
    out = _render(bench, model, methods, template, show_models, para_phen, wrong_method, also)
    return {k: out[k] for k in VIEWS}


DOWNLOADS = ("overall-accuracy", "accuracy-by-phenomenon", "accuracy-by-length", "accuracy-by-paradigm", "ensembles",
             "ab-share", "ab-share-published", "word-shuffling", "sv-agreement-by-attractor", "wrong-pairs")


@friendly
def render_page(bench, model, methods, template, show_models, para_phen, wrong_method, also, wrong_text, wrong_phen,
                wrong_sort):
    """render()'s views and one download button per table / figure ("csv:<name>"), by name."""
    out = _render(bench, model, methods, template, show_models, para_phen, wrong_method, also, wrong_text,
                  wrong_phen, wrong_sort)
    files = out.pop("files")
    return {**out, **{f"csv:{k}": gr.update(value=files.get(k), interactive=bool(files.get(k))) for k in DOWNLOADS}}


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
    store = get_state().store()
    _, model, _, _ = filter_state(bench, model, None)
    return _safe("Hu & Levy's measures", lambda: hu_levy_view.explore_html(store, bench, model),
                 lambda msg: note(esc(msg), "warn"))


def climp_human_html(bench: str) -> str:
    """The CLiMP human baseline as it is published (an agreement figure only), said on the page."""
    if bench != "climp":
        return ""
    return note(esc(CLIMP_HUMAN_NOTE) + " It is in the overall table, labelled; the phenomenon figure has no "
                "human markers for CLiMP.", "info")


# ------------------------------------------------------------------------------------ links
def selection_from_query(params: dict) -> dict | None:
    """An Explore link's selection, checked against the store (unknown values fall back to the defaults),
    or None when the link is not an Explore link."""
    if not links.is_explore_link(params):
        return None
    raw = links.explore_values(params)
    bench = raw["bench"] if raw["bench"] in BENCHMARKS else "blimp"
    models, model, present, methods = filter_state(bench, raw["model"], raw["methods"])
    template = raw["template"] if raw["template"] in {v for _, v in TEMPLATE_CHOICES} else DEFAULT_TEMPLATE
    store = get_state().store()
    phen_choices = ["all"] + (sorted(set(store.units(model, bench).phenomenon)) if model else [])
    phenomenon = raw["phenomenon"] if raw["phenomenon"] in phen_choices else "all"
    return {"bench": bench, "model": model, "models": models, "present": present, "methods": methods,
            "template": template, "phenomenon": phenomenon, "phen_choices": phen_choices}


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
    wrong_method = methods[0] if methods and model else None
    return (gr.Tabs(selected="explore"), gr.update(value=sel["bench"]),
            gr.update(choices=[(model_label(m), m) for m in sel["models"]], value=model),
            gr.update(choices=[(display_name(m), m) for m in present], value=methods),
            gr.update(value=sel["template"]), gr.update(choices=sel["phen_choices"], value=sel["phenomenon"]),
            gr.update(choices=[(model_label(m), m) for m in sel["models"] if m != model], value=[]),
            gr.update(choices=[(display_name(m), m) for m in (present if model else [])], value=wrong_method), True)


def render_if_restored(restored, *inputs):
    """After demo.load: the views of a restored selection (nothing to do on a plain page load)."""
    if not restored:
        return {}
    return render_page(*inputs)


@dataclass
class ExploreTab:
    refresh_inputs: list
    refresh_outputs: list
    filters_inputs: list
    filters_outputs: list
    load_event: dict | None = None  # demo.load(**load_event).then(**then_event): an Explore link restored
    then_event: dict | None = None
    render: object = None  # render_page as a handler of refresh_outputs ({component: value})


def csv_button(name: str, label: str) -> gr.DownloadButton:
    """A download button for one table's or one figure's CSV (filled by render_page)."""
    return gr.DownloadButton(f"⬇ CSV: {label}", value=None, interactive=False, size="sm", elem_id=f"explore-csv-{name}")


def build(probe, tabs, probe_tab_id: str) -> ExploreTab:
    gr.HTML(intro(
        "Explore the benchmark results",
        "How each judgment method and model did on all of BLiMP or CLiMP: accuracy by phenomenon beside the human "
        "baseline, the effect of sentence length, paradigms, ensembles, and the pairs a method gets wrong. "
        "Published numbers from the papers are always labelled with their source."))
    with gr.Row():
        bench = gr.Radio(list(BENCHMARKS), value="blimp", label="Benchmark", scale=1, elem_id="explore-bench")
        model = gr.Dropdown([], value=None, label="Model (runs of this project)", scale=2, elem_id="explore-model")
        methods = gr.Dropdown([], value=[], multiselect=True, label="Methods", scale=3, elem_id="explore-methods")
        also = gr.Dropdown([], value=[], multiselect=True, label="Compare with models (phenomenon view)", scale=2,
                           elem_id="explore-also")
    with gr.Row():
        template = gr.Radio(TEMPLATE_CHOICES, value=DEFAULT_TEMPLATE, scale=3, elem_id="explore-template",
                            label="Template (methods with Ide et al.'s five templates)",
                            info="The best template is picked on the very pairs it is then scored on, so its accuracy "
                                 "is an upper bound (Ide et al. 2025), not an estimate for new pairs.")
        show_models = gr.Checkbox(value=False, label="Show published models too (BLiMP: GPT-2 large, TXL, LSTM, 5-gram)",
                                  scale=2)
        refresh_btn = gr.Button("↻ Reload results", scale=1, size="sm")
    with gr.Row():
        link = gr.Textbox("", label="Link to this selection", interactive=False, scale=5, elem_id="explore-link",
                          max_lines=1)
        copy_btn = gr.Button("🔗 Copy link", scale=1, size="sm", elem_id="explore-copy-link")
    status = gr.HTML("", elem_id="explore-status")
    gr.HTML(note(esc(CI_NOTE), "info"), elem_id="explore-ci-note")
    climp_note = gr.HTML("", elem_id="explore-climp-human")
    with gr.Tabs():
        with gr.Tab("By phenomenon"):
            phen_plot = gr.Plot(label="Accuracy by phenomenon", elem_id="explore-phenomenon")
            overall = gr.Dataframe(elem_classes=["acc-table"], label="Overall accuracy (mean over paradigms), ours and published",
                                   interactive=False, wrap=True, max_height=480, elem_id="explore-overall",
                                   column_widths=["14%", "15%", "9%", "8%", "10%", "6%", "38%"])
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
            para_phen = gr.Dropdown(["all"], value="all", label="Phenomenon")
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
                wrong_phen = gr.Dropdown(["all"], value="all", label="Phenomenon", scale=2,
                                         elem_id="explore-wrong-phenomenon")
                wrong_sort = gr.Dropdown(WRONG_SORTS, value="order", label="Sort", scale=2, elem_id="explore-wrong-sort")
            wrong_note = gr.HTML("")
            dl_wrong = csv_button("wrong-pairs", "wrong pairs, all of them (table)")
            wrong = gr.Dataframe(elem_classes=["acc-table"], headers=WRONG_COLUMNS, interactive=False, wrap=True,
                                 max_height=600, elem_id="explore-wrong",
                                 column_widths=["13%", "5%", "6%", "5%", "19%", "19%", "6%", "6%", "7%", "14%"])
        with gr.Tab("Hu & Levy's measures", elem_id="explore-hu-levy-tab") as hu_levy_tab:  # Hu & Levy 2023, Exp. 3a/3b
            hu_levy_html = gr.HTML("", elem_id="explore-hu-levy")
    wrong_state = gr.State(None)

    filters_inputs = [bench, model, methods, wrong_method, also]
    filters_outputs = [model, methods, wrong_method, also]
    refresh_inputs = [bench, model, methods, template, show_models, para_phen, wrong_method, also, wrong_text,
                      wrong_phen, wrong_sort]
    downloads = [dl_overall, dl_phen, dl_length, dl_para, dl_ens, dl_ab_ours, dl_ab, dl_shuffle, dl_attract, dl_wrong]
    by_name = dict(zip(DOWNLOADS, downloads))  # the list above is in DOWNLOADS' order
    views = {"status": status, "overall": overall, "phenomenon": phen_plot, "length": length_plot,
             "paradigm_phenomena": para_phen, "paradigm": para_plot, "ensembles_table": ens_tbl,
             "ensembles_figure": ens_plot, "ab_figure": ab_plot, "ab_table": ab_tbl, "shuffle": shuffle_plot,
             "attractors": attract_plot, "findings": findings, "wrong_note": wrong_note, "wrong": wrong,
             "wrong_state": wrong_state, "wrong_phenomena": wrong_phen,
             **{f"csv:{k}": by_name[k] for k in DOWNLOADS}}
    assert set(views) == set(VIEWS) | {f"csv:{k}" for k in DOWNLOADS}  # every view has its component
    refresh_outputs = list(views.values())
    page = by_component(render_page, views)
    hidden = dict(api_visibility="undocumented")
    for comp in (bench, model, methods):
        comp.input(update_filters, filters_inputs, filters_outputs, **hidden).then(
            page, refresh_inputs, refresh_outputs, **hidden)
    for comp in (template, show_models, para_phen, wrong_method, also, wrong_phen, wrong_sort):
        comp.input(page, refresh_inputs, refresh_outputs, **hidden)
    wrong_text.submit(page, refresh_inputs, refresh_outputs, **hidden)
    refresh_btn.click(update_filters, filters_inputs, filters_outputs, **hidden).then(
        page, refresh_inputs, refresh_outputs, **hidden)
    bench.change(climp_human_html, [bench], [climp_note], **hidden)
    # The selection in the page URL (history.replaceState, no reload) and the link box; only while the
    # Explore tab is shown, so the Probe tab's own link is left alone.
    gr.on([bench.change, model.change, methods.change, template.change, para_phen.change], None,
          [bench, model, methods, template, para_phen, link], [link], js=links.EXPLORE_URL_JS, **hidden)
    copy_btn.click(None, [link], None, js=links.COPY_LINK_JS, **hidden)
    # Hu & Levy's measures: apart from render (its outputs stay as they are)
    hu_levy_tab.select(hu_levy_section, [bench, model], [hu_levy_html], **hidden)
    status.change(hu_levy_section, [bench, model], [hu_levy_html], **hidden)

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
                                                              probe.model, tabs], **hidden).then(
        **probe.run_event)
    restored = gr.State(False)
    load_event = dict(fn=restore_from_link, inputs=None,
                      outputs=[tabs, bench, model, methods, template, para_phen, also, wrong_method, restored])
    then_event = dict(fn=by_component(render_if_restored, views), inputs=[restored, *refresh_inputs],
                      outputs=refresh_outputs)
    return ExploreTab(refresh_inputs, refresh_outputs, filters_inputs, filters_outputs, load_event, then_event, page)
