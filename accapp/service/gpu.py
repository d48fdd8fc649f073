"""The model's work on a GPU lent call by call: Hugging Face ZeroGPU, through the `spaces` package.

On ZeroGPU (a Gradio-SDK Space on ZeroGPU hardware) a GPU exists only inside a function decorated
with ``spaces.GPU``, for the seconds it asks for, and that function runs in a forked worker
process: its arguments and its answer travel by pickle, and the worker sees the main process as
it was when it was forked (the ZeroGPU documentation and the `spaces` package's own code). So:

- models load in the main process, on device "cuda": `spaces` emulates CUDA there and moves the
  weights onto the real GPU in the worker. 4-bit bitsandbytes loads the same way with
  bitsandbytes >= 0.46, which `spaces` supports without its legacy patches (the earlier known
  issue, 4-bit models failing unless loaded inside the GPU function, was with older releases);
- the calls that run a model are marked with :func:`model_call` and go through :func:`run`, which
  hands the GPU function the engine's key and plain data (pairs, method ids) and gets plain results
  back; the worker finds the engine in :data:`_ENGINES` as inherited at its fork, or, forked before
  that model loaded, loads it itself once (the workaround the known issue describes);
- the duration asked for is estimated from the request, pairs x methods (:func:`duration`): a
  short request asks for less, which ZeroGPU's queue rewards.

Off ZeroGPU (a CPU Space, dedicated GPU hardware, a laptop) ``spaces.GPU`` returns the function
unchanged and :func:`run` is a plain call in this process; without the `spaces` package, or with
``ACCAPP_SPACES=0``, it is not imported at all. Import this module before torch touches CUDA
(app.py imports it first): `spaces` refuses to start on ZeroGPU after that.
"""

from __future__ import annotations

import math
import weakref

from accapp import settings


def _import_spaces():
    """The `spaces` package, or None (not installed, or ACCAPP_SPACES=0)."""
    if not settings.flag("ACCAPP_SPACES"):
        return None
    try:
        import spaces
    except ImportError:
        return None
    return spaces


spaces = _import_spaces()


def on_zero_gpu() -> bool:
    """True on a ZeroGPU Space (the `spaces` package reads SPACES_ZERO_GPU)."""
    if spaces is None:
        return False
    from spaces.config import Config

    return bool(Config.zero_gpu)


# ------------------------------------------------------------------------------------------ duration
def _seconds_setting(name: str, default: float | None = None) -> float:
    return settings.number(name, default)


# What one GPU call costs: starting the worker and moving the weights in (BASE_S), then each pair x
# method (a judgment's few forward passes, on a 7-9B model in 4-bit), never more than MAX_S.
BASE_S = _seconds_setting("ACCAPP_GPU_BASE_S", 10.0)
PER_PAIR_METHOD_S = _seconds_setting("ACCAPP_GPU_PAIR_METHOD_S", 0.15)
MAX_S = _seconds_setting("ACCAPP_GPU_MAX_S", 120.0)
ALL_METHODS = 51  # a request for every method (methods=None): the causal models' count


def duration(pairs: int, methods: int) -> int:
    """Seconds of GPU to ask for: BASE_S + PER_PAIR_METHOD_S x pairs x methods, at most MAX_S."""
    return int(min(MAX_S, math.ceil(BASE_S + PER_PAIR_METHOD_S * max(1, pairs) * max(1, methods))))


def method_count(methods) -> int:
    """How many methods a request names (None or 'all': every method)."""
    if methods is None or methods == "all" or list(methods) == ["all"]:
        return ALL_METHODS
    return len(methods)


# ------------------------------------------------------------------------------------------ calls
def model_call(work):
    """Mark ``fn(engine, *args, **kwargs)`` as a call that runs the model; ``work(*args, **kwargs)``
    gives its size as (pairs, methods), for the GPU duration. The function itself is unchanged."""

    def mark(fn):
        fn.gpu_work = work
        return fn

    return mark


_ENGINES: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # key -> engine: only engines alive
_LOADED_HERE: dict[tuple, object] = {}  # in a ZeroGPU worker: engines it had to load; at most one a registry model


def _key(engine) -> tuple:
    """(model id, dtype, quantization, the engine's identity): what a worker needs to find it, or load it."""
    lm = getattr(engine, "lm", None)
    spec = getattr(lm, "spec", None)
    return (getattr(spec, "id", None), getattr(lm, "dtype", None), getattr(lm, "quantization", None), id(engine))


def _engine(key: tuple):
    engine = _ENGINES.get(key)
    if engine is None:  # a ZeroGPU worker forked before this model loaded: load it in the worker, once
        engine = _LOADED_HERE.get(key[:3])
        if engine is None and key[0] is None:
            raise RuntimeError("this engine has no registry model to load in a GPU worker")
        if engine is None:
            from accapp.engine import build_engine
            from accapp.models.loading import load_model

            model_id, dtype, quantization = key[:3]
            engine = build_engine(model_id, lm=load_model(model_id, dtype, quantization))
            _LOADED_HERE[key[:3]] = engine
    return engine


def _call(key: tuple, fn, args: tuple, kwargs: dict, seconds: int):
    """fn(engine, *args, **kwargs) with the engine found by its key (in a ZeroGPU worker: its copy)."""
    return fn(_engine(key), *args, **kwargs)


def _duration(key: tuple, fn, args: tuple, kwargs: dict, seconds: int) -> int:
    return seconds


# spaces.GPU returns _call itself off ZeroGPU; on ZeroGPU, the function that asks for a GPU.
_gpu_call = spaces.GPU(duration=_duration)(_call) if spaces is not None else None


def run(fn, engine, *args, **kwargs):
    """``fn(engine, *args, **kwargs)``: through ``spaces.GPU`` when the `spaces` package is there
    and fn runs the model (:func:`model_call`), a plain call otherwise."""
    work = getattr(fn, "gpu_work", None)
    if work is None or _gpu_call is None:
        return fn(engine, *args, **kwargs)
    key = _key(engine)
    _ENGINES[key] = engine
    return _gpu_call(key, fn, args, kwargs, duration(*work(*args, **kwargs)))
