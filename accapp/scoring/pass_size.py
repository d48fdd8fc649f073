"""How much a forward pass takes on a GPU, from the memory free on it (on the CPU: DEFAULT_BATCH, measured).

A pass's activations are transient, layer by layer: per token, the residual stream and its
normed copies, q/k/v and the attention output (about 8 x hidden), the MLP's gate, up and
product (about 4 x intermediate), and, where SDPA falls back to its plain kernel under a packed
mask, one row's attention scores (heads x row tokens, float32). A pass gets a share of the free
memory (PASS_SHARE), leaving the rest to the template KV caches, the vocabulary projection and
other visitors' passes; past MAX_PASS_TOKENS a pass gains little (docs/gpu.md).
"""

from __future__ import annotations

from dataclasses import dataclass

# Where free memory does not decide (the CPU; a masked LM anywhere): sequences one forward pass takes
# (a causal LM's strings, a masked LM's masked copies: the scorers' batch_size, measured, docs/performance.md)
# and hidden-state rows one vocabulary projection takes (head rows).
DEFAULT_BATCH = 64
DEFAULT_HEAD_ROWS = 512
PASS_SHARE = 0.3  # of the free GPU memory, for one pass's activations
HEAD_SHARE = 0.1  # of the free GPU memory, for one chunk of full-vocabulary logits
MIN_PASS_TOKENS, MAX_PASS_TOKENS = 2_048, 65_536
MIN_HEAD_ROWS, MAX_HEAD_ROWS = 64, 8_192


@dataclass(frozen=True)
class PassSize:
    """Strings a pass (batch_size, with pass_tokens_per_string tokens each) and rows a
    vocabulary projection (head_rows), with the free memory they were chosen from."""

    batch_size: int
    head_rows: int
    free_bytes: int
    bytes_per_token: int


def bytes_per_token(config, value_bytes: int, row_tokens: int) -> int:
    """Activation bytes one token takes at the peak of a layer's forward pass (see the module doc)."""
    text = getattr(config, "text_config", None) or config
    hidden = int(getattr(text, "hidden_size"))
    inter = int(getattr(text, "intermediate_size", 4 * hidden) or 4 * hidden)
    heads = int(getattr(text, "num_attention_heads", 1) or 1)
    return value_bytes * (8 * hidden + 4 * inter) + 4 * heads * row_tokens


def choose(free_bytes: int, per_token: int, vocab: int, tokens_per_string: int) -> PassSize:
    """Pure: the pass and projection sizes that fit the free memory."""
    tokens = int(PASS_SHARE * free_bytes // max(1, per_token))
    tokens = max(MIN_PASS_TOKENS, min(MAX_PASS_TOKENS, tokens))
    # A projection chunk holds its logits and their exponentials, float32 (3 copies at most).
    rows = int(HEAD_SHARE * free_bytes // max(1, 3 * 4 * vocab))
    rows = max(MIN_HEAD_ROWS, min(MAX_HEAD_ROWS, rows))
    return PassSize(max(1, tokens // tokens_per_string), rows, int(free_bytes), int(per_token))


def for_cuda(model, vocab: int, tokens_per_string: int, row_tokens: int, device=None) -> PassSize:
    """The sizes for a model on a CUDA device, from the memory free there now."""
    import torch

    free, _total = torch.cuda.mem_get_info(device)
    value_bytes = 2 if getattr(model, "dtype", None) in (torch.bfloat16, torch.float16) else 4
    return choose(free, bytes_per_token(model.config, value_bytes, row_tokens), vocab, tokens_per_string)
