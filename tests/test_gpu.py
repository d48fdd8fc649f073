"""The hosted app on a GPU (issue 31): ZeroGPU's wrapper, the GPU memory plan, gated models, where
a result ran, and one load when two visitors probe at once.

ZeroGPU itself cannot run here. What it does to a call is run it in a forked worker, with the
arguments and the answer pickled (the `spaces` package's zero/wrappers.py); the fork test below does
exactly that with the standard library, on the real embedded model.
"""

from __future__ import annotations

import concurrent.futures
import gc
import importlib.util
import multiprocessing
import pickle
import threading

import pytest

from accapp.errors import UserError
from accapp.models import get_spec, registry
from accapp.models.budget import default_budget, gpu_budget, plan_load
from accapp.models.memory import GiB, estimate_bytes
from accapp.service import gpu
from accapp.service.probe import batched_stage, probe, probe_stages
from accapp.service.score_file import _score_timed

GOOD, BAD = "These casseroles disgust Kayla.", "These casseroles disgusts Kayla."
PAPERS_FAMILIES = {  # Ide et al. 2025's model families, base and instruct: hub ids in the registry
    "llama-3-8b": "meta-llama/Meta-Llama-3-8B", "llama-3-8b-instruct": "meta-llama/Meta-Llama-3-8B-Instruct",
    "qwen2-7b": "Qwen/Qwen2-7B", "qwen2-7b-instruct": "Qwen/Qwen2-7B-Instruct",
    "gemma-2-9b": "google/gemma-2-9b", "gemma-2-9b-it": "google/gemma-2-9b-it",
    "mistral-7b": "mistralai/Mistral-7B-v0.3", "mistral-7b-instruct": "mistralai/Mistral-7B-Instruct-v0.3",
}


# ------------------------------------------------------------------------------------------ registry
def test_the_papers_gpu_models_are_in_the_registry_with_licences_and_gates():
    specs = registry()
    for model_id, hub_id in PAPERS_FAMILIES.items():
        spec = specs[model_id]
        assert spec.hub_id == hub_id and spec.kind == "causal" and spec.needs_gpu and not spec.embedded
        assert spec.license and spec.license_url.startswith("https://") and 7e9 < spec.params < 1e10
        assert spec.variant == ("instruct" if model_id.endswith(("-instruct", "-it")) else "base")
    assert {m for m in PAPERS_FAMILIES if specs[m].gated} == {
        "llama-3-8b", "llama-3-8b-instruct", "gemma-2-9b", "gemma-2-9b-it", "mistral-7b", "mistral-7b-instruct"}
    assert not any(s.needs_gpu or s.gated for s in specs.values() if s.embedded)


# ------------------------------------------------------------------------------------------ memory
def test_an_8b_model_is_refused_on_a_16_gb_cpu_and_accepted_in_4_bit_on_a_24_gb_gpu():
    from accapp.models.pool import ModelPool

    llama = get_spec("llama-3-8b")
    cpu = ModelPool(budget=default_budget(16 * GiB), device="cpu")
    with pytest.raises(UserError, match=r"Meta-Llama-3-8B \(base\) needs a GPU: about 18\.1 GB .* bf16 and 6\.4 GB in "
                                        r"4-bit NF4 \(8\.03 B parameters\).* CPU \(memory budget for models 8\.6 GB\)"):
        cpu.plan("llama-3-8b")
    gpu_plan = ModelPool(budget=gpu_budget(24 * GiB), device="cuda").plan("llama-3-8b")
    assert (gpu_plan.dtype, gpu_plan.quantization) == ("bf16", "nf4")
    assert gpu_plan.bytes == estimate_bytes(llama, "bf16", "nf4") < gpu_budget(24 * GiB)
    # every model of the papers' families loads in 4-bit on a 24 GB GPU
    for model_id in PAPERS_FAMILIES:
        assert plan_load(get_spec(model_id), gpu_budget(24 * GiB), device="cuda").quantization == "nf4"
    with pytest.raises(UserError, match="even in 4-bit NF4"):  # a GPU too small: refused, never out of memory
        plan_load(get_spec("gemma-2-9b"), gpu_budget(8 * GiB), device="cuda")


