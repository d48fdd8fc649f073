"""The analyses against numbers computed by hand on the small fixture (tests/fixtures/results_small.py).

Fixture recap (pairs a0 a1 | b0 b1 | c0 c1 c2 c3; A = adjunct_island, island_effects, word-shuffling;
B = regular_plural_subject_verb_agreement_1 and C = distractor_agreement_relative_clause, both
subject_verb_agreement):

  lp                     1 0 | 1 1 | 1 0 1 T      len_diff 0 0 | 1 -1 | 0 -1 0 -1
  slor                   1 1 | 1 1 | 1 1 1 1
  in_template_lp   t1    1 1 | 1 0 | 1 1 1 0
                   t2    0 0 | 1 1 | 1 1 1 1
  yes_no_prob_comp t1    0 1 | 1 1 | 1 1 1 1
                   t2    1 1 | 1 0 | 1 1 0 1
  ab_prompting t1 good=A predictions A A | A B | A A B tie  -> correct 1 1 | 1 0 | 1 1 0 0
                  good=B predictions A B | B B | A B B B    -> correct 0 1 | 1 1 | 0 1 1 1
  ens_mix_p3 (share)   .3 .6 | 1 .5 | 1 1 .8 .6
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from accapp.analysis import (
    ab_prompting,
    accuracy_by_length,
    accuracy_by_paradigm,
    accuracy_by_paradigm_type,
    accuracy_by_phenomenon,
    accuracy_overall,
    best_template,
    ensembles,
    length_bias,
    method_summary,
    ours_long,
    pair_correlation,
    paired_bootstrap,
    paradigm_type_summary,
    separation_auc,
    sv_agreement_by_attractor,
    template_stats,
    word_shuffling,
    word_shuffling_paradigms,
)
from accapp.analysis.bootstrap import bootstrap_p
from accapp.errors import UserError
from accapp.store import Store
from tests.fixtures.results_small import MODEL, write_results

A, B, C = "adjunct_island", "regular_plural_subject_verb_agreement_1", "distractor_agreement_relative_clause"
approx = pytest.approx


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    with Store(write_results(tmp_path_factory.mktemp("results"))) as s:
        yield s


def _by(df, *keys):
    return {tuple(r[k] for k in keys) if len(keys) > 1 else r[keys[0]]: r for r in df.to_dict("records")}


# ------------------------------------------------------------------ accuracy
def test_accuracy_by_paradigm(store):
    df = _by(accuracy_by_paradigm(store, MODEL, "blimp", ["lp"]), "paradigm")
    # A: 1 0 -> 50; B: 1 1 -> 100; C: 1 0 1 T -> 2/4 = 50, one tie
    assert {p: r["accuracy"] for p, r in df.items()} == {A: 50.0, B: 100.0, C: 50.0}
    assert {p: (r["pairs"], r["ties"]) for p, r in df.items()} == {A: (2, 0), B: (2, 0), C: (4, 1)}


def test_accuracy_overall_is_mean_over_paradigms(store):
    df = _by(accuracy_overall(store, MODEL, "blimp"), "method", "template")
    # lp: (50 + 100 + 50) / 3 = 66.667 (the mean over the 8 items would be 5/8 = 62.5)
    assert df[("lp", "-")]["accuracy"] == approx(200 / 3)
    assert (df[("lp", "-")]["pairs"], df[("lp", "-")]["ties"], df[("lp", "-")]["paradigms"]) == (8, 1, 3)
    # in_template_lp t1: A 2/2 = 100, B 1/2 = 50, C 3/4 = 75 -> 225 / 3 = 75
    assert df[("in_template_lp", "1")]["accuracy"] == approx(75.0)
    # t2: A 0, B 100, C 100 -> 200 / 3 = 66.667
    assert df[("in_template_lp", "2")]["accuracy"] == approx(200 / 3)
    # yes_no t1: A 50, B 100, C 100 -> 83.333; t2: A 100, B 50, C 75 -> 75
    assert df[("yes_no_prob_comp", "1")]["accuracy"] == approx(250 / 3)
    assert df[("yes_no_prob_comp", "2")]["accuracy"] == approx(75.0)
    # ab t1, both orders: A (1+1+0+1)/4 = .75, B (1+0+1+1)/4 = .75, C 5/8 = .625 -> 2.125/3 = 70.833; 1 tie
    assert df[("ab_prompting", "1")]["accuracy"] == approx(212.5 / 3)
    assert df[("ab_prompting", "1")]["ties"] == 1
    # ensemble shares: A (.3+.6)/2 = .45, B (1+.5)/2 = .75, C (1+1+.8+.6)/4 = .85 -> 2.05/3 = 68.333;
    # b1 is a 5/10 vote (score_good == score_bad) but ensembles never count ties
    assert df[("ens_mix_p3", "-")]["accuracy"] == approx(205 / 3)
    assert df[("ens_mix_p3", "-")]["ties"] == 0


def test_accuracy_by_phenomenon_is_mean_over_items(store):
    df = _by(accuracy_by_phenomenon(store, MODEL, "blimp", ["lp"]), "phenomenon")
    # island_effects = A: 1/2 = 50; subject_verb_agreement = B + C items: 1 1 1 0 1 T = 4/6 = 66.667
    # (the mean over its two paradigms would be (100 + 50) / 2 = 75)
    assert df["island_effects"]["accuracy"] == approx(50.0)
    assert df["subject_verb_agreement"]["accuracy"] == approx(400 / 6)
    assert (df["subject_verb_agreement"]["pairs"], df["subject_verb_agreement"]["paradigms"],
            df["subject_verb_agreement"]["ties"]) == (6, 2, 1)


def test_template_stats_and_best(store):
    df = _by(template_stats(store, MODEL, "blimp"), "method")
    assert set(df) == {"ab_prompting", "in_template_lp", "yes_no_prob_comp"}  # numbered templates only
    it = df["in_template_lp"]
    # 75 and 66.667: mean 70.833; sample sd = |75 - 66.667| / sqrt(2) = 8.3333 / 1.41421 = 5.8926; max 75 (t1)
    assert (it["mean"], it["sd"], it["max"], it["min"]) == (approx(70.8333, abs=1e-4), approx(5.8926, abs=1e-4),
                                                            approx(75.0), approx(200 / 3))
    assert it["best_template"] == "1" and it["n_templates"] == 2
    yn = df["yes_no_prob_comp"]
    # 83.333 and 75: mean 79.1667, sd 8.3333 / sqrt(2) = 5.8926, max 83.333 (t1)
    assert (yn["mean"], yn["sd"], yn["max"]) == (approx(79.1667, abs=1e-4), approx(5.8926, abs=1e-4), approx(250 / 3))
    assert math.isnan(df["ab_prompting"]["sd"])  # one template: sample sd undefined
    assert best_template(store, MODEL, "blimp", "yes_no_prob_comp") == "1"
    assert best_template(store, MODEL, "blimp", "lp") == "-"
    best = _by(accuracy_overall(store, MODEL, "blimp", template="best"), "method")
    assert best["in_template_lp"]["template"] == "1" and best["yes_no_prob_comp"]["template"] == "1"


def test_best_template_tie_goes_to_lowest_id(tmp_path):
    from tests.fixtures.results_small import toy_rows

    df = toy_rows()
    df = df[df.method == "in_template_lp"].copy()
    df.loc[df.template == "2", "correct"] = df.loc[df.template == "1", "correct"].to_numpy()  # equal accuracy
    for c in ("len_good", "len_bad", "len_diff"):
        df[c] = df[c].astype("int32")
    df.to_parquet(tmp_path / "tie__blimp.parquet", index=False)
    with Store(tmp_path) as s:
        assert best_template(s, MODEL, "blimp", "in_template_lp") == "1"


def test_method_summary_rows(store):
    df = method_summary(store, MODEL, "blimp", ["in_template_lp"])
    got = {(r.template, r.phenomenon): r.accuracy for r in df.itertuples()}
    # per template phenomena: t1 island 2/2 = 100, sva (1 0 | 1 1 1 0) 4/6; t2 island 0, sva 6/6 = 100
    assert got[("1", "island_effects")] == approx(100.0) and got[("1", "subject_verb_agreement")] == approx(400 / 6)
    assert got[("2", "island_effects")] == approx(0.0) and got[("2", "subject_verb_agreement")] == approx(100.0)
    # mean: island (100 + 0)/2 = 50, sva (66.667 + 100)/2 = 83.333; sd: 100/sqrt 2 = 70.711, 33.333/sqrt 2 = 23.570
    assert got[("mean", "island_effects")] == approx(50.0) and got[("mean", "subject_verb_agreement")] == approx(250 / 3)
    assert got[("sd", "island_effects")] == approx(70.7107, abs=1e-4)
    assert got[("sd", "subject_verb_agreement")] == approx(23.5702, abs=1e-4)
    # max = the best template's (t1) row
    assert got[("max", "overall")] == approx(75.0) and got[("max", "island_effects")] == approx(100.0)
    assert set(df[df.template == "max"].best_template) == {"1"}


def test_ab_prompting_orders_and_share_of_a(store):
    df = _by(ab_prompting(store, MODEL, "blimp"), "template", "variant")
    # good=A correct 1 1 | 1 0 | 1 1 0 0: A 100, B 50, C 50 -> 66.667; "A" predicted 5 of 8 = 62.5 %
    assert df[("1", "good=A")]["accuracy"] == approx(200 / 3) and df[("1", "good=A")]["share_A"] == approx(62.5)
    # good=B correct 0 1 | 1 1 | 0 1 1 1: A 50, B 100, C 75 -> 75; "A" predicted 2 of 8 = 25 %
    assert df[("1", "good=B")]["accuracy"] == approx(75.0) and df[("1", "good=B")]["share_A"] == approx(25.0)
    # both: (66.667 + 75) / 2 = 70.833 (= the method's accuracy); share (62.5 + 25) / 2 = 43.75
    assert df[("1", "both")]["accuracy"] == approx(212.5 / 3) and df[("1", "both")]["share_A"] == approx(43.75)
    assert df[("1", "good=A")]["ties"] == 1 and df[("1", "good=B")]["ties"] == 0
    assert df[("mean", "both")]["accuracy"] == approx(212.5 / 3)


def test_ensembles_table(store):
    df = ensembles(store, MODEL, "blimp")
    assert list(df.setting) == ["mix_p3", "in_template_lp_oracle", "yes_no_prob_comp_oracle"]
    # mix_p3 68.333 (see above); oracles = best templates: in_template_lp t1 75, yes_no t1 83.333
    assert list(df.accuracy) == [approx(205 / 3), approx(75.0), approx(250 / 3)]
    assert list(df.template) == ["-", "1", "1"]


# ------------------------------------------------------------------ length
def test_accuracy_by_length(store):
    df = _by(accuracy_by_length(store, MODEL, "blimp", ["lp"]), "len_diff")
    # lp by len_diff over items: -1: b1 1, c1 0, c3 T -> 1/3; 0: a0 1, a1 0, c0 1, c2 1 -> 3/4; +1: b0 1 -> 1/1
    assert {k: (r["n"], r["accuracy"]) for k, r in df.items()} == {
        -1: (3, approx(100 / 3)), 0: (4, approx(75.0)), 1: (1, approx(100.0))}
    clipped = accuracy_by_length(store, MODEL, "blimp", ["lp"], clip=0)
    assert list(clipped.n) == [8] and clipped.accuracy[0] == approx(62.5)  # all pooled: 5/8


def test_point_biserial_r(store):
    df = _by(length_bias(store, MODEL, "blimp", ["lp", "slor"]), "method")
    # x = correct 1 0 1 1 1 0 1 0 (mean .625), y = len_diff 0 0 1 -1 0 -1 0 -1 (mean -.25)
    # sum dx*dy = 1.25; sum dx^2 = 5(.140625) + 3(.390625) = 1.875; sum dy^2 = 4(.0625) + 1.5625 + 3(.5625) = 3.5
    # r = 1.25 / sqrt(1.875 * 3.5) = 1.25 / 2.561738 = 0.487950
    assert df["lp"]["r"] == approx(0.487950, abs=1e-6) and df["lp"]["n"] == 8
    assert math.isnan(df["slor"]["r"])  # always right: r undefined


# ------------------------------------------------------------------ paradigm groupings
def test_word_shuffling_from_the_pairs(store):
    df = _by(word_shuffling_paradigms(store, MODEL, "blimp"), "paradigm")
    assert {p: bool(r["word_shuffling"]) for p, r in df.items()} == {A: True, B: False, C: False}
    pairs = __import__("pandas").DataFrame({
        "paradigm": ["p", "p", "q", "r"],
        "good": ["The cat ate.", "Who did it?", "The cat ate.", "他们在。"],
        "bad": ["Ate the cat.", "Did WHO it?", "The cats ate.", "在他们。"],
    })
    got = _by(word_shuffling(pairs), "paradigm")
    # p: same bags (case ignored, punctuation a token); q: cat vs cats; r: one character a word
    assert {k: bool(v["word_shuffling"]) for k, v in got.items()} == {"p": True, "q": False, "r": True}


def test_accuracy_by_paradigm_type(store):
    per = _by(accuracy_by_paradigm_type(store, MODEL, "blimp", ["lp"]), "paradigm")
    assert per[A]["word_shuffling"] and not per[B]["word_shuffling"]
    assert per[A]["human_accuracy"] == approx(94.0)  # BLiMP human validation, adjunct_island 0.94
    summ = _by(paradigm_type_summary(store, MODEL, "blimp", ["lp"]), "word_shuffling")
    # word-shuffling: A 50; other: (B 100 + C 50) / 2 = 75
    assert summ[True]["accuracy"] == approx(50.0) and summ[True]["paradigms"] == 1
    assert summ[False]["accuracy"] == approx(75.0) and summ[False]["paradigms"] == 2
    # best template of in_template_lp is t1: A 100; other (50 + 75) / 2 = 62.5
    it = _by(paradigm_type_summary(store, MODEL, "blimp", ["in_template_lp"]), "word_shuffling")
    assert it[True]["accuracy"] == approx(100.0) and it[False]["accuracy"] == approx(62.5)


def test_sv_agreement_by_attractor(store):
    df = _by(sv_agreement_by_attractor(store, MODEL, "blimp", ["lp", "yes_no_prob_comp"]), "method", "attractor")
    # lp: none = B 100; relative clause = C 50; no relational-noun paradigm in the fixture
    assert set(df) == {("lp", "none"), ("lp", "relative_clause"), ("yes_no_prob_comp", "none"),
                       ("yes_no_prob_comp", "relative_clause")}
    assert df[("lp", "none")]["accuracy"] == approx(100.0) and df[("lp", "relative_clause")]["accuracy"] == approx(50.0)
    # yes_no best template t1: B 100, C 100
    assert df[("yes_no_prob_comp", "relative_clause")]["accuracy"] == approx(100.0)
    assert df[("lp", "relative_clause")]["pairs"] == 4
    assert not np.isnan(df[("lp", "none")]["human_accuracy"])


# ------------------------------------------------------------------ bootstrap
def test_bootstrap_p_values():
    assert bootstrap_p(np.zeros(50), 200, seed=1) == 1.0  # never above: p = 1
    assert bootstrap_p(np.ones(50), 200, seed=1) == 0.0  # always above: p = 0
    # one pair better out of 4: a resample is "not above" iff it never draws that pair: (3/4)^4 = 0.316
    p = bootstrap_p(np.array([1.0, 0, 0, 0]), 4000, seed=3)
    assert p == approx(0.75 ** 4, abs=0.03)
    assert bootstrap_p(np.array([1.0, 0, 0, 0]), 1000, seed=7) == bootstrap_p(np.array([1.0, 0, 0, 0]), 1000, seed=7)


def test_paired_bootstrap_against_lp(store):
    df = _by(paired_bootstrap(store, MODEL, "blimp", n_resamples=1000, seed=0), "method")
    assert "lp" not in df
    slor = df["slor"]
    # item means: slor 8/8 = 100, lp 5/8 = 62.5; p = P(no lp-wrong pair drawn) ~ (5/8)^8 = 0.023
    assert (slor["accuracy"], slor["baseline_accuracy"], slor["difference"]) == (approx(100.0), approx(62.5), approx(37.5))
    assert slor["p_value"] == approx(0.625 ** 8, abs=0.015)
    # template methods default to the mean over templates: in_template_lp per-pair means
    # a0 .5 a1 .5 b0 1 b1 .5 c0 1 c1 1 c2 1 c3 .5 -> 6/8 = 75
    assert df["in_template_lp"]["template"] == "mean" and df["in_template_lp"]["accuracy"] == approx(75.0)
    same = paired_bootstrap(store, MODEL, "blimp", ["in_template_lp"], template="1", n_resamples=200)
    assert same.template[0] == "1" and same.accuracy[0] == approx(75.0)  # t1: 6/8 items
    again = paired_bootstrap(store, MODEL, "blimp", n_resamples=1000, seed=0)
    assert list(again.p_value) == [r["p_value"] for r in df.values()]  # seeded


# ------------------------------------------------------------------ separation (Hu et al.)
def test_separation_auc(store):
    df = _by(separation_auc(store, MODEL, "blimp"), "metric")
    # lp goods -35 -30 -28 -25 -22 -20 -15 -12 vs bads -38 -32 -28 -27 -21 -18 -17 -14:
    # bads below each good: 1, 2, 2 + .5 (tie at -28), 4, 4, 5, 7, 8 = 33.5 of 64 -> 0.5234375
    assert df["lp"]["auc"] == approx(33.5 / 64) and (df["lp"]["n_good"], df["lp"]["n_bad"]) == (8, 8)
    assert df["slor"]["auc"] == approx(1.0)  # every good above every bad
    by = _by(separation_auc(store, MODEL, "blimp", ["lp"], by="paradigm"), "group")
    # A: goods -30 -20 vs bads -32 -18 -> 2 of 4 = .5
    assert by[A]["auc"] == approx(0.5)
    with pytest.raises(UserError, match="no per-sentence score"):
        separation_auc(store, MODEL, "blimp", ["in_template_lp"])


def test_within_pair_correlation(store):
    df = pair_correlation(store, MODEL, "blimp", "lp")
    # means -23.375 / -24.375; sum dxdy 435.875, sum dx^2 415.875, sum dy^2 477.875
    # r = 435.875 / sqrt(415.875 * 477.875) = 435.875 / 445.7985 = 0.977740
    assert df.r[0] == approx(0.977740, abs=1e-6) and df.pairs[0] == 8


# ------------------------------------------------------------------ long format
def test_ours_long_format(store):
    df = ours_long(store, MODEL, "blimp", "phenomenon", ["lp"], template=None)
    assert list(df.columns[:8]) == ["benchmark", "model", "method", "template", "phenomenon", "paradigm", "accuracy", "source"]
    assert set(df.phenomenon) == {"island_effects", "subject_verb_agreement"}
    assert df.source.iloc[0] == "this project, run finished 2025-01-01"
    with pytest.raises(UserError, match="Unknown level"):
        ours_long(store, MODEL, "blimp", "nope")


def test_one_selection_s_per_pair_values_are_fetched_once_whatever_the_order_of_its_methods(store):
    """Explore's views ask for the same methods in different orders (the overall table in the selection's,
    the phenomenon view in the store's): one query, one kept frame, the same rows."""
    from accapp.analysis.intervals import per_pair

    calls = []
    query = store.query

    def counted(sql, params=None):
        if "FROM viewed" in sql:  # per_pair's own query
            calls.append(sql)
        return query(sql, params)

    store.query = counted
    try:
        a = per_pair(store, MODEL, "blimp", ["slor", "lp"], "mean")
        b = per_pair(store, MODEL, "blimp", ["lp", "slor"], "mean")
    finally:
        del store.query
    assert a.equals(b) and set(a.method) == {"lp", "slor"}
    assert len(calls) <= 1  # none when an earlier test left the frame in the store's memo
