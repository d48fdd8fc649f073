"""A suite's predictions on region surprisals: pass or fail per item and prediction, the numbers
that decided it, and the suite's accuracy.

Counting (syntaxgym-core evaluates every prediction on every item, ``Suite.evaluate_predictions``;
Hu et al. 2020 publish one outcome per item, ``data/raw/sg_results``): an item passes when every
prediction of the suite holds on it, and the suite's accuracy is the share of its items that
pass. Each prediction's own accuracy (the share of items on which it holds) is given besides;
for a suite with one prediction, the two are the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import pandas as pd

from accapp.errors import UserError
from accapp.suites import formula as F
from accapp.suites.suite import MAX_PREDICTIONS, Prediction, Suite


@dataclass(frozen=True)
class Outcome:
    item: int
    prediction: int  # 0-based index among the predictions evaluated
    formula: str
    passed: bool
    values: tuple[tuple[str, float], ...]  # each region reference (text) and its value in bits, formula order


@dataclass(frozen=True)
class SuiteEvaluation:
    suite: str
    formulas: tuple[str, ...]
    outcomes: tuple[Outcome, ...]  # item-major, predictions in order

    @property
    def items(self) -> tuple[int, ...]:
        return tuple(dict.fromkeys(o.item for o in self.outcomes))

    @property
    def item_passed(self) -> dict[int, bool]:
        """Item number -> every prediction holds."""
        out: dict[int, bool] = {}
        for o in self.outcomes:
            out[o.item] = out.get(o.item, True) and o.passed
        return out

    @property
    def accuracy(self) -> float:
        """The share of items on which every prediction holds (NaN without items)."""
        passed = self.item_passed
        return sum(passed.values()) / len(passed) if passed else float("nan")

    @property
    def prediction_accuracy(self) -> tuple[float, ...]:
        """Per prediction, the share of items on which it holds."""
        out = []
        for k in range(len(self.formulas)):
            got = [o.passed for o in self.outcomes if o.prediction == k]
            out.append(sum(got) / len(got) if got else float("nan"))
        return tuple(out)

    def table(self) -> pd.DataFrame:
        """One row per item and prediction: item, prediction, formula, passed, values (dict)."""
        return pd.DataFrame([{"item": o.item, "prediction": o.prediction, "formula": o.formula, "passed": o.passed,
                              "values": dict(o.values)} for o in self.outcomes],
                            columns=["item", "prediction", "formula", "passed", "values"])


def predictions_for(suite: Suite, formulas=None) -> tuple[Prediction, ...]:
    """The suite's predictions, or the given formulas (text) parsed and checked against the suite."""
    if formulas is None:
        return suite.predictions
    out = []
    for k, text in enumerate([formulas] if isinstance(formulas, str) else list(formulas)):
        if isinstance(text, Prediction):
            out.append(Prediction(k, text.formula, text.tree))
            continue
        tree = F.parse(text)
        F.check_references(tree, suite.condition_names, suite.region_numbers, text)
        out.append(Prediction(k, text, tree))
    if len(out) > MAX_PREDICTIONS:
        raise UserError(f"{len(out)} formulas were given; at most {MAX_PREDICTIONS} are evaluated at once.")
    return tuple(out)


def evaluate_item(item_number: int, values: Mapping[tuple[str, int], float], predictions) -> list[Outcome]:
    """Each prediction on one item's region surprisals, values[(condition, region_number)] in bits."""
    out = []
    for p in predictions:
        seen: dict[str, float] = {}
        for ref in F.references(p.tree):
            try:
                seen.setdefault(str(ref), F.ref_value(ref, values))
            except KeyError:
                raise UserError(f"Item {item_number} has no surprisal for {ref} (prediction {p.index + 1}).") from None
        try:
            passed = bool(F.evaluate(p.tree, values))
        except UserError as exc:
            raise UserError(f"Item {item_number}, prediction {p.index + 1}: {exc}") from None
        out.append(Outcome(item_number, p.index, p.formula, passed, tuple(seen.items())))
    return out


def values_by_item(regions: pd.DataFrame) -> dict[int, dict[tuple[str, int], float]]:
    """{item: {(condition, region_number): surprisal_bits}} from score.py's long table."""
    out: dict[int, dict[tuple[str, int], float]] = {}
    for item, cond, number, bits in regions[["item", "condition", "region_number", "surprisal_bits"]].itertuples(index=False):
        out.setdefault(int(item), {})[(str(cond), int(number))] = float(bits)
    return out


def evaluate_suite(suite: Suite, regions, formulas=None) -> SuiteEvaluation:
    """The suite's predictions (or the given formulas) on every item of ``regions``: score.py's long
    table, or {item: {(condition, region_number): bits}}; items in the table's order."""
    values = values_by_item(regions) if isinstance(regions, pd.DataFrame) else regions
    predictions = predictions_for(suite, formulas)
    outcomes: list[Outcome] = []
    for item_number, item_values in values.items():
        outcomes.extend(evaluate_item(item_number, item_values, predictions))
    return SuiteEvaluation(suite.name, tuple(p.formula for p in predictions), tuple(outcomes))


def accuracy_of_outcomes(correct) -> float:
    """The suite accuracy from per-item outcomes (True/False per item, all predictions already
    combined), as Hu et al. 2020 publish them: the share of True."""
    values = [bool(c) for c in correct]
    return sum(values) / len(values) if values else float("nan")
