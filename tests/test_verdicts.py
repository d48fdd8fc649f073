"""The probe's one answer (accapp.service.verdicts) and the reliability flags (accapp.service.reliability):
pure functions on hand-made judgments, and the flags recomputed independently from the shipped run."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binomtest

from accapp.methods.base import Answers, MethodScore
from accapp.service import reliability, verdicts
from accapp.store import Store

LN2 = math.log(2)


def ab(template, good_a, good_b):
    """A/B prompting's two answer orders of one template: score = log p(letter of each sentence)."""
    return [MethodScore("ab_prompting", template, *good_a, "good=A", Answers(letter="A")),
            MethodScore("ab_prompting", template, *good_b, "good=B", Answers(letter="A"))]


def test_a_method_votes_by_its_own_rule():
    # both orders answered "A": the first order says good, the second bad -> no vote
    assert verdicts.method_vote(ab("1", (-0.4, -1.1), (-1.1, -0.4))) == "none"
    # both orders pick the good sentence -> a vote for it
    assert verdicts.method_vote(ab("1", (-0.4, -1.1), (-0.3, -1.3))) == "good"
    # five templates: 3 good, 2 bad -> good; 2 good, 2 bad, 1 tie -> no vote
    five = [MethodScore("in_template_lp", str(i), g, b) for i, (g, b) in enumerate([(1, 0), (1, 0), (1, 0), (0, 1), (0, 1)])]
    assert verdicts.method_vote(five) == "good"
    split = five[1:] + [MethodScore("in_template_lp", "5", 0.5, 0.5)]
    assert verdicts.method_vote(split) == "none"
    assert verdicts.method_vote([MethodScore("lp", "-", -60.0, -56.0)]) == "bad"


def test_family_agreement_leaves_out_ensembles_and_unreliable_methods():
    scores = [MethodScore("lp", "-", -56.4, -59.9), MethodScore("mean_lp", "-", -8.06, -7.50),
              *ab("1", (-0.4, -1.1), (-1.1, -0.4)), MethodScore("yes_no_prob_comp", "1", 0.48, 0.49),
              MethodScore("ens_mix_p3", "-", 0.0, 1.0, answers=Answers(p_votes=0, l_votes=5))]
    flags = {"yes_no_prob_comp": reliability.Reliability("yes_no_prob_comp", "blimp", 100, 50.0, 40.0, 60.0)}
    votes = verdicts.method_votes(scores, flags)
    assert [v["method"] for v in votes] == ["lp", "mean_lp", "ab_prompting", "yes_no_prob_comp"]
    by = {v["method"]: v for v in votes}
    assert by["ab_prompting"]["vote"] == "none" and by["ab_prompting"]["judgments"] == 2
    assert by["yes_no_prob_comp"]["reliable"] is False and "includes chance" in by["yes_no_prob_comp"]["unreliable_reason"]
    assert by["lp"]["reliable"] is None  # no run to judge it by: it votes
    fams = {f["family"]: f for f in verdicts.family_agreement(votes)}
    assert fams["sentence probability"] == {"family": "sentence probability", "good": 1, "bad": 1, "none": 0,
                                            "not_voting": 0, "methods": 2}
    assert fams["prompting"]["none"] == 1 and fams["prompting"]["not_voting"] == 1
    assert verdicts.overall(list(fams.values())) == {"good": 1, "bad": 1, "none": 1, "not_voting": 1, "verdict": "tie"}


def words(*pairs):
    return [{"word": w, "logprob": lp} for w, lp in pairs]


def test_headline_and_difference_strip_by_hand():
    good = words(("These", -10.0), ("casseroles", -14.0), ("disgust", -15.0), ("Kayla", -15.0), (".", -1.0))
    bad = words(("These", -10.0), ("casseroles", -14.0), ("disgusts", -19.0), ("Kayla", -14.0), (".", -1.5))
    strip = verdicts.difference_strip(good, bad)
    assert strip["region"] == [2, 2] and strip["region_delta"] == pytest.approx(4.0)
    assert strip["after_delta"] == pytest.approx(-1.0) and strip["after"] == [3]  # the spill-over: the next word, Kayla
    head = verdicts.headline("causal", [MethodScore("lp", "-", -55.0, -58.5)], {"good": good, "bad": bad}, "bits")
    assert head["verdict"] == "good" and head["margin"] == pytest.approx(3.5)
    assert head["where"] == "disgust / disgusts" and head["where_words"] == ["disgust / disgusts"]
    assert head["region_delta"] == pytest.approx(4.0) and head["after_delta"] == pytest.approx(-1.0)
    assert head["text"] == (f"LP prefers the acceptable sentence by {3.5 / LN2:.1f} bits. Where the sentences differ, at "
                            f"“disgust / disgusts”, the unacceptable sentence is {4 / LN2:.2f} bits more surprising; in the "
                            f"spill-over (the next word, “Kayla”), {1 / LN2:.2f} bits less surprising.")
    assert verdicts.headline_text(head, "nats").startswith("LP prefers the acceptable sentence by 3.5 nats")
    tie = verdicts.headline("causal", [MethodScore("lp", "-", -5.0, -5.0)], None)
    assert tie["verdict"] == "tie" and "cannot tell" in tie["text"]
    assert verdicts.headline("masked", [MethodScore("pll_word_l2r", "-", -9.0, -7.0)], None)["text"].startswith(
        "PLL-word-l2r prefers the unacceptable sentence by")
    assert verdicts.headline("causal", [MethodScore("mean_lp", "-", 1, 0)], None) is None  # LP not run


