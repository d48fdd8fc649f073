"""Word surprisal: the plain token sum and the word probability with the leading-space
correction (Pimentel & Meister 2024; accapp/scoring/boundary.py, word_prob.py,
docs/word_probability.md).

The brute-force check builds its own B (which tokens begin a new word after a letter) from
the tokenizer's pieces and sums the model's full-vocabulary log-softmax over it, sharing no
code with accapp.scoring.boundary or accapp.scoring.word_prob.
"""

from __future__ import annotations

import math
import unicodedata

import numpy as np
import pytest
import torch

from accapp.engine import Engine, make_scorer, word_rule
from accapp.scoring.api import BoundaryRequest
from accapp.scoring.boundary import boundary_masks, context_kinds
from accapp.scoring.causal import CausalScorer
from accapp.scoring.word_prob import WORD_RULE_CORRECTED, WORD_RULE_SUM, sum_records, word_records

CASSEROLES = "These casseroles disgust Kayla."
ENGLISH = [CASSEROLES, "These casseroles disgusts Kayla.", "I don't think Kayla's well-known friends bought 3,000 souvenirs."]
CHINESE = ["他们喜欢这本书。", "他们在2019年买了iPhone和3,000本书。"]
FIELDS = {"index", "word", "start", "end", "tokens", "logprob_sum", "logprob", "correction", "surprisal_nats",
          "surprisal_bits", "sum_surprisal_nats", "sum_surprisal_bits", "no_token", "correction_applies"}


from tests.threads import one_thread  # noqa: E402,F401 - autouse: one torch thread for this module


def _boundary(engine, text):
    return engine.scorer.execute([BoundaryRequest(text)])[BoundaryRequest(text)]


def _check_identity(engine, texts, tol=2e-4):
    """Per sentence: the plain sums add up to LP, the corrected values to LP + log P(B | sentence)."""
    words = engine.word_scores(texts)
    for text, (tokens, _) in zip(texts, engine.token_scores(texts)):
        lp = sum(t["logprob"] for t in tokens)
        bnd = _boundary(engine, text)
        assert bnd.shape == (len(tokens) + 1,) and bnd[0] == 0.0 and np.all(bnd <= 0) and np.all(np.isfinite(bnd))
        recs = words[text]
        # a Chinese word grouped by jieba (accapp/segment.py) also carries its characters, the segmenter, and
        # "joined" where one token crossed several words (segment.merge_crossing)
        assert all(set(r) - {"characters", "segmenter", "joined"} == FIELDS and math.isfinite(r["logprob"]) for r in recs)
        assert sum(r["logprob_sum"] for r in recs) == pytest.approx(lp, abs=1e-9)
        assert sum(r["logprob"] for r in recs) == pytest.approx(lp + bnd[-1], abs=tol)
    return words


# ---- the record module alone -----------------------------------------------------------
def test_word_records_by_hand():
    """Offsets of SmolLM2's tokens of "These casseroles disgust Kayla." with made-up numbers."""
    offsets = [(0, 5), (5, 12), (12, 16), (16, 24), (24, 28), (28, 30), (30, 31)]
    lps = [-1.0, -2.0, -0.5, -3.0, -4.0, -0.25, -1.5]
    bnd = [0.0, -0.1, -0.2, -0.05, -0.3, -0.4, -0.02, -0.01]
    recs = word_records(CASSEROLES, offsets, lps, bnd)
    assert [r["word"] for r in recs] == ["These", "casseroles", "disgust", "Kayla", "."]
    assert [r["tokens"] for r in recs] == [[0], [1, 2], [3], [4, 5], [6]]
    disgust = recs[2]
    assert disgust["logprob_sum"] == -3.0
    assert disgust["logprob"] == pytest.approx(-3.0 + (-0.3) - (-0.05))
    assert disgust["surprisal_bits"] == pytest.approx((3.0 + 0.3 - 0.05) / math.log(2))
    assert disgust["sum_surprisal_nats"] == 3.0
    assert recs[0]["logprob"] == pytest.approx(-1.0 - 0.1)  # the first word's denominator is boundary[0] = 0
    assert sum(r["logprob"] for r in recs) == pytest.approx(sum(lps) + bnd[-1])
    plain = word_records(CASSEROLES, offsets, lps)
    assert all(r["logprob"] == r["logprob_sum"] and not r["correction_applies"] for r in plain)
    with pytest.raises(ValueError):
        word_records(CASSEROLES, offsets, lps, bnd[:-1])


