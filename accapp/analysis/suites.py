"""Test-suite results (SyntaxGym, accapp/suites/): accuracy per suite and per circuit, with 95 %
bootstrap intervals over items and the published GPT-2's accuracy beside them.

The files are the runner's consolidated ones (accapp/runner/suites.py), by default in
``precomputed/suites``: ``<model>__<collection>.manifest.json`` names its ``regions`` and
``outcomes`` Parquet files. An item passes when every prediction of its suite holds on it; a
suite's accuracy is the share of its items that pass; a circuit's is the mean of its suites'
accuracies over the suites of the paper's figures, and "SG score" the mean over all of those
(catalog.circuit_accuracies, as Hu et al. 2020 average them). Accuracies are fractions in [0, 1],
as the paper's.

Intervals: the percentile bootstrap of accapp/analysis/intervals.py (1,000 resamples, seed 0): a
suite's resamples its items; a circuit's resamples the items within each of its suites (the
suites are fixed by the design, the items within them are the sample).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from accapp.analysis.intervals import SOURCE as INTERVAL_SOURCE
from accapp.analysis.intervals import interval_of_mean, interval_of_mean_of_means
from accapp.errors import UserError
from accapp.suites import catalog

DEFAULT_DIR = Path(__file__).resolve().parents[2] / "precomputed" / "suites"
COLLECTION = "syntaxgym2020"  # the shipped suites' collection (accapp/runner/suites.py)
PUBLISHED_MODEL = "gpt-2-pretrained__0"  # GPT-2 (117M) as released, Hu et al. 2020's "GPT-2*"
INTERVALS = INTERVAL_SOURCE.replace("over pairs", "over items")
SUITE_COLUMNS = ["suite", "name", "circuit", "in_paper_figures", "items", "predictions", "accuracy", "ci_low",
                 "ci_high", "prediction_accuracy", "published_gpt2"]
CIRCUIT_COLUMNS = ["circuit", "suites", "items", "accuracy", "ci_low", "ci_high", "published_gpt2"]


def _folder(folder) -> Path:
    path = Path(folder) if folder is not None else DEFAULT_DIR
    if folder is not None and not path.is_dir():
        raise UserError(f"Suite results folder not found: {str(folder)[:200]}")
    return path


def manifests(folder=None, collection: str = COLLECTION) -> dict[str, dict]:
    """{model: manifest} of the consolidated suite results in the folder."""
    out = {}
    path = _folder(folder)
    for p in sorted(path.glob(f"*__{collection}.manifest.json")) if path.is_dir() else []:
        m = json.loads(p.read_text(encoding="utf-8"))
        m["_dir"] = str(p.parent)
        out[m["model"]] = m
    return out


def models(folder=None, collection: str = COLLECTION) -> list[str]:
    return sorted(manifests(folder, collection))


def _manifest(model: str | None, folder, collection: str) -> dict:
    found = manifests(folder, collection)
    if model is None:
        if len(found) != 1:
            raise UserError(f"Give --model; models with suite results: {', '.join(sorted(found)) or 'none'}.")
        model = next(iter(found))
    if model not in found:
        raise UserError(f"No suite results for {str(model)[:80]!r}; models with suite results: "
                        f"{', '.join(sorted(found)) or 'none'} (run `accapp bench --suite all --model M`).")
    return found[model]


def read(model: str | None = None, kind: str = "outcomes", folder=None, collection: str = COLLECTION) -> pd.DataFrame:
    """A model's consolidated ``regions`` (model, suite, item, condition, region_number, region_name,
    content, surprisal_bits) or ``outcomes`` (model, suite, item, prediction, formula, passed, values)."""
    m = _manifest(model, folder, collection)
    return pd.read_parquet(Path(m["_dir"]) / m["files"][kind])


def item_outcomes(outcomes: pd.DataFrame) -> pd.DataFrame:
    """suite, item, passed: every prediction of the suite holds on the item."""
    return outcomes.groupby(["suite", "item"], sort=False)["passed"].all().reset_index()


def _published_by_suite() -> pd.Series:
    pub = catalog.published_accuracies(PUBLISHED_MODEL)
    return pub.set_index("suite")["accuracy"]


def published_label() -> str:
    pub = catalog.published_accuracies(PUBLISHED_MODEL)
    return f"{pub['label'].iloc[0]} ({pub['source'].iloc[0]})"


def suite_table(model: str | None = None, folder=None, outcomes: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per suite (SUITE_COLUMNS): items, predictions, accuracy with its 95 % interval, each
    prediction's own accuracy, and the published GPT-2's accuracy on the suite."""
    outcomes = read(model, "outcomes", folder) if outcomes is None else outcomes
    info = catalog.circuits()["suites"]
    published = _published_by_suite()
    items = item_outcomes(outcomes)
    rows = []
    for suite, group in items.groupby("suite", sort=True):
        passed = group["passed"].astype(float).to_numpy()
        lo, hi = interval_of_mean(passed)
        per_pred = outcomes[outcomes["suite"] == suite].groupby("prediction")["passed"].mean()
        c = info.get(suite, {})
        try:
            name = catalog.load_suite(suite).meta.get("name", suite)
        except UserError:  # a user's suite, not shipped
            name = suite
        rows.append({"suite": suite, "name": name, "circuit": c.get("circuit"),
                     "in_paper_figures": bool(c.get("in_paper_figures", False)), "items": len(group),
                     "predictions": len(per_pred), "accuracy": float(passed.mean()), "ci_low": lo / 100, "ci_high": hi / 100,
                     "prediction_accuracy": [float(x) for x in per_pred.to_numpy()],
                     "published_gpt2": float(published[suite]) if suite in published.index else None})
    return pd.DataFrame(rows, columns=SUITE_COLUMNS)


def circuit_table(model: str | None = None, folder=None, outcomes: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per circuit of the paper, then "SG score" (CIRCUIT_COLUMNS): the mean of its suites'
    accuracies, its 95 % interval (items resampled within each suite), and the published GPT-2's."""
    outcomes = read(model, "outcomes", folder) if outcomes is None else outcomes
    suites = suite_table(outcomes=outcomes)
    ours = catalog.circuit_accuracies(suites[["suite", "circuit", "in_paper_figures", "accuracy"]])
    pub = catalog.circuit_accuracies(catalog.published_accuracies(PUBLISHED_MODEL)).set_index("circuit")["accuracy"]
    items = item_outcomes(outcomes)
    shown = suites[suites["in_paper_figures"] & suites["circuit"].notna()]
    rows = []
    for r in ours.itertuples(index=False):
        members = shown["suite"] if r.circuit == "SG score" else shown.loc[shown["circuit"] == r.circuit, "suite"]
        groups = [items.loc[items["suite"] == s, "passed"].astype(float).to_numpy() for s in members]
        lo, hi = interval_of_mean_of_means(groups)
        rows.append({"circuit": r.circuit, "suites": int(r.suites), "items": int(sum(len(g) for g in groups)),
                     "accuracy": float(r.accuracy), "ci_low": lo / 100, "ci_high": hi / 100,
                     "published_gpt2": float(pub[r.circuit]) if r.circuit in pub.index else None})
    return pd.DataFrame(rows, columns=CIRCUIT_COLUMNS)
