"""The teacher's overlay: the sentence coloured by each token's rank or surprisal, as GLTR colours a text.
The colouring against hand-computed values (no model); the ranks against a full softmax of the tiny Llama
(tests/tiny_models.py) and against the scorer's own top-k; the page's HTML of it."""

from __future__ import annotations

import math

import pytest

from accapp.service import overlay

GREEN, YELLOW, RED, PURPLE = overlay.COLOURS


# ------------------------------------------------------------------------------------------ no model
@pytest.mark.parametrize("rank,bucket", [(1, 0), (10, 0), (11, 1), (100, 1), (101, 2), (1000, 2), (1001, 3), (262144, 3)])
def test_rank_buckets_are_gltr_s(rank, bucket):
    assert overlay.rank_bucket(rank) == bucket


@pytest.mark.parametrize("p,bucket", [(0.9, 0), (0.1, 0), (0.099, 1), (0.01, 1), (0.0099, 2), (0.001, 2),
                                      (0.00099, 3), (1e-9, 3)])
def test_surprisal_buckets_match_the_rank_limits_as_probabilities(p, bucket):
    assert overlay.surprisal_bucket(math.log(p)) == bucket


def test_legend_says_the_limits_in_the_unit():
    bits = [x["label"] for x in overlay.legend("surprisal", "bits")]
    assert bits[0].startswith("up to 3.3 bits") and bits[1].startswith("up to 6.6 bits")  # log2(10), log2(100)
    assert bits[3].startswith("over 10.0 bits")  # log2(1000) = 9.97
    nats = [x["label"] for x in overlay.legend("surprisal", "nats")]
    assert nats[0].startswith("up to 2.3 nats") and nats[2].startswith("up to 6.9 nats")  # ln 10, ln 1000
    ranks = overlay.legend("rank")
    assert [x["colour"] for x in ranks] == [GREEN, YELLOW, RED, PURPLE] and "top 10" in ranks[0]["label"]


TEXT = "These casseroles disgusts Kayla."
# tokens as a tokenizer with the space in front cuts it; log-probs in nats
TOKENS = [{"token": "These", "start": 0, "end": 5, "logprob": math.log(0.5)},
          {"token": " cass", "start": 5, "end": 10, "logprob": math.log(0.02)},
          {"token": "eroles", "start": 10, "end": 16, "logprob": math.log(0.9)},
          {"token": " disgusts", "start": 16, "end": 25, "logprob": math.log(0.0005)},
          {"token": " Kayla", "start": 25, "end": 31, "logprob": math.log(0.002)},
          {"token": ".", "start": 31, "end": 32, "logprob": math.log(0.3)}]


def test_segments_by_surprisal_by_hand():
    pieces = overlay.segments(TEXT, TOKENS, "surprisal", "bits")
    assert "".join(p["text"] for p in pieces) == TEXT  # the sentence whole, spaces included
    coloured = [(p["text"], p["colour"]) for p in pieces if p["bucket"] is not None]
    assert coloured == [("These", GREEN), ("cass", YELLOW), ("eroles", GREEN), ("disgusts", PURPLE),
                        ("Kayla", RED), (".", GREEN)]
    assert [p["text"] for p in pieces if p["bucket"] is None] == [" ", " ", " "]  # a leading space left uncoloured
    first = pieces[0]
    assert first["surprisal"] == pytest.approx(1.0) and first["rank"] is None  # -log2(0.5) = 1 bit
    assert "“These”: 1.0 bits" in first["title"]
    assert overlay.counts(pieces) == [3, 1, 1, 1]


def test_segments_by_rank_by_hand():
    ranks = [1, 10, 11, 1001, 101, 2]
    pieces = overlay.segments(TEXT, TOKENS, "rank", "nats", ranks)
    coloured = [(p["text"], p["colour"], p["rank"]) for p in pieces if p["bucket"] is not None]
    assert coloured == [("These", GREEN, 1), ("cass", GREEN, 10), ("eroles", YELLOW, 11), ("disgusts", PURPLE, 1001),
                        ("Kayla", RED, 101), (".", GREEN, 2)]
    disg = next(p for p in pieces if p["text"] == "disgusts")
    assert disg["surprisal"] == pytest.approx(-math.log(0.0005))  # in nats
    assert "rank 1,001 among the model's guesses" in disg["title"]
    # no ranks (a masked LM): by surprisal
    assert [p["colour"] for p in overlay.segments(TEXT, TOKENS, "rank", "bits") if p["bucket"] is not None][1] == YELLOW
    with pytest.raises(ValueError):
        overlay.segments(TEXT, TOKENS, "colour", "bits")