def test_word_without_token_gets_zero():
    """Gemma writes 他们 as one token: 们 owns none (words.py), logprob 0, marked, no correction."""
    recs = word_records("他们好", [(0, 2), (2, 3)], [-5.0, -2.0], [0.0, -0.7, -0.2])
    assert [(r["word"], r["tokens"], r["no_token"]) for r in recs] == [("他", [0], False), ("们", [], True), ("好", [1], False)]
    assert recs[1]["logprob"] == 0.0 and recs[1]["surprisal_bits"] == 0.0 and recs[1]["correction"] == 0.0
    assert sum(r["logprob"] for r in recs) == pytest.approx(-7.0 - 0.2)


def test_context_kinds_follow_the_word_rule():
    # "3,000 ok." after: "3" digit, "," punct, "0" digit, " ok" letter, "." punct
    assert context_kinds("3,000 ok.", [(0, 1), (1, 2), (2, 5), (5, 8), (8, 9)]) == [None, "0", None, "0", "a", None]
    assert context_kinds("书。", [(0, 1), (1, 2)]) == [None, None, None]


# ---- which vocabulary items begin a word -------------------------------------------------
def test_boundary_sets_of_the_real_tokenizers(tiny_llama, tiny_gemma):
    """B for SmolLM2's byte-level BPE and Gemma's SentencePiece (counts: docs/word_probability.md)."""
    begin = {"Ġ": ["Ġ", "Ġthe", "Ċ", ".", ",", "?", "'", "<|endoftext|>", "<|im_end|>"],
             "▁": ["▁", "▁the", "▁▁", "\n", ".", ",", "?", "'", "<bos>", "<eos>", "<end_of_turn>"]}
    go_on = {"Ġ": ["s", "la", "'s", "oles"], "▁": ["s", "la", "oles"]}
    masks = {}
    for lm, space in ((tiny_llama, "Ġ"), (tiny_gemma, "▁")):
        tok = lm.tokenizer
        masks[space] = boundary_masks(tok, lm.vocab_size)
        after_letter = masks[space]["a"]
        ids = tok.convert_tokens_to_ids
        assert all(ids(p) != tok.unk_token_id for p in begin[space] + go_on[space] if p != "<|endoftext|>")
        assert all(after_letter[ids(p)] for p in begin[space])
        assert not any(after_letter[ids(p)] for p in go_on[space])
        assert after_letter[tok.eos_token_id]
        assert after_letter[tok("这", add_special_tokens=False)["input_ids"][0]]
        assert 0.5 < after_letter.mean() < 0.8
    assert (int(masks["Ġ"]["a"].sum()), int(masks["Ġ"]["0"].sum())) == (33211, 33211)
    gemma = masks["▁"]
    assert (int(gemma["a"].sum()), int(gemma["0"].sum())) == (172706, 172704)
    ids = tiny_gemma.tokenizer.convert_tokens_to_ids
    assert gemma["a"][ids("<0xE4>")] and not gemma["a"][ids("<0xBB>")]  # a CJK lead byte; a continuation byte


