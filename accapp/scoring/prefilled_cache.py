"""The packed passes' past: template prefixes' keys and values written once into memory kept from pass to
pass, and a KV cache that takes that memory as it is.

transformers' DynamicCache(ddp_cache_data=...) copies its data on construction, and a fresh buffer each pass
cost its size in page faults: together most of an every-method probe's host time on this CPU
(docs/performance.md). The layers' update still concatenates the pass's own keys as DynamicLayer does
(writing them in place into room left in the buffer measured a few per cent slower in the forward).
"""

from __future__ import annotations

import math
import threading

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer


class Scratch:
    """Memory for the passes' past KV, kept from pass to pass within one scoring call and let go after it
    (release); a thread's own, as the app may run one model's requests side by side."""

    def __init__(self) -> None:
        self._local = threading.local()  # .storage: this thread's memory, or None

    def buffer(self, like: torch.Tensor, batch: int, past: int) -> torch.Tensor:
        """(layers, 2, batch, heads, past, head dim) for a prefix KV `like` (layers, 2, heads, tokens, head
        dim), its values left as they were: the caller writes every column a row's mask lets it see and
        zeroes the rest (masked columns still enter the attention's product with weight 0, and 0 times a
        stray NaN is NaN)."""
        layers, two, heads, _, dim = like.shape
        shape = (layers, two, batch, heads, past, dim)
        n = math.prod(shape)
        s = getattr(self._local, "storage", None)
        if s is None or s.numel() < n or s.dtype != like.dtype or s.device != like.device:
            self._local.storage = s = like.new_empty(n + n // 4)  # a quarter spare: the next pass may be a little wider
        return s[:n].view(shape)

    def release(self) -> None:
        self._local.storage = None


def prefilled_cache(buffer: torch.Tensor) -> DynamicCache:
    """A cache whose layers hold `buffer` (Scratch.buffer's shape) as their past, uncopied."""
    layers = []
    for i in range(buffer.shape[0]):
        layer = DynamicLayer()
        layer.keys, layer.values = buffer[i, 0], buffer[i, 1]
        layer.dtype, layer.device, layer.is_initialized = buffer.dtype, buffer.device, True
        layers.append(layer)
    cache = DynamicCache()  # an empty cache of DynamicLayers, given its layers here
    cache.layers = layers
    return cache
