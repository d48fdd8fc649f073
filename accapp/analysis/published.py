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
from accapp.errors import UserError
from accapp.store import Store

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


def published_kauf(store: Store, level: str = "phenomenon") -> pd.DataFrame:
    """Kauf & Ivanova 2023, BLiMP with the four PLL metrics (method = pll_*) for BERT/RoBERTa.

    overall and phenomenon: Table 3 as printed (overall also Table 1); paradigm: the notebook's
    per-paradigm scores behind it. The Human row of Table 3 is left out (see :func:`published_human`).
    """
    level = _level(level)
    if level == "paradigm":
        if not _need(store, "kauf2023_blimp"):
            return _empty()
        mapping = ("SELECT paradigm, phenomenon FROM published_blimp_paradigms" if _need(store, "blimp_paradigms")
                   else "SELECT CAST(NULL AS VARCHAR) AS paradigm, CAST(NULL AS VARCHAR) AS phenomenon WHERE false")
        sql = f"""SELECT 'blimp' AS benchmark, k.model, k.metric AS method, '-' AS template,
                        coalesce(p.phenomenon, '') AS phenomenon, k.paradigm, 100 * k.accuracy AS accuracy, k.source
                 FROM published_kauf2023_blimp k LEFT JOIN ({mapping}) p USING (paradigm)
                 ORDER BY k.model, k.metric, k.paradigm"""
        return store.query(sql)
    if not _need(store, "kauf2023_blimp_overall"):
        return _empty()
    sql = """SELECT 'blimp' AS benchmark, model, metric AS method, '-' AS template, phenomenon,
                    CAST(NULL AS VARCHAR) AS paradigm, value AS accuracy, source
             FROM published_kauf2023_blimp_overall
             WHERE model <> 'human' AND (phenomenon = 'overall') = $overall
             ORDER BY model, metric, phenomenon"""
    return store.query(sql, {"overall": level == "overall"})


def _blimp_per_paradigm_sql(store: Store) -> str | None:
    """SQL (no parameters) of BLiMP's models and humans per paradigm, in percent."""
    parts = []
    if _need(store, "blimp2020_models"):
        parts.append("SELECT model, 'lp' AS method, paradigm, phenomenon, 100 * accuracy AS accuracy, source "
                     "FROM published_blimp2020_models")
    if _need(store, "blimp2020_human"):
        parts.append("SELECT 'human' AS model, 'human' AS method, paradigm, phenomenon, 100 * human_accuracy AS accuracy, "
                     "source FROM published_blimp2020_human")
    return " UNION ALL ".join(parts) if parts else None


def _blimp_level(store: Store, level: str, models: Iterable[str] | None) -> pd.DataFrame:
    level = _level(level)
    per = _blimp_per_paradigm_sql(store)
    if per is None:
        return _empty()
    models = None if models is None else list(models)
    where = "WHERE $models IS NULL OR list_contains($models, model)"
    if level == "paradigm":
        sql = f"""SELECT 'blimp' AS benchmark, model, method, '-' AS template, phenomenon, paradigm, accuracy, source
                  FROM ({per}) {where} ORDER BY model, paradigm"""
    elif level == "phenomenon":
        sql = f"""SELECT 'blimp' AS benchmark, model, method, '-' AS template, phenomenon, CAST(NULL AS VARCHAR) AS paradigm,
                         avg(accuracy) AS accuracy, any_value(source) || '; mean over the phenomenon''s paradigms' AS source
                  FROM ({per}) {where} GROUP BY model, method, phenomenon ORDER BY model, phenomenon"""
    else:
        sql = f"""SELECT 'blimp' AS benchmark, model, method, '-' AS template, 'overall' AS phenomenon,
                         CAST(NULL AS VARCHAR) AS paradigm, avg(accuracy) AS accuracy,
                         any_value(source) || '; mean over the ' || count(*) || ' paradigms' AS source
                  FROM ({per}) {where} GROUP BY model, method ORDER BY model"""
    return store.query(sql, {"models": models})


def published_blimp_models(store: Store, level: str = "phenomenon") -> pd.DataFrame:
    """Warstadt et al. 2020: BLiMP's 5-gram (ngram), LSTM (lstm), Transformer-XL (txl) and GPT-2
    large (gpt2_large), method "lp" (full-sentence comparison), per paradigm / phenomenon / overall."""
    return _blimp_level(store, level, ["ngram", "lstm", "txl", "gpt2_large"])


def published_human(store: Store, level: str = "phenomenon") -> pd.DataFrame:
    """BLiMP human baseline (Warstadt et al. 2020 validation, majority of 20 raters), model and
    method "human"; phenomenon and overall are means over paradigms (overall 88.555)."""
    return _blimp_level(store, level, ["human"])


CLIMP_HUMAN_FILE = Path(__file__).resolve().parent.parent / "data" / "climp2021_human.csv"


def published_climp_human() -> pd.DataFrame:
    """CLiMP's human figure (Xiang et al. 2021): agreement with the labels, 95.8 % over the benchmark, in
    LONG_COLUMNS plus ``measure``. It is the paper's only human number (the abstract's); a validation
    agreement, not humans choosing between the two sentences as BLiMP's 88.6 % is."""
    return pd.read_csv(CLIMP_HUMAN_FILE, dtype={"paradigm": "str"})


def published_accuracy(store: Store, benchmark: str = "blimp", level: str = "phenomenon") -> pd.DataFrame:
    """Every published number for a benchmark at one level, in LONG_COLUMNS.

    BLiMP: Kauf & Ivanova's PLL rows, BLiMP's models, humans, and (overall level only) Ide et
    al.'s per-method mean / sd / max / single values and ensembles. CLiMP: Ide et al. overall only.
    """
    level = _level(level)
    parts = []
    if benchmark == "blimp":
        parts += [published_kauf(store, level), published_blimp_models(store, level), published_human(store, level)]
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