def test_warnings():
    same = verdicts.warnings("The dogs bark.", "The dogs bark.", 4, 4, ["en"], "en")
    assert len(same) == 1 and "identical" in same[0]
    gap = verdicts.warnings("The dogs that I saw bark.", "Dogs bark.", 8, 3, ["en"], "en")
    assert len(gap) == 1 and "acceptable sentence is 5 tokens longer" in gap[0]
    lang = verdicts.warnings("他走了。", "走了他。", 4, 4, ["en"], "zh")
    assert len(lang) == 1 and "looks Chinese" in lang[0]
    assert verdicts.warnings("The dogs bark.", "The dogs barks.", 4, 5, ["en"], "en") == []


def test_wilson_interval_matches_scipy():
    for k, n in [(37, 80), (0, 12), (6700, 6700), (5226, 6700)]:
        ci = binomtest(k, n).proportion_ci(0.95, method="wilson")
        assert reliability.wilson(k, n) == pytest.approx((ci.low, ci.high), abs=1e-12)


@pytest.fixture(scope="module")
def shipped():
    return Store()  # the shipped precomputed results


def test_reliability_from_the_shipped_run(shipped):
    """The flags, against an independent pandas computation over the raw rows."""
    flags = reliability.compute(shipped, "smollm2-135m-instruct", "blimp")
    rows = shipped.rows("smollm2-135m-instruct", "blimp", ["ab_prompting", "lp", "meta_question_simple"])
    for method in ("ab_prompting", "lp", "meta_question_simple"):
        r = rows[rows.method == method]
        r = r.assign(right=(r.correct == 1) & ~r.tie, wrong=(r.correct == 0) & ~r.tie)
        every = r.groupby(["paradigm", "pair_id", "template"])[["right", "wrong"]].all()  # over a template's orders
        tmpl = every.right.astype(int) - (every.wrong & ~every.right).astype(int)
        per_pair = tmpl.groupby(level=[0, 1]).sum()
        expected = 100 * float(np.mean(np.where(per_pair > 0, 1.0, np.where(per_pair == 0, 0.5, 0.0))))
        assert flags[method].accuracy == pytest.approx(expected, abs=1e-9) and flags[method].pairs == len(per_pair)
    assert flags["lp"].reliable and flags["lp"].top_answer is None
    a = rows[rows.method == "ab_prompting"]
    assert flags["ab_prompting"].top_answer == "A"
    answered = a.prediction.isin(["A", "B"])  # a tie (A and B equally likely) is no answer
    assert flags["ab_prompting"].top_share == pytest.approx(100 * (a.prediction == "A").sum() / answered.sum())
    assert not flags["ab_prompting"].reliable and "answers A to 99.9 %" in flags["ab_prompting"].reason
    m = rows[rows.method == "meta_question_simple"].prediction.str.extractall(r"(?:good|bad):(\w+)")[0]
    assert flags["meta_question_simple"].top_answer == "No"
    assert flags["meta_question_simple"].top_share == pytest.approx(100 * (m == "No").mean())
    assert reliability.compute(shipped, "no-such-model", "blimp") == {}
    cache = reliability.ReliabilityCache(size=1)
    assert cache.get(shipped, "gemma3-270m", "climp")["ab_prompting"].top_share == pytest.approx(100.0)
    cache.get(shipped, "gemma3-270m", "blimp")
    assert len(cache._items) == 1  # bounded


def _vote(method, vote, reliable=None):
    from accapp.methods import descriptors

    d = descriptors()[method]
    return {"method": method, "name": d.name, "family": d.family, "vote": vote, "reliable": reliable}


