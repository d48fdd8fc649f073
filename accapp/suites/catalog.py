"""The shipped test suites (assets/suites/, made by scripts/convert_suites.py): Hu et al. (2020)'s
34 SyntaxGym suites, their circuits, and the published models' accuracies on them."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pandas as pd

from accapp.errors import UserError
from accapp.suites.suite import Suite, read_suite

ASSETS = Path(__file__).resolve().parents[2] / "assets" / "suites"
_ID = re.compile(r"[A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class SuiteInfo:
    id: str
    name: str
    circuit: str | None  # None: the paper puts the suite in no circuit
    in_paper_figures: bool  # the paper's figures and SG score leave out fgd-embed3, fgd-embed4, nn-nv-rpl
    items: int
    conditions: int
    regions: int
    predictions: int


def _path(suite_id: str) -> Path:
    return ASSETS / "json" / f"{suite_id}.json.gz"


def suite_ids() -> list[str]:
    return sorted(p.name[: -len(".json.gz")] for p in (ASSETS / "json").glob("*.json.gz"))


@lru_cache(maxsize=1)
def circuits() -> dict:
    """circuits.json: {"source", "circuits" (the six, the paper's order), "suites": {id: {circuit, tag, in_paper_figures}}}."""
    return json.loads((ASSETS / "circuits.json").read_text(encoding="utf-8"))


@lru_cache(maxsize=64)
def load_suite(suite_id: str) -> Suite:
    """A shipped suite by id; an unknown id is a UserError listing the known ones."""
    if not isinstance(suite_id, str) or not _ID.fullmatch(suite_id) or not _path(suite_id).is_file():
        raise UserError(f"No shipped suite {str(suite_id)[:60]!r}; the suites are: {', '.join(suite_ids())}.")
    return read_suite(_path(suite_id), name=suite_id)


def list_suites() -> list[SuiteInfo]:
    """Every shipped suite, by id."""
    info = circuits()["suites"]
    out = []
    for sid in suite_ids():
        s = load_suite(sid)
        c = info.get(sid, {})
        out.append(SuiteInfo(sid, s.meta.get("name", sid), c.get("circuit"), bool(c.get("in_paper_figures", False)),
                             len(s.items), len(s.condition_names), len(s.region_names), len(s.predictions)))
    return out


@lru_cache(maxsize=1)
def _published() -> dict:
    return json.loads((ASSETS / "published.json").read_text(encoding="utf-8"))


def published_accuracies(model: str | None = None) -> pd.DataFrame:
    """Per published model and suite: model (key), label, model_name, corpus, seed, pretrained,
    suite, circuit, in_paper_figures, correct, items, accuracy, source. ``model``: one key (e.g.
    'gpt-2-pretrained__0', GPT-2 as released) or a model name (e.g. 'gpt-2-pretrained': every seed)."""
    pub, info = _published(), circuits()["suites"]
    rows = []
    for key, per_suite in pub["accuracy"].items():
        m = pub["models"][key]
        if model is not None and model not in (key, m["model"]):
            continue
        for suite, (correct, items) in per_suite.items():
            c = info.get(suite, {})
            rows.append({"model": key, "label": m["label"], "model_name": m["model"], "corpus": m["corpus"],
                         "seed": m["seed"], "pretrained": m["pretrained"], "suite": suite, "circuit": c.get("circuit"),
                         "in_paper_figures": bool(c.get("in_paper_figures", False)), "correct": correct, "items": items,
                         "accuracy": correct / items, "source": pub["source"]})
    if model is not None and not rows:
        known = sorted(pub["models"])
        raise UserError(f"No published model {str(model)[:60]!r}; the models are: {', '.join(known)}.")
    return pd.DataFrame(rows)


def circuit_accuracies(per_suite: pd.DataFrame, column: str = "accuracy") -> pd.DataFrame:
    """Per model (the "model" column, if any) and circuit, the mean of the suites' accuracies over
    the suites of the paper's figures, as the paper averages them; and "SG score", the mean over
    those suites. per_suite: rows with suite, circuit, in_paper_figures and ``column``."""
    df = per_suite[per_suite["in_paper_figures"] & per_suite["circuit"].notna()]
    keys = ["model"] if "model" in df.columns else []
    by_circuit = df.groupby(keys + ["circuit"], sort=False)[column].agg(["mean", "size"]).reset_index()
    overall = df.groupby(keys, sort=False)[column].agg(["mean", "size"]).reset_index() if keys else \
        pd.DataFrame([{"mean": df[column].mean(), "size": len(df)}])
    overall["circuit"] = "SG score"
    out = pd.concat([by_circuit, overall], ignore_index=True).rename(columns={"mean": column, "size": "suites"})
    order = {c: k for k, c in enumerate(circuits()["circuits"] + ["SG score"])}
    return out.sort_values(keys + ["circuit"], key=lambda s: s.map(order) if s.name == "circuit" else s).reset_index(drop=True)
