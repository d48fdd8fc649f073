"""Log-probabilities of chosen tokens from logits, accurately.

torch's float32 `log_softmax` on the CPU (MKL build) is biased, always the same way, so long
strings drift; `logits - logsumexp(logits)` in float32 is not (docs/performance.md,
tests/test_causal_scorer.py). Every scorer uses this one.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

import torch

TOPK_SPAN = 8192  # vocabulary ids a top-k reads at once: a few top-k calls a row chunk, a copy of (rows, 8192) floats


def target_logprobs(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """log p(targets[i] | row i) for logits (N, V) and target ids (N,) or (N, K)."""
    idx = targets if targets.dim() == 2 else targets[:, None]
    out = logits.gather(1, idx.to(logits.device)) - torch.logsumexp(logits, dim=-1, keepdim=True)
    return out if targets.dim() == 2 else out[:, 0]


def streamed_target_logprobs(hidden: torch.Tensor, project: Callable, vocab: int, rows: torch.Tensor, targets: torch.Tensor,
                             softcap: float | None = None, row_chunk: int = 512, vocab_chunk: int | None = 1024,
                             masks: torch.Tensor | None = None, mask_of: torch.Tensor | None = None,
                             topk: int = 0, topk_of: torch.Tensor | None = None, extras: dict | None = None):
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
    topk > 0 and topk_of (N,) bool (the rows whose most probable next tokens are wanted): into
    extras, from the same products, "topk_logprobs" and "topk_ids", (M, topk) for the M such rows
    in row order, the rows' topk most probable ids and their log-probs (logit minus the row's
    logsumexp, as the targets', but that difference taken in float64), and "word_topk_logprobs" / "word_topk_ids", the same among the
    ids inside the row's mask (every id for a row without one: accapp/scoring/topk.py). An id
    slot with no candidate has log-prob -inf and id -1. Each chunk's top-k per row is kept and
    merged once: no second projection, and no (N, V) logits kept.
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
    want_topk = topk > 0 and topk_of is not None and bool(topk_of.any())
    if masks is not None and mask_of is not None and (masked or want_topk):
        inside_f, bias = _float_masks(masks.to(dev))
        mask_of = mask_of.to(dev)
    if masked:
        mass = torch.zeros(n, 2, device=dev)  # per row: the sums inside and outside its mask
    if want_topk:
        topk_of = topk_of.to(dev)
        found = {name: [] for name in ("topk_logprobs", "topk_ids", "word_topk_logprobs", "word_topk_ids")}
    for i in range(0, n, row_chunk):
        h = hidden[i : i + row_chunk]
        top = torch.full((h.shape[0],), -torch.inf, device=dev)
        total = torch.zeros(h.shape[0], device=dev)
        if masked:
            which = mask_of[i : i + row_chunk]
            has = (which >= 0).nonzero()[:, 0]
            part = torch.zeros(h.shape[0], 2, device=dev)
        tloc = topk_of[i : i + row_chunk].nonzero()[:, 0] if want_topk else None
        if tloc is not None and len(tloc):
            every_row = len(tloc) == h.shape[0]  # a probe's pass: every row wants its top-k
            bias_of = (bias, mask_of[i + tloc]) if masks is not None and mask_of is not None else None
            candidates = ([], [])  # every id, in-mask ids: each span's top-k (values, ids), merged once below
            span: list[torch.Tensor] = []  # the rows' logits of the chunks from span_start on (a copy)
            span_start = 0
        for j in range(0, vocab, vocab_chunk):
            logits = project(h, j, j + vocab_chunk)
            if softcap:
                logits = torch.tanh(logits / softcap) * softcap
            if tloc is not None and len(tloc):
                span.append(logits.clone() if every_row else logits[tloc])  # a copy: the in-place exp below
                if j + vocab_chunk - span_start >= TOPK_SPAN or j + vocab_chunk >= vocab:  # the span is full, or the vocabulary ends
                    _span_topk(candidates, torch.cat(span, 1) if len(span) > 1 else span[0], span_start, topk, bias_of)
                    span, span_start = [], min(j + vocab_chunk, vocab)
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
                eh = e[has]
                inside = eh * inside_f[which[has], j : j + vocab_chunk]  # exact: times 1 or 0
                part = part * scale[:, None]
                part[has, 0] += inside.sum(-1)
                part[has, 1] += (eh - inside).sum(-1)  # exact: eh - eh or eh - 0
            top = new_top
        lse[i : i + row_chunk] = top + torch.log(total)
        if tloc is not None and len(tloc):
            # In float64: the logit minus the row's largest, then minus log of the summed exponentials.
            # (A float32 logsumexp of ~30 nats is only good to its last bit, 2e-6.)
            row_top, row_log_total = top[tloc].double()[:, None], torch.log(total[tloc].double())[:, None]
            for (vals, ids), name in zip((_merged(c, topk) for c in candidates), ("topk", "word_topk")):
                ids = torch.where(torch.isfinite(vals), ids, torch.full_like(ids, -1))
                found[f"{name}_logprobs"].append(((vals.double() - row_top) - row_log_total).cpu())
                found[f"{name}_ids"].append(ids.cpu())
        if masked:
            mass[i : i + row_chunk] = top[:, None] + torch.log(part)
    out = (chosen - lse[rows]).cpu()
    if want_topk and extras is not None:
        extras.update({name: torch.cat(parts) for name, parts in found.items()})
    if masks is None or mask_of is None:
        return out
    if not masked:
        return out, torch.full((n, 2), -torch.inf)
    return out, mass.cpu()


_last_float_masks: tuple = (None, None)  # (a weak reference to a masks table, its float tables): a scorer builds its table once


def _float_masks(masks: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(inside, bias) of a (K, V) bool masks table: 1.0 / 0.0 in its masks, and 0 / -inf with a row of
    zeros appended (index -1: a row without a mask). A bool multiply or fill on the CPU is ~20x slower
    than a float one (a fill of a probe's span: 0.75 ms against 0.04 for an add, measured)."""
    global _last_float_masks
    ref, tables = _last_float_masks
    if ref is not None and ref() is masks:
        return tables
    inside = masks.to(torch.float32)
    bias = torch.cat([torch.zeros_like(inside).masked_fill_(~masks, -torch.inf), inside.new_zeros(1, inside.shape[1])])
    _last_float_masks = (weakref.ref(masks), (inside, bias))
    return inside, bias


