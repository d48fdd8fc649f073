"""The next block prepared while the model scores the current one (fast tier: the tiny random Llama, with
SmolLM2's tokenizer and chat template): Engine.score_blocks and the serial runner tokenize (and the runner
checks) block k+1 on a second thread during block k's call, with exactly the results of one call a block;
the scorer's tokenization caches stay right when two threads fill them at once and clear them when full."""

from __future__ import annotations

import threading

import pytest

from accapp.engine import Engine
from accapp.methods import method_ids
from accapp.runner.runner import Block, check_block, prepare_block, score_block
from accapp.scoring import causal
from accapp.scoring.api import Pair
from accapp.scoring.causal import CausalScorer

PAIRS = [("The cat sleeps.", "The cat sleep."), ("Some dogs were barking.", "Some dogs was barking."),
         ("Who did you see?", "Who did you see him?"), ("The keys are here.", "The keys is here."),
         ("She has left.", "She have left."), ("Many people came.", "Much people came.")]


def _rows(results) -> list:
    return [row for res in results for row in res.rows]


@pytest.fixture(scope="module")
def blocks():
    return [[Pair(g, b) for g, b in PAIRS[k : k + 2]] for k in range(0, len(PAIRS), 2)]


def test_score_blocks_gives_one_call_a_blocks_results_and_tokenizes_ahead(tiny_llama, blocks):
    """Every method: the same rows as score_pairs block by block on a fresh engine, and each block after the
    first tokenized on the second thread, before its own call (its prompts found in the cache)."""
    methods = method_ids("causal")
    alone = Engine(CausalScorer(tiny_llama))
    expected = [_rows(alone.score_pairs(block, methods, "en")) for block in blocks]
    engine = Engine(CausalScorer(tiny_llama))
    scorer = engine.scorer
    threads, missed = [], []
    tokenize, ids_many = scorer.tokenize, scorer.ids_many

    def recorded(requests):
        threads.append(threading.current_thread().name)
        return tokenize(requests)

    def counted(texts):  # the prompts a call's own tokenizing still finds missing
        texts = list(texts)
        if threading.current_thread() is threading.main_thread():
            missed.append(sum(t not in scorer._ids_cache and t not in scorer._encode_cache for t in texts))
        return ids_many(texts)

    scorer.tokenize, scorer.ids_many = recorded, counted
    got = [_rows(results) for results in engine.score_blocks(iter(blocks), methods, "en")]
    assert got == expected
    assert len(threads) == len(blocks) - 1 and all(t.startswith("accapp-tokenize") for t in threads)
    assert missed[0] > 0 and missed[1:] == [0] * (len(blocks) - 1)  # only the first block tokenized in its call


def test_tokenize_ahead_waits_for_what_the_model_cannot_run(tiny_llama, blocks):
    """Before the engine has found which methods its model cannot run (a model call), tokenize_ahead does
    nothing: a second thread never runs the model beside the first."""
    engine = Engine(CausalScorer(tiny_llama))
    engine.tokenize_ahead(blocks[0], None, "en")
    assert engine._unavailable is None and not engine.scorer._ids_cache
    engine.resolve(None)
    engine.tokenize_ahead(blocks[0], None, "en")
    assert engine.scorer._ids_cache


def test_two_threads_tokenizing_at_once_with_a_full_cache(tiny_llama, monkeypatch):
    """Two threads encode and tokenize prompts at once while the caches are cleared again and again
    (ENCODE_CACHE_MAX made tiny): every answer is the tokenizer's own, and nothing fails."""
    monkeypatch.setattr(causal, "ENCODE_CACHE_MAX", 7)
    scorer = CausalScorer(tiny_llama)
    tok = tiny_llama.tokenizer
    texts = [f"Sentence number {i} is here, {'and ' * (i % 5)}done." for i in range(120)]
    prompts = [f"<|im_start|>user\nIs this good? {t}<|im_end|>\n<|im_start|>assistant\n" for t in texts]
    errors: list = []

    def work(order):
        try:
            for k in order:
                scorer.encode_many(texts[k : k + 3])
                assert scorer.encode(texts[k]).ids == tuple(tok(texts[k], add_special_tokens=False)["input_ids"])
                scorer.ids_many(prompts[k : k + 3])
                assert scorer.ids_of(prompts[k]) == tuple(tok(prompts[k], add_special_tokens=False)["input_ids"])
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(order,)) for order in (range(0, 117), range(116, -1, -1))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_a_block_prepared_ahead_scores_as_one_checked_where_it_is_scored(tiny_llama):
    """The serial runner's head start (prepare_block: checked and tokenized) changes nothing in the block's rows or
    its check errors: a pair that fails its checks is reported the same either way."""
    items = tuple(("p", str(k), "ph", g, b) for k, (g, b) in enumerate(PAIRS[:3])) + (("p", "9", "ph", "", "Fine."),)
    block = Block(0, ("lp", "yes_no_prob_comp"), items)
    engine = Engine(CausalScorer(tiny_llama))
    engine.resolve(None)
    prepared = prepare_block(engine, block, "en")
    assert prepared[1] == check_block(engine, block)[1] and len(prepared[1]) == 1
    ahead = score_block(engine, block, "blimp", "en", prepared)
    plain = score_block(Engine(CausalScorer(tiny_llama)), block, "blimp", "en")
    assert ahead.rows.equals(plain.rows) and ahead.check_errors == plain.check_errors and not ahead.failed
