"""The models the app holds: loaded ones within a memory budget (accapp.models.budget), the least
recently used unloaded to make room."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from accapp.errors import UserError
from accapp.models import get_spec, loading
from accapp.models.budget import Plan, budget_from_env, gb, needs_gpu_message, plan_load
from accapp.models.device import pick_device
from accapp.models.loading import LoadedModel
from accapp.models.memory import WEIGHT_FACTOR, WORKING_BYTES


@dataclass
class _Entry:
    lm: LoadedModel
    bytes: int
    last_used: float


class ModelPool:
    """Loaded models within a memory budget, one per (id, dtype, quantization); thread-safe.

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
    def _find(self, model_id: str, dtype: str | None, quantization: str | None):
        with self._meta:
            for key, entry in self._models.items():
                if key[0] == model_id and (dtype is None and quantization is None or key[1:] == (dtype or "fp32", quantization)):
                    entry.last_used = time.monotonic()
                    return entry.lm
        return None

    def touch(self, model_id: str) -> None:
        """Mark a model used now (least recently used goes first)."""
        with self._meta:
            for key, entry in self._models.items():
                if key[0] == model_id:
                    entry.last_used = time.monotonic()

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
        spec = get_spec(model_id)
        plan = plan_load(spec, self.budget, dtype, quantization, self.device)
        if spec.needs_gpu and pick_device(self.device) != "cuda":
            raise UserError(needs_gpu_message(spec, self.budget))
        return plan

    # -------------------------------------------------------------- loading
    def get(self, model_id: str, dtype: str | None = None, quantization: str | None = None) -> LoadedModel:
        """The loaded model (loading it, within the budget, if needed). dtype None: the pool picks
        the precision (plan_load)."""
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
            lm = loading.load_model(get_spec(model_id), plan.dtype, plan.quantization, self.device)
            weights = sum(t.numel() * t.element_size() for t in lm.model.parameters())
            cost = max(plan.bytes, int(weights * WEIGHT_FACTOR) + WORKING_BYTES)
            with self._meta:
                self._models[(model_id, plan.dtype, plan.quantization)] = _Entry(lm, cost, time.monotonic())
            return lm

    def _make_room(self, plan: Plan) -> None:
        while self.used() + plan.bytes > self.budget:
            victims = [m["id"] for m in self.loaded() if m["id"] != plan.model_id]
            if not victims:
                break
            for victim in victims:  # least recently used first
                if self._evict is None:
                    self.drop(victim)
                    break
                if self._evict(victim):
                    break
            else:
                raise UserError(
                    f"Loading {get_spec(plan.model_id).name} needs {gb(plan.bytes)} of memory, and the models in use "
                    f"now ({', '.join(victims)}) cannot be unloaded yet. Try again in a minute.")

    def drop(self, model_id: str) -> None:
        with self._meta:
            for key in [k for k in self._models if k[0] == model_id]:
                del self._models[key]
