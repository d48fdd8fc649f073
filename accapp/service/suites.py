"""Explore's "SyntaxGym test suites" as plain data: this project's accuracy per suite and per circuit for
each model with suite results (95 % bootstrap intervals over items, accapp/analysis/suites.py), the
published pretrained models' accuracies beside them (Hu et al. 2020), and one suite's items with
their regions' surprisals. Accuracies are percents here (the analysis keeps fractions)."""

from __future__ import annotations

import pandas as pd

from accapp.analysis import suites as A
from accapp.suites import catalog

SOURCE = "Hu et al. 2020"
CI_NOTE = (f"Accuracy: the share of a suite's items on which every prediction holds; a circuit's is the mean of its "
           f"suites' (the paper's figures' suites), as Hu et al. 2020 average them. Brackets: {A.INTERVALS}; a "
           "circuit's resamples the items within each of its suites.")


def models() -> list[str]:
    return A.models()


def published_models() -> list[tuple[str, str]]:
    """(key, label) of the published pretrained models (GPT-2* as released, ...), the paper's order."""
    pub = catalog.published_accuracies()
    pub = pub[pub["pretrained"]]
    return list(dict.fromkeys(zip(pub["model"], pub["label"])))


def _pct(x) -> float | None:
    return None if x is None or pd.isna(x) else round(100 * float(x), 1)


def _with_ci(acc, lo, hi) -> str:
    if acc is None or pd.isna(acc):
        return "—"
    if lo is None or pd.isna(lo):
        return f"{100 * acc:.1f} %"
    return f"{100 * acc:.1f} % [{100 * lo:.1f}, {100 * hi:.1f}]"


def _published_by(level: str) -> dict[str, pd.Series]:
    out = {}
    for key, label in published_models():
        pub = catalog.published_accuracies(key)
        if level == "suite":
            out[label] = pub.set_index("suite")["accuracy"]
        else:
            out[label] = catalog.circuit_accuracies(pub).set_index("circuit")["accuracy"]
    return out


def suite_frame() -> tuple[pd.DataFrame, pd.DataFrame]:
    """(shown, data): one row per shipped suite, in the paper's circuit order. shown: Circuit, Suite, Items,
    then per model 'accuracy (95 % CI)' as text with its unit, then per published model its accuracy (%)
    labelled with its source. data: the numbers (suite, circuit, model, accuracy_pct, ci_low_pct,
    ci_high_pct, published: {label: pct})."""
    infos = {s.id: s for s in catalog.list_suites()}
    order = {c: k for k, c in enumerate(catalog.circuits()["circuits"])}
    ids = sorted(infos, key=lambda s: (order.get(infos[s].circuit, len(order)), s))
    ours = {m: A.suite_table(m).set_index("suite") for m in models()}
    pub = _published_by("suite")
    shown, data = [], []
    for sid in ids:
        info = infos[sid]
        row = {"Circuit": info.circuit or "none (not in the paper's figures)", "Suite": sid, "Items": info.items}
        for m, t in ours.items():
            r = t.loc[sid] if sid in t.index else None
            row[f"{m}: accuracy (95 % CI)"] = _with_ci(*(r[["accuracy", "ci_low", "ci_high"]] if r is not None else (None,) * 3))
            data.append({"suite": sid, "circuit": info.circuit, "model": m,
                         "accuracy_pct": _pct(r["accuracy"]) if r is not None else None,
                         "ci_low_pct": _pct(r["ci_low"]) if r is not None else None,
                         "ci_high_pct": _pct(r["ci_high"]) if r is not None else None})
        for label, s in pub.items():
            row[f"{label} ({SOURCE}), %"] = _pct(s.get(sid))
        shown.append(row)
    return pd.DataFrame(shown), pd.DataFrame(data)


def circuit_frame() -> tuple[pd.DataFrame, pd.DataFrame]:
    """(shown, data) per circuit and the SG score: each model's accuracy with its 95 % interval, and the
    published pretrained models' (Hu et al. 2020), in percent."""
    ours = {m: A.circuit_table(m).set_index("circuit") for m in models()}
    pub = _published_by("circuit")
    circuits = catalog.circuits()["circuits"] + ["SG score"]
    counts = catalog.circuit_accuracies(pd.DataFrame([{"suite": s.id, "circuit": s.circuit, "in_paper_figures":
                                                       s.in_paper_figures, "accuracy": 0.0}
                                                      for s in catalog.list_suites()])).set_index("circuit")["suites"]
    shown, data = [], []
    for c in circuits:
        row = {"Circuit": c, "Suites": int(counts.get(c, 0))}
        for m, t in ours.items():
            r = t.loc[c] if c in t.index else None
            row[f"{m}: accuracy (95 % CI)"] = _with_ci(*(r[["accuracy", "ci_low", "ci_high"]] if r is not None else (None,) * 3))
            data.append({"circuit": c, "model": m, "label": m, "source": "this project",
                         "accuracy_pct": _pct(r["accuracy"]) if r is not None else None,
                         "ci_low_pct": _pct(r["ci_low"]) if r is not None else None,
                         "ci_high_pct": _pct(r["ci_high"]) if r is not None else None})
        for label, s in pub.items():
            row[f"{label} ({SOURCE}), %"] = _pct(s.get(c))
            data.append({"circuit": c, "model": label, "label": f"{label} ({SOURCE})", "source": SOURCE,
                         "accuracy_pct": _pct(s.get(c)), "ci_low_pct": None, "ci_high_pct": None})
        shown.append(row)
    return pd.DataFrame(shown), pd.DataFrame(data)


def suite_items(suite_id: str, model: str) -> pd.DataFrame:
    """One suite's items for a model: one row per item and condition, whether the item passed (every
    prediction holds), the sentence, and each region's surprisal in bits (a column per region, named with
    its number, name and unit)."""
    suite = catalog.load_suite(suite_id)
    regions = A.read(model, "regions")
    outcomes = A.read(model, "outcomes")
    regions = regions[regions["suite"] == suite_id]
    passed = A.item_outcomes(outcomes[outcomes["suite"] == suite_id]).set_index("item")["passed"]
    cols = {n: f"{n} {suite.region_name(n)} (bits)" for n in suite.region_numbers}
    wide = regions.pivot_table(index=["item", "condition"], columns="region_number", values="surprisal_bits",
                               aggfunc="first").round(2).rename(columns=cols).reset_index()
    wide.columns.name = None
    sentence = {(it.item_number, c.name): c.sentence for it in suite.items for c in it.conditions}
    order = {(it.item_number, c.name): k for k, (it, c) in enumerate((it, c) for it in suite.items for c in it.conditions)}
    wide["Passed"] = ["✓ passed" if passed.get(i, False) else "✗ failed" for i in wide["item"]]
    wide["Sentence"] = [sentence.get((i, c), "") for i, c in zip(wide["item"], wide["condition"])]
    wide["_order"] = [order.get((i, c), 0) for i, c in zip(wide["item"], wide["condition"])]
    wide = wide.sort_values("_order").drop(columns="_order").rename(columns={"item": "Item", "condition": "Condition"})
    return wide[["Item", "Condition", "Passed", "Sentence", *[cols[n] for n in suite.region_numbers]]].reset_index(drop=True)


def suite_ids() -> list[str]:
    return catalog.suite_ids()