def test_correction_vanishes_when_every_token_begins_a_word():
    """A tokenizer whose every vocabulary item starts with "▁" (WordLevel over Metaspace): P(B) = 1
    everywhere, so every boundary value is exactly 0 and logprob == logprob_sum exactly."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    from accapp.models import get_spec
    from accapp.models.loading import LoadedModel

    words = ["<unk>", "<s>", "</s>"] + ["\u2581" + w for w in "These casseroles disgust disgusts Kayla. the dogs bark".split()]
    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="always")
    backend.decoder = decoders.Metaspace(prepend_scheme="always")
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>", bos_token="<s>", eos_token="</s>")
    assert boundary_masks(tok, len(words))["a"].all()
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=len(words), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                         num_attention_heads=2, num_key_value_heads=1, head_dim=16)).eval()
    lm = LoadedModel(get_spec("smollm2-135m-instruct"), model, tok, "cpu", "fp32", None, 1)
    engine = Engine(CausalScorer(lm))
    for text in ("These casseroles disgust Kayla.", "the dogs bark"):
        assert np.all(_boundary(engine, text) == 0.0)
        recs = engine.word_scores([text])[text]
        assert all(r["correction"] == 0.0 and r["logprob"] == r["logprob_sum"] for r in recs)
        assert any(r["logprob_sum"] < -0.5 for r in recs)


# ---- the engine on tiny models (fast tier) -------------------------------------------------
def test_boundary_masks_are_built_once_per_tokenizer_and_equal_a_fresh_build(tiny_llama):
    """Every scorer of one tokenizer shares its word-boundary masks (Gemma's take seconds to build);
    they are boundary_masks' own, and a scorer of another tokenizer object gets its own."""
    import copy
    import dataclasses

    first, second = CausalScorer(tiny_llama), CausalScorer(tiny_llama)
    assert first.boundary_masks() is second.boundary_masks()
    fresh = boundary_masks(tiny_llama.tokenizer, first._vocab)
    assert sorted(fresh) == sorted(first.boundary_masks())
    assert all(np.array_equal(first.boundary_masks()[k].numpy(), fresh[k]) for k in fresh)
    other = CausalScorer(dataclasses.replace(tiny_llama, tokenizer=copy.deepcopy(tiny_llama.tokenizer)))
    assert other.boundary_masks() is not first.boundary_masks()


@pytest.mark.parametrize("name", ["tiny_llama", "tiny_gemma"])
def test_fast_and_naive_scorers_agree_and_sums_are_token_scores(name, request):
    lm = request.getfixturevalue(name)
    fast, naive = Engine(make_scorer(lm)), Engine(make_scorer(lm, naive=True))
    texts = ENGLISH + CHINESE
    words = _check_identity(fast, texts)
    ref = naive.word_scores(texts)
    for text, (tokens, _) in zip(texts, fast.token_scores(texts)):
        for r, q in zip(words[text], ref[text]):
            assert r["tokens"] == q["tokens"] and r["logprob"] == pytest.approx(q["logprob"], abs=1e-4)
            # the plain sum is exactly the sum of token_scores' own log-probs, in token order
            total = 0.0
            for t in r["tokens"]:
                total += tokens[t]["logprob"]
            assert r["logprob_sum"] == total
    assert np.any(_boundary(fast, ENGLISH[0]) < -1e-3)  # the random model leaves mass outside B


@pytest.mark.parametrize("name", ["tiny_llama", "tiny_gemma"])
def test_boundaries_from_the_scoring_pass_equal_a_pass_of_their_own(name, request):
    """execute answers a BoundaryRequest from the pass that scores its sentence (a template-mate
    packed beside it); boundary_logprobs runs a pass of its own: the same values. And the
    probe's words (score_pairs with words=True, one call) are word_scores' own."""
    from accapp.methods import method_ids
    from accapp.scoring.api import SeqRequest

    lm = request.getfixturevalue(name)
    engine = Engine(make_scorer(lm))
    texts = ENGLISH + CHINESE
    mates = [SeqRequest(("Here is a sentence: ", t)) for t in texts]  # packed rows with a shared prefix
    got = engine.scorer.execute([BoundaryRequest(t) for t in texts] + mates)
    for t, own in zip(texts, engine.scorer.boundary_logprobs(texts)):
        np.testing.assert_allclose(got[BoundaryRequest(t)], own, atol=2e-5)
    (result,) = engine.score_pairs([engine.check_pair(ENGLISH[0], ENGLISH[1])], method_ids("causal"), words=True)
    alone = engine.word_scores(ENGLISH[:2])
    for key, text in (("good", ENGLISH[0]), ("bad", ENGLISH[1])):
        assert [w["word"] for w in result.words[key]] == [w["word"] for w in alone[text]]
        np.testing.assert_allclose([w["logprob"] for w in result.words[key]], [w["logprob"] for w in alone[text]], atol=1e-4)


def test_word_rule_names():
    assert word_rule("causal") == WORD_RULE_CORRECTED and word_rule("masked") == WORD_RULE_SUM
    assert "Pimentel & Meister 2024" in WORD_RULE_CORRECTED


def test_masked_engine_gives_pll_word_sums():
    from masked_fixtures import tiny_bert, wordpiece_tokenizer

    from accapp.scoring.masked import MaskedScorer

    tok = wordpiece_tokenizer()
    engine = Engine(MaskedScorer(tiny_bert(tok, seed=1), tok, batch_size=16))
    assert engine.word_rule == WORD_RULE_SUM
    text = "I don't think Kayla's friends bought 3,000 souvenirs."
    recs = engine.word_scores([text])[text]
    (_, detail), = engine.token_scores([text])
    assert [r["word"] for r in recs] == [w.text for w in detail.words]
    for r, w in zip(recs, detail.words):
        assert r["logprob"] == r["logprob_sum"] == pytest.approx(sum(detail.tokens[t].logprob["word_l2r"] for t in w.tokens))
        assert r["correction_applies"] is False and r["tokens"] == list(w.tokens)
    assert sum_records([{"index": 0, "word": "a", "start": 0, "end": 1, "tokens": [0], "logprob_sum": -2.0}])[0]["logprob"] == -2.0


# ---- the real models (slow tier) -----------------------------------------------------------
def _gpt2_byte_decoder() -> dict[str, int]:
    bs = [*range(33, 127), *range(161, 173), *range(174, 256)]
    cs = list(bs)
    extra = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def _word_char(ch: str) -> bool:
    cjk = 0x2E80 <= ord(ch) <= 0x9FFF or 0xF900 <= ord(ch) <= 0xFAFF or ord(ch) >= 0x20000
    return unicodedata.category(ch)[0] in "LNM" and not cjk


def _brute_force_b_after_letter(tok) -> np.ndarray:
    """In B after a letter: special tokens; text starting with whitespace; a first character that
    is not a letter/digit/mark (or is CJK), unless it is an apostrophe or hyphen before one; a
    byte piece that begins a CJK character (lead byte E3-E9). Not in B: everything else."""
    table = _gpt2_byte_decoder()
    special = set(tok.all_special_ids)
    out = np.zeros(len(tok), dtype=bool)
    for i, piece in enumerate(tok.convert_ids_to_tokens(list(range(len(tok))))):
        if i in special:
            out[i] = True
            continue
        data = bytes(table[c] for c in piece)
        text = data.decode("utf-8", errors="replace")
        if text[0] == "\ufffd":
            out[i] = 0xE3 <= data[0] <= 0xE9
        elif text[0].isspace():
            out[i] = True
        elif _word_char(text[0]):
            out[i] = False
        else:
            out[i] = not (text[0] in "'-" and len(text) > 1 and _word_char(text[1]))
    return out


@pytest.mark.slow
def test_disgust_matches_brute_force_on_smollm2(smollm):
    """log p("disgust" | "These casseroles") = log p(Ġdisgust | ...) + log P(B | ... Ġdisgust)
    - log P(B | ... oles), by one plain forward pass and explicit sums over B."""
    tok = smollm.tokenizer
    ids = tok(CASSEROLES, add_special_tokens=False)["input_ids"]
    assert tok.convert_ids_to_tokens(ids) == ["These", "Ġcasser", "oles", "Ġdisgust", "ĠKay", "la", "."]
    b = torch.from_numpy(_brute_force_b_after_letter(tok))
    with torch.inference_mode():
        logits = smollm.model(torch.tensor([[smollm.start_id, *ids]])).logits[0].double()
    logp = torch.log_softmax(logits, dim=-1)  # row k: after the start token and the first k tokens
    token = logp[3, ids[3]].item()
    before, after = torch.logsumexp(logp[3][b], 0).item(), torch.logsumexp(logp[4][b], 0).item()
    expected = token + after - before
    engine = Engine(CausalScorer(smollm))
    disgust = engine.word_scores([CASSEROLES])[CASSEROLES][2]
    assert disgust["word"] == "disgust" and disgust["tokens"] == [3]
    assert disgust["logprob_sum"] == pytest.approx(token, abs=1e-4)
    assert disgust["logprob"] == pytest.approx(expected, abs=1e-4)
    assert disgust["logprob"] - disgust["logprob_sum"] == pytest.approx(-0.277, abs=0.005)  # docs/word_probability.md
    # "Kayla": two tokens (ĠKay la), then "." begins the next word
    kayla = engine.word_scores([CASSEROLES])[CASSEROLES][3]
    k_expected = logp[4, ids[4]].item() + logp[5, ids[5]].item() + torch.logsumexp(logp[6][b], 0).item() - after
    assert kayla["logprob"] == pytest.approx(k_expected, abs=1e-4)


@pytest.mark.slow
def test_telescoping_identity_on_smollm2(smollm):
    _check_identity(Engine(CausalScorer(smollm)), ENGLISH)


@pytest.mark.slow
def test_gemma_chinese_words_are_finite_and_telescope(gemma):
    """Words by jieba (accapp/segment.py), characters one a word in the character view: after a CJK
    character every token begins a word, so the correction is 0 wherever the context ends in one;
    2019, iPhone and 3,000 need it. 他们 is one Gemma token: in the character view 们 owns none."""
    from accapp.segment import characters

    engine = Engine(CausalScorer(gemma))
    words = _check_identity(engine, CHINESE + [CASSEROLES])
    first = words[CHINESE[0]]
    # jieba's 这 | 本书 is crossed by one Gemma token: one display unit, its parts kept (segment.merge_crossing)
    assert [r["word"] for r in first] == ["他们", "喜欢", "这本书", "。"] and first[2]["joined"] == ["这", "本书"]
    chars = characters(first)
    assert [r["word"] for r in chars] == list(CHINESE[0])
    assert all(r["correction"] == 0.0 for r in first + chars)
    assert any(r["no_token"] and r["logprob"] == 0.0 for r in chars)
    assert not first[0]["no_token"] and first[0]["logprob"] == chars[0]["logprob"]
    mixed = {r["word"]: r for r in words[CHINESE[1]]}
    assert mixed["iPhone"]["correction"] != 0.0 and mixed["2019"]["correction"] != 0.0
    assert all(math.isfinite(r["surprisal_bits"]) for r in words[CHINESE[1]])
