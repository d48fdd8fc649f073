"""Causal-LM scorer: per-token log-probs of token sequences, batched, prefix-shared.

Every sequence starts with exactly one start token (see models/registry.json). A batch
whose sequences share a token prefix (a template) computes that prefix once and reuses
its KV cache for every sequence in the batch. Log-softmax is always taken in float32.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import torch

from accapp.models.loading import LoadedModel

# Below this many shared tokens a separate prefix pass costs more than it saves.
MIN_SHARED_PREFIX = 4


@dataclass(frozen=True)
class Encoded:
    """A string tokenized for scoring (no start token)."""

    text: str
    ids: tuple[int, ...]
    offsets: tuple[tuple[int, int], ...]


def common_prefix_len(seqs: list[tuple[int, ...]]) -> int:
    if not seqs:
        return 0
    first = seqs[0]
    n = min(len(s) for s in seqs)
    for i in range(n):
        t = first[i]
        for s in seqs:
            if s[i] != t:
                return i
    return n


class CausalScorer:
    def __init__(
        self,
        lm: LoadedModel,
        batch_size: int = 32,
        share_prefix: bool = True,
        vocab_chunk: int = 256,
        prefix_cache_size: int = 128,
    ) -> None:
        self.prefix_cache_size = prefix_cache_size
        self.lm = lm
        self.model = lm.model
        self.tokenizer = lm.tokenizer
        self.start_id = lm.start_id
        self.batch_size = batch_size
        self.share_prefix = share_prefix
        self.vocab_chunk = vocab_chunk
        self._encode_cache: dict[str, Encoded] = {}
        self._prefix_cache: OrderedDict = OrderedDict()
        self._decoder = self.model.base_model
        self._head = self.model.get_output_embeddings()
        self._softcap = getattr(self.model.config, "final_logit_softcapping", None)
        self.device = next(self.model.parameters()).device
        # Work counters for the benchmark's FLOP/s figure: tokens through the decoder and
        # rows through the vocabulary projection.
        self.stats = {"decoder_tokens": 0, "head_rows": 0}

    # ---- tokenization -------------------------------------------------------------
    def encode(self, text: str) -> Encoded:
        """Tokens of `text` with their character offsets; special tokens in the text are parsed."""
        hit = self._encode_cache.get(text)
        if hit is None:
            enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
            hit = Encoded(text, tuple(enc["input_ids"]), tuple(map(tuple, enc["offset_mapping"])))
            if len(self._encode_cache) > 200_000:
                self._encode_cache.clear()
            self._encode_cache[text] = hit
        return hit

    def with_start(self, ids: tuple[int, ...]) -> tuple[int, ...]:
        """Prepend the start token unless the sequence already begins with it (chat templates)."""
        if ids and ids[0] == self.start_id:
            return tuple(ids)
        return (self.start_id, *ids)

    # ---- model pieces --------------------------------------------------------------
    def _logprobs_of(self, hidden: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """log p(target | position) for each row of hidden (N, H); float32, chunked over rows."""
        out = torch.empty(hidden.shape[0], dtype=torch.float32)
        self.stats["head_rows"] += hidden.shape[0]
        for i in range(0, hidden.shape[0], self.vocab_chunk):
            logits = self._head(hidden[i : i + self.vocab_chunk]).float()
            if self._softcap:
                logits = torch.tanh(logits / self._softcap) * self._softcap
            lse = torch.logsumexp(logits, dim=-1)
            tgt = logits.gather(1, targets[i : i + self.vocab_chunk, None].to(logits.device))[:, 0]
            out[i : i + self.vocab_chunk] = (tgt - lse).cpu()
        return out

    def _candidate_logprobs(self, hidden: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
        """Full-vocabulary log-probs of candidate ids (N, K) at rows of hidden (N, H)."""
        self.stats["head_rows"] += hidden.shape[0]
        logits = self._head(hidden).float()
        if self._softcap:
            logits = torch.tanh(logits / self._softcap) * self._softcap
        lse = torch.logsumexp(logits, dim=-1, keepdim=True)
        return (logits.gather(1, candidates.to(logits.device)) - lse).cpu()

    def _run(self, ids: torch.Tensor, past=None):
        self.stats["decoder_tokens"] += ids.numel()
        out = self._decoder(input_ids=ids.to(self.device), past_key_values=past, use_cache=past is not None)
        return out.last_hidden_state, out.past_key_values

    def _prefix(self, prefix: tuple[int, ...]):
        """Hidden states and KV cache of a shared prefix, kept for the next batches too."""
        hit = self._prefix_cache.get(prefix)
        if hit is not None:
            self._prefix_cache.move_to_end(prefix)
            return hit
        ids = torch.tensor([prefix])
        self.stats["decoder_tokens"] += ids.numel()
        out = self._decoder(input_ids=ids.to(self.device), use_cache=True)
        hidden = out.last_hidden_state[0]
        lps = self._logprobs_of(hidden[:-1], ids[0, 1:]) if len(prefix) > 1 else torch.empty(0)
        hit = (hidden[-1:], out.past_key_values, lps)
        self._prefix_cache[prefix] = hit
        while len(self._prefix_cache) > self.prefix_cache_size:
            self._prefix_cache.popitem(last=False)
        return hit

    # ---- batched core --------------------------------------------------------------
    def _batches(self, seqs: list[tuple[int, ...]], groups: list[str] | None = None):
        """Index batches: sequences of one group (one template) together, by length within it.

        A batch never mixes groups, so its shared prefix is at least the template's, and
        similar lengths waste little padding.
        """
        groups = groups or [""] * len(seqs)
        order = sorted(range(len(seqs)), key=lambda i: (groups[i], len(seqs[i]), seqs[i]))
        batch: list[int] = []
        for i in order:
            if batch and (len(batch) == self.batch_size or groups[batch[0]] != groups[i]):
                yield batch
                batch = []
            batch.append(i)
        if batch:
            yield batch

    def _forward_batch(self, batch: list[tuple[int, ...]], limit: int | None = None):
        """Returns (shared prefix length P, prefix info, suffix hidden (B, L, H), lengths).

        Rows are right-padded: with a causal model, padding after a token never changes it,
        so no attention mask is needed.
        """
        shared = common_prefix_len(batch) if self.share_prefix else 0
        # The template's own prefix (limit) is what repeats across batches and calls: keep
        # the shared part to it, so its cached KV is found again.
        shared = min(shared, min(len(s) for s in batch) - 1, limit if limit is not None else shared)
        use_prefix = shared >= MIN_SHARED_PREFIX
        P = shared if use_prefix else 0
        suffixes = [s[P:] for s in batch]
        L = max(len(s) for s in suffixes)
        pad = self.start_id
        ids = torch.tensor([list(s) + [pad] * (L - len(s)) for s in suffixes])
        if use_prefix:
            last_hidden, cache, prefix_lps = self._prefix(batch[0][:P])
            past = copy.deepcopy(cache)
            past.batch_repeat_interleave(len(batch))
            hidden, _ = self._run(ids, past)
            return P, (last_hidden, prefix_lps), hidden, [len(s) for s in suffixes], ids
        hidden, _ = self._run(ids)
        return 0, None, hidden, [len(s) for s in suffixes], ids

    @torch.inference_mode()
    def sequence_logprobs(self, seqs: list[tuple[int, ...]], groups: list[str] | None = None, limits: list[int] | None = None) -> list[np.ndarray]:
        """For each sequence (starting with the start token), log p(seq[i] | seq[:i]) for i >= 1.

        groups: optional label per sequence (e.g. its template); only equal labels share a batch.
        limits: optional per sequence, how many leading tokens (start token included) are its
        template's and may be shared with other sequences of the group.
        """
        results: list[np.ndarray | None] = [None] * len(seqs)
        for idx in self._batches(seqs, groups):
            batch = [seqs[i] for i in idx]
            P, prefix, hidden, lengths, ids = self._forward_batch(batch, min(limits[i] for i in idx) if limits else None)
            rows, targets = [], []
            for b, n in enumerate(lengths):
                start = 1 if P == 0 else 0  # without a prefix, the first token is the start token
                if P:
                    rows.append(prefix[0])
                    rows.append(hidden[b, : n - 1])
                else:
                    rows.append(hidden[b, : n - 1])
                targets.append(ids[b, start:n] if P == 0 else ids[b, :n])
            flat = self._logprobs_of(torch.cat(rows), torch.cat(targets)).numpy()
            pos = 0
            for b, n in enumerate(lengths):
                k = n - 1 if P == 0 else n
                own = flat[pos : pos + k]
                pos += k
                if P:
                    own = np.concatenate([prefix[1].numpy(), own])
                results[idx[b]] = own.astype(np.float32)
        return results  # type: ignore[return-value]

    @torch.inference_mode()
    def next_token_logprobs(self, seqs: list[tuple[int, ...]], candidates: list[tuple[int, ...]], groups: list[str] | None = None, limits: list[int] | None = None) -> list[np.ndarray]:
        """Full-vocabulary log-probs of candidate next tokens after each whole sequence.

        The vocabulary projection runs at the answer position only. groups/limits as in
        sequence_logprobs.
        """
        results: list[np.ndarray | None] = [None] * len(seqs)
        for idx in self._batches(seqs, groups):
            batch = [seqs[i] for i in idx]
            _, _, hidden, lengths, _ = self._forward_batch(batch, min(limits[i] for i in idx) if limits else None)
            last = torch.stack([hidden[b, n - 1] for b, n in enumerate(lengths)])
            width = max(len(candidates[i]) for i in idx)
            cand = torch.tensor([list(candidates[i]) + [candidates[i][0]] * (width - len(candidates[i])) for i in idx])
            lps = self._candidate_logprobs(last, cand).numpy()
            for b, i in enumerate(idx):
                results[i] = lps[b, : len(candidates[i])].astype(np.float32)
        return results  # type: ignore[return-value]
