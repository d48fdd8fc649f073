"""The naive reference scorer: one plain forward pass per string (a prompt's one-token answers
all read from the pass over the prompt), no batching, no prefix sharing between strings,
full-vocabulary logits at every position it reads (a prompt's: its last, transformers'
``logits_to_keep=1``). Same requests, same numbers (within float noise) as the fast causal
scorer: used to check every optimisation and to measure its gain.
"""

from __future__ import annotations

import numpy as np
import torch

from accapp.scoring.api import BoundaryRequest, NextRequest, SeqRequest, TopKRequest, TopKResult
from accapp.scoring.boundary import context_kinds
from accapp.scoring.causal import CausalScorer


class NaiveScorer(CausalScorer):
    """Tokenizes exactly as CausalScorer (its encode, parts and answer plans); computes plainly. Its
    prompts are tokenized whole (no pieces between special tokens): the fast scorer's pieces are
    checked against it."""

    staged = False  # its own execute, string by string: not the fast scorer's stages

    def __init__(self, lm, **options) -> None:
        super().__init__(lm, **{"split_prompts": False, **options})

    @torch.inference_mode()
    def _full_logprobs(self, ids: list[int]) -> torch.Tensor:
        # float64 log-softmax: the baseline is also the reference, so no float32 rounding of its own.
        logits = self.model(torch.tensor([ids], device=self.device)).logits[0].double()
        return torch.log_softmax(logits, dim=-1).cpu()

    @torch.inference_mode()
    def _last_logits(self, ids) -> torch.Tensor:
        """The raw logits after the whole string (only its last row is projected: a prompt is read there)."""
        return self.model(torch.tensor([list(ids)], device=self.device), logits_to_keep=1).logits[0, -1].cpu()

    def _last_logprobs(self, ids) -> torch.Tensor:
        """float64 log-softmax of the next-token distribution after the whole string."""
        return torch.log_softmax(self._last_logits(ids).double(), dim=-1)

    def execute(self, requests) -> dict:
        out: dict = {}
        for r in requests:
            if isinstance(r, SeqRequest):
                encoded = self.encode_parts(r)
                seq = list(self.request_seq(r, encoded[0]))
                logp = self._full_logprobs(seq)
                lps = np.array([logp[i - 1, seq[i]].item() for i in range(1, len(seq))], dtype=np.float32)
                out[r] = self._seq_result(r, encoded, seq, lps)
            elif isinstance(r, NextRequest):
                # One pass over each prompt: every one-token answer is read from its last row (the
                # next-token distribution); a longer answer gets a pass of its own over prompt + answer.
                rows: dict[tuple, torch.Tensor] = {}  # prompt ids -> its last row (log-probs, or raw logits)
                vals = []
                for context, answer in self.answer_plan(r):
                    context = tuple(context)
                    if r.raw or len(answer) == 1:
                        if context not in rows:
                            rows[context] = self._last_logits(context) if r.raw else self._last_logprobs(context)
                        vals.append(float(rows[context][answer[0]]))  # r.raw: the authors' raw-logit ratio
                        continue
                    seq = list(context) + list(answer)
                    logp = self._full_logprobs(seq)
                    vals.append(sum(logp[i - 1, seq[i]].item() for i in range(len(context), len(seq))))
                out[r] = np.asarray(vals, dtype=np.float64)
            elif isinstance(r, BoundaryRequest):
                # log P(B) = logsumexp of the float64 log-probs of B's tokens, row by row.
                ids, offsets, _ = self.encode_parts(SeqRequest((r.text,), r.context))
                seq = list(self.with_start(self.encode(r.context).ids + tuple(ids) if r.context else tuple(ids)))
                logp = self._full_logprobs(seq)
                shift = len(seq) - len(ids)
                kinds = context_kinds(r.text, offsets)
                vals = np.zeros(len(kinds), dtype=np.float64)
                for k, kind in enumerate(kinds):
                    if kind:
                        vals[k] = torch.logsumexp(logp[k + shift - 1][self.boundary_masks()[kind]], 0).item()
                out[r] = vals
            elif isinstance(r, TopKRequest):
                # torch.topk of the float64 log-probs at every position; in B only for the word view.
                enc = self.encode(r.text)
                seq = list(self.with_start(enc.ids))
                logp = self._full_logprobs(seq)[len(seq) - len(enc.ids) - 1 :]
                vals, ids = logp.topk(r.k, dim=-1)
                in_b = logp.clone()
                for k, kind in enumerate(context_kinds(r.text, enc.offsets)):
                    if kind:
                        in_b[k, ~self.boundary_masks()[kind]] = -torch.inf
                wvals, wids = in_b.topk(r.k, dim=-1)
                wids = torch.where(torch.isfinite(wvals), wids, torch.full_like(wids, -1))
                out[r] = TopKResult(ids.numpy(), vals.numpy(), wids.numpy(), wvals.numpy())
            else:
                raise ValueError(f"the naive causal scorer cannot answer {type(r).__name__}")
        return out
