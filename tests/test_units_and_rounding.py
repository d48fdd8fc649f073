"""Issue 34, items 7 and 9: every number with its own unit, rounded to what the data supports.
Fast: no model (hand-built scores and frames), values checked by hand."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from accapp.engine import PairResult
from accapp.files import csv_bytes
from accapp.methods.base import MethodScore
from accapp.scoring.api import Pair
from accapp.service import score_file as svc
from accapp.service import units

LN2 = math.log(2)


def test_each_method_gets_its_own_unit():
    # a log-probability difference of 2 ln 2 nats is exactly 2 bits
    assert units.with_unit(2 * LN2, "lp", "bits") == "+2 bits"
    assert units.with_unit(2 * LN2, "lp", "nats") == "+1.39 nats"
    assert units.with_unit(-0.5 * LN2, "mean_lp", "bits") == "-0.5 bits/token"
    # A/B's score is a log-probability too: in bits, with its unit (the "+0.00495" had none)
    assert units.with_unit(0.00495 * LN2, "ab_prompting", "bits") == "+0.00495 bits"
    # a probability and a share are never converted
    assert units.with_unit(0.12, "yes_no_prob_comp", "bits") == "+0.12 P(Yes)"
    assert units.with_unit(0.7, "ens_mix_p3", "bits") == "+0.7 share of draws"
    assert units.with_unit(float("nan"), "lp") == "" and units.with_unit(None, "lp") == ""
    assert units.file_unit("lp") == "nats" and units.file_unit("pen_lp") == "nats"
    assert units.file_unit("slor") == "nats/token" and units.file_unit("yes_no_prob_comp") == "P(Yes)"
    with pytest.raises(ValueError):
        units.in_unit(1.0, "lp", "bans")


def test_percent_rounded_to_what_the_count_supports():
    assert units.round_percent(200 / 3, 3) == 67  # 3 judgments: one more or less moves it 33 points
    assert units.round_percent(200 / 3, 12) == 66.7
    assert units.round_percent(100 * 7 / 9, 9) == 78 and units.round_percent(100 * 779 / 1000, 1000) == 77.9
    assert math.isnan(units.round_percent(float("nan"), 5))


def _result(good: str, bad: str) -> PairResult:
    scores = [MethodScore("lp", "-", -10.0, -12.5), MethodScore("mean_lp", "-", -2.0, -2.5),
              MethodScore("yes_no_prob_comp", "1", 0.61, 0.40)]
    return PairResult(Pair(good, bad), {"good": [], "bad": []}, scores, 5, 5)


def test_result_csv_names_its_units_and_has_a_bom():
    cols = svc.result_columns(_result("These casseroles disgust Kayla.", "These casseroles disgusts Kayla."))
    assert cols["lp: score_good (nats)"] == -10.0 and cols["lp: score_bad (nats)"] == -12.5
    assert cols["mean_lp: score_good (nats/token)"] == -2.0
    assert cols["yes_no_prob_comp [1]: score_bad (P(Yes))"] == 0.40
    assert cols["lp: verdict"] == "good"  # a verdict has no unit
    scored = [c for c in cols if ": score_" in c]
    assert scored and all(c.endswith(")") for c in scored)
    data = csv_bytes(pd.DataFrame([{"good": "桌子很干净。", "bad": "桌子很干净了吗。", **cols}]))
    assert data.startswith(b"\xef\xbb\xbf")  # Excel reads the Chinese right
    head = data.decode("utf-8-sig").splitlines()[0]
    assert "lp: score_good (nats)" in head


def test_phenomenon_summary_rounds_with_units():
    # 3 judgments of LP on "agreement", 2 right: 66.666...% -> 67 (whole percents under 10 judgments)
    long = pd.DataFrame({
        "row": [1, 2, 3], "phenomenon": ["agreement"] * 3, "pair": [0, 1, 2], "method": ["lp"] * 3,
        "template": ["-"] * 3, "variant": [""] * 3, "score_good": [-1.0, -2.0, -3.0], "score_bad": [-2.0, -1.0, -4.0],
        "verdict": ["good", "bad", "good"], "error": [""] * 3})
    out = svc.phenomenon_summary(long, ["lp"])
    assert list(out.columns) == svc.SUMMARY_COLUMNS and "accuracy_percent" in out.columns
    row = out.iloc[0]
    assert row["judgments"] == 3 and row["correct"] == 2 and row["accuracy_percent"] == 67
    text = csv_bytes(out).decode("utf-8-sig")
    assert "66.66" not in text and ",67" in text
    # twelve judgments, eight right: 66.7
    long12 = pd.concat([long] * 4, ignore_index=True).assign(pair=range(12), row=range(1, 13))
    assert svc.phenomenon_summary(long12, ["lp"]).iloc[0]["accuracy_percent"] == 66.7