def test_split_explained_by_token_counts_on_the_readme_pair():
    """The README's pair (casseroles disgust / disgusts): LP prefers the acceptable sentence, the
    per-token readings the unacceptable one, which has one token more. The sentence says so from the
    counts, and names the reading the papers recommend with its source."""
    votes = [_vote("lp", "good"), _vote("mean_lp", "bad"), _vote("pen_lp", "bad"), _vote("slor", "bad"),
             _vote("yes_no_prob_comp", "good"), _vote("ab_prompting", "none")]
    split = verdicts.split_explained(votes, 8, 9)
    assert split["for_good"] == ["LP", "Yes/No prob comp"] and split["for_bad"] == ["MeanLP", "PenLP", "SLOR"]
    assert split["reason"].startswith("The unacceptable sentence has 1 token more (9 vs 8 tokens): LP adds up every "
                                      "token's log-probability")
    assert "MeanLP, PenLP and SLOR divide by the length in tokens, which lifts the longer sentence" in split["reason"]
    assert "prefer the unacceptable one" in split["reason"]
    assert "Ide et al. 2025" in split["advice"] and "here it prefers the acceptable sentence" in split["advice"]
    # the other way round: the acceptable sentence is the longer one
    other = verdicts.split_explained([_vote("lp", "bad"), _vote("mean_lp", "good")], 10, 8)
    assert other["reason"].startswith("The acceptable sentence has 2 tokens more (10 vs 8 tokens)")
    assert "MeanLP divides by the length in tokens" in other["reason"] and "it prefers the acceptable one" in other["reason"]


def test_split_explained_with_equal_lengths_and_when_they_agree():
    votes = [_vote("lp", "good"), _vote("mean_lp", "good"), _vote("slor", "bad"), _vote("ab_prompting", "bad")]
    split = verdicts.split_explained(votes, 7, 7)
    assert split["reason"].startswith("Both sentences have 7 tokens, so LP, MeanLP and PenLP cannot disagree over length.")
    assert "SLOR subtracts what the tokens' frequencies alone predict" in split["reason"]
    assert "A/B prompting asks the model in words" in split["reason"]
    assert split["advice"].startswith("For a minimal pair whose sentences have as many tokens, the papers read LP")
    assert "Hu et al. 2025" in split["advice"]
    assert verdicts.split_explained([_vote("lp", "good"), _vote("mean_lp", "good")], 8, 9) is None
    # an unreliable method or no vote does not make a split
    assert verdicts.split_explained([_vote("lp", "good"), _vote("mean_lp", "bad", reliable=False),
                                     _vote("ab_prompting", "none")], 8, 9) is None
    masked = verdicts.split_explained([_vote("pll_word_l2r", "good"), _vote("pll_original", "bad")], 6, 6)
    assert "PLL-original is inflated" in masked["reason"] and "Kauf & Ivanova (2023, §3.1)" in masked["advice"]


def test_headline_speaks_of_the_marked_region_and_its_spill_over():
    """A region the user marked replaces the differing words in the headline; the spill-over is the
    region table's (the next word)."""
    from accapp.service import region

    good = [{"word": w, "logprob": lp, "start": a, "end": b} for w, lp, a, b in
            [("These", -10.0, 0, 5), ("casseroles", -14.0, 6, 16), ("disgust", -15.0, 17, 24), ("Kayla", -15.0, 25, 30),
             (".", -1.0, 30, 31)]]
    bad = [{"word": w, "logprob": lp, "start": a, "end": b} for w, lp, a, b in
           [("These", -10.0, 0, 5), ("casseroles", -14.0, 6, 16), ("disgusts", -19.0, 17, 25), ("Kayla", -14.0, 26, 31),
            (".", -1.5, 31, 32)]]
    words = {"good": good, "bad": bad}
    head = verdicts.headline("causal", [MethodScore("lp", "-", -55.0, -58.5)], words, "bits")
    reg = region.region_report(words, {"good": (6, 24), "bad": (6, 25)})  # "casseroles disgust(s)" marked
    marked = verdicts.with_region(head, reg, "nats")
    assert marked["where"] == "casseroles disgust / casseroles disgusts" and marked["region_delta"] == pytest.approx(4.0)
    assert marked["after_delta"] == pytest.approx(-1.0)  # Kayla: the same spill-over as the region table's
    assert marked["text"] == ("LP prefers the acceptable sentence by 3.5 nats. In the region you marked, at "
                              "“casseroles disgust / casseroles disgusts”, the unacceptable sentence is 4.00 nats more "
                              "surprising; in the spill-over (the next word, “Kayla”), 1.00 nats less surprising.")
    assert verdicts.with_region(head, None) is head
