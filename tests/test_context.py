"""A context before the sentences (issue 34, item 12): the seam rule, the check, and the scores
against independent references: plain transformers calls (the model's own forward pass on the
joined token ids, log-softmax in float64) and a masked LM masked by hand.

Fast tier: the tiny random-weight Llama with SmolLM2's tokenizer and a tiny RoBERTa-style masked
LM (tests/tiny_models.py, tests/masked_fixtures.py). Slow tier: the real offline SmolLM2-135M on
20 BLiMP pairs, through the Python API (accapp.score_pairs): LP of "B" after "A" equals
LP("A B") − LP("A") where the tokens of "A B" begin with the tokens of "A"."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from accapp.engine import Engine
from accapp.errors import MAX_CONTEXT_CHARS, UserError, check_context
from accapp.scoring.causal import CausalScorer
from accapp.scoring.context import seam
from accapp.scoring.naive import NaiveScorer
from accapp.service import context as service_context

GOOD, BAD = "These casseroles disgust Kayla.", "These casseroles disgusts Kayla."
CTX = "Kayla cooked all week for the party."
LP_FAMILY = ["lp", "mean_lp", "pen_lp", "slor", "bayes_factor_uniform", "bayes_factor_unigram"]


# ------------------------------------------------------------------------------------------ units
def test_seam_is_a_space_except_after_whitespace_or_at_a_cjk_character():
    assert seam("Who ate the cake?", "Kayla did.") == " "
    assert seam("Who ate the cake?\n", "Kayla did.") == ""
    assert seam("谁吃了蛋糕？", "李波吃了。") == ""
    assert seam("He said:", "他来了。") == ""
    assert seam("", "Kayla did.") == ""


def test_check_context_strips_and_refuses_clearly():
    assert check_context(None) == "" and check_context("   ") == "" and check_context("  A b.\n") == "A b."
    assert check_context("Line one.\nLine two.") == "Line one.\nLine two."  # a newline inside is kept
    for bad, said in [(3, "must be text"), ("x" * (MAX_CONTEXT_CHARS + 1), f"the limit is {MAX_CONTEXT_CHARS:,}"),
                      ("A\x00b", "control character"), ("A\u202eb", "control character")]:
        with pytest.raises(UserError, match=said):
            check_context(bad)


def test_the_report_says_which_methods_read_the_context():
    rec = service_context.context_record(CTX, ["lp", "in_template_lp", "yes_no_prob_comp", "slor", "lp"])
    assert rec["conditioned"] == ["lp", "slor"] and rec["not_applied"] == ["in_template_lp", "yes_no_prob_comp"]
    assert service_context.context_record("", ["lp"]) is None


# ------------------------------------------------------------------------------------------ the reference
def plain_lp(lm, ids: list[int]) -> np.ndarray:
    """log p of every token of ids after the first, from one plain forward pass (float64 log-softmax)."""
    with torch.inference_mode():
        logits = lm.model(torch.tensor([ids])).logits[0].double()
    lp = torch.log_softmax(logits, -1)
    return np.array([lp[i - 1, ids[i]].item() for i in range(1, len(ids))])


def token_ids(lm, text: str) -> list[int]:
    return lm.tokenizer(text, add_special_tokens=False)["input_ids"]


def conditional_lp(lm, context: str, sentence: str) -> float:
    """LP("A B") − LP("A") from plain calls: the joined text tokenized whole, after the start token."""
    joined = [lm.start_id] + token_ids(lm, context + " " + sentence)
    alone = [lm.start_id] + token_ids(lm, context)
    assert joined[: len(alone)] == alone  # the tokens of "A B" begin with the tokens of "A"
    return float(plain_lp(lm, joined).sum() - plain_lp(lm, alone).sum())


# ------------------------------------------------------------------------------------------ fast: tiny models
def test_tiny_lp_after_a_context_equals_the_difference_of_two_plain_passes(tiny_llama):
    engine = Engine(CausalScorer(tiny_llama))
    pair = engine.check_pair(GOOD, BAD, context=CTX)
    res = engine.score_pairs([pair], ["lp", "mean_lp"], "en", words=True)[0]
    lp = {s.method: (s.score_good, s.score_bad) for s in res.scores}
    want = conditional_lp(tiny_llama, CTX, GOOD), conditional_lp(tiny_llama, CTX, BAD)
    assert lp["lp"] == pytest.approx(want, abs=1e-3)
    # the sentence's tokens only: MeanLP divides by them, and the token view starts at the sentence
    n_good = len(token_ids(tiny_llama, " " + GOOD))
    assert lp["mean_lp"][0] == pytest.approx(want[0] / n_good, abs=1e-4)
    assert res.len_good == n_good and res.tokens["good"][0]["start"] == 0
    assert "".join(t["token"] for t in res.tokens["good"]) == GOOD
    # the word view: its words are the sentence's, their sum the whole LP (the corrections telescope)
    assert [w["word"] for w in res.words["good"]] == ["These", "casseroles", "disgust", "Kayla", "."]
    assert sum(w["logprob"] for w in res.words["good"]) == pytest.approx(want[0], abs=1e-3)
    # without the context the numbers differ: it really conditions
    bare = engine.score_pairs([engine.check_pair(GOOD, BAD)], ["lp"], "en")[0].scores[0]
    assert abs(bare.score_good - lp["lp"][0]) > 0.1


def test_tiny_fast_scorer_equals_the_naive_one_with_a_context(tiny_llama):
    methods = LP_FAMILY  # the methods that read the context (the naive scorer is slow on templates)
    fast = Engine(CausalScorer(tiny_llama)).score_pairs(
        [Engine(CausalScorer(tiny_llama)).check_pair(GOOD, BAD, context=CTX)], methods, "en", words=True)[0]
    naive_engine = Engine(NaiveScorer(tiny_llama))
    naive = naive_engine.score_pairs([naive_engine.check_pair(GOOD, BAD, context=CTX)], methods, "en", words=True)[0]
    for a, b in zip(fast.scores, naive.scores, strict=True):
        assert (a.method, a.template, a.variant) == (b.method, b.template, b.variant)
        assert a.score_good == pytest.approx(b.score_good, rel=1e-4, abs=1e-4)
    for side in ("good", "bad"):
        assert [w["logprob"] for w in fast.words[side]] == pytest.approx([w["logprob"] for w in naive.words[side]], abs=1e-3)


def test_tiny_templates_and_prompts_do_not_read_the_context(tiny_llama):
    engine = Engine(CausalScorer(tiny_llama))
    methods = ["in_template_lp", "yes_no_prob_comp"]
    with_ctx = engine.score_pairs([engine.check_pair(GOOD, BAD, context=CTX)], methods, "en")[0].scores
    without = engine.score_pairs([engine.check_pair(GOOD, BAD)], methods, "en")[0].scores
    for a, b in zip(with_ctx, without, strict=True):  # the same strings, batched with others: float32 noise only
        assert (a.score_good, a.score_bad) == pytest.approx((b.score_good, b.score_bad), abs=1e-3)
    shown = engine.prompts_for(engine.check_pair(GOOD, BAD, context=CTX), "lp")
    assert shown[0]["text"].endswith(CTX + " " + GOOD) and "not scored" in shown[0]["kind"]


def test_a_context_over_the_token_limit_is_refused(tiny_llama):
    from accapp.engine import MAX_CONTEXT_TOKENS

    engine = Engine(CausalScorer(tiny_llama))
    with pytest.raises(UserError, match=f"the limit is {MAX_CONTEXT_TOKENS}"):
        engine.check_pair(GOOD, BAD, context="a, " * 330)  # 990 characters, about 660 tokens


def test_tiny_masked_lm_reads_the_context_as_left_context_never_masked():
    from accapp.scoring.masked import MaskedScorer
    from tests import masked_fixtures as mf

    tok = mf.wordpiece_tokenizer()
    model = mf.tiny_bert(tok)
    scorer = MaskedScorer(model, tok)

    class LM:  # what Engine needs of a loaded masked LM
        spec = type("S", (), {"id": "tiny-bert", "kind": "masked"})()

    scorer.lm = LM()
    engine = Engine(scorer)
    res = engine.score_pairs([engine.check_pair(GOOD, BAD, context=CTX)], ["pll_original"], "en", words=True)[0]
    # by hand: [CLS] context sentence [SEP], one sentence token masked at a time
    ids = [tok.cls_token_id] + token_ids_of(tok, CTX) + token_ids_of(tok, GOOD) + [tok.sep_token_id]
    first = 1 + len(token_ids_of(tok, CTX))
    total = 0.0
    for p in range(first, len(ids) - 1):
        x = list(ids)
        x[p] = tok.mask_token_id
        with torch.inference_mode():
            total += torch.log_softmax(model(torch.tensor([x])).logits[0, p].double(), -1)[ids[p]].item()
    assert res.scores[0].score_good == pytest.approx(total, abs=1e-4)
    assert "".join(w["word"] for w in res.words["good"]).replace(" ", "") == GOOD.replace(" ", "")
    assert res.len_good == len(ids) - 1 - first


def token_ids_of(tok, text):
    return tok(text, add_special_tokens=False)["input_ids"]


# ------------------------------------------------------------------------------------------ slow: SmolLM2
@pytest.mark.slow
def test_lp_after_a_context_is_the_difference_of_two_lps_on_20_blimp_pairs(smollm, blimp):
    """accapp.score_pairs (the Python API, the host's engine) on 20 BLiMP pairs, each after the good
    sentence of the next pair as its context, against plain transformers on SmolLM2-135M-Instruct."""
    import accapp

    rows = blimp.sample(200, random_state=3)
    picked = []
    for k in range(len(rows) - 1):
        a = rows.iloc[k + 1].good
        g, b = rows.iloc[k].good, rows.iloc[k].bad
        ok = all(token_ids(smollm, a + " " + s)[: len(token_ids(smollm, a))] == token_ids(smollm, a) for s in (g, b))
        if ok:
            picked.append((g, b, a))
        if len(picked) == 20:
            break
    assert len(picked) == 20
    df = accapp.score_pairs(picked, model=smollm.spec.id, methods=["lp"], progress=False)
    assert list(df.context) == [c for _, _, c in picked]
    for (g, b, a), row in zip(picked, df.itertuples()):
        assert row.score_good == pytest.approx(conditional_lp(smollm, a, g), abs=2e-3)
        assert row.score_bad == pytest.approx(conditional_lp(smollm, a, b), abs=2e-3)
    # a pair's own context and the call's context agree; no context at all gives other numbers
    one = accapp.score_pairs([picked[0][:2]], model=smollm.spec.id, methods=["lp"], context=picked[0][2], progress=False)
    assert one.score_good.iloc[0] == pytest.approx(df.score_good.iloc[0], abs=1e-4)
    bare = accapp.score_pairs([picked[0][:2]], model=smollm.spec.id, methods=["lp"], progress=False)
    assert "context" not in bare and not math.isclose(bare.score_good.iloc[0], df.score_good.iloc[0], abs_tol=0.01)


# ------------------------------------------------------------------------------------------ files: score a file, bench FILE
def test_a_pairs_file_context_column_reaches_the_file_job_and_the_runner(tiny_llama, tmp_path):
    from accapp.benchmarks import parse_pairs
    from accapp.runner.runner import plan_blocks, score_block
    from accapp.service.score_file import check_rows

    data = (f"good,bad,context\n\"{GOOD}\",\"{BAD}\",\"{CTX}\"\nThe cat sleeps.,The cat sleep.,\n").encode()
    pairs = parse_pairs(data, "mine.csv")
    assert list(pairs.context) == [CTX, ""]
    engine = Engine(CausalScorer(tiny_llama))
    checked, errors = check_rows(engine, pairs)
    assert not errors and [p.context for _, p in checked] == [CTX, ""]
    want = conditional_lp(tiny_llama, CTX, GOOD)
    # bench FILE: the runner's blocks carry the context and score after it
    blocks, _ = plan_blocks(pairs, tmp_path, "tiny", "mine", {"lp": ["-"]})
    (block,) = blocks
    assert sorted(len(item) for item in block.items) == [5, 6]
    rows = score_block(engine, block, "mine", "en").rows
    got = rows[rows.good == GOOD].score_good.iloc[0]
    assert got == pytest.approx(want, abs=1e-3)
    other = rows[rows.good == "The cat sleeps."].score_good.iloc[0]
    assert other == pytest.approx(engine.score_pair("The cat sleeps.", "The cat sleep.", ["lp"], "en").scores[0].score_good,
                                  abs=1e-3)
