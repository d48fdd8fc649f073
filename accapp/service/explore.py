"""Explore's view model: for a selection (benchmark, model, methods, template), the named frames each
view of the tab shows, read from the DuckDB store (:mod:`accapp.store`) through the analyses
(:mod:`accapp.analysis`). The UI turns them into figures and components (:mod:`accapp.ui.explore`).

What differs between benchmarks (human baselines, published models, attractor paradigms, labels) comes
from the benchmark's descriptor (:mod:`accapp.benchmarks`), never from its name. Published numbers carry
their source in every frame; this project's carry the bootstrap interval's (:mod:`accapp.analysis.intervals`).
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from accapp import analysis as A
from accapp import settings
from accapp.analysis import hu_levy as H
from accapp.analysis import intervals as CI
from accapp.analysis import separation as SEP
from accapp.benchmarks import NAMES, describe
from accapp.benchmarks import label_of as _descriptor_label
from accapp.files import csv_bytes
from accapp.methods import display_name
from accapp.service import ratings as RATED
from accapp.service import units
from accapp.service.catalog import DEFAULT_MODEL, convention_label, presets, registry
from accapp.service.host import get_state
from accapp.service.plain import for_reader
from accapp.service.units import DEFAULT_UNIT

RATED_SETS = tuple(s for s in RATED.SETS if s not in NAMES)  # the rated sets of pairs (LI), shipped apart
BENCHMARKS = NAMES + RATED_SETS  # the picker: every descriptor of accapp/data/benchmarks.json, then the rated sets
KINDS = ("pairs", "sentences", "rated")  # where a benchmark's runs are: pair rows, single sentences, a rated set
PREFERRED = tuple(presets()["explore"])  # the first selection (accapp/methods/data/methods.json)
DEFAULT_TEMPLATE = "mean"  # Ide et al. 2025 Table 3 reports the mean over the five templates
WRONG_LIMIT = 500  # rows shown in the table (the CSV has every wrong row up to WRONG_FETCH)
WRONG_FETCH = 50_000  # wrong rows read from the store for sorting and filtering
WRONG_COLUMNS = ["Paradigm", "Pair", "Template", "Order", "Acceptable sentence", "Unacceptable sentence",
                 "Score: good", "Score: bad", "Margin (good − bad)", "Phenomenon"]
MARGIN = "Margin (good − bad)"  # in the method's own unit (nats for LP); the table shows it in bits (wrong_display)
CI_COLUMN = "95 % CI (%)"
CI_NOTE = ("Intervals: 95 % percentile bootstrap over pairs (1,000 resamples, seed 0; the overall accuracy "
           "resampled within each paradigm), this project's runs only; published numbers come without one.")
OURS = "this project; interval: " + CI.SOURCE  # the source of every frame of this project's runs
TIES_COLUMN = "Ties wrong (%)"  # the project's rule beside the papers', where it differs
OVERALL_COLUMNS = ["Model", "Method", "Template", "Accuracy (%)", CI_COLUMN, TIES_COLUMN, "Pairs", "Source"]
RULE_NOTE = ("Accuracy (%): the papers' rule (BLiMP, Ide et al. 2025, Kauf & Ivanova 2023), right when "
             "score(good) > score(bad), so it compares with their numbers. " + TIES_COLUMN + ": this project's rule, "
             "where it differs: ties, scores within the measured rounding of the method, count as wrong. "
             "Pairs whose two sentences are identical are left out of both.")
CSV_DIR_NAME = "accapp-explore-csv"
CSV_KEEP = 200  # CSV files kept in the folder; the oldest beyond this are removed on each write
HU_LEVY_COLUMNS = H.COLUMNS  # Hu & Levy's measures: column -> (label, source, meaning)
_NUM = re.compile(r"^[0-9]+$")


# ------------------------------------------------------------------------------------ the selection
@dataclass
class Selection:
    """A selection, checked against what the store holds (:func:`select`)."""

    bench: str
    model: str | None  # None: no run of this project on the benchmark (published numbers alone)
    models: list[str]  # models with a run on the benchmark
    present: list[str]  # methods the model's run has (or the papers report, with no run)
    methods: list[str]  # the chosen ones among them
    template: str = DEFAULT_TEMPLATE
    also: tuple = ()  # further models for the phenomenon view
    kind: str = "pairs"  # KINDS: pair rows in the store, single sentences in the store, or a rated set
    picked: str | None = None  # the model in the picker, whatever its run holds (``model``: a run of pairs only)
    asked: str | None = None  # the model asked for, when it has no run on this benchmark

    @property
    def label(self) -> str:
        return label_of(self.bench)

    @property
    def store(self):
        return get_state().store()


def label_of(bench: str) -> str:
    """A benchmark's or a rated set's name on screen ("BLiMP", "LI")."""
    return RATED.SHORT.get(bench, bench) if bench in RATED_SETS else _descriptor_label(bench)


def kind_of(bench: str) -> str:
    """Where a benchmark's runs are (KINDS): a rated set's in precomputed/ratings, single sentences' in the
    store's sentences view, pairs' in its results view."""
    if bench in RATED_SETS:
        return "rated"
    b = describe(bench)
    return "sentences" if b is not None and b.shape == "sentences" else "pairs"


def models_of(store, bench: str, kind: str | None = None) -> list[str]:
    """The models with a run on a benchmark, read from what is there (the files, not a list)."""
    kind = kind or kind_of(bench)
    if kind == "rated":
        return RATED.rated_models(bench)
    return store.sentence_models(bench) if kind == "sentences" else store.models(bench)


def methods_of(store, model: str, bench: str, kind: str | None = None) -> list[str]:
    """The methods of a model's run on a benchmark."""
    kind = kind or kind_of(bench)
    if kind == "rated":
        return RATED.run_methods(model, bench)
    return store.sentence_methods(model, bench) if kind == "sentences" else store.methods(model, bench)


