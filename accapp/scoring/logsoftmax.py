"""Log-probabilities of chosen tokens from logits, accurately.

torch's float32 `log_softmax` on the CPU (MKL build) is biased, always the same way, so long
strings drift; `logits - logsumexp(logits)` in float32 is not (docs/performance.md,
tests/test_causal_scorer.py). Every scorer uses this one.
"""

from __future__ import annotations

from collections.abc import Callable

import torch


def target_logprobs(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """log p(targets[i] | row i) for logits (N, V) and target ids (N,) or (N, K)."""
    idx = targets if targets.dim() == 2 else targets[:, None]
    out = logits.gather(1, idx.to(logits.device)) - torch.logsumexp(logits, dim=-1, keepdim=True)
    return out if targets.dim() == 2 else out[:, 0]


def streamed_target_logprobs(hidden: torch.Tensor, project: Callable, vocab: int, rows: torch.Tensor, targets: torch.Tensor,
                             softcap: float | None = None, row_chunk: int = 512, vocab_chunk: int | None = 1024) -> torch.Tensor:
    """log softmax(logits of hidden)[rows[i], targets[i]] (float32, on the CPU), the logits made
    `vocab_chunk` vocabulary ids at a time by project(h, start, stop) (float32 logits of rows h
    for ids start..stop-1); vocab_chunk None: one product for the whole vocabulary.

    Why chunks: on a CPU the full-vocabulary projection is bound by memory, not arithmetic: the
    logits are written by the product and read again by logsumexp. Here the vocabulary streams
    through in chunks whose logits stay in cache, with an online logsumexp (docs/performance.md
    has the gain). A target's logit is read from the same product
    as its logsumexp (a separate dot product rounds differently, and for a confident token
    that difference no longer cancels: twice the error against the float64 baseline).
    Why rows: a token tree's shared node predicts every child that follows it; each hidden row
    is projected once for all the targets it predicts.
    """
    dev = hidden.device
    rows, targets = rows.to(dev), targets.to(dev)
    n, vocab_chunk = hidden.shape[0], vocab_chunk or vocab
    lse = torch.empty(n, dtype=torch.float32, device=dev)
    chosen = torch.empty(rows.shape[0], dtype=torch.float32, device=dev)
    # Pairs sorted by (row chunk, vocabulary chunk): each product's pairs are one slice.
    n_vchunks = -(-vocab // vocab_chunk)
    key = (rows // row_chunk) * n_vchunks + targets // vocab_chunk
    order = torch.argsort(key)
    key = key[order]
    for i in range(0, n, row_chunk):
        h = hidden[i : i + row_chunk]
        top = torch.full((h.shape[0],), -torch.inf, device=dev)
        total = torch.zeros(h.shape[0], device=dev)
        for j in range(0, vocab, vocab_chunk):
            logits = project(h, j, j + vocab_chunk)
            if softcap:
                logits = torch.tanh(logits / softcap) * softcap
            k = (i // row_chunk) * n_vchunks + j // vocab_chunk
            lo, hi = torch.searchsorted(key, torch.tensor([k, k + 1], device=dev)).tolist()
            if hi > lo:
                sel = order[lo:hi]
                chosen[sel] = logits[rows[sel] - i, targets[sel] - j]
            new_top = torch.maximum(top, logits.amax(-1))
            total = total * torch.exp(top - new_top) + logits.sub_(new_top[:, None]).exp_().sum(-1)
            top = new_top
        lse[i : i + row_chunk] = top + torch.log(total)
    return (chosen - lse[rows]).cpu()
