"""The models the app holds, and the engines made from them: loaded models within a memory budget
(accapp.models.budget), the least recently used unloaded to make room, each with the engines made from
it (an engine goes with its model)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from accapp.errors import UserError
from accapp.models import get_spec, heap, loading
from accapp.models.budget import Plan, budget_from_env, gb, needs_gpu_message, plan_load
from accapp.models.device import pick_device
from accapp.models.loading import LoadedModel
from accapp.models.memory import WEIGHT_FACTOR, WORKING_BYTES
from accapp.models.release import release_freed_memory

# Engines kept per model: one for the app, a few more where the API asks for other options (an
# engine is cheap beside its model); the oldest is forgotten first, the model stays.
MAX_ENGINES_PER_MODEL = 4


@dataclass
class _Entry:
    lm: LoadedModel | None  # None: an engine registered without a model of the pool's (tests' tiny engines)
    bytes: int
    last_used: float
    engines: dict = field(default_factory=dict)  # options -> the engine made from lm (MAX_ENGINES_PER_MODEL)


class ModelPool:
    """Loaded models within a memory budget, one per (id, dtype, quantization), and the engines made
    from each (:meth:`engine_of`); thread-safe.

    Before a model loads, its memory is estimated (:func:`estimate_bytes`); a model that cannot fit
    the budget even alone is refused (UserError) before anything loads, and to make room the least
    recently used models are unloaded first, each through ``evict(model_id) -> bool`` (the app's
    waits until no request is using that model; False: still busy, try the next). Loads run one at
    a time, so two loads never both count on the same free memory. Bounded: the models held never
    add up to more than the budget (by their estimates).
    """

    def __init__(self, budget: int | None = None, evict=None, device: str | None = None) -> None:
        self.budget = budget_from_env(device) if budget is None else int(budget)
        self.device = device
        self._models: dict[tuple, _Entry] = {}  # bounded by the budget (see the class docstring)
        self._meta = threading.Lock()  # the dict and its times; held for moments only
        self._load = threading.Lock()  # one load (and its evictions) at a time
        self._evict = evict

    # -------------------------------------------------------------- looking up
    def _find(self, model_id: str, dtype: str | None, quantization: str | None) -> _Entry | None:
        """The model's entry, marked used now (least recently used goes first); dtype and quantization
        None: whichever precision it is held in."""
        with self._meta:
            for key, entry in self._models.items():
                if key[0] == model_id and (dtype is None and quantization is None or key[1:] == (dtype or "fp32", quantization)):
                    entry.last_used = time.monotonic()
                    return entry
        return None

    def holds(self, model_id: str) -> bool:
        with self._meta:
            return any(key[0] == model_id for key in self._models)

    def held_engines(self, model_id: str) -> list:
        """The engines made from a model held now (any precision), oldest first."""
        with self._meta:
            return [e for key, entry in self._models.items() if key[0] == model_id for e in entry.engines.values()]

    def used(self) -> int:
        with self._meta:
            return sum(e.bytes for e in self._models.values())

    def loaded(self) -> list[dict]:
        """The models held, least recently used first: id, dtype, quantization, bytes (estimate), idle_s."""
        now = time.monotonic()
        with self._meta:
            items = sorted(self._models.items(), key=lambda kv: kv[1].last_used)
            return [{"id": k[0], "dtype": k[1], "quantization": k[2], "bytes": e.bytes, "idle_s": round(now - e.last_used, 1)}
                    for k, e in items]

    def plan(self, model_id: str, dtype: str | None = None, quantization: str | None = None) -> Plan:
        """How the model would load under the budget (plan.spec: what loads), or UserError before anything
        loads: a GPU-only model on the CPU, or one that cannot fit the budget even alone."""
        spec = get_spec(model_id)
        if spec.needs_gpu and pick_device(self.device) != "cuda":
            raise UserError(needs_gpu_message(spec, self.budget))
        return plan_load(spec, self.budget, dtype, quantization, self.device)

    # -------------------------------------------------------------- engines
    def engine_of(self, model_id: str, make, options: tuple = (), dtype: str | None = None, quantization: str | None = None):
        """``make(lm)`` for the loaded model (loaded first, within the budget, if needed), made once per
        ``options`` and kept with the model: unloading the model forgets its engines. make is passed
        in (accapp.engine builds engines; this layer knows nothing of them)."""
        entry = self._entry(model_id, dtype, quantization)
        with self._meta:
            engine = entry.engines.get(options)
        if engine is None:
            engine = make(entry.lm)
            with self._meta:  # two callers at once: the first engine made stays
                engine = entry.engines.setdefault(options, engine)
                while len(entry.engines) > MAX_ENGINES_PER_MODEL:
                    entry.engines.pop(next(iter(entry.engines)))
        return engine

    def register(self, model_id: str, engine, options: tuple = ()) -> None:
        """Hold a ready engine for an id, as if made from a model loaded in fp32 (tests: tiny engines
        without a hub); it counts nothing against the budget."""
        with self._meta:
            entry = self._models.setdefault((model_id, "fp32", None), _Entry(getattr(engine, "lm", None), 0, time.monotonic()))
            entry.engines[options] = engine

    # -------------------------------------------------------------- loading
    def get(self, model_id: str, dtype: str | None = None, quantization: str | None = None) -> LoadedModel:
        """The loaded model (loading it, within the budget, if needed). dtype None: the pool picks
        the precision (plan_load)."""
        return self._entry(model_id, dtype, quantization).lm

    def _entry(self, model_id: str, dtype: str | None, quantization: str | None) -> _Entry:
        hit = self._find(model_id, dtype, quantization)
        if hit is not None:
            return hit
        with self._load:
            hit = self._find(model_id, dtype, quantization)
            if hit is not None:
                return hit
            plan = self.plan(model_id, dtype, quantization)  # refused here, before anything loads
            self._make_room(plan)
            loading.quiet_transformers()
            lm = loading.load_model(plan.spec, plan.dtype, plan.quantization, self.device)
            weights = sum(t.numel() * t.element_size() for t in lm.model.parameters())
            cost = max(plan.bytes, int(weights * WEIGHT_FACTOR) + WORKING_BYTES)
            entry = _Entry(lm, cost, time.monotonic())
            with self._meta:
                self._models[(model_id, plan.dtype, plan.quantization)] = entry
            return entry

    def _make_room(self, plan: Plan) -> None:
        while self.used() + plan.bytes > self.budget:
            victims = [m["id"] for m in self.loaded() if m["id"] != plan.model_id]
            if not victims:
                break
            for victim in victims:  # least recently used first
                if self._evict is None:
                    self.unload(victim)
                    break
                if self._evict(victim):
                    break
            else:
                raise UserError(
                    f"Loading {get_spec(plan.model_id).name} needs {gb(plan.bytes)} of memory, and the models in use "
                    f"now ({', '.join(victims)}) cannot be unloaded yet. Try again in a minute.")

    def unload(self, model_id: str) -> None:
        """Forget a model and its engines, and give their memory back (the next request reloads it)."""
        with self._meta:
            for key in [k for k in self._models if k[0] == model_id]:
                del self._models[key]
        heap.release()
        release_freed_memory()
        try:
            import torch

            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        except Exception:  # noqa: BLE001 - freeing is best effort; the reload is what matters
            pass