def select(bench: str, model: str | None, methods: list[str] | None, template: str | None = None,
           also=None) -> Selection:
    """The selection normalised against the store: an unknown benchmark is the first, an unknown model the
    default one, unknown methods dropped (the preferred ones when none is left). ``model`` of the result is
    the model of a run of pairs in the store (None otherwise: single sentences, a rated set, or no run);
    ``picked`` the model in the picker whatever its run."""
    bench = bench if bench in BENCHMARKS else BENCHMARKS[0]
    store = get_state().store()
    kind = kind_of(bench)
    models = models_of(store, bench, kind)
    asked = model if isinstance(model, str) and model and model not in models else None
    if model not in models:
        model = default_model(store, bench, models)
    if model:
        present = methods_of(store, model, bench, kind)
    elif kind == "pairs":  # published numbers only: the methods the papers report for this benchmark
        present = sorted(set(A.published_ide_accuracy(store, bench).method))
    else:
        present = []
    methods = [m for m in (methods or []) if m in present]
    if not methods:
        methods = [m for m in PREFERRED if m in present] or present[:3]
    pairs_model = model if kind == "pairs" else None
    also = tuple(m for m in (also or []) if m in models and m != model) if pairs_model else ()
    return Selection(bench, pairs_model, models, present, methods, template or DEFAULT_TEMPLATE, also, kind, model,
                     asked)


def missing(sel: Selection) -> str:
    """Why the views made of pair rows (phenomena, length, paradigms, wrong pairs...) have nothing to show
    for a selection, in one plain sentence; '' when there is a run of pairs."""
    if sel.model:
        return ""
    if sel.kind == "sentences":
        return (f"{sel.label} has single sentences, not pairs: see Separation (Prediction 3) and Across datasets "
                "for its results.")
    if sel.kind == "rated":
        return (f"{sel.label} is a set of pairs rated by humans, shipped apart from the benchmark runs: see Human "
                "ratings and Separation (Prediction 3) for its results.")
    who = f" with {model_label(sel.asked)} or any other model" if sel.asked else " with any model"
    return f"No results shipped for {sel.label} yet{who}."


def default_model(store, bench: str, models: list[str]) -> str | None:
    """The app's default model when it has a run, else the model with the most result rows."""
    if not models:
        return None
    if DEFAULT_MODEL in models:
        return DEFAULT_MODEL
    if kind_of(bench) != "pairs":
        return models[0]
    cat = store.catalog()
    sizes = cat[cat.benchmark == bench].groupby("model")["n_rows"].sum()
    return str(sizes.sort_values(ascending=False, kind="stable").index[0]) if len(sizes) else models[0]


def model_label(model_id: str) -> str:
    spec = registry().get(model_id)
    return f"{spec.name} ({model_id})" if spec else model_id


def phenomena(sel: Selection) -> list[str]:
    """The phenomena of the selected run, for the filters ("all" first)."""
    return ["all"] + (sorted(set(sel.store.units(sel.model, sel.bench).phenomenon)) if sel.model else [])


def phenomenon_choices(sel: Selection) -> list[tuple[str, str]]:
    """The filters' choices: each phenomenon's words on screen, its id the value ("all" first)."""
    return [("all phenomena", "all")] + [(phenomenon_label(sel.bench, p), p) for p in phenomena(sel)[1:]]


def human_note(bench: str) -> str:
    """What a benchmark's human figure is, where it is not humans choosing between the two sentences."""
    b = describe(bench)
    return b.human.get("note", "") if b else ""


def phenomenon_label(bench: str, phenomenon: str) -> str:
    """A phenomenon's words on screen, from the benchmark's descriptor ("subject-verb agreement")."""
    b = describe(bench)
    return b.phenomenon_label(phenomenon) if b else str(phenomenon)


def published_models_label(bench: str) -> str:
    b = describe(bench)
    return b.published.get("models_label", "") if b else ""


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


def template_label(template: str) -> str:
    """How a template reads in tables: the best one says it is an upper bound."""
    t = str(template)
    return {"max": "max (best template, upper bound)"}.get(t, t)


def template_cell(template, view: str) -> str:
    """A template id as the overall table shows it: under the "best" view a picked (numbered) template
    says it was chosen on the same pairs, an upper bound."""
    t = str(template)
    return f"{t} (best: chosen on these pairs, upper bound)" if view == "best" and _NUM.match(t) else t


# ------------------------------------------------------------------------------------ CSV downloads
def csv_dir() -> Path:
    """The folder Explore's CSV files go to: under Gradio's temp folder (the app's private one)."""
    base = settings.gradio_temp_dir() or tempfile.gettempdir()
    return Path(base) / CSV_DIR_NAME


