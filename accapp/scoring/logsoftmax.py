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
BLOCK = 64  # a span's top-k reads the maxima of blocks of this many ids first (_StreamedTopK)


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
    slot with no candidate has log-prob -inf and id -1. The rows' logits are kept a span of
    TOPK_SPAN ids at a time (_StreamedTopK), and each span's candidates merged once at the end: no second
    projection, and no (N, V) logits kept.
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
    bias = None  # 0 inside each mask, -inf outside (the in-mask top-k's), where rows have masks
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
        tops = None
        if tloc is not None and len(tloc):
            tops = _StreamedTopK(tloc, h.shape[0], None if bias is None else mask_of[i + tloc], bias, topk, vocab_chunk)
        for j in range(0, vocab, vocab_chunk):
            logits = project(h, j, j + vocab_chunk)
            if softcap:
                logits = torch.tanh(logits / softcap) * softcap
            if tops is not None:
                tops.add(logits, j)  # a copy: the in-place exp below
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
        if tops is not None:
            # In float64: the logit minus the row's largest, then minus log of the summed exponentials.
            # (A float32 logsumexp of ~30 nats is only good to its last bit, 2e-6.)
            row_top, row_log_total = top[tloc].double()[:, None], torch.log(total[tloc].double())[:, None]
            for (vals, ids), name in zip(tops.result(), ("topk", "word_topk")):
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
    """(inside, bias) of a (K, V) bool masks table: 1.0 / 0.0 in its masks, and 0 / -inf. A bool multiply
    or fill on the CPU is much slower than a float one (docs/performance.md)."""
    global _last_float_masks
    ref, tables = _last_float_masks
    if ref is not None and ref() is masks:
        return tables
    inside = masks.to(torch.float32)
    bias = torch.zeros_like(inside).masked_fill_(~masks, -torch.inf)
    _last_float_masks = (weakref.ref(masks), (inside, bias))
    return inside, bias


class _StreamedTopK:
    """The k most probable ids of some rows, every id and those inside each row's mask, as the vocabulary
    streams through in chunks. Each chunk's logits of the rows are copied into a span buffer (chunk-major:
    a chunk is one contiguous copy); a full span is read through the maxima of its BLOCK-id blocks (the k
    largest values lie in the k blocks with the largest maxima, so a top-k reads k blocks, not the span);
    the spans' candidates are merged once at the end. Rows are held in order of their mask, so that a
    mask's -inf outside it is one broadcast add per mask and span. A chunk of another width (the
    vocabulary's last, or one not a multiple of BLOCK) takes a plain top-k."""

    def __init__(self, rows: torch.Tensor, n_rows: int, mask_of: torch.Tensor | None, bias: torch.Tensor | None,
                 k: int, chunk: int) -> None:
        self.k, self.chunk, self.bias = k, chunk, bias
        self.groups: list[tuple[int, int, int]] = []  # (mask, first row, end row) in the held order
        self.unorder = None
        if mask_of is not None:
            order = torch.argsort(mask_of, stable=True)
            rows, kinds = rows[order], mask_of[order]
            self.unorder = torch.argsort(order)
            values, counts = torch.unique_consecutive(kinds, return_counts=True)
            ends = counts.cumsum(0).tolist()
            self.groups = [(m, e - c, e) for m, c, e in zip(values.tolist(), counts.tolist(), ends) if m >= 0]
        self.rows = rows
        self.identity = len(rows) == n_rows and bool((rows == torch.arange(n_rows, device=rows.device)).all())
        self.per_span = max(1, TOPK_SPAN // chunk) if chunk % BLOCK == 0 else 0  # chunks a span buffer holds
        self.buffer: torch.Tensor | None = None
        self.filled, self.start = 0, 0
        self.candidates: tuple[list, list] = ([], [])  # every id, in-mask ids: (values, ids) of each span

    def add(self, logits: torch.Tensor, start: int) -> None:
        """The logits (rows of the row chunk, ids start..) of one chunk."""
        width = logits.shape[1]
        if not self.per_span or width != self.chunk:
            self.flush()
            part = logits[self.rows] if not self.identity else logits.clone()
            self._take_plain(part, start)
            return
        if self.buffer is None:
            self.buffer = torch.empty(self.per_span, len(self.rows), width, dtype=logits.dtype, device=logits.device)
        if self.filled == 0:
            self.start = start
        slot = self.buffer[self.filled]
        if self.identity:
            slot.copy_(logits)
        else:
            torch.index_select(logits, 0, self.rows, out=slot)
        self.filled += 1
        if self.filled == self.per_span:
            self.flush()

    def flush(self) -> None:
        """The span so far: its candidates, every id and then in-mask."""
        if not self.filled:
            return
        span = self.buffer[: self.filled]
        self._take_blocks(span, 0)
        if self.groups:
            ids = slice(self.start, self.start + self.filled * self.chunk)
            for mask, a, b in self.groups:
                span[:, a:b] += self.bias[mask, ids].view(self.filled, 1, self.chunk)
        self._take_blocks(span, 1)
        self.filled = 0

    def _take_blocks(self, span: torch.Tensor, which: int) -> None:
        chunks, m, width = span.shape
        per_chunk = width // BLOCK
        blocks = span.view(chunks, m, per_chunk, BLOCK)
        maxima = blocks.amax(-1).permute(1, 0, 2).reshape(m, chunks * per_chunk)
        kb = min(self.k, maxima.shape[1])
        best = maxima.topk(kb, dim=-1).indices  # (m, kb): a block's number in the span, chunk-major
        rows = torch.arange(m, device=span.device)[:, None].expand(m, kb)
        values = blocks[best // per_chunk, rows, best % per_chunk].reshape(m, kb * BLOCK)
        vals, at = values.topk(min(self.k, values.shape[1]), dim=-1)
        block = best.gather(1, at // BLOCK)
        ids = self.start + (block // per_chunk) * width + (block % per_chunk) * BLOCK + at % BLOCK
        self.candidates[which].append((vals, ids))

    def _take_plain(self, logits: torch.Tensor, start: int) -> None:
        """A chunk's candidates by plain top-k: logits, the rows' own copy in the held order."""
        vals, ids = logits.topk(min(self.k, logits.shape[1]), dim=-1)
        self.candidates[0].append((vals, ids + start))
        for mask, a, b in self.groups:
            logits[a:b] += self.bias[mask, start : start + logits.shape[1]]
        vals, ids = logits.topk(min(self.k, logits.shape[1]), dim=-1)
        self.candidates[1].append((vals, ids + start))

    def result(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """[(values, ids) of every id, of in-mask ids], (M, k) each in the rows' order."""
        self.flush()
        out = [_merged(c, self.k) for c in self.candidates]
        if self.unorder is not None:
            out = [(v[self.unorder], i[self.unorder]) for v, i in out]
        return out


def _merged(found: list, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The k best of every chunk's candidates: (values, ids), -inf and -1 where fewer than k are finite."""
    vals, ids = torch.cat([v for v, _ in found], dim=1), torch.cat([i for _, i in found], dim=1)
    if vals.shape[1] < k:  # a vocabulary smaller than k
        pad = k - vals.shape[1]
        vals = torch.cat([vals, vals.new_full((vals.shape[0], pad), -torch.inf)], dim=1)
        ids = torch.cat([ids, ids.new_full((ids.shape[0], pad), -1)], dim=1)
    top, at = vals.topk(k, dim=-1)
    return top, ids.gather(1, at)
