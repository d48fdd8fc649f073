"""The packed passes' past: template prefixes' keys and values written once into memory kept from pass to
pass within a call, and a KV cache that takes that memory as it is.

transformers' DynamicCache(ddp_cache_data=...) copies its data on construction, and a fresh buffer each pass
cost its size in page faults: together most of an every-method probe's host time on this CPU
(docs/performance.md). The layers' update still concatenates the pass's own keys as DynamicLayer does
(writing them in place into room left in the buffer measured a few per cent slower in the forward).
"""

from __future__ import annotations

import math

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer


class Scratch:
    """Memory for a scoring call's past KV, kept from pass to pass (on a CPU also from call to call, as
    CausalScorer keeps it): two slots, the pass the decoder runs and the pass being made beside it."""

    def __init__(self) -> None:
        self._storage: list[torch.Tensor | None] = [None, None]

    @property
    def nbytes(self) -> int:
        return sum(s.numel() * s.element_size() for s in self._storage if s is not None)

    def buffer(self, like: torch.Tensor, batch: int, past: int, slot: int) -> torch.Tensor:
        """(layers, 2, batch, heads, past, head dim) for a prefix KV `like` (layers, 2, heads, tokens, head
        dim), its values left as they were: the caller writes every column a row's mask lets it see, and
        the rest hold zeros or keys and values an earlier pass wrote, finite numbers either way. A masked
        column still enters the attention's product, with weight exactly 0, so it adds 0 there; only a
        stray NaN or infinity would spread, hence memory made with zeros, never left uninitialised."""
        layers, two, heads, _, dim = like.shape
        shape = (layers, two, batch, heads, past, dim)
        n = math.prod(shape)
        s = self._storage[slot]
        if s is None or s.numel() < n or s.dtype != like.dtype or s.device != like.device:
            self._storage[slot] = None  # the old memory goes before the new is made
            self._storage[slot] = s = like.new_zeros(n + n // 4)  # a quarter spare: the next pass may be a little wider
        return s[:n].view(shape)


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
