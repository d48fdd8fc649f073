"""What the model expected instead (issue 34, item 11): the top-k next tokens at each position and
at each word, from the engine's own pass, checked against logits computed here with transformers,
against the word rule of the word view (docs/word_probability.md), and through the probe's report,
the export, the public API and the page's HTML."""

from __future__ import annotations

import inspect
import math

import pytest
import torch

from accapp.engine import Engine
from accapp.scoring.api import TopKRequest
from accapp.scoring.causal import CausalScorer
from accapp.scoring.logsoftmax import streamed_target_logprobs
from accapp.scoring.naive import NaiveScorer

GOOD, BAD = "These casseroles disgust Kayla.", "These casseroles disgusts Kayla."  # the gallery's first pair (agr-1)
FIRST_STAGE = ["lp", "mean_lp", "pen_lp", "bayes_factor_uniform", "bayes_factor_unigram", "slor"]


# ------------------------------------------------------------------------------------------ no model
@pytest.mark.parametrize("span", [8192, 256, 100])  # one span; spans of 2 chunks; a span a chunk
def test_streamed_topk_equals_a_full_softmax(span, monkeypatch):
    """A top-k over vocabulary spans (and rows in chunks) gives the full softmax's top-k,
    in and out of a mask, in float64 against the row's logsumexp."""
    from accapp.scoring import logsoftmax

    monkeypatch.setattr(logsoftmax, "TOPK_SPAN", span)
    g = torch.Generator().manual_seed(0)
    hidden = torch.randn(7, 16, generator=g)
    weight = torch.randn(1000, 16, generator=g) * 3
    project = lambda h, a, b: torch.nn.functional.linear(h, weight[a:b])  # noqa: E731
    masks = torch.rand(2, 1000, generator=g) > 0.7
    mask_of = torch.tensor([0, -1, 1, 0, -1, 1, 0])
    topk_of = torch.tensor([True, True, False, True, True, True, False])
    extras: dict = {}
    streamed_target_logprobs(hidden, project, 1000, torch.arange(7), torch.zeros(7, dtype=torch.long), None,
                             row_chunk=3, vocab_chunk=128, masks=masks, mask_of=mask_of, topk=6, topk_of=topk_of,
                             extras=extras)
    # The logits as the streamed products make them (a float32 product's last bit depends on its shape).
    logits = torch.cat([torch.cat([project(hidden[i : i + 3], j, j + 128) for j in range(0, 1000, 128)], 1)
                        for i in range(0, 7, 3)])
    logp = torch.log_softmax(logits.double(), -1)
    rows = topk_of.nonzero()[:, 0]
    vals, ids = logp[rows].topk(6, dim=-1)
    assert torch.equal(extras["topk_ids"], ids)
    assert torch.allclose(extras["topk_logprobs"], vals, atol=1e-6, rtol=0)
    inside = logp.clone()
    for r in range(7):
        if mask_of[r] >= 0:
            inside[r, ~masks[mask_of[r]]] = -torch.inf
    wvals, wids = inside[rows].topk(6, dim=-1)
    assert torch.equal(extras["word_topk_ids"], wids)
    assert torch.allclose(extras["word_topk_logprobs"], wvals, atol=1e-6, rtol=0)


def test_streamed_topk_with_a_mask_of_fewer_ids_than_k_and_rows_out_of_mask_order():
    """Block maxima (logsoftmax._StreamedTopK) where whole blocks are -inf: a mask holding 3 ids lists those
    3, then -inf and id -1; rows whose masks come out of order come back in row order; one span and many."""
    from accapp.scoring import logsoftmax

    g = torch.Generator().manual_seed(1)
    hidden = torch.randn(5, 8, generator=g)
    weight = torch.randn(1024, 8, generator=g) * 2
    project = lambda h, a, b: torch.nn.functional.linear(h, weight[a:b])  # noqa: E731
    masks = torch.rand(2, 1024, generator=g) > 0.5
    masks[1] = False
    masks[1, [5, 700, 1023]] = True
    mask_of = torch.tensor([1, 0, -1, 1, 0])
    logp = torch.log_softmax(torch.nn.functional.linear(hidden, weight).double(), -1)
    for span in (8192, 256):
        logsoftmax.TOPK_SPAN, saved = span, logsoftmax.TOPK_SPAN
        try:
            extras: dict = {}
            streamed_target_logprobs(hidden, project, 1024, torch.arange(5), torch.zeros(5, dtype=torch.long), None,
                                     vocab_chunk=256, masks=masks, mask_of=mask_of, topk=6,
                                     topk_of=torch.ones(5, dtype=torch.bool), extras=extras)
        finally:
            logsoftmax.TOPK_SPAN = saved
        assert torch.equal(extras["topk_ids"], logp.topk(6, dim=-1).indices)
        for r in range(5):
            ids, lps = extras["word_topk_ids"][r], extras["word_topk_logprobs"][r]
            allowed = masks[mask_of[r]] if mask_of[r] >= 0 else torch.ones(1024, dtype=torch.bool)
            want = logp[r].masked_fill(~allowed, -torch.inf).topk(min(6, int(allowed.sum())))
            assert ids[: len(want.indices)].tolist() == want.indices.tolist()
            assert torch.allclose(lps[: len(want.values)], want.values, atol=1e-5, rtol=0)
            if mask_of[r] == 1:  # three ids in the mask: the other slots empty
                assert ids[3:].tolist() == [-1, -1, -1] and torch.isinf(lps[3:]).all()


