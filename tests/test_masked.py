"""Masked-LM PLL scoring (Kauf & Ivanova 2023) on tiny random BERT/RoBERTa models.

The reference below is written from the definitions alone (one forward pass of the full
model per masked copy; its own word regex and token-to-word rule); it shares no code
with accapp.scoring.masked.
"""

from __future__ import annotations

import copy
import re
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from masked_fixtures import bytelevel_tokenizer, tiny_bert, tiny_roberta, wordpiece_tokenizer

from accapp.engine import Engine, PairResult
from accapp.errors import MAX_SENTENCE_TOKENS, UserError
from accapp.methods import resolve
from accapp.methods.pll import PLL_METHOD_IDS
from accapp.models.loading import load_model
from accapp.scoring.api import INFLATION_MARGIN, Pair, PLLRequest
from accapp.scoring.masked import MaskedScorer
from accapp.scoring.pll_variants import VARIANTS, mask_sets

ENGLISH = [
    "These casseroles disgust Kayla.",
    "I don't think Kayla's friends bought 3,000 souvenirs.",
    "Who should Derek hug after shocking Richard?",
]
CHINESE = ["他们喜欢这本书。", "我看了三千本书，对吗？"]


# ---- fixtures ---------------------------------------------------------------------------
from tests.threads import one_thread  # noqa: E402,F401 - autouse: one torch thread for this module


@pytest.fixture(scope="module")
def bert():
    tok = wordpiece_tokenizer()
    return tiny_bert(tok, seed=1), tok


@pytest.fixture(scope="module")
def roberta():
    tok = bytelevel_tokenizer()
    return tiny_roberta(tok, seed=2), tok


@pytest.fixture(scope="module", params=["bert", "roberta"])
def mlm(request, bert, roberta):
    return bert if request.param == "bert" else roberta


# ---- the reference: brute force from the definitions ------------------------------------
REF_WORD = re.compile(r"[A-Za-z0-9]+(?:(?:['\-]|(?<=[0-9])[,.](?=[0-9]))[A-Za-z0-9]+)*|[\u4e00-\u9fff]|\S")


def reference(model, tok, text: str, variant: str):
    """Per scored token: (log-prob, masked scored-token indices). One forward pass per copy."""
    enc = tok(text, return_offsets_mapping=True, return_special_tokens_mask=True)
    ids, offs, special = enc["input_ids"], enc["offset_mapping"], enc["special_tokens_mask"]
    scored = [p for p in range(len(ids)) if not special[p]]
    words = [m.span() for m in REF_WORD.finditer(text)]

    def direct_word(p):
        a, b = offs[p]
        chars = [i for i in range(a, b) if not text[i].isspace()]
        if not chars:
            return None
        (w,) = [k for k, (s, e) in enumerate(words) if s <= chars[0] < e]
        assert all(words[w][0] <= c < words[w][1] for c in chars), "test sentences have no boundary-crossing token"
        return w

    word = {}
    for i, p in enumerate(scored):  # a token with no character of a word joins the next token's word
        w = direct_word(p)
        j = i
        while w is None:
            j += 1
            w = direct_word(scored[j])
        word[p] = w

    out = []
    for i, p in enumerate(scored):
        if variant == "original":
            masked = [p]
        elif variant == "word_l2r":
            masked = [q for q in scored if q >= p and word[q] == word[p]]
        elif variant == "whole_word":
            masked = [q for q in scored if word[q] == word[p]]
        elif variant == "sentence_l2r":
            masked = [q for q in scored if q >= p]
        x = list(ids)
        for q in masked:
            x[q] = tok.mask_token_id
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([x])).logits[0, p].double()
        lp = torch.log_softmax(logits, dim=-1)[ids[p]].item()
        out.append((lp, [scored.index(q) for q in masked]))
    return out


