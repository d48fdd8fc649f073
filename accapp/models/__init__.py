"""The model registry: which models may load, kept as data in registry.json."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from accapp.errors import UserError

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
    params: int = 0  # parameter count: the memory budget's estimate before loading (models.loading.estimate_bytes)
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


def get_spec(model_id: str) -> ModelSpec:
    specs = registry()
    if model_id not in specs:
        known = ", ".join(sorted(specs))
        raise UserError(f"Unknown model '{model_id}'. Known models: {known}.")
    return specs[model_id]
