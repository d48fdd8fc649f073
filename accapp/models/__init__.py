"""The model registry (registry.json) and the specs of the other models a researcher brings.

A registry model's facts are stated by hand; any other model (a hub id, a local folder, a .gguf
file: accapp.models.resolve) gets them found from the model itself (accapp.models.inspect), and
the registry's facts override those findings where it lists the same hub id. Which models the
app may load is a policy (:func:`get_spec`): the registry, the owner's allowlist
``ACCAPP_EXTRA_MODELS``, and anything with ``ACCAPP_ALLOW_ANY_MODEL=1`` (a local run).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from accapp import settings
from accapp.errors import UserError, shown

REGISTRY_FILE = Path(__file__).with_name("registry.json")
DEFAULT_MODEL = "smollm2-135m-instruct"


@dataclass(frozen=True)
class ModelSpec:
    id: str
    name: str
    kind: str  # "causal" or "masked"
    variant: str  # "base" or "instruct"
    languages: tuple[str, ...]
    source: dict = field(hash=False, compare=False)
    hub_id: str = ""
    start_token: str = ""
    license: str = ""
    license_url: str = ""
    embedded: bool = False
    note: str = ""
    params: int = 0  # parameter count: the memory budget's estimate before loading (models.memory.estimate_bytes)
    given: str = ""  # a model not in the registry: the id or path as the person gave it
    revision: str = ""  # a hub id's @revision, as given
    trust_remote_code: bool = False  # only with an explicit --trust-remote-code (CLI, API), never in the app
    findings: dict = field(default_factory=dict, hash=False, compare=False)  # accapp.models.inspect: what was found, and from where

    @property
    def in_registry(self) -> bool:
        return not self.given
    gated: bool = False  # the hub asks for the licence to be accepted: loading needs an HF_TOKEN with access
    needs_gpu: bool = False  # too large for a CPU server: listed as needing a GPU there, and refused

    @property
    def is_chat(self) -> bool:
        return self.variant == "instruct"


@lru_cache(maxsize=1)
def registry() -> dict[str, ModelSpec]:
    data = json.loads(REGISTRY_FILE.read_text(encoding="utf-8"))
    specs = {}
    for entry in data["models"]:
        entry = dict(entry)
        entry["languages"] = tuple(entry["languages"])
        specs[entry["id"]] = ModelSpec(**entry)
    return specs


_RESOLVED: dict[str, ModelSpec] = {}  # specs resolved in this process, by id (bounded by the models a person names)
_RESOLVED_LOCK = threading.Lock()


def remember(spec: ModelSpec) -> ModelSpec:
    """Keep a resolved spec, so get_spec finds it again by its id (the app's handlers look models up by id)."""
    with _RESOLVED_LOCK:
        _RESOLVED[spec.id] = spec
    return spec


def allow_any_model() -> bool:
    """ACCAPP_ALLOW_ANY_MODEL=1: a local run, where the app takes any hub id or path."""
    return settings.flag("ACCAPP_ALLOW_ANY_MODEL")


def extra_models() -> list[str]:
    """The Space owner's allowlist beside the registry: ACCAPP_EXTRA_MODELS, comma-separated ids or paths."""
    return settings.items("ACCAPP_EXTRA_MODELS")


def get_spec(model_id: str) -> ModelSpec:
    """The spec of a model the app may load: a registry id, one resolved before in this process, an
    id of ACCAPP_EXTRA_MODELS, or, with ACCAPP_ALLOW_ANY_MODEL=1, any hub id, folder or .gguf file
    (never with remote code). Else UserError naming the known models."""
    specs = registry()
    if model_id in specs:
        return specs[model_id]
    with _RESOLVED_LOCK:
        found = _RESOLVED.get(model_id)
    if found is not None:
        return found
    if isinstance(model_id, str) and (model_id.strip() in extra_models() or allow_any_model()):
        from accapp.models.resolve import resolve_model

        return resolve_model(model_id.strip())
    known = ", ".join(sorted(specs) + extra_models())
    raise UserError(f"Unknown model '{shown(model_id)}'. Known models: {known}.")
