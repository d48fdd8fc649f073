"""The cycle collector spaced out while pairs are scored (accapp/scoring/collector.py): the young threshold
is raised for the call and restored after it, also when the call fails and when calls on two threads
overlap; a collector set off stays off; an engine call runs inside it, and fewer collections run."""

from __future__ import annotations

import gc
import threading

import pytest

from accapp.scoring import collector


@pytest.fixture
def thresholds():
    before = gc.get_threshold()
    yield before
    gc.set_threshold(*before)


def test_raised_inside_restored_after_even_on_an_error(thresholds):
    with collector.spaced_collections():
        assert gc.get_threshold() == (collector.YOUNG_THRESHOLD, *thresholds[1:])
    assert gc.get_threshold() == thresholds
    with pytest.raises(RuntimeError), collector.spaced_collections():
        raise RuntimeError("a failing call")
    assert gc.get_threshold() == thresholds


def test_a_collector_set_off_stays_off_and_a_higher_threshold_is_kept(thresholds):
    gc.set_threshold(0, *thresholds[1:])
    with collector.spaced_collections():
        assert gc.get_threshold()[0] == 0
    gc.set_threshold(10 * collector.YOUNG_THRESHOLD, *thresholds[1:])
    with collector.spaced_collections():
        assert gc.get_threshold()[0] == 10 * collector.YOUNG_THRESHOLD
    assert gc.get_threshold()[0] == 10 * collector.YOUNG_THRESHOLD


def test_overlapping_calls_on_two_threads_restore_once_the_last_leaves(thresholds):
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def first():
        with collector.spaced_collections():
            first_in.set()
            second_in.wait(10)
        first_out.set()

    def second():
        first_in.wait(10)
        with collector.spaced_collections():
            second_in.set()
            first_out.wait(10)  # the first call has left; this one still runs
            seen["while the second runs"] = gc.get_threshold()[0]
        seen["after both"] = gc.get_threshold()[0]

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert seen == {"while the second runs": collector.YOUNG_THRESHOLD, "after both": thresholds[0]}


def test_an_engine_call_runs_inside_it_with_fewer_young_collections(tiny_llama, thresholds):
    from accapp.engine import Engine
    from accapp.scoring.causal import CausalScorer

    engine = Engine(CausalScorer(tiny_llama, batch_size=8))
    pairs = [engine.check_pair(f"The cat number {i} sleeps.", f"The cat number {i} sleep.") for i in range(24)]
    inside = []
    execute = engine.scorer.execute

    def execute_and_look(requests):  # the real scorer's call, the threshold read on the way in
        inside.append(gc.get_threshold()[0])
        return execute(requests)

    engine.scorer.execute = execute_and_look
    young = []

    def count(phase, info):
        if phase == "start" and info["generation"] == 0:
            young[-1] += 1

    gc.callbacks.append(count)
    try:
        engine.score_pairs(pairs, None, "en")  # warm: prompts and caches built once
        young.append(0)
        spaced = engine.score_pairs(pairs, None, "en")
        young.append(0)
        with_default = engine._score_pairs(pairs, None, "en", False, 0)  # the same call, Python's threshold
    finally:
        gc.callbacks.remove(count)
    assert inside[-2:] == [collector.YOUNG_THRESHOLD, thresholds[0]]
    assert gc.get_threshold() == thresholds
    assert [r.rows for r in spaced] == [r.rows for r in with_default]
    assert young[0] < young[1] / 5, young  # far fewer young collections