def test_on_cuda_small_models_load_in_fp32_and_from_1b_in_4_bit(monkeypatch):
    import torch

    small, mid = get_spec("smollm2-135m-instruct"), get_spec("qwen2-1.5b")
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)  # a T4: no bf16
    # fp32, not fp16: fp16 turned Gemma 3's scores into NaN on an H200 (docs/gpu.md)
    assert plan_load(small, gpu_budget(16 * GiB), device="cuda").dtype == "fp32"
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)  # an A10G, L4, A100, H100...
    plan = plan_load(small, gpu_budget(24 * GiB), device="cuda")  # fp32 under 1B (tests/test_precision_rule.py)
    assert (plan.dtype, plan.quantization) == ("fp32", None)
    plan = plan_load(mid, gpu_budget(24 * GiB), device="cuda")
    assert (plan.dtype, plan.quantization) == ("bf16", "nf4")
    assert plan_load(small, default_budget(16 * GiB), device="cpu").dtype == "fp32"  # the CPU unchanged
    assert gpu_budget(24 * GiB) == int(0.9 * 24 * GiB) - GiB


@pytest.mark.slow
def test_the_registry_parameter_counts_are_the_embedded_models_own(smollm, gemma):
    """The estimate before loading starts from the registry's count: within 5 % (here: exactly) of
    the parameter bytes the loaded fp32 models hold."""
    for lm in (smollm, gemma):
        real = sum(t.numel() * t.element_size() for t in lm.model.parameters())
        assert abs(lm.spec.params * 4 - real) <= 0.05 * real


# ------------------------------------------------------------------------------------------ gated
def test_a_gated_model_without_hf_token_says_so_with_the_hub_unreachable(monkeypatch, tmp_path):
    from accapp.models import availability as av
    from accapp.models.loading import load_model

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the hub unreachable
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))  # nothing downloaded before
    monkeypatch.setenv("HF_HOME", str(tmp_path))  # no stored login
    monkeypatch.delenv("HF_TOKEN", raising=False)
    av.hub_reachable.cache_clear()
    try:
        for model_id in ("llama-3-8b", "gemma-2-9b-it"):
            with pytest.raises(UserError) as err:
                load_model(model_id, "bf16")
            message = str(err.value)
            assert "gated model" in message and "HF_TOKEN is not set" in message
            assert f"https://huggingface.co/{get_spec(model_id).hub_id}" in message
            assert "Traceback" not in message
        with pytest.raises(UserError, match="hub is not reachable"):  # not gated: the offline message
            load_model("qwen2-7b", "bf16")
    finally:
        av.hub_reachable.cache_clear()


# ------------------------------------------------------------------------------------------ ZeroGPU
def test_duration_grows_with_pairs_times_methods_and_is_capped():
    assert gpu.duration(1, 1) == 11 and gpu.duration(1, 51) == 18  # one probe, every method
    assert gpu.duration(64, 3) == 39 and gpu.duration(500, 51) == gpu.MAX_S
    assert gpu.method_count(None) == gpu.method_count(["all"]) == gpu.ALL_METHODS and gpu.method_count(["lp"]) == 1
    items = [(GOOD, BAD, ["lp", "mean_lp"], True), (GOOD, BAD, ["lp"], False)]
    assert probe_stages.gpu_work(items) == (2, 2)
    assert probe.gpu_work(GOOD, BAD, ["lp"]) == (1, 1) and probe.gpu_work(GOOD, BAD) == (1, gpu.ALL_METHODS)
    assert _score_timed.gpu_work([1, 2, 3], ["lp"], True) == (3, 1)


def test_model_calls_travel_to_a_worker_by_reference():
    """ZeroGPU pickles what a GPU call gets: the marked functions go as references to themselves."""
    for fn in (probe, probe_stages, _score_timed):
        assert pickle.loads(pickle.dumps(fn)) is fn and callable(fn.gpu_work)


@pytest.mark.skipif(importlib.util.find_spec("spaces") is None, reason="the spaces package is not installed")
def test_with_spaces_off_zerogpu_the_wrapper_is_the_function_itself():
    if gpu.spaces is None:
        pytest.skip("ACCAPP_SPACES=0")
    assert not gpu.on_zero_gpu()
    assert gpu._gpu_call is gpu._call  # spaces.GPU returned it unchanged: a no-op here


def _in_a_forked_worker(key, fn, args):
    """What ZeroGPU does with a call: a forked process runs it; arguments and answer are pickled."""
    import torch

    # one torch thread in the worker: GNU OpenMP's thread pool does not survive a fork (a CPU-only
    # detail: a ZeroGPU worker runs the model on CUDA)
    # The worker must not garbage-collect what it inherited: the suite's earlier tests leave objects
    # (DuckDB connections, threads' state) whose finalizers crash in a forked child (a segfault seen in
    # CI). gc.freeze() before fork, as Python's gc documentation advises for fork without exec.
    gc.collect()
    gc.freeze()
    try:
        with concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"),
                                                    initializer=torch.set_num_threads, initargs=(1,)) as pool:
            return pool.submit(gpu._call, key, fn, args, {}, gpu.duration(1, 1)).result(timeout=300)
    finally:
        gc.unfreeze()