@pytest.mark.parametrize("text", ENGLISH + CHINESE)
def test_scorer_matches_brute_force_reference(mlm, text):
    model, tok = mlm
    detail = MaskedScorer(model, tok, batch_size=16).sentence_pll(text)
    n_special = sum(tok(text, return_special_tokens_mask=True)["special_tokens_mask"])
    assert len(detail.tokens) == len(tok(text)["input_ids"]) - n_special
    for variant in VARIANTS:
        ref = reference(model, tok, text, variant)
        got = [t.logprob[variant] for t in detail.tokens]
        np.testing.assert_allclose(got, [r[0] for r in ref], atol=1e-4, rtol=0, err_msg=variant)
        assert [t.masked[variant] for t in detail.tokens] == [r[1] for r in ref], variant
        assert detail.scores[variant] == pytest.approx(sum(r[0] for r in ref), abs=1e-3)


def test_reference_comparison_has_power(bert, roberta):
    """The variants really differ on these models, so agreeing with the reference means something."""
    for model, tok in (bert, roberta):
        d = MaskedScorer(model, tok).sentence_pll(ENGLISH[1])
        o = d.token_logprobs("original")
        for v in ("word_l2r", "whole_word", "sentence_l2r"):
            assert np.abs(d.token_logprobs(v) - o).max() > 0.1, v


def test_test_sentences_cover_the_tricky_cases(bert, roberta):
    """Multi-token words, clitics, numbers, punctuation and Chinese really occur as planned."""
    bd = MaskedScorer(*bert).sentence_pll(ENGLISH[1])
    rd = MaskedScorer(*roberta).sentence_pll(ENGLISH[1])
    for d in (bd, rd):
        by_word = {w.text: w for w in d.words}
        assert {"don't", "Kayla's", "3,000", "souvenirs", "."} <= set(by_word)
        for w in ("don't", "Kayla's", "3,000", "souvenirs"):
            assert len(by_word[w].tokens) >= 2, w
    # BERT splits "don't" into do ##n ' t, RoBERTa into Ġd on 't: the same word either way
    assert [bd.tokens[t].token for t in next(w for w in bd.words if w.text == "don't").tokens] != \
           [rd.tokens[t].token for t in next(w for w in rd.words if w.text == "don't").tokens]
    # Chinese: one character a word; the byte-level BPE spreads a character over byte pieces
    zb = MaskedScorer(*bert).sentence_pll(CHINESE[0])
    zr = MaskedScorer(*roberta).sentence_pll(CHINESE[0])
    assert [w.text for w in zb.words] == list(CHINESE[0]) == [w.text for w in zr.words]
    assert all(len(w.tokens) == 1 for w in zb.words)
    assert all(len(w.tokens) >= 2 for w in zr.words)


# ---- invariants -------------------------------------------------------------------------
def _single_token_sentence(tok, prefix_space: bool):
    pool = ["The", "the", "a", "is", "was", "to", "that", "and", "had", "not", "has", "be", "it", "he", "of"]
    words = []
    for w in pool:
        piece = (" " + w) if (prefix_space and words) else w
        if len(tok(piece, add_special_tokens=False)["input_ids"]) == 1:
            words.append(w)
    assert len(words) >= 4, words
    return " ".join(words[:6]) + "."


def test_single_token_words_make_original_word_l2r_whole_word_equal(mlm):
    model, tok = mlm
    text = _single_token_sentence(tok, prefix_space=tok.cls_token == "<s>")
    scorer = MaskedScorer(model, tok)
    d = scorer.sentence_pll(text)
    assert all(len(w.tokens) == 1 for w in d.words), [w.pieces for w in d.words]
    o = d.token_logprobs("original")
    np.testing.assert_allclose(d.token_logprobs("word_l2r"), o, atol=1e-6)
    np.testing.assert_allclose(d.token_logprobs("whole_word"), o, atol=1e-6)
    # and so says the reference
    ref = [r[0] for r in reference(model, tok, text, "whole_word")]
    np.testing.assert_allclose(ref, o, atol=1e-4)


@pytest.mark.parametrize("text", ENGLISH + CHINESE)
def test_sentence_l2r_of_the_last_token_is_original(mlm, text):
    d = MaskedScorer(*mlm).sentence_pll(text)
    last = d.tokens[-1]
    assert last.masked["sentence_l2r"] == last.masked["original"] == [last.index]
    assert last.logprob["sentence_l2r"] == pytest.approx(last.logprob["original"], abs=1e-6)
    first = d.tokens[0]
    assert first.masked["sentence_l2r"] == list(range(len(d.tokens)))