def test_fast_and_naive_scorers_list_the_same_candidates(tiny_llama):
    """The scorer's top-k from the scoring pass (LP's plain pass, and the first stage's packed one)
    equals the naive scorer's torch.topk of float64 log-softmax, token and word lists alike."""
    naive = NaiveScorer(tiny_llama)
    for methods in (["lp"], FIRST_STAGE):
        engine = Engine(CausalScorer(tiny_llama))
        result = engine.score_pairs([engine.check_pair(GOOD, BAD)], methods, words=True, topk=4)[0]
        for side, text in (("good", GOOD), ("bad", BAD)):
            ref = naive.execute([TopKRequest(text, 4)])[TopKRequest(text, 4)]
            mine = result.expected[side]
            for j, t in enumerate(mine["tokens"]):
                assert [c["id"] for c in t["expected"]] == ref.ids[j].tolist()
                # float32 passes of two shapes: equal within 2e-5 nats
                assert [c["logprob"] for c in t["expected"]] == pytest.approx(ref.logprobs[j].tolist(), abs=2e-5)
            for w in mine["words"]:
                a = result.words[side][w["index"]]["tokens"][0]
                assert [c["id"] for c in w["expected"]] == [i for i in ref.word_ids[a].tolist() if i >= 0]


# ------------------------------------------------------------------------------------------ SmolLM2
def _transformers_logprobs(lm, text: str) -> tuple[list[int], torch.Tensor]:
    """(token ids, float64 log-softmax of transformers' own logits after the start token): rows 0..n."""
    ids = lm.tokenizer(text, add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logits = lm.model(torch.tensor([[lm.start_id, *ids]])).logits[0].double()
    return ids, torch.log_softmax(logits, dim=-1)


_OWN_LOGP: list[torch.Tensor] = []  # the casserole probe's own logits, float64 log-softmax, a row per top-k row


@pytest.fixture(scope="module")
def casserole(smollm):
    """The probe's first stage, as the page runs it; the pass's own logits of every row whose top-k was
    asked are kept (_OWN_LOGP), made by the same products as the scorer's (a float32 product's last bit
    depends on its shape, so a separate pass, transformers' here, differs by float32 noise, ~1e-5)."""
    from accapp.scoring import causal
    from accapp.service.probe import probe

    def recording(*args, **kwargs):
        out = streamed_target_logprobs(*args, **kwargs)
        bound = inspect.signature(streamed_target_logprobs).bind(*args, **kwargs)
        bound.apply_defaults()
        a = bound.arguments
        hidden, project, vocab, softcap, row_chunk = a["hidden"], a["project"], a["vocab"], a["softcap"], a["row_chunk"]
        topk_of, chunk = a["topk_of"], a["vocab_chunk"] or vocab
        if a["topk"] and topk_of is not None:
            for i in range(0, hidden.shape[0], row_chunk):
                h = hidden[i : i + row_chunk]
                logits = torch.cat([project(h, j, j + chunk) for j in range(0, vocab, chunk)], 1).float()
                if softcap:
                    logits = torch.tanh(logits / softcap) * softcap
                _OWN_LOGP.append(torch.log_softmax(logits[topk_of[i : i + row_chunk]].double(), -1))
        return out

    engine = Engine(CausalScorer(smollm))
    causal.streamed_target_logprobs = recording
    try:
        return probe(engine, GOOD, BAD, FIRST_STAGE, words=True)
    finally:
        causal.streamed_target_logprobs = streamed_target_logprobs


def _own_row(ids: list[int], ps: list[float]) -> torch.Tensor:
    """The engine's own probabilities (a row of its pass) whose top ids are these: the listed numbers
    must be that row's softmax within 1e-6."""
    own = torch.cat(_OWN_LOGP).exp()
    at = torch.tensor(ids)
    gaps = (own[:, at] - torch.tensor(ps, dtype=torch.float64)).abs().amax(1)
    best = int(gaps.argmin())
    assert gaps[best] < 1e-6, float(gaps[best])
    return own[best]


@pytest.mark.slow
def test_listed_probabilities_are_the_softmax_of_the_logits(smollm, casserole):
    """Every listed probability equals softmax(logits) of the engine's own pass within 1e-6, and the
    candidates are its k most probable, most probable first; against a separate pass (transformers'
    own logits here), the same ids at each position, within float32 noise (2e-5), and the k sum to at most 1."""
    assert casserole.expected["good"]["k"] == 5
    assert _OWN_LOGP, "the probe's pass was not recorded"
    for side, text in (("good", GOOD), ("bad", BAD)):
        ids, logp = _transformers_logprobs(smollm, text)
        p = logp.exp()
        rows = casserole.expected[side]["tokens"]
        assert len(rows) == len(ids) + 1 and rows[-1]["token"] is None  # one row a token, and one after the sentence
        for j, row in enumerate(rows):
            listed = [c["p"] for c in row["expected"]]
            assert len(listed) == 5
            own = _own_row([c["id"] for c in row["expected"]], listed)  # the engine's own row: within 1e-6
            assert listed == pytest.approx(own.topk(5).values.tolist(), abs=1e-6)  # its k most probable, in order
            assert [c["id"] for c in row["expected"]] == p[j].topk(5).indices.tolist()  # this position's, by transformers
            for c in row["expected"]:
                assert abs(c["p"] - p[j, c["id"]].item()) < 2e-5
            assert sum(listed) <= 1.0
            if j < len(ids):
                assert row["p"] == pytest.approx(p[j, ids[j]].item(), abs=1e-5)  # the token there (float32 LP)


@pytest.mark.slow
def test_word_candidates_follow_the_word_rule(smollm, casserole):
    """At each word: the candidates are the most probable tokens that begin a word there (B, built
    here by brute force), 'next word begins' = p / P(B | context) with P(B) summed here, and the
    sentence's own one-token word gets p(t | c) P(B | c, t) / P(B | c), the word view's rule."""
    from tests.test_word_prob import _brute_force_b_after_letter

    in_b = torch.from_numpy(_brute_force_b_after_letter(smollm.tokenizer))
    vocab = smollm.model.config.vocab_size
    in_b = torch.cat([in_b, torch.ones(vocab - len(in_b), dtype=torch.bool)])  # ids past the tokenizer's: in B
    for side, text in (("good", GOOD), ("bad", BAD)):
        ids, logp = _transformers_logprobs(smollm, text)
        p = logp.exp()
        words = casserole.words[side]
        for w in casserole.expected[side]["words"]:
            a = words[w["index"]]["tokens"][0]
            after_letter = a > 0 and text[casserole.tokens[side][a - 1]["end"] - 1].isalpha()
            mask = in_b if after_letter else torch.ones_like(in_b)
            pb = p[a][mask].sum().item()
            ref = p[a].masked_fill(~mask, 0.0).topk(5)
            assert [c["id"] for c in w["expected"]] == ref.indices.tolist()
            for c in w["expected"]:
                assert bool(mask[c["id"]])
                assert c["p"] == pytest.approx(p[a, c["id"]].item(), abs=2e-5)  # a separate pass: float32 noise
                # B by brute force and the app's B differ in a few rare tokens (docs/word_probability.md's
                # approximations): within 1e-4, as test_word_prob's brute-force check of "disgust"
                assert c["p_next_word_begins"] == pytest.approx(c["p"] / pb, rel=1e-4)
            _own_row([c["id"] for c in w["expected"]], [c["p"] for c in w["expected"]])  # its own pass: within 1e-6
            assert sum(c["p_next_word_begins"] for c in w["expected"]) <= 1.0 + 1e-9
            assert w["p_word_before_goes_on"] == pytest.approx(1.0 - pb, abs=1e-4)
            own = words[w["index"]]
            if len(own["tokens"]) == 1 and w["word"] in ("disgust", "disgusts"):
                after = in_b if text[own["end"] - 1].isalpha() else torch.ones_like(in_b)
                rule = p[a, ids[a]].item() * p[a + 1][after].sum().item() / pb
                assert w["p_word"] == pytest.approx(rule, rel=1e-4)
                assert w["p_word"] == pytest.approx(math.exp(own["logprob"]), rel=1e-9)  # the word view's own number


@pytest.mark.slow
def test_report_export_and_api_carry_it(smollm, casserole, tmp_path):
    """The /probe report lists the differing word first with its line in words; the export's JSON
    and CSV carry every candidate; the public API gives the same numbers."""
    import pandas as pd

    from accapp.models import get_spec
    from accapp.public import next_tokens
    from accapp.service import export
    from accapp.service.probe import probe_json_full

    report = probe_json_full("smollm2-135m-instruct", get_spec("smollm2-135m-instruct"), casserole, casserole.words, {})
    e = report["expected"]
    assert e["applies"] and e["k"] == 5
    (first,) = e["differing"]
    assert first["good"]["word"] == "disgust" and first["bad"]["word"] == "disgusts"
    assert first["good"]["text"].startswith("after “These casseroles”, the model expected: are 33 %, can 13 %")
    extras = {"prompts": {}, "provenance": {"model": "smollm2-135m-instruct"}}
    record = export.export_record([report], [extras])
    js, cs = export.write_exports(record, tmp_path)
    df = pd.read_csv(cs)
    words = df[(df.record == "expected_word") & (df.sentence == "good") & (df.item == "disgust")]
    assert words.candidate.str.strip().tolist()[:2] == ["are", "can"]
    assert words.candidate_probability.tolist() == pytest.approx([c["p"] for c in first["good"]["expected"]])
    assert len(df[df.record == "expected_token"]) == 5 * (len(casserole.tokens["good"]) + len(casserole.tokens["bad"]) + 2)
    api = next_tokens([GOOD], "smollm2-135m-instruct", k=5)
    at = api[(api.level == "word") & (api.item == "disgust")]
    assert at.probability.tolist() == pytest.approx(words.candidate_probability.tolist(), abs=1e-6)


def test_masked_lm_says_it_does_not_apply():
    from accapp.service.expected import NOT_CAUSAL, report

    assert report(object(), "masked", None) == {"applies": False, "k": 0, "note": NOT_CAUSAL}


# ------------------------------------------------------------------------------------------ the page
def _report() -> dict:
    cand = lambda t, p, q=None: {"rank": 1, "id": 1, "token": t, "p": p, "logprob": math.log(p),  # noqa: E731
                                 "p_next_word_begins": q if q is not None else p}
    word = lambda i, w, ctx, cands, pw: {"index": i, "word": w, "context": ctx, "p_word": pw,  # noqa: E731
                                         "p_first_token": pw, "p_first_token_begins": pw, "p_word_before_goes_on": 0.0,
                                         "expected": cands}
    g = word(2, "disgust", "These casseroles ", [cand(" are", 0.326), cand(" disgust", 0.12)], 0.12)
    b = word(2, "disgusts", "These casseroles ", [cand(" are", 0.326), cand(None, 0.01)], 0.0001)
    toks = {"good": [{"token": "These", "start": 0, "end": 5, "logprob": -10.0}],
            "bad": [{"token": "These", "start": 0, "end": 5, "logprob": -10.0}]}
    tok_rows = [{"index": 0, "context": "", "token": "These", "p": math.exp(-10),
                 "expected": [cand("-", 0.3984)]}, {"index": 1, "context": "These", "token": None, "p": None, "expected": []}]
    side = lambda w: {"words": [w], "tokens": tok_rows}  # noqa: E731
    return {"model": "m", "model_name": "SmolLM2 <b>", "tokens": toks,
            "words": {"good": [{"word": "These", "tokens": [0]}], "bad": [{"word": "These", "tokens": [0]}]},
            "expected": {"applies": True, "k": 2, "note": "note", "good": side(g), "bad": side(b),
                         "differing": [{"good": g, "bad": b}]}}


def test_page_shows_the_differing_word_first_and_every_token():
    from accapp.ui.expected_view import expected_html, token_frame

    html = expected_html(_report())
    assert "What SmolLM2 &lt;b&gt; expected instead" in html  # escaped
    assert "<b>After “These casseroles”</b>, the model expected: are 33 %, <b>disgust 12 %</b>" in html
    assert "⟨end of text⟩ 1.0 %" in html and "unacceptable “disgusts”: 0.01 % as a whole word" in html
    df = token_frame([_report()], "bits")
    assert df.columns.tolist()[-1] == "Expected instead (top 2, %)"
    assert df.iloc[0].tolist() == ["SmolLM2 <b>", "acceptable", "These", 0, "These", round(10 / math.log(2), 3),
                                   float(f"{100 * math.exp(-10):.4g}"), "“-” 40\u00a0%"]  # no break before the %
    masked = dict(_report(), expected={"applies": False, "k": 0, "note": "for causal LMs"})
    assert "for causal LMs" in expected_html(masked) and token_frame([masked]).iloc[0, -1] == ""