def prune(folder: Path, keep: int = CSV_KEEP) -> None:
    """Remove all but the ``keep`` most recently written CSV files (the folder stays bounded)."""
    files = sorted(folder.glob("*.csv"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in files[keep:]:
        try:
            old.unlink()
        except OSError:
            pass


# How a CSV writes each column: counts as integers, and numbers to the precision the page shows them at.
COUNT_COLUMNS = {"paradigms", "pairs", "ties", "n", "n_good", "n_bad", "strings", "sentences", "human_pairs",
                 "human_ties", "Pairs", "len_diff", "n_templates", "participants", "row"}
CSV_DIGITS = {"accuracy": 1, "ci_low": 1, "ci_high": 1, "human_accuracy": 1, "share_A": 1, "Accuracy (%)": 1,
              "accuracy_ci_low": 1, "accuracy_ci_high": 1, "point_biserial_r": 3, "r": 3, "p_value": 4,
              "auc": 3, "auc_ci_low": 3, "auc_ci_high": 3}
DEFAULT_DIGITS = 4  # any other number (scores and margins, as the wrong pairs' table shows them)


def csv_frame(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` as a CSV writes it: a count column (COUNT_COLUMNS, or one named "...: pairs") as whole numbers,
    a column of percentages (its name says "%" or names a model's accuracy) to 0.1, other numbers to
    CSV_DIGITS or DEFAULT_DIGITS decimals."""
    out = df.copy()
    for col in out.columns:
        name = str(col)
        values = out[col]
        counts = name in COUNT_COLUMNS or name.endswith(": pairs")
        if values.dtype == bool or not (pd.api.types.is_numeric_dtype(values) or (counts and values.dtype == object)):
            continue  # text (ids, templates, labels) as it is; a count may come as objects (None where none)
        numbers = pd.to_numeric(values, errors="coerce")
        if numbers.notna().sum() < values.notna().sum():
            continue  # numbers mixed with text: as it is
        if counts:
            whole = numbers.dropna()
            if (whole == whole.round()).all():
                out[col] = numbers.round().astype("Int64")
                continue
        if pd.api.types.is_integer_dtype(numbers) or not pd.api.types.is_numeric_dtype(numbers):
            continue
        digits = CSV_DIGITS.get(name)
        if digits is None:
            digits = 1 if ("%" in name or "(this project)" in name or "et al." in name) else DEFAULT_DIGITS
        out[col] = numbers.round(digits)
    return out


def write_csv(df: pd.DataFrame | None, name: str, folder: Path | None = None) -> str | None:
    """Write ``df`` as the app's CSV (accapp.files.csv_bytes: formula cells neutralised, UTF-8 with a
    BOM; counts whole and numbers rounded as shown, csv_frame) atomically (a temp file renamed into
    place); the file is named by its content, so the same table is written once. None for no data."""
    if df is None or df.empty:
        return None
    folder = folder or csv_dir()
    folder.mkdir(parents=True, exist_ok=True)
    data = csv_bytes(csv_frame(df))
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


# ------------------------------------------------------------------------------------ the status line
def run_facts(sel: Selection) -> dict | None:
    """What the status line says of the selected run (None: no run): pairs, paradigms, how much of the
    benchmark it covers, where it ran, when, its convention, rescorings, and unreadable files."""
    if sel.model is None:
        return None
    store = sel.store
    man = store.manifest(sel.model, sel.bench)
    units = store.units(sel.model, sel.bench)
    per = man.get("per_paradigm_by_method") or {}
    coverage = ""
    if man.get("whole_benchmark"):  # every method on every pair (scripts/gpu/merge_full.py checked it)
        coverage = "every pair of the benchmark for every method, not a sample"
    elif per:  # runs of several sizes merged: some methods on every pair, the others on a seeded sample
        coverage = _sizes(per, _whole_methods(sel, man, units), man.get("seed", 0))
        coverage += _paradigms_short(man, len(units))
    elif man.get("per_paradigm"):
        coverage = f"a sample of {int(man['per_paradigm'])} pairs per paradigm (seed {man.get('seed', 0)})"
    regenerated = []
    for regen in man.get("regenerated", []):
        what = regen.get("methods")
        what = ", ".join(what) if isinstance(what, list) else str(what)
        why = for_reader(regen.get("reason", ""))  # the records' shorthand in words (service/plain.py)
        regenerated.append(f"rescored {str(regen.get('date', ''))[:10]}: {what}" + (f" ({why})" if why else ""))
    pending = [f"{', '.join(later.get('methods', []))}: {for_reader(later.get('why', ''))}"
               for later in man.get("pending", [])]
    found = describe(sel.bench)
    return {"model": model_label(sel.model), "benchmark": sel.label, "pairs": int(units.pairs.sum()),
            "paradigms": len(units), "coverage": coverage,
            "paradigms_total": int(found.counts.get("paradigms") or 0) if found is not None else 0,
            "ran_on": f"{man['gpu']} in {man.get('dtype') or 'fp32'}" if man.get("gpu") else "",
            "finished": str(man.get("finished") or "")[:10],
            # Which details follow the papers' code (README "What is scored, exactly"); older runs are the default.
            "convention": convention_label(man.get("convention")), "regenerated": regenerated, "pending": pending,
            "skipped": list(store.skipped_files or [])}


def _whole_methods(sel: Selection, manifest: dict, units: pd.DataFrame) -> set[str]:
    """The methods a run scored on every pair of each paradigm it has them in (not a sample): from the
    manifest's complete_paradigms_by_method; an older manifest without it, by the count of pairs against
    the benchmark's (its descriptor's) or, for a run of one's own file without a sample, the run's own."""
    complete, paradigms = manifest.get("complete_paradigms_by_method"), manifest.get("paradigms_by_method") or {}
    if complete is not None:
        return {m for m, k in complete.items() if k and k == paradigms.get(m)}
    found = describe(sel.bench)
    whole = int(found.counts["items"]) if found is not None and found.counts.get("items") else (
        int(units.pairs.sum()) if not manifest.get("per_paradigm") else None)
    return {m for m, n in (manifest.get("pairs_by_method") or {}).items() if whole and n >= whole}


def _sizes(per: dict, whole: set[str], seed) -> str:
    """What the methods of a run were scored on: every pair (whole: the methods scored on every pair of their
    paradigms), and for the others a seeded sample of at least so many pairs a paradigm."""
    every = sorted(m for m in per if m in whole)
    rest = {m: n for m, n in per.items() if m not in whole}
    if not rest:
        return "every pair for every method"
    lo, hi = min(rest.values()), max(rest.values())
    more = sorted(m for m, n in rest.items() if n == hi)
    sample = f"a seeded sample (seed {seed}) of at least {lo} pairs per paradigm"
    if not every:
        return f"{sample} for every method" + (f", {hi} for {', '.join(more)}" if lo != hi else "")
    return f"every pair for {', '.join(every)}; {sample} for every other method" + (
        f", {hi} for {', '.join(more)}" if lo != hi else "")


def _paradigms_short(manifest: dict, paradigms: int) -> str:
    """'; in_template_lp: 40 of the 67 paradigms' for the methods a run has in fewer paradigms than others
    (a sample shipped before it reached every paradigm); '' when every method covers every paradigm."""
    groups: dict[int, list[str]] = {}
    for method, k in sorted((manifest.get("paradigms_by_method") or {}).items()):
        if int(k) < paradigms:
            groups.setdefault(int(k), []).append(method)
    return "".join(f"; {', '.join(ms)}: {k} of the {paradigms} paradigms only" for k, ms in sorted(groups.items()))


def other_run_line(sel: Selection) -> str:
    """The status line of a run that is not of pairs in the store (single sentences, a rated set), plain
    text; '' for any other selection."""
    if not sel.picked or sel.model:
        return ""
    who = f"{model_label(sel.picked)} on {sel.label}: "
    if sel.kind == "sentences":
        cat = sel.store.sentence_catalog()
        n = cat[(cat.model == sel.picked) & (cat.benchmark == sel.bench)].sentences.max()
        return (who + f"{int(n):,} single sentences, each scored on its own, {len(sel.present)} measures. "
                + missing(sel))
    return who + f"{RATED.run_pairs(sel.picked, sel.bench):,} pairs with human ratings. " + missing(sel)


# ------------------------------------------------------------------------------------ the views' frames
def _runs(sel: Selection, models, fn, keys, **kw) -> list[pd.DataFrame]:
    """One analysis over several models, each with the selected methods it has (others left out)."""
    out = []
    for m in models:
        have = [x for x in sel.methods if x in sel.store.methods(m, sel.bench)]
        if have:
            out.append(by_template(fn, sel.store, m, sel.bench, have, sel.template, keys, **kw))
    return out


def overall_table(sel: Selection) -> pd.DataFrame:
    """Overall accuracy: this project's runs with their intervals, the benchmark's human baseline and Ide
    et al.'s published numbers for the selected methods, each row with its source (OVERALL_COLUMNS)."""
    store, bench, template = sel.store, sel.bench, sel.template
    parts = []
    if sel.model:
        for ours in _runs(sel, [sel.model, *sel.also], A.accuracy_overall, []):
            m = str(ours.model.iloc[0]) if len(ours) else sel.model
            have = [x for x in sel.methods if x in store.methods(m, bench)]
            ours = with_intervals(ours, CI.overall_intervals(store, m, bench, have, template), [])
            finished = store.manifest(m, bench).get("finished", "")
            src = "this project" + (f", run finished {finished[:10]}" if finished else "") + "; interval: " + CI.SOURCE
            tmpl = [template_cell(t, template) for t in ours.template]
            parts.append(pd.DataFrame({"Model": m, "Method": ours.method.map(display_name), "Template": tmpl,
                                       "Accuracy (%)": ours.accuracy.round(1),
                                       CI_COLUMN: [ci_label(lo, hi) for lo, hi in zip(ours.ci_low, ours.ci_high)],
                                       TIES_COLUMN: tie_aware_cells(sel, m, have, ours),
                                       "Pairs": ours.pairs, "Source": src}))
    hum = A.published_human(store, bench, "overall")
    if not hum.empty:
        what = hum.measure if "measure" in hum else "human judgment"
        parts.append(pd.DataFrame({"Model": "humans", "Method": what, "Template": "-",
                                   "Accuracy (%)": hum.accuracy.round(1), CI_COLUMN: "", TIES_COLUMN: "", "Pairs": None,
                                   "Source": hum.source}))
    pub = A.published_ide_accuracy(store, bench)
    if not pub.empty and sel.methods:
        pub = pub[pub.method.isin(sel.methods) & pub.template.isin(["-", "mean", "max"])]
        parts.append(pd.DataFrame({"Model": pub.model, "Method": pub.method.map(display_name),
                                   "Template": pub.template.map(template_label), "Accuracy (%)": pub.accuracy.round(1),
                                   CI_COLUMN: "", TIES_COLUMN: "", "Pairs": None, "Source": pub.source}))
    parts = [p for p in parts if not p.empty]
    if not parts:
        return pd.DataFrame(columns=OVERALL_COLUMNS)
    return pd.concat(parts, ignore_index=True)[OVERALL_COLUMNS]


def tie_aware_cells(sel: Selection, model: str, methods: list[str], ours: pd.DataFrame) -> list[str]:
    """Each row of ``ours`` (accuracy by the papers' rule, in the selection's template view): the
    project's tie-aware accuracy where it differs at the shown precision, else ''."""
    tied = by_template(A.accuracy_overall, sel.store, model, sel.bench, methods, sel.template, [], rule=A.TIES)
    tied = tied.set_index(["method", "template"]).accuracy.round(1)
    out = []
    for method, template, acc in zip(ours.method, ours.template, ours.accuracy.round(1)):
        t = tied.get((method, template))
        out.append("" if t is None or t == acc else f"{t:.1f}")
    return out


def published_for_phenomena(sel: Selection, show_models: bool) -> pd.DataFrame:
    """The benchmark's published numbers by phenomenon: humans, and with ``show_models`` its paper's models
    and the PLL numbers of the selected methods (long format, each with its source)."""
    store, bench = sel.store, sel.bench
    parts = [A.published_human(store, bench, "phenomenon")]
    if show_models:
        parts.append(A.published_models(store, bench, "phenomenon"))
        kauf = A.published_kauf(store, bench, "phenomenon")
        parts.append(kauf[kauf.method.isin(sel.methods)])
    parts = [p[A.LONG_COLUMNS] for p in parts if not p.empty]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=A.LONG_COLUMNS)


def phenomenon_frames(sel: Selection, show_models: bool, sink: dict | None = None):
    """(ours, published) accuracy by phenomenon: the selected models' runs with intervals, and the
    published numbers. ``sink`` gets the figure's data for its CSV."""
    ours = None
    if sel.model:
        runs = _runs(sel, [sel.model, *sel.also], A.accuracy_by_phenomenon, ["phenomenon"])
        runs = [with_intervals(r, CI.phenomenon_intervals(sel.store, str(r.model.iloc[0]), sel.bench,
                                                          sorted(set(r.method)), sel.template), ["phenomenon"])
                for r in runs if len(r)]
        ours = pd.concat(runs, ignore_index=True) if runs else pd.DataFrame()
    pub = published_for_phenomena(sel, show_models)
    if sink is not None:
        mine = ours.assign(source=OURS) if ours is not None and len(ours) else None
        parts = [f for f in (mine, pub) if f is not None and len(f)]
        sink["accuracy-by-phenomenon"] = pd.concat(parts, ignore_index=True) if parts else None
    return (ours if ours is not None else pd.DataFrame()), pub


def length_frames(sel: Selection, sink: dict | None = None):
    """(accuracy by token-length difference, length bias, published bias): the first two None with no run."""
    pub = A.published_ide_length_bias(sel.store, sel.bench)
    if not sel.model:
        return None, None, pub
    store, model, bench, methods, template = sel.store, sel.model, sel.bench, sel.methods, sel.template
    by_len = by_template(A.accuracy_by_length, store, model, bench, methods, template, ["len_diff", "label"], clip=4)
    by_len = with_intervals(by_len, CI.length_intervals(store, model, bench, methods, template, clip=4), ["len_diff"])
    bias = by_template(A.length_bias, store, model, bench, methods, template, [])
    if sink is not None:
        sink["accuracy-by-length"] = by_len.assign(source=OURS)
    return by_len, bias, pub


def paradigm_frames(sel: Selection, phenomenon: str | None, sink: dict | None = None):
    """(accuracy per paradigm with intervals, the humans' per paradigm where published), or None with no run."""
    if not sel.model:
        return None
    store, model, bench, methods, template = sel.store, sel.model, sel.bench, sel.methods, sel.template
    df = by_template(A.accuracy_by_paradigm, store, model, bench, methods, template, ["paradigm", "phenomenon"])
    if phenomenon and phenomenon != "all":
        df = df[df.phenomenon == phenomenon]
    df = with_intervals(df, CI.paradigm_intervals(store, model, bench, methods, template), ["paradigm"])
    if sink is not None:
        sink["accuracy-by-paradigm"] = df.assign(source=OURS)
    human = A.published_human(store, bench, "paradigm")
    if not human.empty:
        human = human[human.paradigm.isin(set(df.paradigm))]
    return df, human


ENSEMBLE_ORDER = ["p_only", "mix_p3", "mix_l3", "l_only", "in_template_lp_oracle", "yes_no_prob_comp_oracle"]


def setting_label(setting: str) -> str:
    """An ensemble setting in words, as Ide et al.'s Table 5 names it: "Ensemble Mix-P3", or a method's
    oracle, "In-template LP: best template (oracle)"; an unknown id as it is."""
    method, template = A.IDE_SETTING_METHOD.get(setting, (None, None))
    if method is None:
        return str(setting)
    return f"{display_name(method)}: best template (oracle)" if template == "max" else display_name(method)


def ensemble_frames(sel: Selection):
    """(table, ours): the ensembles and oracles, this project's (with intervals) beside Ide et al.'s
    Table 5 / 13, one row per setting; ``ours`` empty with no run of this project."""
    store, bench, model = sel.store, sel.bench, sel.model
    pub = A.published_ide_ensembles(store, bench)
    table = pd.DataFrame()
    if not pub.empty:
        table = pub.pivot_table(index="setting", columns="model", values="accuracy", aggfunc="first")
        table.columns = [f"{c} (Ide et al. 2025)" for c in table.columns]
    ours = A.ensembles(store, model, bench) if model else pd.DataFrame()
    if not ours.empty:
        ours = ensemble_intervals(sel, ours)
        mine = ours.set_index("setting")[["accuracy", "ci_low", "ci_high", "pairs"]]
        mine = pd.DataFrame({f"{model} (this project)": mine.accuracy,
                             f"{model}: {CI_COLUMN}": [ci_label(lo, hi) for lo, hi in zip(mine.ci_low, mine.ci_high)],
                             f"{model}: pairs": mine.pairs}, index=mine.index)
        table = mine.join(table, how="outer") if not table.empty else mine
    if table.empty:
        return pd.DataFrame({"setting": []}), ours
    order = ENSEMBLE_ORDER
    table = table.reindex([s for s in order if s in table.index] + [s for s in table.index if s not in order])
    table = table.round(1).reset_index().rename(columns={"index": "setting"})
    # the settings in words; the figure's axis too
    table["setting"] = table.setting.map(setting_label)
    if not ours.empty:
        ours = ours.assign(setting=ours.setting.map(setting_label))
    return table, ours


def ensemble_intervals(sel: Selection, ours: pd.DataFrame) -> pd.DataFrame:
    """The ensembles' rows with the interval of each setting's overall accuracy (its method, its template)."""
    rows = []
    for method, template in zip(ours.method, ours.template):
        ci = CI.overall_intervals(sel.store, sel.model, sel.bench, [method], str(template))
        rows.append(ci.iloc[0][["pairs", *CI.CI_COLUMNS]] if len(ci) else pd.Series(
            {"pairs": None, "ci_low": float("nan"), "ci_high": float("nan")}))
    return pd.concat([ours.reset_index(drop=True), pd.DataFrame(rows).reset_index(drop=True)], axis=1)


AB_ORDERS = {"good=A": "acceptable sentence is A", "good=B": "acceptable sentence is B", "both": "both orders"}


def ab_frames(sel: Selection, sink: dict | None = None):
    """(ours, published): the share of 'A' answers by template and order (None without an A/B run), and
    Ide et al.'s Table 12 shares (benchmark, model, share_A, source)."""
    pub = A.published_ide_ab_share(sel.store, sel.bench)
    if not sel.model or A.AB_METHOD not in sel.store.methods(sel.model, sel.bench):
        return None, pub
    df = A.ab_prompting(sel.store, sel.model, sel.bench)
    df = df.assign(order=df.variant.map(AB_ORDERS))
    if sink is not None:
        sink["ab-share"] = df.assign(source="this project")
    return df, pub


def _with_humans(sel: Selection, df: pd.DataFrame, key: str) -> pd.DataFrame:
    keep = [c for c in (key, "accuracy", "pairs", "ci_low", "ci_high") if c in df]
    parts = [df[keep].assign(group=[f"{display_name(m)} [{t}]" if t not in ("-", "") else display_name(m)
                                    for m, t in zip(df.method, df.template)])]  # the legend: method names
    if "human_accuracy" in df and df.human_accuracy.notna().any():
        b = describe(sel.bench)
        h = df.drop_duplicates(key)[[key, "human_accuracy"]].rename(columns={"human_accuracy": "accuracy"})
        parts.append(h.assign(group=b.human.get("label", "Humans (published)") if b else "Humans (published)"))
    return pd.concat(parts, ignore_index=True)


SHUFFLE_KINDS = {True: "word-shuffling paradigms", False: "other paradigms"}


def shuffle_frame(sel: Selection, sink: dict | None = None) -> pd.DataFrame | None:
    """Word-shuffling paradigms against the rest, with intervals and the humans' mean where published,
    one row per bar (``group``); None with no run."""
    if not sel.model:
        return None
    store, model, bench, methods, template = sel.store, sel.model, sel.bench, sel.methods, sel.template
    df = by_template(A.paradigm_type_summary, store, model, bench, methods, template, ["word_shuffling"])
    if df.empty:
        return df
    df = df.assign(kind=df.word_shuffling.map(SHUFFLE_KINDS))
    flags = A.word_shuffling_paradigms(store, model, bench)
    kinds = dict(zip(flags.paradigm, flags.word_shuffling.map(SHUFFLE_KINDS)))
    ci = CI.grouped_paradigm_intervals(store, model, bench, methods, template, kinds, "kind")
    df = with_intervals(df.drop(columns="pairs"), ci, ["kind"])
    if sink is not None:
        sink["word-shuffling"] = df.assign(source=OURS)
    return _with_humans(sel, df, "kind")


def attractor_frame(sel: Selection, sink: dict | None = None) -> pd.DataFrame | None:
    """Subject-verb agreement by attractor type, one row per bar; None when the benchmark groups no
    paradigms by attractor or there is no run."""
    groups = A.attractors(sel.bench)
    if not sel.model or not groups:
        return None
    store, model, bench, methods, template = sel.store, sel.model, sel.bench, sel.methods, sel.template
    df = by_template(A.sv_agreement_by_attractor, store, model, bench, methods, template, ["attractor"])
    if df.empty:
        return df
    ci = CI.grouped_paradigm_intervals(store, model, bench, methods, template, groups, "attractor")
    df = with_intervals(df.drop(columns="pairs"), ci, ["attractor"])
    if sink is not None:
        sink["sv-agreement-by-attractor"] = df.assign(source=OURS)
    return _with_humans(sel, df, "attractor")


def findings(sel: Selection) -> pd.DataFrame:
    """Ide et al. 2025's text figures for the word-order and attractor views of this benchmark."""
    f = A.published_ide_findings(sel.store)
    if f.empty:
        return f
    return f[(f.benchmark == sel.bench) & f.subset.str.contains("shuffling|other_paradigms|attractor", regex=True)]


def wrong_pairs(sel: Selection, method: str | None) -> pd.DataFrame:
    """Every pair judgment ``method`` gets wrong (or ties) in the selected run, up to WRONG_FETCH (WRONG_COLUMNS)."""
    if not sel.model or not method:
        return pd.DataFrame(columns=WRONG_COLUMNS)
    store, model, bench, template = sel.store, sel.model, sel.bench, sel.template
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


def wrong_display(df: pd.DataFrame, bench: str, method: str | None, unit: str = DEFAULT_UNIT) -> pd.DataFrame:
    """The wrong pairs as the table shows them: scores and margins in the page's unit (log-probabilities
    in bits, as the Probe's default; P(Yes) and shares as they are), the unit in each header, and each
    phenomenon in words. The frame behind it (and its CSV) keeps the ids and the method's own unit."""
    if df.empty or not method:
        return df
    u = units.unit_label(method, unit)
    conv = lambda col: [round(units.in_unit(float(v), method, unit), 4) for v in df[col]]  # noqa: E731
    out = df.assign(**{"Score: good": conv("Score: good"), "Score: bad": conv("Score: bad"),
                       MARGIN: conv(MARGIN), "Phenomenon": [phenomenon_label(bench, p) for p in df["Phenomenon"]]})
    return out.rename(columns={"Score: good": f"Score: good ({u})", "Score: bad": f"Score: bad ({u})",
                               MARGIN: f"Margin: good − bad ({u})"})


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


def hu_levy_measures(sel: Selection) -> pd.DataFrame | None:
    """Hu & Levy 2023's own measures of the run's metalinguistic prompts, one row per prompt (columns:
    HU_LEVY_COLUMNS, name, note); None with no run."""
    return H.measures(sel.store, sel.model, sel.bench) if sel.model else None


# ------------------------------------------------------------------------------------ Prediction 3 and the datasets side by side
SEPARATION_SOURCE = "this project; interval: " + SEP.INTERVAL_SOURCE
SEPARATION_COLUMNS = ["model", "benchmark", "metric", "measure", "strings", "n_good", "n_bad", "auc", "auc_ci_low",
                      "auc_ci_high", "source"]
CROSS_COLUMNS = ["model", "benchmark", "dataset", "metric", "measure", "accuracy", "accuracy_ci_low", "accuracy_ci_high",
                 "pairs", "accuracy_over", "auc", "auc_ci_low", "auc_ci_high", "strings", "source"]
SEPARATION_NOTE = (
    "Separation (Hu et al. 2025 §6.3, Prediction 3): every sentence of the dataset pooled, the acceptable ones "
    "one class and the unacceptable the other, and the ROC AUC of one measure's scores (scikit-learn): the chance "
    "that an acceptable sentence drawn at random scores above an unacceptable one, a tie counting one half. "
    "0.5 is no separation, 1 a perfect one. Interval: " + SEP.INTERVAL_SOURCE + ". A shipped run's intervals "
    "are read from the summary made beside its results; any other run's are computed the first time it is shown (a "
    "bootstrap over every sentence: for a whole benchmark, a while), then kept.")


def separation_of(store, model: str, bench: str, kind: str | None = None) -> pd.DataFrame:
    """Separation AUC with its interval for every per-string measure of a model's run on a benchmark
    (SEP.INTERVAL_COLUMNS; empty when the run has none), computed once and kept until the files change."""
    kind = kind or kind_of(bench)

    def compute():
        if kind == "rated":
            return SEP.intervals_of(RATED.pooled_scores(model, bench, SEP.SEPARATION_METRICS), model, bench)
        if kind == "pairs" and not set(SEP.SEPARATION_METRICS) & set(store.methods(model, bench)):
            return pd.DataFrame(columns=SEP.INTERVAL_COLUMNS)
        return SEP.separation_intervals(store, model, bench)

    return store.kept(("separation", kind, model, bench), compute)


def _measure_order(metrics) -> list[str]:
    """The measures in the order of Hu et al. 2025 §6.1 as this project lists them (SEPARATION_METRICS)."""
    known = [m for m in SEP.SEPARATION_METRICS if m in set(metrics)]
    return known + sorted(set(metrics) - set(known))


def separation_frame(sel: Selection, sink: dict | None = None) -> pd.DataFrame | None:
    """The selected run's separation AUC per measure with its interval (SEPARATION_COLUMNS), every measure it
    has a score of each sentence for; None with no run (``missing`` says why)."""
    if not sel.picked:
        return None
    df = separation_of(sel.store, sel.picked, sel.bench, sel.kind)
    if df.empty:
        return pd.DataFrame(columns=SEPARATION_COLUMNS)
    df = df.set_index("metric").loc[_measure_order(df.metric)].reset_index()
    out = pd.DataFrame({"model": df.model, "benchmark": df.benchmark, "metric": df.metric,
                        "measure": df.metric.map(display_name), "strings": df.strings, "n_good": df.n_good,
                        "n_bad": df.n_bad, "auc": df.auc, "auc_ci_low": df.ci_low, "auc_ci_high": df.ci_high,
                        "source": SEPARATION_SOURCE})[SEPARATION_COLUMNS]
    if sink is not None:
        sink["separation-auc"] = out
    return out


def no_separation(sel: Selection) -> str:
    """Why the separation view is empty for a selection with a run, in a sentence."""
    return (f"{model_label(sel.picked)}'s run on {sel.label} has no measure that scores each sentence on its own "
            f"(the LP family: {', '.join(display_name(m) for m in SEP.SEPARATION_METRICS)}), so its sentences cannot "
            "be pooled.")


def cross_models() -> list[str]:
    """Every model with a run on any benchmark or rated set, the app's default first."""
    store = get_state().store()
    found = sorted({m for b in BENCHMARKS for m in models_of(store, b)})
    return sorted(found, key=lambda m: m != DEFAULT_MODEL)


def published_hu2025() -> dict:
    """Hu et al. 2025's stated numbers (accapp/data/hu2025_published.json): references, datasets."""
    from accapp.analysis.published import hu2025

    return hu2025()


def _accuracy_rows(store, model: str, bench: str, kind: str) -> pd.DataFrame:
    """Within-pair accuracy of the per-string measures of a run, with intervals: metric, accuracy,
    accuracy_ci_low, accuracy_ci_high, pairs, accuracy_over."""
    cols = ["metric", "accuracy", "accuracy_ci_low", "accuracy_ci_high", "pairs", "accuracy_over"]
    if kind == "sentences":
        return pd.DataFrame(columns=cols)
    if kind == "rated":
        rows = []
        for metric, good, bad in RATED.pooled_scores(model, bench, SEP.SEPARATION_METRICS):
            right = (good > bad).astype(float)  # the papers' rule: right when score(good) > score(bad)
            lo, hi = CI.interval_of_mean(right)
            rows.append({"metric": metric, "accuracy": 100 * right.mean(), "accuracy_ci_low": lo, "accuracy_ci_high": hi,
                         "pairs": len(right), "accuracy_over": "mean over pairs"})
        return pd.DataFrame(rows, columns=cols)
    have = [m for m in SEP.SEPARATION_METRICS if m in store.methods(model, bench)]
    if not have:
        return pd.DataFrame(columns=cols)
    acc = by_template(A.accuracy_overall, store, model, bench, have, DEFAULT_TEMPLATE, [])
    acc = with_intervals(acc, CI.overall_intervals(store, model, bench, have, DEFAULT_TEMPLATE), [])
    return pd.DataFrame({"metric": acc.method, "accuracy": acc.accuracy, "accuracy_ci_low": acc.ci_low,
                         "accuracy_ci_high": acc.ci_high, "pairs": acc.pairs,
                         "accuracy_over": "mean over paradigms"}, columns=cols)


def _dataset_label(store, model: str, bench: str, kind: str) -> str:
    """A dataset's name, and for a run of pairs on only some of its paradigms how many ('SCaMP-P (38 of 67
    paradigms)'): a run shipped part way reads as part of the dataset, not the whole."""
    label = label_of(bench)
    found = describe(bench)
    total = found.counts.get("paradigms") if found is not None and kind == "pairs" else None
    have = len(store.units(model, bench)) if total else 0
    return f"{label} ({have} of {total} paradigms)" if total and have < total else label


def cross_dataset_frame(model: str | None, sink: dict | None = None) -> pd.DataFrame:
    """For one model, each dataset it has a run on and each measure of the LP family: within-pair accuracy
    (Prediction 1) and separation AUC (Prediction 3), each with its interval (CROSS_COLUMNS; accuracy empty
    for single sentences). Read from what the results folders hold, not from a list."""
    store = get_state().store()
    parts = []
    for bench in BENCHMARKS:
        kind = kind_of(bench)
        if model not in models_of(store, bench, kind):
            continue
        auc = separation_of(store, model, bench, kind)
        auc = auc.rename(columns={"ci_low": "auc_ci_low", "ci_high": "auc_ci_high"})[
            ["metric", "auc", "auc_ci_low", "auc_ci_high", "strings"]]
        acc = _accuracy_rows(store, model, bench, kind)
        both = acc.merge(auc, on="metric", how="outer") if len(acc) else auc.assign(
            **{c: float("nan") for c in ("accuracy", "accuracy_ci_low", "accuracy_ci_high", "pairs")}, accuracy_over="")
        if both.empty:
            continue
        both = both.set_index("metric").loc[_measure_order(both.metric)].reset_index()
        parts.append(both.assign(model=model, benchmark=bench, dataset=_dataset_label(store, model, bench, kind),
                                 measure=both.metric.map(display_name), source=SEPARATION_SOURCE.replace(
                                     "interval:", "intervals: accuracy, " + CI.SOURCE + "; AUC,")))
    out = pd.concat(parts, ignore_index=True)[CROSS_COLUMNS] if parts else pd.DataFrame(columns=CROSS_COLUMNS)
    if sink is not None:
        sink["across-datasets"] = out
    return out