# float32: 1e-4 nats, or 1e-5 of the log-prob where that is more (an AVX-512 CPU's MKL rounds a batch of
# another shape differently: 1.1e-4 on a -15.9-nat token of the tiny random BERT, 7e-6 of it, measured)
F32 = {"atol": 1e-4, "rtol": 1e-5}


@pytest.mark.parametrize("dtype, atol, rtol", [(torch.float32, F32["atol"], F32["rtol"]), (torch.float64, 1e-9, 0)])
def test_batch_size_does_not_change_scores(mlm, dtype, atol, rtol):
    """float32 differs in the last bits with the batch shape; float64 shows the maths is the same."""
    model, tok = mlm
    model = copy.deepcopy(model).to(dtype)
    texts = ENGLISH + CHINESE
    base = MaskedScorer(model, tok, batch_size=64).score_sentences(texts)
    for chunk in (1, 3, 17, 1000):
        scorer = MaskedScorer(model, tok, batch_size=chunk)
        other = scorer.score_sentences(texts)
        for a, b in zip(base, other):
            for v in VARIANTS:
                np.testing.assert_allclose(a.token_logprobs(v), b.token_logprobs(v), atol=atol, rtol=rtol)
        # never more than chunk copies in one forward pass
        assert scorer.forward_passes == -(-scorer.copies_scored // chunk)


def test_sentences_scored_together_equal_sentences_scored_alone(mlm):
    """Padding a short sentence's copies up to a long one's length changes nothing."""
    model, tok = mlm
    scorer = MaskedScorer(model, tok, batch_size=200)
    together = scorer.score_sentences(ENGLISH + CHINESE)
    for text, d in zip(ENGLISH + CHINESE, together):
        alone = scorer.sentence_pll(text)
        for v in VARIANTS:
            np.testing.assert_allclose(d.token_logprobs(v), alone.token_logprobs(v), **F32)


def test_full_logits_fallback_agrees(mlm):
    model, tok = mlm
    a = MaskedScorer(model, tok).sentence_pll(ENGLISH[1])
    b = MaskedScorer(model, tok, split_head=False).sentence_pll(ENGLISH[1])
    for v in VARIANTS:
        np.testing.assert_allclose(a.token_logprobs(v), b.token_logprobs(v), **F32)


def test_copies_are_shared_between_variants(bert):
    model, tok = bert
    scorer = MaskedScorer(model, tok)
    d = scorer.sentence_pll(ENGLISH[0])
    n, n_words = len(d.tokens), len(d.words)
    multi_rest = sum(len(w.tokens) - 1 for w in d.words)
    # original: n copies; word-l2r adds one per non-last token of a word; whole-word at most
    # one per word; sentence-l2r at most n - 1 (its last token's copy is the original one)
    unique = {tuple(t.masked[v]) for t in d.tokens for v in VARIANTS}
    assert scorer.copies_scored == len(unique)
    assert scorer.copies_scored < 4 * n
    assert scorer.copies_scored <= n + multi_rest + n_words + (n - 1)


def test_special_tokens_are_never_masked_nor_scored(mlm):
    model, tok = mlm
    scorer = MaskedScorer(model, tok, batch_size=8)
    seen = []
    encoder = scorer._split[0]
    def record(mod, args, kwargs):
        seen.append((kwargs["input_ids"].clone(), kwargs["attention_mask"].clone()))

    hook = encoder.register_forward_pre_hook(record, with_kwargs=True)
    try:
        details = scorer.score_sentences(ENGLISH + CHINESE)
    finally:
        hook.remove()
    specials = set(tok.all_special_ids) - {tok.mask_token_id}
    assert len(seen) == scorer.forward_passes > 1
    for ids, att in seen:
        for row, m in zip(ids.tolist(), att.tolist()):
            real = row[: sum(m)]
            assert real[0] == tok.cls_token_id and real[-1] == tok.sep_token_id
            assert tok.mask_token_id not in (real[0], real[-1])
            assert tok.mask_token_id in real
    for text, d in zip(ENGLISH + CHINESE, details):
        enc = tok(text)
        n = len(enc["input_ids"]) - 2
        assert [t.position for t in d.tokens] == list(range(1, n + 1))
        assert all(t.token_id not in specials for t in d.tokens)
        for t in d.tokens:
            for v in VARIANTS:
                assert all(0 <= k < n for k in t.masked[v]) and t.index in t.masked[v]


def test_special_token_text_is_scored_as_text(bert, roberta):
    for model, tok in (bert, roberta):
        scorer = MaskedScorer(model, tok)
        enc = scorer.encode("The [MASK] is here.")
        assert tok.mask_token_id not in enc.input_ids
        assert sum(1 for i in enc.input_ids if i in (tok.cls_token_id, tok.sep_token_id)) == 2


def test_token_and_word_records(bert):
    d = MaskedScorer(*bert).sentence_pll(ENGLISH[1])
    text = ENGLISH[1]
    for t in d.tokens:
        assert t.token == text[t.start : t.end]
        assert d.words[t.word_index].text == t.word
        assert set(t.logprob) == set(t.masked) == set(VARIANTS)
    for w in d.words:
        for v in VARIANTS:
            assert w.logprob[v] == pytest.approx(sum(d.tokens[t].logprob[v] for t in w.tokens), abs=1e-9)
        assert w.inflation == pytest.approx(w.logprob["original"] - w.logprob["word_l2r"])
        assert w.inflated == (len(w.tokens) > 1 and w.inflation > INFLATION_MARGIN)
    for v in VARIANTS:
        assert d.scores[v] == pytest.approx(sum(w.logprob[v] for w in d.words), abs=1e-9)
    as_dict = d.to_dict()
    assert as_dict["tokens"][0]["masked"]["original"] == [0]
    assert as_dict["words"][1]["text"] == "don't"


def test_inflated_flag():
    """A multi-token word is flagged when PLL-original beats PLL-word-l2r by more than the margin."""
    tok = wordpiece_tokenizer()
    scorer = MaskedScorer(tiny_bert(tok), tok)
    enc = scorer.encode("These casseroles disgust Kayla.")
    plans = {v: mask_sets(enc.word_of, v) for v in VARIANTS}
    table = {}
    for v in VARIANTS:
        for t, m in enumerate(plans[v]):
            table[(0, m, t)] = -1.0 if len(m) == 1 else -1.0 - 0.6 * (len(m) - 1)  # more masked, less likely
    d = scorer._assemble(enc, plans, 0, table, VARIANTS)
    for w in d.words:
        n = len(w.tokens)
        # word-l2r masks n-1, n-2, ..., 0 extra tokens: inflation = 0.6 * n(n-1)/2
        assert w.inflation == pytest.approx(0.6 * n * (n - 1) / 2)
        assert w.inflated == (0.6 * n * (n - 1) / 2 > INFLATION_MARGIN)
    assert any(w.inflated for w in d.words) and not all(w.inflated for w in d.words)


def test_mask_sets_definitions():
    word_of = [0, 1, 1, 1, 2, 3, 3]
    assert mask_sets(word_of, "original") == [(t,) for t in range(7)]
    assert mask_sets(word_of, "word_l2r") == [(0,), (1, 2, 3), (2, 3), (3,), (4,), (5, 6), (6,)]
    assert mask_sets(word_of, "whole_word") == [(0,), (1, 2, 3), (1, 2, 3), (1, 2, 3), (4,), (5, 6), (5, 6)]
    assert mask_sets(word_of, "sentence_l2r") == [tuple(range(t, 7)) for t in range(7)]
    with pytest.raises(ValueError):
        mask_sets(word_of, "nope")


# ---- engine -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def engine(bert):
    return Engine(MaskedScorer(*bert, batch_size=32))


def test_engine_score_pair(engine, bert):
    good, bad = "These casseroles disgust Kayla.", "These casseroles disgusts Kayla."
    r = engine.score_pair("  " + good + " ", bad, "all")
    assert isinstance(r, PairResult)
    assert r.pair.good == good and r.pair.bad == bad
    assert [row["method"] for row in r.rows] == list(PLL_METHOD_IDS)
    for row in r.rows:
        assert set(row) == {"method", "template", "variant", "score_good", "score_bad", "verdict", "prediction"}
        assert row["template"] == "-" and row["variant"] == "" and row["prediction"] == ""
        expected = "good" if row["score_good"] > row["score_bad"] else "bad" if row["score_good"] < row["score_bad"] else "tie"
        assert row["verdict"] == expected
        v = row["method"][len("pll_"):]
        assert row["score_good"] == pytest.approx(r.detail["good"].scores[v])
    tok = bert[1]
    assert r.len_good == len(tok(good, add_special_tokens=False)["input_ids"]) == len(r.tokens["good"])
    assert r.len_bad == len(tok(bad, add_special_tokens=False)["input_ids"]) == len(r.tokens["bad"])
    for key in ("good", "bad"):
        for t, d in zip(r.tokens[key], r.detail[key].tokens):
            assert set(t) == {"token", "start", "end", "logprob"}
            assert t["logprob"] == d.logprob["original"]
    # the numbers equal the scorer's own
    alone = MaskedScorer(*bert).sentence_pll(good)
    assert r.detail["good"].scores["word_l2r"] == pytest.approx(alone.scores["word_l2r"], abs=1e-4)


def test_engine_method_selection(engine):
    r = engine.score_pair("Who should Derek hug?", "Who should Derek hugs?", "pll_word_l2r,pll_sentence_l2r")
    assert [row["method"] for row in r.rows] == ["pll_word_l2r", "pll_sentence_l2r"]
    assert {"original", "word_l2r", "sentence_l2r"} <= set(r.detail["good"].variants)
    r = engine.score_pair("Who should Derek hug?", "Who should Derek hugs?", ["pll_whole_word"])
    assert [row["method"] for row in r.rows] == ["pll_whole_word"]
    assert len(engine.score_pair("a b.", "b a.", None).rows) == 4
    assert len(engine.score_pair("a b.", "b a.", ["all"]).rows) == 4
    for bad_ids in ("pll_nope", "lp", ["pll_original", "yn_prob"], "", []):
        with pytest.raises(UserError):
            engine.score_pair("a b.", "b a.", bad_ids)
    with pytest.raises(UserError, match="need a causal LM"):
        resolve("mean_lp", "masked")
    with pytest.raises(UserError, match="need a masked LM"):
        resolve("pll_original", "causal")


def test_engine_identical_sentences_tie(engine):
    r = engine.score_pair("These casseroles disgust Kayla.", "These casseroles disgust Kayla.", "all")
    assert all(row["verdict"] == "tie" for row in r.rows)


def test_engine_validates_input(engine):
    for good, bad in ((None, "a."), ("", "a."), ("a.", "   "), ("a\tb", "a."), ("a." * 300, "a.")):
        with pytest.raises(UserError):
            engine.score_pair(good, bad)
    long = " ".join(["Kayla"] * (MAX_SENTENCE_TOKENS // 3 + 5))
    with pytest.raises(UserError, match="tokens long"):
        engine.score_pair(long, "a.")


def test_engine_score_pairs_and_token_scores(engine):
    pairs = [Pair("These casseroles disgust Kayla.", "These casseroles disgusts Kayla."),
             Pair("他们喜欢这本书。", "他们喜欢这书本。", {"paradigm": "x"})]
    results = engine.score_pairs(pairs, "all", None)
    assert len(results) == 2 and results[1].pair is pairs[1]
    for r in results:
        assert r.len_good == len(r.tokens["good"]) and r.len_bad == len(r.tokens["bad"])
    (tokens, detail), = engine.token_scores(["他们喜欢这本书。"])
    assert tokens == results[1].tokens["good"]
    assert detail.scores == results[1].detail["good"].scores  # every variant the pair run computed, the same
    with pytest.raises(UserError):
        engine.token_scores([""])
    copies = engine.scorer.show(PLLRequest("Kayla's dog.", "word_l2r"))
    assert len(copies) == engine.scorer.n_tokens("Kayla's dog.")
    assert copies[0]["text"].startswith("[CLS]") and "[MASK]" in copies[0]["text"]
    assert copies[-1]["text"].endswith("[SEP]")
    shown = engine.prompts_for(pairs[0], "pll_original")
    assert len(shown) == results[0].len_good + results[0].len_bad
    assert shown[0]["kind"].startswith("good: ") and shown[-1]["kind"].startswith("bad: ")


# ---- registry and loading ---------------------------------------------------------------
MASKED_IDS = ["bert-base-cased", "bert-large-cased", "roberta-base", "roberta-large", "distilbert-base-cased", "bert-base-chinese"]


def test_registry_entries():
    from accapp.models import registry

    specs = registry()
    for mid in MASKED_IDS:
        s = specs[mid]
        assert s.kind == "masked" and s.variant == "base" and s.source == {"type": "hub"}
        assert s.hub_id and s.license and s.start_token == "" and not s.embedded
        assert s.languages
    assert specs["bert-base-chinese"].languages == ("zh",)
    assert specs["roberta-base"].hub_id.endswith("roberta-base")
    assert specs["smollm2-135m-instruct"].kind == "causal"  # existing entries untouched


def test_unknown_masked_models_and_bad_options_are_refused(monkeypatch):
    from accapp.engine import build_engine
    from accapp.models import availability

    with pytest.raises(UserError, match="Unknown model"):
        load_model("bert-base-uncased-not-in-registry")
    # A hub id is a model form (issue 30, tests/test_any_model.py); with the hub out of reach and
    # nothing cached it is named in one sentence.
    monkeypatch.setattr(availability, "hub_reachable", lambda: False)
    with pytest.raises(UserError, match="'google-bert/bert-base-cased-not-cached'"):
        load_model("google-bert/bert-base-cased-not-cached")
    with pytest.raises(UserError):
        load_model("bert-base-cased", dtype="fp8")
    with pytest.raises(UserError):
        build_engine("nope")
    with pytest.raises(UserError):
        build_engine("bert-base-cased", in_template_scope="nope")


def _fake_loader(bert, calls):
    from accapp.models import ModelSpec, get_spec

    def load(model_id, dtype="fp32", quantization=None, device=None):
        spec = model_id if isinstance(model_id, ModelSpec) else get_spec(model_id)  # build_engine hands the resolved spec
        calls.append((spec.id, dtype, quantization))
        return SimpleNamespace(spec=spec, model=bert[0], tokenizer=bert[1], device="cpu", dtype=dtype, quantization=quantization)

    return load


def test_build_engine_for_a_masked_model(bert, monkeypatch):
    """build_engine picks the masked scorer for a masked registry model (hub loading faked)."""
    import accapp.models.loading as loading
    from accapp.engine import build_engine

    calls = []
    monkeypatch.setattr(loading, "load_model", _fake_loader(bert, calls))
    eng = build_engine("bert-base-cased", batch_size=5)
    assert calls == [("bert-base-cased", "fp32", None)]
    assert eng.kind == "masked" and eng.scorer.batch_size == 5 and eng.lm.spec.id == "bert-base-cased"
    r = eng.score_pair("These casseroles disgust Kayla.", "These casseroles disgusts Kayla.", "all")
    assert len(r.rows) == 4


def test_cli_score_with_a_masked_model(bert, monkeypatch, capsys):
    """The CLI's path for a registry model whose kind is not causal (hub loading faked)."""
    import json

    import accapp.models.loading as loading
    from accapp.cli import main

    monkeypatch.setattr(loading, "load_model", _fake_loader(bert, []))
    rc = main(["score", "--model", "bert-base-cased", "--good", "These casseroles disgust Kayla.",
               "--bad", "These casseroles disgusts Kayla.", "--format", "json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert [m["method"] for m in out["methods"]] == list(PLL_METHOD_IDS)
    assert len(out["tokens"]["good"]) == len(bert[1]("These casseroles disgust Kayla.", add_special_tokens=False)["input_ids"])
