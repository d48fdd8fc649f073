"""Can a registry model load here? Embedded models always; hub models when their files are in the
local Hugging Face cache, or when the hub can be reached (checked once per process); a model that
needs a GPU only where there is one; a gated model only with a token (``HF_TOKEN``) or a download."""

from __future__ import annotations

import socket
import threading
from functools import lru_cache

from accapp import settings

HUB_HOST = ("huggingface.co", 443)
HUB_CHECK_SECONDS = 2.0  # the most a model list waits to learn that the hub is unreachable


@lru_cache(maxsize=1)
def hub_reachable() -> bool:
    """True when a TCP connection to the hub opens within HUB_CHECK_SECONDS (DNS included);
    False at once under HF_HUB_OFFLINE=1."""
    if settings.hub_offline():
        return False
    ok: list[bool] = []

    def probe() -> None:
        try:
            socket.create_connection(HUB_HOST, timeout=HUB_CHECK_SECONDS).close()
            ok.append(True)
        except OSError:
            ok.append(False)

    t = threading.Thread(target=probe, daemon=True)
    t.start()
    t.join(HUB_CHECK_SECONDS)
    return bool(ok and ok[0])


def in_hub_cache(hub_id: str) -> bool:
    """The model's config is in the local Hugging Face cache (a download happened before)."""
    try:
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache(hub_id, "config.json"), str)
    except Exception:  # noqa: BLE001 - an unreadable cache counts as empty
        return False


def has_gpu() -> bool:
    """A CUDA device (on ZeroGPU: the one the `spaces` package lends for each call)."""
    import torch

    return bool(torch.cuda.is_available())


def has_token() -> bool:
    """A Hugging Face token is set (``HF_TOKEN``, a Space secret, or a login)."""
    try:
        from huggingface_hub import get_token

        return bool(get_token())
    except Exception:  # noqa: BLE001 - no token store: no token
        return bool(settings.hf_token())


def availability(spec) -> tuple[bool, str]:
    """(loads here, why in words) for a ModelSpec: a GPU model on a server without one, and a gated
    model with no token (and not downloaded before) cannot be chosen."""
    if spec.embedded:
        return True, "offline"
    if spec.needs_gpu and not has_gpu():
        return False, "needs a GPU (this server runs on the CPU)"
    if spec.gated and not has_token() and not in_hub_cache(spec.hub_id):
        return False, "gated: needs an HF_TOKEN secret with access"
    if in_hub_cache(spec.hub_id):
        return True, "downloaded from the Hugging Face hub"
    if hub_reachable():
        return True, "downloads from the Hugging Face hub on first use"
    return False, "cannot load here: not downloaded, and the Hugging Face hub is unreachable"
