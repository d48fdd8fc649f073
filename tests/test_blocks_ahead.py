"""The next block prepared while the model scores the current one (fast tier: the tiny random Llama, with
SmolLM2's tokenizer and chat template): Engine.score_blocks prepares block k+1 and finishes block k-1 on a
second thread during block k's passes (a staged scorer) or tokenizes block k+1 there (another scorer), and the
serial runner streams its blocks through it (score_stream), with exactly the results of one call a block; the
scorer's tokenization caches stay right when two threads fill them at once and clear them when full."""

from __future__ import annotations

import threading
import time

import pytest

from accapp.engine import Engine
from accapp.methods import method_ids
from accapp.runner.runner import Block, score_block, score_stream
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
    """With a scorer whose execute is one stage: every method, the same rows as score_pairs block by block on a
    fresh engine, and each block after the first tokenized on the second thread, before its own call (its
    prompts found in the cache)."""
    methods = method_ids("causal")
    alone = Engine(CausalScorer(tiny_llama))
    expected = [_rows(alone.score_pairs(block, methods, "en")) for block in blocks]
    engine = Engine(CausalScorer(tiny_llama))
    scorer = engine.scorer
    scorer.staged = False  # this scorer alone: execute in one stage, as the masked and the naive scorers'
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


def test_staged_score_blocks_prepares_and_finishes_beside_the_passes(tiny_llama, blocks):
    """The causal scorer's stages: every method, the same rows as score_pairs block by block; block k+1's
    prepare_call and block k-1's collect_call run on the second thread while block k's run_call runs on this
    one (each waits for that run_call to start, and it waits for them to end: a serial loop would leave one of
    them waiting), and the model runs on this thread only."""
    methods = method_ids("causal")
    alone = Engine(CausalScorer(tiny_llama))
    expected = [_rows(alone.score_pairs(block, methods, "en")) for block in blocks]
    engine = Engine(CausalScorer(tiny_llama))
    scorer = engine.scorer
    n = len(blocks)
    calls: dict = {"prepare": [], "run": [], "collect": [], "decoder": []}
    started = [threading.Event() for _ in blocks]  # block k's run_call has begun
    done = {stage: [threading.Event() for _ in blocks] for stage in ("prepare", "collect")}
    late: list = []  # (stage, block) that did not overlap the run_call it belongs beside
    prepare, run, collect, decoder = scorer.prepare_call, scorer.run_call, scorer.collect_call, scorer._decoder

    def beside(stage, k, run_k, fn):
        def call(arg):
            calls[stage].append(threading.current_thread())
            if 0 <= run_k < n and not started[run_k].wait(10):
                late.append((stage, k))
            out = fn(arg)
            done[stage][k].set()
            return out
        return call

    def staged(stage, fn, shift):
        def call(arg):
            k = len(calls[stage])
            return beside(stage, k, k + shift, fn)(arg)
        return call

    def running(call):
        k = len(calls["run"])
        calls["run"].append(threading.current_thread())
        started[k].set()
        out = run(call)
        for stage, j in (("prepare", k + 1), ("collect", k - 1)):
            if 0 <= j < n and not done[stage][j].wait(10):
                late.append((stage, j))
        return out

    def decoding(*args, **kwargs):
        calls["decoder"].append(threading.current_thread())
        return decoder(*args, **kwargs)

    # block k's prepare_call beside run_call k-1 (none for the first), its collect_call beside run_call k+1
    scorer.prepare_call, scorer.collect_call = staged("prepare", prepare, -1), staged("collect", collect, +1)
    scorer.run_call, scorer._decoder = running, decoding
    got = [_rows(results) for results in engine.score_blocks(iter(blocks), methods, "en")]
    assert got == expected
    assert late == []
    assert [len(calls[stage]) for stage in ("prepare", "run", "collect")] == [n] * 3
    assert all(t.name.startswith("accapp-block") for t in calls["prepare"] + calls["collect"])
    here = threading.current_thread()
    assert calls["decoder"] and all(t is here for t in calls["run"] + calls["decoder"])


