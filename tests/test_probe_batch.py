"""Probes waiting for the same model are scored together (issue 22: ten visitors probing at once
must not wait ten probes' time): the answers are each pair's own, a bad pair fails only itself,
and the engine is called fewer times than there are probes."""

from __future__ import annotations

import threading

import pytest

from accapp.errors import UserError
from accapp.service.probe import batched_stage, probe_stage


def counted_state(smollm):
    """An AppState with SmolLM2's engine whose score_pairs records each call's number of pairs:
    (state, engine, calls, the real score_pairs)."""
    from accapp.engine import build_engine
    from accapp.service.host import AppState

    state = AppState()
    engine = build_engine(smollm.spec.id, lm=smollm)
    state.register_engine(smollm.spec.id, engine)
    calls = []
    real = engine.score_pairs

    def counted(pairs, *args, **kwargs):  # instrumentation only: the real engine call runs
        calls.append(len(pairs))
        return real(pairs, *args, **kwargs)

    engine.score_pairs = counted
    return state, engine, calls, real


@pytest.mark.slow  # the real SmolLM2
def test_concurrent_probe_stages_share_engine_calls(smollm, blimp):
    state, engine, calls, real = counted_state(smollm)
    pairs = list(zip(blimp.good.head(12), blimp.bad.head(12))) + [("", "A cat sleeps.")]
    answers: dict = {}
    gate = threading.Barrier(len(pairs))

    def visit(i, good, bad):
        gate.wait()
        try:
            answers[i] = batched_stage(smollm.spec.id, good, bad, ["lp", "mean_lp"], True, state=state)
        except UserError as exc:
            answers[i] = exc

    threads = [threading.Thread(target=visit, args=(i, g, b)) for i, (g, b) in enumerate(pairs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert len(answers) == len(pairs)
    assert isinstance(answers[len(pairs) - 1], UserError)  # the empty sentence fails only itself
    assert sum(calls) == len(pairs) - 1 and len(calls) < len(pairs) - 1
    engine.score_pairs = real
    for i, (good, bad) in enumerate(pairs[:-1]):
        result, words, rule, _ = answers[i]  # and where it ran
        alone, alone_words, alone_rule = probe_stage(engine, good, bad, ["lp", "mean_lp"], True)
        assert (result.pair.good, result.pair.bad) == (good, bad) and rule == alone_rule
        assert [w["word"] for w in words["good"]] == [w["word"] for w in alone_words["good"]]
        for a, b in zip(result.scores, alone.scores):
            assert a.verdict == b.verdict
            assert a.score_good == pytest.approx(b.score_good, rel=1e-5)


@pytest.mark.slow  # the real SmolLM2
def test_visitors_probing_one_after_another_keep_sharing_engine_calls(smollm, blimp):
    """Visitors who send their next probe as soon as the last is answered keep being batched: a
    caller answered by another's batch stops waiting for the model at once (before, it waited for
    the model in turn, holding back its next probe, and the batches shrank to one probe each)."""
    state, engine, calls, real = counted_state(smollm)
    visitors, rounds = 6, 4
    pairs = list(zip(blimp.good.head(visitors * rounds), blimp.bad.head(visitors * rounds)))
    answers: dict = {}
    gate = threading.Barrier(visitors)

    def visitor(k):
        gate.wait()
        for j in range(rounds):
            good, bad = pairs[k * rounds + j]
            answers[k * rounds + j] = batched_stage(smollm.spec.id, good, bad, ["lp"], True, state=state)

    threads = [threading.Thread(target=visitor, args=(k,)) for k in range(visitors)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert len(answers) == len(pairs) and sum(calls) == len(pairs)
    assert all(answers[i][0].pair.good == good for i, (good, _) in enumerate(pairs))
    # One call a round for the batch, and maybe one for a visitor that came a moment late.
    assert len(calls) <= 2 * rounds, calls
