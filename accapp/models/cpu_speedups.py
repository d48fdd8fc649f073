"""Exact speed-ups of transformers' decoders on the CPU (every output bitwise unchanged).

Besides its matrix products the probe is bound by memory traffic on a small CPU: writing
fresh activation tensors and copying key/value heads. Both are avoided here; the gain is
small (docs/performance.md) but free: every score is identical.
"""

from __future__ import annotations

import types
from collections.abc import Iterator
from contextlib import contextmanager

import torch
from transformers.activations import SiLUActivation

from accapp import settings

GQA_SWITCH = "TRANSFORMERS_SDPA_FORCE_GQA"

# MLP classes whose forward is exactly down_proj(act_fn(gate_proj(x)) * up_proj(x)) (checked
# in transformers 5.23 and by tests/test_cpu_speedups.py); others keep their own forward.
GATED_MLPS = frozenset({"LlamaMLP", "Gemma3MLP", "Qwen2MLP"})


def share_kv_heads_in_sdpa() -> None:
    """Let SDPA read grouped-query attention's shared key/value heads in place.

    With a mask, transformers copies each KV head once per query head before SDPA (CUDA's
    fused kernels need that); the CPU kernel takes them as they are (enable_gqa). transformers
    reads this switch on every attention call, so it is process-wide; a value the user set wins.
    """
    settings.switch_default(GQA_SWITCH, "1")


def is_silu(act: torch.nn.Module) -> bool:
    """transformers' "silu" (its own SiLUActivation, F.silu underneath) or torch's SiLU."""
    return isinstance(act, (SiLUActivation, torch.nn.SiLU))


def gated_mlps(model: torch.nn.Module):
    """The model's MLPs of a class in GATED_MLPS."""
    return (m for m in model.modules() if type(m).__name__ in GATED_MLPS)


def gated_mlp_in_place(self, x: torch.Tensor) -> torch.Tensor:
    """down_proj(act_fn(gate_proj(x)) * up_proj(x)) with the activation and product written
    into gate_proj's output instead of two fresh (tokens x intermediate) tensors."""
    if torch.is_grad_enabled():  # in-place would break autograd; never the case when scoring
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))
    gate = self.gate_proj(x)
    hidden = torch.nn.functional.silu(gate, inplace=True) if is_silu(self.act_fn) else self.act_fn(gate)
    hidden.mul_(self.up_proj(x))
    return self.down_proj(hidden)


def speed_up_on_cpu(model: torch.nn.Module) -> int:
    """Apply both speed-ups to a model on the CPU; returns how many MLPs run in place."""
    share_kv_heads_in_sdpa()
    patched = 0
    for module in gated_mlps(model):
        module.forward = types.MethodType(gated_mlp_in_place, module)
        patched += 1
    return patched


@contextmanager
def without_cpu_speedups(model: torch.nn.Module) -> Iterator[int]:
    """transformers' own forward for a while (the baseline of tests and benchmarks); yields
    how many MLPs ran in place before."""
    undone = 0
    for module in gated_mlps(model):
        if module.__dict__.get("forward") is not None:
            del module.forward
            undone += 1
    before = settings.switch_set(GQA_SWITCH, "0")
    try:
        yield undone
    finally:
        settings.switch_set(GQA_SWITCH, before)
        if undone:
            speed_up_on_cpu(model)