def test_staged_blocks_leave_the_calling_thread_to_the_passes(tiny_llama, blocks):
    """What the passes do not need is done on the second thread: each block's layout (how its sequences go
    through the decoder) and the filling in of its sequences' log-probs; and that thread's stages for the
    neighbouring blocks start only once block k's first pass is at the decoder (its call's begun), so the
    host's work for that pass has the interpreter to itself. Every method's rows stay those of score_pairs."""
    methods = method_ids("causal")
    expected = [_rows(Engine(CausalScorer(tiny_llama)).score_pairs(block, methods, "en")) for block in blocks]
    engine = Engine(CausalScorer(tiny_llama))
    scorer = engine.scorer
    layout, fill, prefetch = scorer.layout, scorer._fill_scored, scorer._prefetch_prefixes
    prepare, collect = scorer.prepare_call, scorer.collect_call
    threads: dict = {"layout": set(), "fill": set()}
    made: list = []  # each block's call, in order
    collected: list = []
    early: list = []  # (stage, block) begun before the block beside it had its first pass at the decoder

    def recorded(name, fn):
        def call(*args, **kwargs):
            threads[name].add(threading.current_thread().name)
            return fn(*args, **kwargs)
        return call

    def preparing(requests):  # block j's, beside block j-1's passes
        j = len(made)
        if j and not made[j - 1].begun.is_set():
            early.append(("prepare", j))
        made.append(prepare(requests))
        return made[-1]

    def collecting(c):  # block j's, beside block j+1's passes
        j = len(collected)
        collected.append(c)
        if j + 1 < len(blocks) and not made[j + 1].begun.is_set():
            early.append(("collect", j))
        return collect(c)

    def slow_prefetch(keys):  # the calling thread's work before its first pass, made long enough to be seen
        time.sleep(0.3)
        return prefetch(keys)

    scorer.layout, scorer._fill_scored = recorded("layout", layout), recorded("fill", fill)
    scorer.prepare_call, scorer.collect_call, scorer._prefetch_prefixes = preparing, collecting, slow_prefetch
    got = [_rows(results) for results in engine.score_blocks(iter(blocks), methods, "en")]
    assert got == expected
    assert early == []
    assert threads["layout"] and all(t.startswith("accapp-block") for t in threads["layout"])
    assert threads["fill"] and all(t.startswith("accapp-block") for t in threads["fill"])


def test_staged_score_blocks_gives_the_block_before_a_failing_one_first(tiny_llama, blocks):
    """A block whose passes fail: the block before it still comes out (finished on the second thread), then
    the error, as when each block is scored in its own call."""
    engine = Engine(CausalScorer(tiny_llama))
    expected = _rows(Engine(CausalScorer(tiny_llama)).score_pairs(blocks[0], ["lp", "mean_lp"], "en"))
    run = engine.scorer.run_call
    runs: list = []

    def failing_second(call):
        runs.append(call)
        if len(runs) == 2:
            time.sleep(0.2)  # the block before is still being finished on the other thread, or just done
            raise RuntimeError("out of luck")
        return run(call)

    engine.scorer.run_call = failing_second
    got = []
    with pytest.raises(RuntimeError, match="out of luck"):
        for results in engine.score_blocks(iter(blocks), ["lp", "mean_lp"], "en"):
            got.append(_rows(results))
    assert got == [expected]


def test_a_ctrl_c_between_blocks_leaves_no_stage_waiting(tiny_llama, blocks):
    """A Ctrl-C (KeyboardInterrupt) on the calling thread while the last block is being finished, its finish
    waiting for the next block's first pass (here: as the block after the next is read): that block still comes
    out, then the interrupt, at once; no stage is left waiting for a pass that will not come."""
    engine = Engine(CausalScorer(tiny_llama))
    expected = _rows(Engine(CausalScorer(tiny_llama)).score_pairs(blocks[0], ["lp"], "en"))

    def read():
        yield blocks[0]
        yield blocks[1]
        raise KeyboardInterrupt

    got, outcome = [], []

    def consume():
        try:
            for results in engine.score_blocks(read(), ["lp"], "en"):
                got.append(_rows(results))
        except KeyboardInterrupt:
            outcome.append("interrupted")

    reader = threading.Thread(target=consume, daemon=True)  # a stage left waiting would hang it, not the tests
    reader.start()
    reader.join(60)
    assert not reader.is_alive() and outcome == ["interrupted"] and got == [expected]


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


