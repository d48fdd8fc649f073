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
                             softcap: float | None = None, row_chunk: int = 512, vocab_chunk: int | None = 1024,
                             masks: torch.Tensor | None = None, mask_of: torch.Tensor | None = None):
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
    masks (K, V) bool and mask_of (N,) (a mask per hidden row, -1: none): also returns, from the
    same products, log of the softmax mass inside and outside its mask of each such row (two
    sums, so a mass near 1 keeps its precision; -inf where there is none): the word-boundary
    masses of accapp/scoring/boundary.py without a second projection of the vocabulary.
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
    masked = masks is not None and mask_of is not None and bool((mask_of >= 0).any())
    if masked:
        masks, mask_of = masks.to(dev), mask_of.to(dev)
        mass = torch.zeros(n, 2, device=dev)  # per row: the sums inside and outside its mask
    for i in range(0, n, row_chunk):
        h = hidden[i : i + row_chunk]
        top = torch.full((h.shape[0],), -torch.inf, device=dev)
        total = torch.zeros(h.shape[0], device=dev)
        if masked:
            which = mask_of[i : i + row_chunk]
            has = (which >= 0).nonzero()[:, 0]
            part = torch.zeros(h.shape[0], 2, device=dev)
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
            scale = torch.exp(top - new_top)
            e = logits.sub_(new_top[:, None]).exp_()
            total = total * scale + e.sum(-1)
            if masked:
                inside = masks[which[has], j : j + vocab_chunk]
                eh = e[has]
                part = part * scale[:, None]
                part[has, 0] += (eh * inside).sum(-1)
                part[has, 1] += eh.masked_fill(inside, 0.0).sum(-1)
            top = new_top
        lse[i : i + row_chunk] = top + torch.log(total)
        if masked:
            mass[i : i + row_chunk] = top[:, None] + torch.log(part)
    out = (chosen - lse[rows]).cpu()
    if masks is None or mask_of is None:
        return out
    if not masked:
        return out, torch.full((n, 2), -torch.inf)
    return out, mass.cpu()
