"""The two word rules of PLL-word-l2r / PLL-whole-word (docs/pll_words.md): the project's
(accapp.words) and the tokenizer's own word split (Kauf & Ivanova's code, minicons'
``within_word_l2r``: ``encoding.word_ids()``), on tiny random BERT/RoBERTa models with real
tokenizers (tests/masked_fixtures.py).

The reference below follows minicons' ``get_masked_tensors`` from the definitions, one
forward pass of the full model per masked copy; it uses no project code.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch
from masked_fixtures import bytelevel_tokenizer, tiny_bert, tiny_roberta, wordpiece_tokenizer

from accapp.methods.base import Context
from accapp.methods.pll import PLL_METHODS, word_rule
from accapp.scoring.api import Pair, PLLRequest
from accapp.scoring.convention import get as get_convention
from accapp.scoring.masked import MaskedScorer
from accapp.scoring.pll_variants import VARIANTS

# Each has a word the two rules split differently (a clitic, a possessive, a hyphen, a number).
DIFFERENT = [
    "I couldn't find the book.",
    "Kayla's friends sold 3,000 souvenirs.",
    "The well-known author couldn't leave.",
]
# The same words under both rules (BERT's pre-tokenizer and the project both cut off punctuation).
SAME = ["These casseroles disgust Kayla.", "Who should Derek hug after shocking Richard?"]


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


def _scored(tok, text):
    """(encoding, scored input positions), as minicons picks them: not CLS, SEP or PAD."""
    enc = tok(text)
    skip = {tok.cls_token_id, tok.sep_token_id, tok.pad_token_id}
    return enc, [p for p, i in enumerate(enc["input_ids"]) if i not in skip]


# ---- (a) the tokenizer rule's words are the tokenizer's word_ids() -----------------------
@pytest.mark.parametrize("text", DIFFERENT + SAME)
def test_tokenizer_rule_word_of_is_word_ids(mlm, text):
    model, tok = mlm
    enc, scored = _scored(tok, text)
    got = MaskedScorer(model, tok).encode(text, "tokenizer")
    assert got.positions == tuple(scored)
    assert list(got.word_of) == [enc.word_ids()[p] for p in scored]


def test_tokenizer_rule_words_are_bert_pre_tokenizer_words(bert):
    model, tok = bert
    scorer = MaskedScorer(model, tok)
    for text in DIFFERENT + SAME:
        expected = [(w, span) for w, span in tok.backend_tokenizer.pre_tokenizer.pre_tokenize_str(text)]
        got = scorer.encode(text, "tokenizer").words
        assert [(w.text, (w.start, w.end)) for w in got] == expected
        assert [w.index for w in got] == list(range(len(got)))
    texts = {w.text for t in DIFFERENT for w in scorer.encode(t, "tokenizer").words}
    assert {"couldn", "'", "t", "Kayla", "s", "well", "-", "known", "3", ",", "000"} <= texts
    texts = {w.text for t in DIFFERENT for w in scorer.encode(t, "project").words}
    assert {"couldn't", "Kayla's", "well-known", "3,000"} <= texts


# ---- (b) the same words: the same scores -------------------------------------------------
@pytest.mark.parametrize("text", SAME)
def test_same_words_same_scores(bert, text):
    scorer = MaskedScorer(*bert)
    p, t = scorer.sentence_pll(text, words="project"), scorer.sentence_pll(text, words="tokenizer")
    assert [(w.text, w.start, w.end, w.tokens) for w in p.words] == [(w.text, w.start, w.end, w.tokens) for w in t.words]
    assert any(len(w.tokens) > 1 for w in p.words)  # multi-token words, so word_l2r means something
    for v in VARIANTS:
        assert [tk.masked[v] for tk in p.tokens] == [tk.masked[v] for tk in t.tokens]
        np.testing.assert_allclose(t.token_logprobs(v), p.token_logprobs(v), atol=1e-9, rtol=0)
        assert t.scores[v] == pytest.approx(p.scores[v], abs=1e-9)


@pytest.mark.parametrize("text", DIFFERENT)
def test_word_free_variants_do_not_depend_on_the_rule(bert, text):
    scorer = MaskedScorer(*bert)
    p, t = scorer.sentence_pll(text, words="project"), scorer.sentence_pll(text, words="tokenizer")
    for v in ("original", "sentence_l2r"):
        assert t.scores[v] == pytest.approx(p.scores[v], abs=1e-6)


# ---- (c) a clitic: different mask sets --------------------------------------------------
def test_clitic_mask_sets_differ(bert):
    model, tok = bert
    text = DIFFERENT[0]  # "I couldn't find the book."
    scorer = MaskedScorer(model, tok)
    p, t = scorer.sentence_pll(text, words="project"), scorer.sentence_pll(text, words="tokenizer")
    a = text.index("couldn't")
    word = [tk.index for tk in p.tokens if a <= tk.start < a + len("couldn't")]  # couldn't
    stem = [tk.index for tk in p.tokens if a <= tk.start < a + len("couldn")]  # couldn
    assert len(word) >= 3 and 1 <= len(stem) < len(word)
    assert [w.text for w in p.words] == ["I", "couldn't", "find", "the", "book", "."]
    assert [w.text for w in t.words] == ["I", "couldn", "'", "t", "find", "the", "book", "."]
    first, apo, last = word[0], word[len(stem)], word[-1]
    assert p.tokens[first].masked["word_l2r"] == word
    assert t.tokens[first].masked["word_l2r"] == stem
    assert p.tokens[apo].masked["whole_word"] == word
    assert t.tokens[apo].masked["whole_word"] == [apo]
    assert p.tokens[apo].masked["word_l2r"] == [u for u in word if u >= apo]
    assert t.tokens[apo].masked["word_l2r"] == [apo]
    assert p.tokens[last].masked["word_l2r"] == t.tokens[last].masked["word_l2r"] == [last]
    assert abs(p.scores["word_l2r"] - t.scores["word_l2r"]) > 1e-3
    assert abs(p.scores["whole_word"] - t.scores["whole_word"]) > 1e-3
    # one execute call with both rules: two results, each its own rule's (the cache keeps both)
    rp, rt = PLLRequest(text, "word_l2r"), PLLRequest(text, "word_l2r", "tokenizer")
    out = MaskedScorer(model, tok).execute([rp, rt])
    assert out[rp].scores["word_l2r"] == pytest.approx(p.scores["word_l2r"], abs=1e-4)
    assert out[rt].scores["word_l2r"] == pytest.approx(t.scores["word_l2r"], abs=1e-4)
    assert scorer.token_requests(text, "tokenizer")[0].words == "tokenizer"
    with pytest.raises(ValueError, match="word rule"):
        scorer.execute([PLLRequest(text, "word_l2r", "spaces")])


# ---- (d) an independent slow reference of the tokenizer rule ------------------------------
def reference(model, tok, text: str, variant: str):
    """Per scored token: (log-prob, masked scored-token indices), word_l2r as minicons'
    within_word_l2r (the token and its word's later tokens, by word_ids()), whole_word as every
    token of its word. One forward pass per masked copy."""
    enc, scored = _scored(tok, text)
    ids, wid = enc["input_ids"], enc.word_ids()
    out = []
    for p in scored:
        if wid[p] is None:
            masked = [p]
        elif variant == "word_l2r":
            masked = [p] + [j for j in range(p + 1, scored[-1] + 1) if wid[j] == wid[p]]
        else:
            masked = [j for j in scored if wid[j] == wid[p]]
        x = list(ids)
        for j in masked:
            x[j] = tok.mask_token_id
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([x])).logits[0, p].double()
        out.append((torch.log_softmax(logits, dim=-1)[ids[p]].item(), [scored.index(j) for j in masked]))
    return out


@pytest.mark.parametrize("variant", ["word_l2r", "whole_word"])
@pytest.mark.parametrize("text", DIFFERENT)
def test_tokenizer_rule_matches_slow_reference(mlm, text, variant):
    model, tok = mlm
    d = MaskedScorer(model, tok, batch_size=8).sentence_pll(text, words="tokenizer")
    ref = reference(model, tok, text, variant)
    assert [tk.masked[variant] for tk in d.tokens] == [r[1] for r in ref]
    np.testing.assert_allclose(d.token_logprobs(variant), [r[0] for r in ref], atol=1e-4, rtol=0)
    assert d.scores[variant] == pytest.approx(sum(r[0] for r in ref), abs=1e-4)


# ---- (e) the methods take the rule from the context's convention --------------------------
def test_word_rule_of_a_context():
    assert word_rule(SimpleNamespace()) == "project"
    assert word_rule(SimpleNamespace(convention=None)) == "project"
    assert word_rule(Context(lm=None, language="en")) == "project"  # the default convention's rule
    assert word_rule(SimpleNamespace(convention=get_convention("project"))) == "project"
    assert word_rule(SimpleNamespace(convention=get_convention("authors"))) == "tokenizer"
    assert word_rule(SimpleNamespace(convention=get_convention("authors_raw_logit"))) == "tokenizer"
    assert word_rule(SimpleNamespace(convention="authors")) == "tokenizer"


def test_methods_follow_the_convention(bert):
    scorer = MaskedScorer(*bert)
    pair = Pair(DIFFERENT[0], "I couldn't finds the book.")
    by_rule = {}
    for cid, rule in (("project", "project"), ("authors", "tokenizer"), (None, "project")):
        ctx = SimpleNamespace() if cid is None else SimpleNamespace(convention=get_convention(cid))
        for m in PLL_METHODS:
            reqs = m.requests(pair, ctx)
            assert [r.words for r in reqs] == [rule, rule]
            res = scorer.execute(reqs)
            (s,) = m.score(pair, ctx, res.__getitem__)
            expect = scorer.sentence_pll(pair.good, words=rule).scores[m.variant]
            assert s.score_good == pytest.approx(expect, abs=1e-6)
            by_rule[(cid, m.variant)] = s.score_good
    assert abs(by_rule[("authors", "word_l2r")] - by_rule[("project", "word_l2r")]) > 1e-3
    assert by_rule[(None, "word_l2r")] == by_rule[("project", "word_l2r")]
