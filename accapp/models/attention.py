"""SDPA attention whose shared key-value heads each query head reads from memory of its own, for models on CUDA
with one key-value head.

transformers' SDPA attention repeats a grouped-query model's key and value heads for its query heads
(repeat_kv). With one key-value head that repeat is a view: every query head reads the same memory (stride 0).
PyTorch's memory-efficient CUDA kernel has returned wrong outputs for such keys and values with a mask
(pytorch/pytorch#191937, seen on torch 2.12; the math kernel right on the same tensors), and the scorer's
packed passes always give a mask. Gemma 3 270M (4 query heads, 1 key-value head) is such a model, and it alone
disagreed with the CPU on the GPU (docs/gpu-record.md). Here the repeated heads are copied, as repeat_kv
already copies them for a model with several key-value heads; the values are the same, only where they lie.
"""

from __future__ import annotations

import torch
from transformers import AttentionInterface, AttentionMaskInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import sdpa_mask

NAME = "accapp_sdpa_own_kv"  # the attention implementation's name, as model.config._attn_implementation holds it


def own_kv_sdpa(module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                attention_mask: torch.Tensor | None, dropout: float = 0.0, scaling: float | None = None,
                is_causal: bool | None = None, **kwargs) -> tuple[torch.Tensor, None]:
    """transformers' sdpa_attention_forward, except that with a mask and grouped key-value heads, the heads are
    repeated into memory of their own (query, key, value: batch, heads, tokens, head size)."""
    groups = getattr(module, "num_key_value_groups", 1)
    if groups == 1 or attention_mask is None or kwargs.get("softcap") is not None or kwargs.get("cache") is not None:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      is_causal=is_causal, **kwargs)
    key = key.repeat_interleave(groups, dim=1)  # head h reads key-value head h // groups, as repeat_kv orders them
    value = value.repeat_interleave(groups, dim=1)
    out = torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=attention_mask,
                                                           dropout_p=dropout, scale=scaling, is_causal=False)
    return out.transpose(1, 2).contiguous(), None


AttentionInterface.register(NAME, own_kv_sdpa)
AttentionMaskInterface.register(NAME, sdpa_mask)  # the masks SDPA gets


def shares_kv_memory(config) -> bool:
    """Whether transformers' SDPA would give this model's query heads one key-value head's memory (stride 0)."""
    config = getattr(config, "text_config", None) or config
    heads, kv_heads = getattr(config, "num_attention_heads", None), getattr(config, "num_key_value_heads", None)
    return bool(heads and kv_heads == 1 and heads > 1)


def use_own_kv_heads(model, force: bool = False) -> bool:
    """Give a CUDA model with one key-value head the attention above in place of plain SDPA (force: on any
    device, for tests); whether it did. Other models, and every model on a CPU, keep their attention."""
    config = model.config
    on_cuda = next(model.parameters()).device.type == "cuda"
    if config._attn_implementation != "sdpa" or not shares_kv_memory(config) or not (on_cuda or force):
        return False
    model.set_attn_implementation(NAME)
    return True
