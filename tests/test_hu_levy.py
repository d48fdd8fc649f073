"""Hu & Levy 2023's own measures of the metalinguistic prompts (accapp.analysis.hu_levy): balanced
accuracy (Exp. 3a) and accuracy per answer order (Exp. 3b), hand-computed on a tiny results
table in a real DuckDB store over Parquet; the per-order answers kept in `prediction`; old runs
without them shown as missing, not zero; and the MetaPrompt rows' pairwise scores unchanged."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from accapp.analysis import hu_levy as H
from accapp.errors import UserError
from accapp.methods.base import Answers
from accapp.store import Store

MODEL, BENCH = "toy-lm", "blimp"

# 4 pairs in 2 paradigms (A: p1, p2; B: p3, p4). Per method: (judgment prediction, judgment
# correct, comparison prediction, comparison correct), pair by pair.
TABLE = {
    "meta_question_simple": [
        ("good:Yes bad:No", 1, "order1:1 order2:2", 1),  # all right
        ("good:Yes bad:Yes", 0, "order1:1 order2:1", 1),  # bad sentence judged Yes; order 2 wrong
        ("good:Yes bad:No", 1, "order1:1 order2:1", 0),  # order 2 wrong
        ("good:tie bad:Yes", 0, "order1:2 order2:tie", 0),  # a tie is no Yes (and no answer 2): wrong
    ],
    # always No; comparison rows of an old run: no per-order answers
    "meta_instruct": [("good:No bad:No", 0, "", 1), ("good:No bad:No", 0, "", 1),
                      ("good:No bad:No", 0, "", 1), ("good:No bad:No", 0, "", 0)],
    # per-order answers for the first two pairs only (a run resumed across the change)
    "meta_question_complex": [("good:Yes bad:Yes", 0, "order1:1 order2:2", 1), ("good:Yes bad:Yes", 0, "order1:2 order2:2", 0),
                              ("good:Yes bad:Yes", 0, "", 1), ("good:Yes bad:Yes", 0, "", 1)],
}


def _rows() -> pd.DataFrame:
    rows = []
    for i in range(4):
        base = dict(model=MODEL, benchmark=BENCH, paradigm="A" if i < 2 else "B", phenomenon="agr", pair_id=str(i),
                    variant="", good=f"good {i}", bad=f"bad {i}")
        rows.append(dict(base, method="lp", template="-", score_good=-1.0, score_bad=-2.0, correct=1.0, tie=False,
                         prediction="order1:2 order2:1"))  # not a meta prompt: never read
        for method, answers in TABLE.items():
            jp, jc, cp, cc = answers[i]
            rows.append(dict(base, method=method, template="judgment", score_good=-1.0, score_bad=-1.5,
                             correct=float(jc), tie=False, prediction=jp))
            rows.append(dict(base, method=method, template="comparison", score_good=-0.5, score_bad=-0.9,
                             correct=float(cc), tie=False, prediction=cp))
    return pd.DataFrame(rows)


@pytest.fixture()
def store(tmp_path):
    _rows().to_parquet(tmp_path / f"{MODEL}__{BENCH}.parquet", index=False)
    with Store(tmp_path) as s:
        yield s


# ------------------------------------------------------------------------------------------ answers
def test_answers_text_keeps_old_predictions_and_adds_the_orders():
    assert Answers(letter="A").text() == "A"
    assert Answers(good="Yes", bad="No").text() == "good:Yes bad:No"
    assert Answers(p_votes=2, l_votes=4).text() == "P votes 2/5, L votes 4/5"
    assert Answers().text() == ""
    assert Answers(order1="1", order2="tie").text() == "order1:1 order2:tie"


def test_parse_prediction():
    assert H.parse_prediction("good:Yes bad:No") == {"good": "Yes", "bad": "No", "order1": None, "order2": None}
    assert H.parse_prediction("order1:1 order2:2") == {"good": None, "bad": None, "order1": "1", "order2": "2"}
    assert H.parse_prediction("order1:tie order2:1")["order1"] == "tie"
    none = {"good": None, "bad": None, "order1": None, "order2": None}
    assert H.parse_prediction("") == none and H.parse_prediction(None) == none
    assert H.parse_prediction(float("nan")) == none


# ------------------------------------------------------------------------------------------ a whole run
def test_measures_hand_computed(store):
    df = H.measures(store, MODEL, BENCH).set_index("method")
    assert list(df.index) == list(H.META_METHODS)  # Hu & Levy's order; lp left out
    assert list(df.columns) == ["model", "benchmark", "name", *H.COLUMNS, "note"]

    s = df.loc["meta_question_simple"]
    assert (s.pairs, s.sentences, s.comparison_pairs) == (4, 8, 4)
    assert s.yes_rate_good == pytest.approx(75.0)  # Yes, Yes, Yes, tie
    assert s.no_rate_bad == pytest.approx(50.0)  # No, Yes, No, Yes
    assert s.balanced_accuracy == pytest.approx(62.5)  # (75 + 50) / 2
    assert s.judgment_pairwise == pytest.approx(50.0)
    assert s.order1 == pytest.approx(75.0)  # 1, 1, 1, 2
    assert s.order2 == pytest.approx(25.0)  # 2, 1, 1, tie
    assert s.both_orders == pytest.approx(50.0)
    assert s.comparison_pairwise == pytest.approx(50.0)
    assert s.note == ""

    i = df.loc["meta_instruct"]  # says No to everything: balanced accuracy is chance
    assert (i.yes_rate_good, i.no_rate_bad, i.balanced_accuracy) == (0.0, 100.0, 50.0)
    assert i.comparison_pairs == 0 and i.comparison_pairwise == pytest.approx(75.0)
    assert math.isnan(i.order1) and math.isnan(i.order2) and math.isnan(i.both_orders)  # missing, not 0
    assert "not recorded" in i.note

    c = df.loc["meta_question_complex"]
    assert c.balanced_accuracy == pytest.approx(50.0)  # Yes to everything: chance too
    assert c.comparison_pairs == 2 and c.order1 == pytest.approx(50.0) and c.order2 == pytest.approx(100.0)
    assert c.both_orders == pytest.approx(75.0) and c.comparison_pairwise == pytest.approx(75.0)
    assert "2 of 4 pairs" in c.note


def test_measures_by_paradigm(store):
    df = H.measures(store, MODEL, BENCH, by="paradigm")
    s = df[df.method == "meta_question_simple"].set_index("paradigm")
    assert s.loc["A"].yes_rate_good == 100.0 and s.loc["A"].no_rate_bad == 50.0 and s.loc["A"].balanced_accuracy == 75.0
    assert s.loc["B"].yes_rate_good == 50.0 and s.loc["B"].no_rate_bad == 50.0 and s.loc["B"].balanced_accuracy == 50.0
    assert (s.loc["A"].order1, s.loc["A"].order2, s.loc["B"].order1, s.loc["B"].order2) == (100.0, 50.0, 50.0, 0.0)
    assert set(df.phenomenon) == {"agr"}
    with pytest.raises(UserError):
        H.measures(store, MODEL, BENCH, by="pair_id; DROP VIEW results")


def test_old_run_without_prediction_column(tmp_path):
    """A results file written before `prediction` existed: judgment and per-order numbers missing, with notes."""
    _rows().drop(columns=["prediction"]).to_parquet(tmp_path / "old.parquet", index=False)
    with Store(tmp_path) as s:
        df = H.measures(s, MODEL, BENCH).set_index("method")
    q = df.loc["meta_question_simple"]
    assert q.sentences == 0 and math.isnan(q.balanced_accuracy) and q.judgment_pairwise == pytest.approx(50.0)
    assert q.comparison_pairs == 0 and math.isnan(q.order1) and math.isnan(q.both_orders)
    assert "not recorded" in q.note and "no Yes/No answers" in q.note


def test_run_without_meta_prompts(tmp_path):
    _rows().query("method == 'lp'").to_parquet(tmp_path / "lp.parquet", index=False)
    with Store(tmp_path) as s:
        df = H.measures(s, MODEL, BENCH)
        assert df.empty and "balanced_accuracy" in df.columns
        from accapp.ui import hu_levy_view

        assert "none of Hu &amp; Levy" in hu_levy_view.explore_html(df, H.COLUMNS, BENCH, MODEL)


def test_explore_html(store):
    from accapp.ui import hu_levy_view

    html = hu_levy_view.explore_html(H.measures(store, MODEL, BENCH), H.COLUMNS, BENCH, MODEL)
    assert "Balanced accuracy (%)" in html and "62.5" in html
    assert "Hu &amp; Levy 2023, Exp. 3a" in html and "Hu &amp; Levy 2023, Exp. 3b" in html
    assert "this project (pairwise)" in html
    assert html.count(">missing<") == 3  # meta_instruct: order 1, order 2, both
    assert "not recorded" in html
    for _, _, meaning in H.COLUMNS.values():
        assert meaning.split()[0] in html
    assert "No precomputed run" in hu_levy_view.explore_html(None, H.COLUMNS, BENCH, None)


# ------------------------------------------------------------------------------------------ one pair
def _record(method, template, score_good, score_bad, prediction):
    return {"method": method, "template": template, "score_good": score_good, "score_bad": score_bad,
            "prediction": prediction}


def test_pair_answers_and_probe_html():
    records = [
        _record("lp", "-", -10.0, -12.0, ""),
        _record("meta_instruct", "judgment", math.log(0.6), math.log(0.1), "good:Yes bad:No"),
        _record("meta_instruct", "comparison", -0.4, -0.8, "order1:1 order2:1"),
        _record("meta_question_simple", "comparison", -0.4, -0.8, ""),  # an old row: no per-order answers
    ]
    got = H.pair_answers(records)
    assert [a["method"] for a in got] == ["meta_question_simple", "meta_instruct"]  # Hu & Levy's order
    simple, instruct = got
    j = instruct["judgment"]
    assert (j["good"], j["bad"], j["right_good"], j["right_bad"]) == ("Yes", "No", True, True)
    assert j["p_yes_good"] == pytest.approx(0.6) and j["p_yes_bad"] == pytest.approx(0.1)
    assert instruct["comparison"] == {"order1": "1", "order2": "1", "right_order1": True, "right_order2": False}
    assert simple["judgment"] is None and simple["comparison"]["order1"] is None

    from accapp.ui import hu_levy_view

    sources = {"judgment": H.SOURCE_3A, "comparison": H.SOURCE_3B}
    html = hu_levy_view.probe_html({"verdicts": records, "hu_levy": got, "hu_levy_sources": sources})
    assert "Hu &amp; Levy 2023, Exp. 3a" in html and "Hu &amp; Levy 2023, Exp. 3b" in html
    assert "Hu &amp; Levy's own measures" in html and "P(Yes) 60.0 %" in html and "P(Yes) 10.0 %" in html
    assert "answers 1" in html and "not recorded" in html
    assert hu_levy_view.probe_html({"hu_levy": H.pair_answers(records[:1])}) == "" and hu_levy_view.probe_html(None) == ""
    evil = [_record("meta_instruct", "judgment", -1.0, -2.0, "good:<script> bad:No")]
    assert "<script>" not in hu_levy_view.probe_html({"hu_levy": H.pair_answers(evil), "hu_levy_sources": sources})


# ------------------------------------------------------------------------------------------ the method itself
GOLDEN = Path(__file__).parent / "golden"
META = list(H.META_METHODS)


def _answer(x, names: tuple[str, str], margin: float = 1e-4) -> str | None:
    """The answer the two log-probs give, None when they are too close to call across batchings."""
    if abs(float(x[0]) - float(x[1])) < margin:
        return None
    return names[0] if x[0] > x[1] else names[1]


def _check_meta_rows(lm, recorded: list[dict] | None = None) -> None:
    """MetaPrompt's rows: the pairwise scores from the raw answer log-probs as before (judgment:
    log P(Yes) of each sentence's prompt; comparison: mean log p(option) over both orders), the
    judgment prediction as before, and each order's answer from the same log-probs. Scores to
    1e-4: the requests are batched differently here than in a full run."""
    from accapp.engine import Engine, make_scorer
    from accapp.methods.ties import verdict
    from accapp.scoring.api import Pair

    pairs = [Pair(p["good"], p["bad"]) for p in json.loads((GOLDEN / "pairs.json").read_text(encoding="utf-8"))
             if p["benchmark"] != "climp"][:4]
    engine = Engine(make_scorer(lm))
    results = engine.score_pairs(pairs, META, "en")
    ctx = engine.context("en")
    close = dict(abs=1e-4)
    for k, (pair, result) in enumerate(zip(pairs, results)):
        rows = {(r["method"], r["template"]): r for r in result.rows}
        for method in engine.resolve(META):
            reqs = method.requests(pair, ctx)  # judge good, judge bad, good as option 1, good as option 2
            raw = engine.scorer.execute(list(reqs))
            g, b, first, second = (raw[r] for r in reqs)
            j, c = rows[(method.id, "judgment")], rows[(method.id, "comparison")]
            assert j["score_good"] == pytest.approx(float(g[0]), **close)
            assert j["score_bad"] == pytest.approx(float(b[0]), **close)
            assert c["score_good"] == pytest.approx(float((first[0] + second[1]) / 2), **close)
            assert c["score_bad"] == pytest.approx(float((first[1] + second[0]) / 2), **close)
            said = H.parse_prediction(j["prediction"])
            assert j["prediction"] == f"good:{said['good']} bad:{said['bad']}"
            assert _answer(g, ("Yes", "No")) in (None, said["good"]) and _answer(b, ("Yes", "No")) in (None, said["bad"])
            chose = H.parse_prediction(c["prediction"])
            assert c["prediction"] == f"order1:{chose['order1']} order2:{chose['order2']}"
            assert _answer(first, ("1", "2")) in (None, chose["order1"])
            assert _answer(second, ("1", "2")) in (None, chose["order2"])
            assert c["verdict"] == verdict(method.id, c["score_good"], c["score_bad"])  # the method's tie rule
            if recorded is not None:  # the golden numbers (tests/golden/scores.json): same scores and verdicts
                want = {(r["method"], r["template"]): r for r in recorded[k]["rows"]}
                for key in ((method.id, "judgment"), (method.id, "comparison")):
                    w, got = want[key], rows[key]
                    assert got["score_good"] == pytest.approx(w["score_good"], **close), key
                    assert got["score_bad"] == pytest.approx(w["score_bad"], **close), key
                    if abs(w["score_good"] - w["score_bad"]) > 1e-4:
                        assert got["verdict"] == w["verdict"], key
                assert j["prediction"] == want[(method.id, "judgment")]["prediction"]


def test_meta_prompt_rows_tiny(tiny_llama):
    _check_meta_rows(tiny_llama)


@pytest.mark.slow
def test_meta_prompt_rows_unchanged_real_model(smollm):
    recorded = json.loads((GOLDEN / "scores.json").read_text(encoding="utf-8"))["smollm2-135m-instruct|en"]
    _check_meta_rows(smollm, recorded)