def _runner_blocks() -> list:
    """Blocks as plan_blocks cuts them: two of one set of methods, then two of another; a pair that fails its
    checks, and a block of which every pair fails them."""
    items = [("p", str(k), "ph", g, b) for k, (g, b) in enumerate(PAIRS)]
    return [Block(0, ("lp", "yes_no_prob_comp"), tuple(items[:2]) + (("p", "9", "ph", "", "Fine."),)),
            Block(1, ("lp", "yes_no_prob_comp"), tuple(items[2:4])),
            Block(2, ("lp", "mean_lp"), tuple(items[4:6])),
            Block(3, ("lp", "mean_lp"), (("q", "0", "ph", "Fine.", ""),))]


def _same_results(got, expected) -> None:
    assert [r.index for r in got] == [r.index for r in expected]
    for a, b in zip(got, expected):
        assert a.rows.equals(b.rows) and a.check_errors == b.check_errors and a.failed == b.failed


def test_the_serial_runners_stream_gives_score_blocks_rows(tiny_llama):
    """score_stream (the serial runner: each set of methods one Engine.score_blocks, the next block checked on a
    third thread) gives each block score_block's rows, score for score, and its check errors: what a Ray worker
    gives for the same block. Only the stream's engine calls score: no score_pairs call a block."""
    blocks = _runner_blocks()
    expected = [score_block(Engine(CausalScorer(tiny_llama)), b, "blimp", "en") for b in blocks]
    engine = Engine(CausalScorer(tiny_llama))
    calls = []
    score_pairs = engine.score_pairs
    engine.score_pairs = lambda *a, **k: calls.append(a) or score_pairs(*a, **k)
    got = list(score_stream(engine, blocks, "blimp", "en"))
    _same_results(got, expected)
    assert [len(r.check_errors) for r in got] == [1, 0, 0, 1] and got[3].rows.empty
    assert calls == []


def test_a_block_that_fails_in_the_stream_is_scored_method_by_method_and_the_rest_go_on(tiny_llama, monkeypatch):
    """A method that raises on one block's pair: that block is scored again by score_block (its other methods'
    rows kept, the method at fault named), the blocks read ahead of it are scored afresh, and every other block
    has score_block's rows."""
    from accapp.methods import all_methods

    mean_lp = all_methods()["mean_lp"]
    score = mean_lp.score

    def broken(pair, ctx, res):
        if pair.good == PAIRS[4][0]:
            raise RuntimeError("mean_lp broke")
        return score(pair, ctx, res)

    monkeypatch.setattr(mean_lp, "score", broken)
    items = [("p", str(k), "ph", g, b) for k, (g, b) in enumerate(PAIRS)]
    blocks = [Block(k, ("lp", "mean_lp"), tuple(items[2 * k : 2 * k + 2])) for k in range(3)]
    expected = [score_block(Engine(CausalScorer(tiny_llama)), b, "blimp", "en") for b in blocks]
    assert expected[2].failed == {"mean_lp": "RuntimeError: mean_lp broke"}
    assert set(expected[2].rows.method) == {"lp"}
    _same_results(list(score_stream(Engine(CausalScorer(tiny_llama)), blocks, "blimp", "en")), expected)
    blocks = [Block(k, b.methods, b.items) for k, b in enumerate([blocks[2], blocks[0], blocks[1]])]  # fails first
    expected = [score_block(Engine(CausalScorer(tiny_llama)), b, "blimp", "en") for b in blocks]
    _same_results(list(score_stream(Engine(CausalScorer(tiny_llama)), blocks, "blimp", "en")), expected)


def test_methods_that_fail_before_a_block_is_read_are_found_block_by_block(tiny_llama):
    """Where the engine's call raises before it reads a block (resolving the methods), each block is scored by
    score_block, which finds the method at fault: the others' rows kept, as a Ray worker keeps them."""
    def engine():
        e = Engine(CausalScorer(tiny_llama))
        resolve = e.resolve

        def refusing(methods):
            if methods is not None and "mean_lp" in list(methods):
                raise RuntimeError("no mean_lp today")
            return resolve(methods)

        e.resolve = refusing
        return e

    items = [("p", str(k), "ph", g, b) for k, (g, b) in enumerate(PAIRS)]
    blocks = [Block(k, ("lp", "mean_lp"), tuple(items[2 * k : 2 * k + 2])) for k in range(3)]
    expected = [score_block(engine(), b, "blimp", "en") for b in blocks]
    assert all(r.failed == {"mean_lp": "RuntimeError: no mean_lp today"} and set(r.rows.method) == {"lp"}
               for r in expected)
    _same_results(list(score_stream(engine(), blocks, "blimp", "en")), expected)
