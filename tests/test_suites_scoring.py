"""Region surprisal and suite scoring (accapp/suites/regions.py, evaluate.py, score.py): a region is
the sum of the probe's word surprisals over its words (tiny random-weight model, fast), a
hand-computed case, syntaxgym-core's token-to-region cases, the masked-LM refusal, and the
published accuracies against a hand recount."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from accapp.engine import Engine, make_scorer
from accapp.errors import UserError
from accapp.scoring.api import BoundaryRequest
from accapp.suites import catalog
from accapp.suites.evaluate import evaluate_suite
from accapp.suites.regions import region_surprisals, surprisals_from_words, token_regions
from accapp.suites.score import COLUMNS, score_item, score_suite
from accapp.suites.suite import build_sentence, read_suite
from tests.test_suites_reading import _suite_dict
from tests.threads import one_thread  # noqa: F401 - autouse: one torch thread for this module

FIXTURES = Path(__file__).parent / "fixtures" / "syntaxgym"
LN2 = math.log(2.0)


class Counting:
    """An engine that counts its word_scores calls."""

    def __init__(self, engine):
        self.engine, self.calls = engine, []

    def __getattr__(self, name):
        return getattr(self.engine, name)

    def word_scores(self, texts):
        self.calls.append(list(texts))
        return self.engine.word_scores(texts)


@pytest.fixture(scope="module")
def engine(tiny_llama):
    return Engine(make_scorer(tiny_llama))


@pytest.fixture(scope="module")
def scored(engine):
    counting = Counting(engine)
    result = score_suite(counting, read_suite(_suite_dict()))
    return result, counting


# ---- regions are the probe's words ---------------------------------------------------------
def test_a_region_is_the_sum_of_the_probes_word_surprisals(engine, scored):
    result, _ = scored
    suite = result.suite
    assert list(result.regions.columns) == COLUMNS and len(result.regions) == 2 * 4 * 4
    for it in suite.items:
        for c in it.conditions:
            words = engine.word_scores([c.sentence])[c.sentence]  # the probe's words, scored afresh
            rows = result.regions[(result.regions["item"] == it.item_number) & (result.regions["condition"] == c.name)]
            for (number, content), (a, b), bits in zip(c.regions, c.spans, rows["surprisal_bits"]):
                inside = [w["surprisal_bits"] for w in words if a <= w["start"] < b]
                assert bits == pytest.approx(sum(inside), abs=1e-9)
                assert (bits == 0.0) == (not content.strip())
            # the regions add up to the sentence's words
            assert rows["surprisal_bits"].sum() == pytest.approx(sum(w["surprisal_bits"] for w in words), abs=1e-9)


def test_one_engine_call_for_all_conditions_of_all_items(scored):
    result, counting = scored
    assert len(counting.calls) == 1
    assert sorted(counting.calls[0]) == sorted({c.sentence for it in result.suite.items for c in it.conditions})


def test_from_tokens_with_and_without_the_leading_space_correction(engine):
    suite = read_suite(_suite_dict())
    c = suite.item(1).condition("what_nogap")
    (tokens, _), = engine.token_scores([c.sentence])
    boundary = engine.scorer.execute([BoundaryRequest(c.sentence)])[BoundaryRequest(c.sentence)]
    words = engine.word_scores([c.sentence])[c.sentence]
    assert region_surprisals(c.sentence, c.spans, tokens, boundary) == pytest.approx(
        surprisals_from_words(words, c.spans), abs=1e-9)
    # the plain sum: each region is exactly the sum of its tokens' surprisals
    plain = region_surprisals(c.sentence, c.spans, tokens, boundary, corrected=False)
    owner = token_regions(c.sentence, c.spans, [(t["start"], t["end"]) for t in tokens])
    for r, value in enumerate(plain):
        assert value == pytest.approx(sum(-t["logprob"] / LN2 for t, o in zip(tokens, owner) if o == r), abs=1e-9)
    assert plain == pytest.approx(surprisals_from_words(words, c.spans, key="sum_surprisal_bits"), abs=1e-9)


def test_a_hand_computed_case():
    """"The dog barks." in two regions; tokens The | Ġdog | Ġbark | s | . with log-probs -1..-5 nats,
    and boundary log-probs b0..b5 (log P(a new word follows))."""
    sentence, spans = build_sentence(["The dog", "barks."])
    assert sentence == "The dog barks." and spans == [(0, 7), (8, 14)]
    tokens = [{"start": a, "end": b, "logprob": lp} for (a, b), lp in
              zip([(0, 3), (3, 7), (7, 12), (12, 13), (13, 14)], [-1.0, -2.0, -3.0, -4.0, -5.0])]
    bnd = [0.0, -0.1, -0.2, -0.3, -0.4, -0.5]
    plain = region_surprisals(sentence, spans, tokens)
    assert plain == pytest.approx([3 / LN2, 12 / LN2])
    corrected = region_surprisals(sentence, spans, tokens, bnd)
    # words The (tokens 0), dog (1), barks (2-3), . (4): word a..b-1 gets sum + bnd[b] - bnd[a]
    region1 = -((-1.0 - 2.0) + bnd[2] - bnd[0]) / LN2
    region2 = -((-3.0 - 4.0 - 5.0) + bnd[5] - bnd[2]) / LN2
    assert corrected == pytest.approx([region1, region2])
    assert region1 == pytest.approx(3.2 / LN2) and region2 == pytest.approx(12.3 / LN2)


@pytest.mark.parametrize("case", json.loads((FIXTURES / "region_cases.json").read_text())["cases"],
                         ids=lambda c: c["test"])
def test_syntaxgym_core_token_to_region_cases(case):
    sentence, spans = build_sentence(case["regions"])
    assert sentence == case["sentence"]
    owner = token_regions(sentence, spans, [tuple(o) for o in case["offsets"]])
    got = {str(r + 1): [t for t, o in zip(case["tokens"], owner) if o == r] for r in range(len(spans))}
    assert got == case["expected"]


# ---- evaluation ------------------------------------------------------------------------------
def test_item_passes_when_every_prediction_holds():
    suite = read_suite(_suite_dict())
    values = {}
    for item, (gap_what, gap_that, emb_what, emb_that) in {1: (1, 2, 5, 4), 2: (1, 2, 4, 5)}.items():
        v = {(c, r): 0.0 for c in suite.condition_names for r in suite.region_numbers}
        v["what_gap", 4], v["that_gap", 4], v["what_nogap", 3], v["that_nogap", 3] = gap_what, gap_that, emb_what, emb_that
        values[item] = v
    ev = evaluate_suite(suite, values)
    assert ev.item_passed == {1: True, 2: False}
    assert ev.accuracy == 0.5 and ev.prediction_accuracy == (1.0, 0.5)
    first = ev.outcomes[0]
    assert first.passed and dict(first.values) == {"(4;%what_gap%)": 1.0, "(4;%that_gap%)": 2.0}
    # a formula of one's own, checked against the suite
    assert evaluate_suite(suite, values, "(*;%what_gap%) < (*;%that_gap%)").accuracy == 1.0
    with pytest.raises(UserError, match="names condition 'what'"):
        evaluate_suite(suite, values, "(4;%what%) < 1")
    table = ev.table()
    assert list(table.columns) == ["item", "prediction", "formula", "passed", "values"] and len(table) == 4


def test_score_item_and_progress(engine, scored):
    result, _ = scored
    one = score_item(engine, result.suite.item(2), result.suite)
    assert one.regions.equals(result.regions[result.regions["item"] == 2].reset_index(drop=True))
    assert [o.passed for o in one.evaluation.outcomes] == [o.passed for o in result.evaluation.outcomes if o.item == 2]
    seen = []
    score_suite(engine, result.suite, progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (2, 2)


def test_a_masked_lm_is_refused():
    class Masked:
        kind, model_id = "masked", "bert-base-uncased"

        def word_scores(self, texts):
            raise AssertionError("never called")

    with pytest.raises(UserError, match="Region surprisal needs a causal language model, and bert-base-uncased is a "
                                        "masked LM"):
        score_suite(Masked(), read_suite(_suite_dict()))


# ---- published accuracies ----------------------------------------------------------------------
# data/raw/sg_results/syntaxgym_results_gpt-2-pretrained_.csv of cpllab/syntactic-generalization
# (commit 43f1f86b746254406dafc89bd17b9d4976607ef6), column "correct" by item 0..n-1.
GPT2_NUMBER_SRC = "1101011111111101011"
GPT2_FGD_HIERARCHY = "011011001100110111011101"


def test_published_accuracy_matches_a_hand_recount():
    pub = catalog.published_accuracies("gpt-2-pretrained__0").set_index("suite")
    for suite, outcomes in (("number_src", GPT2_NUMBER_SRC), ("fgd_hierarchy", GPT2_FGD_HIERARCHY)):
        assert pub.loc[suite, "correct"] == outcomes.count("1") and pub.loc[suite, "items"] == len(outcomes)
        assert pub.loc[suite, "accuracy"] == outcomes.count("1") / len(outcomes)
    assert pub["source"].iloc[0].startswith("Hu et al. 2020, cpllab/syntactic-generalization data/raw/sg_results")
    assert set(pub["label"]) == {"GPT-2*"}


def test_circuit_accuracy_is_the_mean_of_its_suites():
    pub = catalog.published_accuracies("gpt-2-pretrained__0")
    circuits = catalog.circuit_accuracies(pub).set_index("circuit")
    agreement = pub[pub["suite"].isin(["number_orc", "number_prep", "number_src"])]["accuracy"].mean()
    assert circuits.loc["Agreement", "accuracy"] == pytest.approx(agreement) and circuits.loc["Agreement", "suites"] == 3
    assert circuits.loc["SG score", "suites"] == 31
    assert list(circuits.index) == catalog.circuits()["circuits"] + ["SG score"]
    with pytest.raises(UserError, match="No published model 'gpt-3'"):
        catalog.published_accuracies("gpt-3")


# ---- the real model ---------------------------------------------------------------------------
@pytest.mark.slow
def test_a_shipped_item_with_the_real_model(smollm):
    engine = Engine(make_scorer(smollm))
    suite = catalog.load_suite("fgd_object")
    result = score_item(engine, suite.item(1), suite)
    words = engine.word_scores([c.sentence for c in suite.item(1).conditions])
    for c in suite.item(1).conditions:
        rows = result.regions[result.regions["condition"] == c.name]
        assert rows["surprisal_bits"].sum() == pytest.approx(sum(w["surprisal_bits"] for w in words[c.sentence]), abs=1e-6)
    assert len(result.evaluation.outcomes) == 1 and result.word_rule.startswith("word probability")