@pytest.mark.slow
def test_a_forked_worker_finds_the_engine_or_loads_it_and_answers_the_same(smollm):
    from accapp.engine import build_engine

    engine = build_engine(smollm.spec.id, lm=smollm)
    items = [(GOOD, BAD, ["lp", "yes_no_prob_comp"], True), ("The dog barks.", "The dog bark.", ["lp"], False)]
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as in the worker: float sums depend on the thread count (README: the same scores)
    try:
        here = probe_stages(engine, items)
    finally:
        torch.set_num_threads(threads)
    key = gpu._key(engine)
    gpu._ENGINES[key] = engine  # what gpu.run does before the call
    inherited = _in_a_forked_worker(key, probe_stages, (items,))
    # a worker forked before this model loaded: it loads the model itself, the same precision
    missing = (smollm.spec.id, smollm.dtype, smollm.quantization, -1)
    loaded_there = _in_a_forked_worker(missing, probe_stages, (items,))
    for answers in (inherited, loaded_there):
        for (r, w, rule), (r0, w0, rule0) in zip(answers, here):
            assert [(s.method, s.template, s.variant, s.score_good, s.score_bad, s.verdict) for s in r.scores] == \
                   [(s.method, s.template, s.variant, s.score_good, s.score_bad, s.verdict) for s in r0.scores]
            assert w == w0 and rule == rule0
    assert [s.verdict for s in gpu.run(probe_stages, engine, items)[0][0].scores] == \
           [s.verdict for s in here[0][0].scores]  # off ZeroGPU: a call in this process


# ------------------------------------------------------------------------------------------ where it ran
def test_where_it_ran_names_device_gpu_dtype_and_quantization(tiny_llama):
    from dataclasses import replace

    from accapp.engine import build_engine
    from accapp.service.provenance import provenance, ran_on

    engine = build_engine(tiny_llama.spec.id, lm=tiny_llama)
    assert ran_on(engine) == {"device": "cpu", "gpu": None, "dtype": "fp32", "quantization": None, "batch_size": 64,
                             "text": "CPU · fp32"}
    record = provenance(engine)
    assert (record["device"], record["gpu"], record["dtype"], record["quantization"]) == ("cpu", None, "fp32", None)
    assert record["attention"] == "sdpa"  # on a CPU always transformers' own (accapp/models/attention.py)
    engine.lm = replace(tiny_llama, dtype="bf16", quantization="nf4")
    assert ran_on(engine)["text"] == "CPU · bf16 · 4-bit NF4"


# ------------------------------------------------------------------------------------------ one load
@pytest.mark.slow
def test_two_visitors_probing_at_once_load_the_model_once(monkeypatch):
    """Two probes of a model not yet loaded, sent at the same moment: one load, both answered."""
    import time

    from accapp.models import loading
    from accapp.service.host import AppState

    loads = []
    real = loading.load_model

    def counted(*args, **kwargs):  # the real loader, counted and slowed so the two requests overlap
        loads.append(getattr(args[0], "id", args[0]))  # an id or the spec it resolved to
        time.sleep(0.5)
        return real(*args, **kwargs)

    monkeypatch.setattr(loading, "load_model", counted)
    state = AppState()
    start = threading.Barrier(2)
    answers = [None, None]

    def visitor(i):
        start.wait()
        answers[i] = batched_stage("smollm2-135m-instruct", GOOD, BAD, ["lp"], False, state=state)

    threads = [threading.Thread(target=visitor, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert loads == ["smollm2-135m-instruct"]
    assert all(a is not None and a[0].scores[0].verdict == "good" for a in answers)
    assert [m["id"] for m in state.loaded_models()] == ["smollm2-135m-instruct"]
    assert state.ran_on("smollm2-135m-instruct")["text"] == "CPU · fp32"

    # below the model's slots too (ACCAPP_PER_MODEL_CONCURRENCY > 1, a warm-up beside a probe): the
    # engine itself is built once, whoever asks for it at the same moment
    loads.clear()
    state = AppState()
    engines = [None, None]

    def ask(i):
        start.wait()
        engines[i] = state.engine("smollm2-135m-instruct")

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert loads == ["smollm2-135m-instruct"] and engines[0] is engines[1] is not None