def _span_topk(candidates: tuple[list, list], logits: torch.Tensor, offset: int, k: int, bias_of) -> None:
    """A span's top-k candidates (values, ids) per row, every id and in-mask ids, kept for one merge at
    the end. A top-k and a merge per 1,024-id chunk cost a probe 22 ms (issue 33: /probe under load).
    logits: the span's own copy (the in-mask top-k adds -inf at the ids outside each row's mask to it).
    bias_of: (_float_masks' bias, each row's mask, -1: none) or None."""
    vals, ids = logits.topk(min(k, logits.shape[1]), dim=-1)
    candidates[0].append((vals, ids + offset))
    if bias_of is not None:
        bias, which = bias_of
        logits = logits.add_(bias[which, offset : offset + logits.shape[1]])
        vals, ids = logits.topk(min(k, logits.shape[1]), dim=-1)
    candidates[1].append((vals, ids + offset))


def _merged(found: list, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The k best of every chunk's candidates: (values, ids), -inf and -1 where fewer than k are finite."""
    vals, ids = torch.cat([v for v, _ in found], dim=1), torch.cat([i for _, i in found], dim=1)
    if vals.shape[1] < k:  # a vocabulary smaller than k
        pad = k - vals.shape[1]
        vals = torch.cat([vals, vals.new_full((vals.shape[0], pad), -torch.inf)], dim=1)
        ids = torch.cat([ids, ids.new_full((ids.shape[0], pad), -1)], dim=1)
    top, at = vals.topk(k, dim=-1)
    return top, ids.gather(1, at)