def test_a_chinese_token_of_several_characters_and_a_piece_of_one():
    text = "他买了一本书。"
    toks = [{"start": 0, "end": 1, "logprob": -0.1}, {"start": 1, "end": 3, "logprob": -9.0},
            {"start": 3, "end": 4, "logprob": -3.0}, {"start": 3, "end": 4, "logprob": -1.0},  # a byte piece: shown once
            {"start": 4, "end": 7, "logprob": -20.0}]
    pieces = overlay.segments(text, toks, "surprisal", "nats")
    assert "".join(p["text"] for p in pieces) == text
    assert [p["text"] for p in pieces] == ["他", "买了", "一", "本书。"]


def test_the_page_draws_the_overlay_with_its_legend_and_toggle():
    from accapp.ui.expected_view import overlay_html

    report = {"model": "m", "model_name": "Tiny <b>", "kind": "causal", "good": TEXT, "bad": "<i>x</i>",
              "tokens": {"good": TOKENS, "bad": [{"token": "<i>x</i>", "start": 0, "end": 8, "logprob": -1.0}]}}
    html = overlay_html(report, {"good": [1, 10, 11, 1001, 101, 2], "bad": [5]}, "bits")
    assert "<i>x</i>" not in html and "&lt;i&gt;x&lt;/i&gt;" in html and "Tiny &lt;b&gt;" in html  # escaped
    assert html.count("type='radio'") == 2 and "top 1000" in html and "up to 3.3 bits" in html
    assert f"background:{PURPLE}" in html and "rank 1,001" in html
    assert "acc-overlay-rank" in html and "acc-overlay-surprisal" in html
    masked = overlay_html(dict(report, kind="masked"), None, "bits")
    assert "type='radio'" not in masked and "up to 3.3 bits" in masked and "causal" in masked  # surprisal only, says why
    assert overlay_html(None, None, "bits") == ""


# ------------------------------------------------------------------------------------------ the tiny model
@pytest.fixture(scope="module")
def scorers(tiny_llama):
    from accapp.scoring.causal import CausalScorer
    from accapp.scoring.naive import NaiveScorer

    return CausalScorer(tiny_llama), NaiveScorer(tiny_llama)


@pytest.mark.parametrize("context", ["", "Who did it?"])
def test_ranks_are_the_full_softmax_s(scorers, context):
    from accapp.scoring.api import SeqRequest
    from accapp.scoring.topk import token_ranks

    fast, naive = scorers
    ranks = token_ranks(fast, TEXT, context)
    req = SeqRequest((TEXT,), context)
    ids, _, _ = naive.encode_parts(req)
    seq = list(naive.request_seq(req, ids))
    logp = naive._full_logprobs(seq)  # float64 log-softmax of every position, by plain transformers
    n = len(ids)
    want = [1 + int((logp[i - 1] > logp[i - 1, seq[i]]).sum()) for i in range(len(seq) - n, len(seq))]
    assert ranks == want and len(ranks) == len(fast.execute([req])[req].logprobs)
    assert any(r > 10 for r in ranks)  # a rank the top-k could not tell


def test_ranks_agree_with_the_scorer_s_own_top_k(scorers):
    from accapp.engine import Engine
    from accapp.scoring.topk import token_ranks

    fast, _ = scorers
    record = Engine(fast).expected_scores([TEXT], k=20)[TEXT]["tokens"]
    ranks = token_ranks(fast, TEXT)
    for j, rank in enumerate(ranks):
        listed = [c["rank"] for c in record[j]["expected"] if c["token"] == record[j]["token"]]
        if rank <= 20:
            assert listed == [rank], (j, rank, record[j])
        else:
            assert not listed, (j, rank)


def test_pair_ranks_asks_the_host_once(scorers):
    from accapp.engine import Engine
    from accapp.scoring.topk import token_ranks

    calls = []

    class Host:
        def with_engine(self, model_id, fn, *args):
            calls.append(model_id)
            return fn(Engine(scorers[0]), *args)

    first = overlay.pair_ranks("tiny", "causal", TEXT, "The dogs bark.", "", state=Host())
    again = overlay.pair_ranks("tiny", "causal", TEXT, "The dogs bark.", "", state=Host())
    assert first == again and calls == ["tiny"] and first["good"] == token_ranks(scorers[0], TEXT)
    assert overlay.pair_ranks("tiny", "masked", TEXT, "x", "", state=Host()) is None
