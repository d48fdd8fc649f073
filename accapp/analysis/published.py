"""The papers' numbers in one long format, to stand beside the project's own runs.

Every function returns the columns of ``LONG_COLUMNS``:

  benchmark, model, method, template, phenomenon, paradigm, accuracy, source

- accuracy is always in percent (fractions in the source files are multiplied by 100);
- ``template``: "-" for a method without templates; for Ide et al.'s template methods the
  statistic over their 5 templates: "mean", "sd", "max" (Tables 3, 11);
- ``level`` picks the grain: "overall" (phenomenon = "overall", paradigm = None),
  "phenomenon" (paradigm = None) or "paradigm";
- ``source`` names the paper and table (or the repository file), from the shipped data.

Computed aggregates say so in their source: BLiMP's per-phenomenon and overall numbers for
its models and for humans are means over paradigms of the per-paradigm results files (the
human overall, 88.555, is BLiMP's 88.6).

:func:`ours_long` puts a run of this project in the same format (source "this project").
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

import pandas as pd

from accapp.analysis.accuracy import accuracy_by_paradigm, accuracy_by_phenomenon, accuracy_overall
from accapp.benchmarks import describe
from accapp.errors import UserError
from accapp.store import Store

DATA = Path(__file__).resolve().parent.parent / "data"  # published numbers that ship as CSV (a benchmark's descriptor names the file)

LONG_COLUMNS = ["benchmark", "model", "method", "template", "phenomenon", "paradigm", "accuracy", "source"]
LEVELS = ("overall", "phenomenon", "paradigm")
IDE_SETTING_METHOD = {
    "p_only": ("ens_p_only", "-"), "mix_p3": ("ens_mix_p3", "-"), "mix_l3": ("ens_mix_l3", "-"),
    "l_only": ("ens_l_only", "-"), "in_template_lp_oracle": ("in_template_lp", "max"),
    "yes_no_prob_comp_oracle": ("yes_no_prob_comp", "max"),
}


def _level(level: str) -> str:
    if level not in LEVELS:
        raise UserError(f"Unknown level {level!r}; one of {', '.join(LEVELS)}.")
    return level


def _empty() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype="float64" if c == "accuracy" else "str") for c in LONG_COLUMNS})


def _need(store: Store, *names: str) -> bool:
    return all(store.has_published(n) for n in names)


def published_ide_accuracy(store: Store, benchmark: str | None = None) -> pd.DataFrame:
    """Ide et al. 2025 Tables 3 and 11, overall accuracy per model x method (BLiMP and CLiMP).

    LONG_COLUMNS plus ``significant_vs_lp`` (Table 3's * marks; NA where none was given).
    template: "-" (lp, mean_lp, pen_lp), "mean", "sd" (percentage points), "max".
    """
    if not _need(store, "ide2025_accuracy"):
        return _empty().assign(significant_vs_lp=pd.Series(dtype="boolean"))
    sql = """SELECT benchmark, model, method,
                    CASE statistic WHEN 'single' THEN '-' WHEN 'mean_over_templates' THEN 'mean'
                         WHEN 'sd_over_templates' THEN 'sd' WHEN 'max_over_templates' THEN 'max' ELSE statistic END AS template,
                    'overall' AS phenomenon, CAST(NULL AS VARCHAR) AS paradigm, value AS accuracy, source, significant_vs_lp
             FROM published_ide2025_accuracy WHERE $benchmark IS NULL OR benchmark = $benchmark
             ORDER BY benchmark, model, method, template"""
    return store.query(sql, {"benchmark": benchmark})


def published_ide_ensembles(store: Store, benchmark: str | None = None) -> pd.DataFrame:
    """Ide et al. 2025 Tables 5 / 13: ensembles and oracles (best template, template "max").

    LONG_COLUMNS plus ``setting`` (p_only, mix_p3, mix_l3, l_only, in_template_lp_oracle,
    yes_no_prob_comp_oracle, as :func:`accapp.analysis.accuracy.ensembles`) and ``in_table_5``.
    """
    if not _need(store, "ide2025_ensembles"):
        return _empty().assign(setting=pd.Series(dtype="str"), in_table_5=pd.Series(dtype="bool"))
    sql = """SELECT e.benchmark, e.model, m.method, m.template, 'overall' AS phenomenon, CAST(NULL AS VARCHAR) AS paradigm,
                    e.value AS accuracy, e.source, e.setting, contains(e.source, 'Table 5') AS in_table_5
             FROM published_ide2025_ensembles e
             JOIN (SELECT unnest($settings) AS setting, unnest($methods) AS method, unnest($templates) AS template) m
               USING (setting)
             WHERE $benchmark IS NULL OR e.benchmark = $benchmark
             ORDER BY e.benchmark, e.model, list_position($settings, e.setting)"""
    settings = list(IDE_SETTING_METHOD)
    return store.query(sql, {"benchmark": benchmark, "settings": settings,
                             "methods": [IDE_SETTING_METHOD[s][0] for s in settings],
                             "templates": [IDE_SETTING_METHOD[s][1] for s in settings]})


def published_ide_length_bias(store: Store, benchmark: str | None = None) -> pd.DataFrame:
    """Ide et al. 2025 Table 4: benchmark, method, point_biserial_r (averaged over models), source."""
    if not _need(store, "ide2025_length_bias"):
        return pd.DataFrame(columns=["benchmark", "method", "point_biserial_r", "source"])
    return store.query("SELECT benchmark, method, point_biserial_r, source FROM published_ide2025_length_bias "
                       "WHERE $benchmark IS NULL OR benchmark = $benchmark ORDER BY benchmark, method",
                       {"benchmark": benchmark})


def published_ide_ab_share(store: Store, benchmark: str | None = None) -> pd.DataFrame:
    """Ide et al. 2025 Table 12: benchmark, model, share_A (% "A" answers, mean over templates), source."""
    if not _need(store, "ide2025_ab_share"):
        return pd.DataFrame(columns=["benchmark", "model", "share_A", "source"])
    return store.query("SELECT benchmark, model, percent_A AS share_A, source FROM published_ide2025_ab_share "
                       "WHERE $benchmark IS NULL OR benchmark = $benchmark ORDER BY benchmark, model",
                       {"benchmark": benchmark})


def published_ide_findings(store: Store) -> pd.DataFrame:
    """Ide et al. 2025 §5-6 text figures (word-shuffling, attractors, human 88.6), as shipped."""
    if not _need(store, "ide2025_findings"):
        return pd.DataFrame(columns=["benchmark", "quantity", "subset", "method", "model", "value", "unit", "source"])
    return store.query("SELECT * FROM published_ide2025_findings")


def published_kauf(store: Store, benchmark: str, level: str = "phenomenon") -> pd.DataFrame:
    """Kauf & Ivanova 2023's PLL numbers (method = pll_*) for BERT/RoBERTa, for a benchmark whose
    descriptor names them (BLiMP): overall and phenomenon from Table 3 as printed (overall also Table 1);
    paradigm from the notebook's per-paradigm scores behind it. The Human row of Table 3 is left out
    (see :func:`published_human`)."""
    level = _level(level)
    pub = _published(benchmark)
    if level == "paradigm":
        table, mapping = pub.get("pll_by_paradigm"), pub.get("paradigms")
        if not table or not _need(store, table):
            return _empty()
        mapping = (f"SELECT paradigm, phenomenon FROM published_{mapping}" if mapping and _need(store, mapping)
                   else "SELECT CAST(NULL AS VARCHAR) AS paradigm, CAST(NULL AS VARCHAR) AS phenomenon WHERE false")
        sql = f"""SELECT $benchmark AS benchmark, k.model, k.metric AS method, '-' AS template,
                        coalesce(p.phenomenon, '') AS phenomenon, k.paradigm, 100 * k.accuracy AS accuracy, k.source
                 FROM published_{table} k LEFT JOIN ({mapping}) p USING (paradigm)
                 ORDER BY k.model, k.metric, k.paradigm"""
        return store.query(sql, {"benchmark": benchmark})
    table = pub.get("pll")
    if not table or not _need(store, table):
        return _empty()
    sql = f"""SELECT $benchmark AS benchmark, model, metric AS method, '-' AS template, phenomenon,
                    CAST(NULL AS VARCHAR) AS paradigm, value AS accuracy, source
             FROM published_{table}
             WHERE model <> 'human' AND (phenomenon = 'overall') = $overall
             ORDER BY model, metric, phenomenon"""
    return store.query(sql, {"overall": level == "overall", "benchmark": benchmark})


def _published(benchmark: str) -> dict:
    """A built-in benchmark's own published tables (its descriptor); {} for any other."""
    b = describe(benchmark)
    return b.published if b else {}


def _per_paradigm_sql(store: Store, benchmark: str) -> str | None:
    """SQL (no parameters) of a benchmark's published models and humans per paradigm, in percent."""
    b = describe(benchmark)
    parts = []
    models = (b.published.get("models") if b else None)
    if models and _need(store, models):
        parts.append("SELECT model, 'lp' AS method, paradigm, phenomenon, 100 * accuracy AS accuracy, source "
                     f"FROM published_{models}")
    human = b.human.get("table") if b and b.human.get("kind") == "per_paradigm" else None
    if human and _need(store, human):
        parts.append("SELECT 'human' AS model, 'human' AS method, paradigm, phenomenon, 100 * human_accuracy AS accuracy, "
                     f"source FROM published_{human}")
    return " UNION ALL ".join(parts) if parts else None


def _per_paradigm_level(store: Store, benchmark: str, level: str, models: Iterable[str] | None) -> pd.DataFrame:
    level = _level(level)
    per = _per_paradigm_sql(store, benchmark)
    if per is None:
        return _empty()
    models = None if models is None else list(models)
    where = "WHERE $models IS NULL OR list_contains($models, model)"
    if level == "paradigm":
        sql = f"""SELECT $benchmark AS benchmark, model, method, '-' AS template, phenomenon, paradigm, accuracy, source
                  FROM ({per}) {where} ORDER BY model, paradigm"""
    elif level == "phenomenon":
        sql = f"""SELECT $benchmark AS benchmark, model, method, '-' AS template, phenomenon, CAST(NULL AS VARCHAR) AS paradigm,
                         avg(accuracy) AS accuracy, any_value(source) || '; mean over the phenomenon''s paradigms' AS source
                  FROM ({per}) {where} GROUP BY model, method, phenomenon ORDER BY model, phenomenon"""
    else:
        sql = f"""SELECT $benchmark AS benchmark, model, method, '-' AS template, 'overall' AS phenomenon,
                         CAST(NULL AS VARCHAR) AS paradigm, avg(accuracy) AS accuracy,
                         any_value(source) || '; mean over the ' || count(*) || ' paradigms' AS source
                  FROM ({per}) {where} GROUP BY model, method ORDER BY model"""
    return store.query(sql, {"models": models, "benchmark": benchmark})


def published_models(store: Store, benchmark: str, level: str = "phenomenon") -> pd.DataFrame:
    """The models a benchmark's own paper scored (BLiMP, Warstadt et al. 2020: 5-gram (ngram), LSTM
    (lstm), Transformer-XL (txl), GPT-2 large (gpt2_large)), method "lp" (full-sentence comparison),
    per paradigm / phenomenon / overall; empty for a benchmark whose descriptor names none."""
    ids = _published(benchmark).get("model_ids")
    return _per_paradigm_level(store, benchmark, level, ids) if ids else _empty()


def published_human(store: Store, benchmark: str, level: str = "phenomenon") -> pd.DataFrame:
    """A benchmark's published human baseline, model and method "human", as its descriptor says it is
    published. per_paradigm (BLiMP: Warstadt et al. 2020 validation, majority of 20 raters): phenomenon
    and overall are means over paradigms (overall 88.555). overall (CLiMP: Xiang et al. 2021's 95.8 %
    agreement with the labels, a validation, not a forced choice as BLiMP's): one overall row, plus
    ``measure``, and nothing at the finer levels."""
    level = _level(level)
    b = describe(benchmark)
    kind = b.human.get("kind") if b else None
    if kind == "per_paradigm":
        return _per_paradigm_level(store, benchmark, level, ["human"])
    if kind == "overall" and level == "overall":
        return pd.read_csv(DATA / b.human["file"], dtype={"paradigm": "str"})
    return _empty()


def published_accuracy(store: Store, benchmark: str, level: str = "phenomenon") -> pd.DataFrame:
    """Every published number for a benchmark at one level, in LONG_COLUMNS: the PLL rows, the
    benchmark paper's models and humans (as its descriptor has them), and (overall level only) Ide et
    al.'s per-method mean / sd / max / single values and ensembles."""
    level = _level(level)
    parts = [published_kauf(store, benchmark, level), published_models(store, benchmark, level),
             published_human(store, benchmark, level)[LONG_COLUMNS]]
    if level == "overall":
        parts.append(published_ide_accuracy(store, benchmark)[LONG_COLUMNS])
        ens = published_ide_ensembles(store, benchmark)
        parts.append(ens[ens.method.str.startswith("ens_")][LONG_COLUMNS])
    parts = [p for p in parts if not p.empty]
    if not parts:
        return _empty()
    return pd.concat(parts, ignore_index=True)[LONG_COLUMNS]


def ours_long(store: Store, model: str, benchmark: str, level: str = "phenomenon",
              methods: Iterable[str] | str | None = None, template: str | None = "best") -> pd.DataFrame:
    """A run of this project in LONG_COLUMNS (source "this project, <finished date>"), plus pairs and ties."""
    level = _level(level)
    if level == "overall":
        df = accuracy_overall(store, model, benchmark, methods, template)
        df["phenomenon"], df["paradigm"] = "overall", None
    elif level == "phenomenon":
        df = accuracy_by_phenomenon(store, model, benchmark, methods, template)
        df["paradigm"] = None
    else:
        df = accuracy_by_paradigm(store, model, benchmark, methods, template)
    finished = store.manifest(model, benchmark).get("finished", "")
    df["source"] = "this project" + (f", run finished {finished[:10]}" if finished else "")
    return df[LONG_COLUMNS + ["pairs", "ties"]]


# ------------------------------------------------------------------------------------ Hu et al. 2025
HU2025 = DATA / "hu2025_published.json"  # what its text and Table 1a state for predictions 1 and 3


def hu2025() -> dict:
    """Hu et al. 2025's stated numbers: {"references": [...], "datasets": [...]}, each record with its
    source (accapp/data/hu2025_published.json)."""
    import json

    raw = json.loads(HU2025.read_text(encoding="utf-8"))
    return {"references": raw["references"], "datasets": raw["datasets"]}
