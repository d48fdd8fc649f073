"""Causal-LM scorer: per-token log-probs of token sequences, batched, prefix-shared, packed.

Under the project's convention every sequence starts with exactly one start token (see
models/registry.json); under the authors' (accapp/scoring/convention.py) a sentence gets one
only where Ide et al.'s code adds one, else its first token is context only and not scored, and
a prompt gets the special tokens the tokenizer adds by itself. The prefix
a sequence shares with its template-mates (the template text before the sentence) is run
once, and its KV cache is kept and reused by every sequence of that template, in this call
and the next. The rest of each sequence is packed (accapp/scoring/packing.py): sequences of
one template that begin alike form a token tree whose shared start runs once, and several
trees share a row of the batch; a 4-D attention mask lets each token see exactly its
prefix's cached keys, its ancestors and itself, at its own positions. Without any shared
prefix (LP alone) rows are one sequence each, right-padded, with no mask. Log-softmax is
always taken in float32, as logits minus logsumexp (see logsoftmax.py).

`execute(requests)` answers the engine (accapp.scoring.api): SeqRequests and NextRequests are
tokenized, turned into sequences with their shareable prefix lengths, and scored in one call.
BoundaryRequests (the word-probability correction, accapp/scoring/word_prob.py) and TopKRequests
(the most probable next tokens, accapp/scoring/topk.py) are answered from the pass and the
projection that score the sentence (a sentence that begins with the start token itself: a plain
pass of its own, boundary_logprobs and top_k).
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import torch
from transformers import DynamicCache

from accapp.errors import UserError
from accapp.models.loading import LoadedModel
from accapp.scoring import convention as conventions
from accapp.scoring.api import BoundaryRequest, NextRequest, SeqRequest, SeqResult, TopKRequest, TopKResult
from accapp.scoring.boundary import boundary_masks, context_kinds, surface_texts
from accapp.scoring.context import seam, shifted
from accapp.scoring.logsoftmax import streamed_target_logprobs
from accapp.scoring.packing import ROW_TOKENS, Unit, ancestor_mask, balanced_capacity, build_units, pack_rows, passes
from accapp.scoring.pass_size import DEFAULT_BATCH, DEFAULT_HEAD_ROWS
from accapp.scoring.prefilled_cache import Scratch, prefilled_cache
from accapp.scoring.tokens import SpecialSplit, common_prefix_len, encode_ids, vocabulary_id
from accapp.scoring.topk import split_top_rows, top_rows

ENCODE_CACHE_MAX = 200_000  # strings whose tokens a scorer keeps (cleared when full)
ANSWER_IDS_MAX = 1_024  # answers whose vocabulary ids a scorer keeps (cleared when full)
_BOUNDARY: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # tokenizer -> word-boundary masks; gone with it
# Memory a CPU scorer keeps from one call to the next (fresh memory costs its size in page faults on every
# call): the packed passes' past (Scratch) and the rows waiting for a projection, when under this size.
KEPT_BYTES = 384 * 2**20
MIN_WAITING_ROWS = 1_024  # rows the waiting rows' memory starts with
# The smallest pass and projection an out-of-memory retry goes down to.
MIN_BATCH, MIN_HEAD_ROWS = 1, 16
# Below this many shared tokens a separate prefix pass costs more than it saves.
MIN_SHARED_PREFIX = 4
# A pass's fixed cost in tokens' worth of work, and the vocabulary projections each pass makes (the timings
# it comes from: docs/performance.md). Padding cheaper than that joins a pass.
PASS_COST_TOKENS = 64


@dataclass(frozen=True)
class Encoded:
    """A string tokenized for scoring (no start token)."""

    text: str
    ids: tuple[int, ...]
    offsets: tuple[tuple[int, int], ...]


def similar_length(n: int, shortest: int) -> bool:
    """A row of n tokens may share a right-padded pass with rows from `shortest` tokens on (padding
    stays under ~30 %, or 3 tokens)."""
    return n <= max(1.3 * shortest, shortest + 3)


@dataclass(eq=False)
class CachedPrefix:
    """A template prefix run once: what every sequence sharing it continues from. Its own tokens'
    log-probs are projected only when a scored sequence asks for them (CausalScorer._prefix_logprobs):
    a prompt read at its answer alone (A/B, Yes/No, Hu & Levy) never needs them, and the projection
    over the vocabulary is most of a big-vocabulary model's cost per token (Gemma 3: 262,144 rows)."""

    last_hidden: torch.Tensor  # (1, H): predicts the first token after the prefix
    kv: torch.Tensor  # (layers, 2, kv heads, tokens, head dim)
    hidden: torch.Tensor | None  # (tokens, H), kept until the log-probs are made from it
    ids: torch.Tensor  # (tokens,) the prefix's ids, the start token first
    logprobs: torch.Tensor | None = None  # log p of the prefix's own tokens after the start token


class PassPlan(NamedTuple):
    """What one forward pass's hidden states are read for, made from indices alone (CausalScorer._plan_pass): on
    the pass-ahead thread for a packed pass, so the scoring thread only gathers rows once the states come."""

    scored: list  # (sequence, its own ids, its CachedPrefix or None) whose token log-probs are wanted
    prefixes: list  # the distinct CachedPrefixes of scored (their own tokens' log-probs go before the sequences')
    wanted: torch.Tensor  # per scored token, the hidden row predicting it (past the pass's rows: a prefix's last state)
    targets: torch.Tensor  # the scored tokens' ids
    extra: list[torch.Tensor]  # the prefixes' last hidden states, numbered after the pass's rows
    bounded: list[tuple[int, np.ndarray]]  # (sequence, its rows) whose word-boundary log P(B) is wanted
    kinds: list  # per bounded row, its word-boundary mask's kind
    uniq: torch.Tensor  # the distinct rows projected (wanted and bounded rows)
    inverse: torch.Tensor  # per wanted, then bounded, row: its place in uniq
    asked: list[int]  # sequences answered by their next token's candidates
    last: torch.Tensor  # per asked sequence, its last node's row
    candidates: torch.Tensor | None  # (asked, widest answer list) candidate ids, padded with each one's first
    candidate_rows: torch.Tensor | None  # per candidate (flattened), its asked sequence's row among the last rows


class Layout(NamedTuple):
    """How a call's sequences go through the decoder, made from token ids alone (CausalScorer.layout): in
    prepare_call, beside the block before, so the scoring thread starts at the passes."""

    shared: list[int]  # per sequence, its leading tokens from its template's cached prefix (_shared_lengths)
    batch_size: int  # the scorer's batch_size it was made for (after an out-of-memory retry: made again)
    owns: list | None  # packed (None: rows of one sequence each): per sequence, its own tokens after the prefix
    units: list[Unit] | None  # token trees (packing.build_units)
    groups: list | None  # per pass, its rows of units


@dataclass
class _Call:
    """One execute call between its stages (CausalScorer.prepare_call, run_call, collect_call)."""

    requests: list
    seq_reqs: list
    bnd_reqs: list
    top_reqs: list
    encoded: dict  # SeqRequest -> encode_parts
    plans: dict  # NextRequest -> answer_plan
    simple: list  # NextRequests answered at one position of a pass
    chained: list  # (NextRequest, answer index) scored as sequences
    seqs: list
    limits: list
    answers: list
    raw: list
    bounds: list
    topk: list
    n_seq: int  # sequences scored token by token (the rest: simple questions)
    layout: Layout | None  # how seqs go through the decoder
    found: dict = field(default_factory=dict)  # sequence index -> log P(B) values (score's boundary_out)
    found_top: dict = field(default_factory=dict)  # sequence index -> TopKResult (score's topk_out)
    extra: dict = field(default_factory=dict)  # boundary and top-k requests answered by passes of their own
    lps: list = field(default_factory=list)
    at: dict = field(default_factory=dict)  # a single-part sentence without a context -> its sequence index
    # set by run_call as the first pass goes to the decoder: the host's work beside it waits for this, so that it
    # never holds the interpreter while run_call makes that pass (its rows, their past)
    begun: threading.Event = field(default_factory=threading.Event)
    deferred: list = field(default_factory=list)  # (fill, log-probs) of lps left for collect_call (score's deferred)


class _Waiting:
    """Hidden rows of several passes with their targets, waiting for one vocabulary projection. The rows are
    gathered straight into one block of memory (room), so the projection takes them without a copy."""

    def __init__(self, memory: torch.Tensor | None = None) -> None:
        self.memory = memory  # (rows, H): the gathered rows first; grown when a pass's rows do not fit
        self.clear()

    def clear(self) -> None:
        self.targets: list[torch.Tensor] = []
        self.rows_of: list[torch.Tensor] = []  # per target, its row among the gathered rows
        self.parts: list[tuple[int, Callable]] = []  # (targets, what takes their log-probs), in order
        self.rows = 0

    def room(self, like: torch.Tensor, k: int) -> torch.Tensor:
        """Memory for the next k rows (like: a tensor of such rows, for their width, dtype and device)."""
        need = self.rows + k
        m = self.memory
        if m is None or m.shape[1:] != like.shape[1:] or m.dtype != like.dtype or m.device != like.device:
            m = None
        if m is None or m.shape[0] < need:
            grown = like.new_empty((max(need, 2 * m.shape[0] if m is not None else MIN_WAITING_ROWS),) + like.shape[1:])
            if self.rows:
                grown[: self.rows] = self.memory[: self.rows]
            self.memory = m = grown
        return m[self.rows : need]

    def add(self, k: int, targets: torch.Tensor, rows_of: torch.Tensor, fill: Callable) -> None:
        """The k rows just written into room(), their targets, and per target its row among them."""
        self.targets.append(targets)
        self.rows_of.append(rows_of + self.rows)
        self.parts.append((len(targets), fill))
        self.rows += k

    def joined(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return self.memory[: self.rows], torch.cat(self.targets), torch.cat(self.rows_of)


def rows_among(flat: torch.Tensor, extra: list[torch.Tensor], rows: torch.Tensor,
               out: torch.Tensor | None = None) -> torch.Tensor:
    """torch.cat([flat, *extra])[rows] for rows in ascending order, without copying all of flat first (into
    out where given)."""
    if out is None:
        out = flat.new_empty((len(rows), flat.shape[1]))
    if not extra:
        return torch.index_select(flat, 0, rows, out=out)
    n = flat.shape[0]
    k = int(torch.searchsorted(rows, n))  # rows[:k] in flat, the rest among the extra rows
    torch.index_select(flat, 0, rows[:k], out=out[:k])  # each row copied once, straight into place
    torch.index_select(torch.cat(extra), 0, rows[k:] - n, out=out[k:])
    return out


def _fill_answers(asked: list[int], answers: list, raw: list, results: list, flat_lp: np.ndarray) -> None:
    """The candidate answers' log-probs at each asked sequence's end (one padded row per asked
    sequence, in order), for those not read as raw logits."""
    rows = flat_lp.reshape(len(asked), -1)
    for b, i in enumerate(asked):
        if not raw[i]:
            results[i] = rows[b, : len(answers[i])].astype(np.float32)


def disjoint_offsets(offsets) -> tuple[tuple[int, int], ...]:
    """Character spans that never overlap, so the tokens' texts join back into the string.

    Byte-level BPE splits one character (an emoji, a Hebrew letter, a combining accent) into
    several tokens that all report that character's span; the first keeps it, the others get
    an empty span (shown as a continuation), instead of repeating the character.
    """
    out, end = [], 0
    for a, b in offsets:
        a = max(a, end)
        b = max(b, a)
        out.append((a, b))
        end = b
    return tuple(out)


class CausalScorer:
    kind = "causal"

    def __init__(
        self,
        lm: LoadedModel,
        batch_size: int | None = None,  # strings a pass; None: pass_size.DEFAULT_BATCH on the CPU, from free memory on a GPU
        share_prefix: bool = True,
        head_chunk_rows: int | None = None,  # rows a vocabulary projection; None: DEFAULT_HEAD_ROWS, on a GPU from free memory
        prefix_cache_size: int = 128,
        row_tokens: int = ROW_TOKENS,
        pass_tokens_per_string: int = 32,
        pack: bool = True,
        convention=None,  # a Convention or its id; None: the project's default
        split_prompts: bool = True,  # prompts tokenized by their pieces between special tokens (ids_many)
    ) -> None:
        self.convention = conventions.get(convention)
        self.pack = pack
        # Packed passes carry batch_size x pass_tokens_per_string tokens (a batch of typical strings).
        self.row_tokens = row_tokens
        self.pass_tokens_per_string = pass_tokens_per_string
        self.prefix_cache_size = prefix_cache_size
        self.lm = lm
        self.model = lm.model
        self.tokenizer = lm.tokenizer
        self.start_id = lm.start_id
        self.share_prefix = share_prefix
        self._encode_cache: dict[str, Encoded] = {}
        self._ids_cache: dict[str, tuple[int, ...]] = {}  # prompts' ids (ids_of)
        self._answer_ids: dict[str, int] = {}  # answers' vocabulary ids (_vocabulary_id), ANSWER_IDS_MAX of them
        # One tokenization at a time, its caches filled (or cleared when full) and read under it: the next block's
        # strings may be tokenized on another thread while this scorer runs a call (Engine.score_blocks).
        self._tokenizing = threading.Lock()
        # Prompts tokenized piece by piece between special tokens, where that is exact (tokens.SpecialSplit)
        self._special_split = SpecialSplit.of(self.tokenizer) if split_prompts else None
        self._prefix_cache: OrderedDict = OrderedDict()
        self._kept: dict[str, object] = {}  # memory kept between calls on a CPU (_keep), KEPT_BYTES at most
        self._decoder = self.model.base_model
        self._head = self.model.get_output_embeddings()
        self._softcap = getattr(self.model.config, "final_logit_softcapping", None)
        # A plain float32 head on the CPU streams its vocabulary in chunks (see
        # streamed_target_logprobs); elsewhere (a GPU, half precision, 4-bit) the head module
        # itself gives all the logits in one product.
        w = getattr(self._head, "weight", None)
        plain = isinstance(self._head, torch.nn.Linear) and self._head.bias is None
        self._vocab = getattr(self._head, "out_features", None) or self.model.config.vocab_size
        if plain and w.dtype == torch.float32 and w.device.type == "cpu":
            self._project, self._vocab_chunk = (lambda h, start, stop: torch.nn.functional.linear(h, w[start:stop])), 1024
        else:
            self._project, self._vocab_chunk = (lambda h, start, stop: self._head(h).float()), None
        self.device = next(self.model.parameters()).device
        self.memory_retries = 0  # passes halved after an out-of-memory error (_score_within_memory)
        self.pass_size = None  # a GPU's choice (accapp/scoring/pass_size.py), kept for provenance and benchmarks
        if self.device.type == "cuda" and (batch_size is None or head_chunk_rows is None):
            from accapp.scoring.pass_size import for_cuda

            self.pass_size = for_cuda(self.model, self._vocab, pass_tokens_per_string, row_tokens, self.device)
        self.batch_size = batch_size or (self.pass_size.batch_size if self.pass_size else DEFAULT_BATCH)
        self.head_chunk_rows = head_chunk_rows or (self.pass_size.head_rows if self.pass_size else DEFAULT_HEAD_ROWS)
        # Work counters for the benchmark's FLOP/s figure: tokens through the decoder and
        # rows through the vocabulary projection.
        self.stats = {"decoder_tokens": 0, "head_rows": 0}
        self._boundary: dict | None = None  # the word-boundary masks, built on first use
        self._masks: tuple | None = None  # the same, stacked for streamed_target_logprobs
        self.sentence_start = self.convention.sentence_start(conventions.family_name(lm.spec))
        # What tokenizer(text) puts before a text's own tokens (the authors' prompts get exactly this).
        full = self.tokenizer("a", add_special_tokens=True)["input_ids"]
        plain = self.tokenizer("a", add_special_tokens=False)["input_ids"]
        self.auto_prefix = tuple(full[: len(full) - len(plain)]) if full[len(full) - len(plain):] == plain else ()

    # ---- tokenization -------------------------------------------------------------
    def encode(self, text: str) -> Encoded:
        """Tokens of `text` with their character offsets; special tokens in the text are parsed."""
        hit = self._encode_cache.get(text)
        if hit is None:
            with self._tokenizing:
                self._encode_missing([text])
                hit = self._encode_cache[text]
        return hit

    def encode_many(self, texts) -> None:
        """Tokenize the texts the cache lacks (with offsets) in one batched call of the tokenizer:
        the same tokens as one call each (a fast tokenizer encodes a list item by item), at a
        fraction of the calls' overhead."""
        with self._tokenizing:
            self._encode_missing(texts)

    def _encode_missing(self, texts) -> None:
        missing = [t for t in dict.fromkeys(texts) if t not in self._encode_cache]
        if not missing:
            return
        if len(self._encode_cache) + len(missing) > ENCODE_CACHE_MAX:
            self._encode_cache.clear()
        enc = self.tokenizer(missing, add_special_tokens=False, return_offsets_mapping=True)
        for text, ids, offsets in zip(missing, enc["input_ids"], enc["offset_mapping"]):
            self._encode_cache[text] = Encoded(text, tuple(ids), disjoint_offsets(offsets))

    def ids_of(self, text: str) -> tuple[int, ...]:
        """A prompt's token ids (no offsets: a prompt is read at its answer, never shown token by token)."""
        hit = self._ids_cache.get(text)
        if hit is None:
            enc = self._encode_cache.get(text)
            if enc is not None:
                return enc.ids
            with self._tokenizing:
                self._ids_missing([text])
                hit = self._ids_cache.get(text)
                if hit is None:  # tokenized with its offsets meanwhile
                    hit = self._encode_cache[text].ids
        return hit

    def ids_many(self, texts) -> None:
        """Token ids of the prompts the cache lacks, batched; a prompt with special tokens (a chat
        template's) by its pieces between them (tokens.SpecialSplit): the system message and the
        turn markers are the same in every prompt, so only the user's message is tokenized anew."""
        with self._tokenizing:
            self._ids_missing(texts)

    def _ids_missing(self, texts) -> None:
        missing = [t for t in dict.fromkeys(texts) if t not in self._ids_cache and t not in self._encode_cache]
        if not missing:
            return
        if len(self._ids_cache) + len(missing) > ENCODE_CACHE_MAX:
            self._ids_cache.clear()
        split = self._special_split
        if split is None:
            for text, ids in zip(missing, encode_ids(self.tokenizer, missing)):
                self._ids_cache[text] = tuple(ids)
            return
        for text, ids in zip(missing, split.encode(missing)):
            self._ids_cache[text] = ids

    def with_start(self, ids: tuple[int, ...]) -> tuple[int, ...]:
        """Prepend the start token unless the sequence already begins with it (chat templates)."""
        if ids and ids[0] == self.start_id:
            return tuple(ids)
        return (self.start_id, *ids)

    def seq_start(self, ids: tuple[int, ...]) -> tuple[int, ...]:
        """A scored sentence as fed: after the start token, or (the authors' convention for most
        families) as it is, its first token then context only."""
        return self.with_start(ids) if self.sentence_start else tuple(ids)

    def prompt_start(self, ids: tuple[int, ...]) -> tuple[int, ...]:
        """A prompt as fed: after the start token, or (the authors' convention) after what the
        tokenizer adds by itself (tokenizer(prompt) with its default special tokens)."""
        if self.convention.start_token == "always":
            return self.with_start(ids)
        return self.auto_prefix + tuple(ids) if self.auto_prefix else tuple(ids)

    # ---- model pieces --------------------------------------------------------------
    def _logprobs_of(self, hidden: torch.Tensor, targets: torch.Tensor, rows: torch.Tensor | None = None,
                     mask_of: torch.Tensor | None = None, topk: int = 0, topk_of: torch.Tensor | None = None,
                     extras: dict | None = None):
        """log p(targets[i] | hidden[rows[i]]) (rows default: i), float32; see streamed_target_logprobs.
        mask_of (a word-boundary mask index per hidden row, -1: none, see _mask_table): also each
        row's log-mass inside and outside its mask, (N, 2), from the same projection. topk, topk_of
        (N,) bool, extras: the rows' most probable next tokens into extras (streamed_target_logprobs)."""
        self.stats["head_rows"] += hidden.shape[0]
        if rows is None:
            rows = torch.arange(hidden.shape[0])
        masks = self._mask_table()[0] if mask_of is not None else None
        out = streamed_target_logprobs(hidden, self._project, self._vocab, rows, targets, self._softcap,
                                       self.head_chunk_rows, self._vocab_chunk, masks, mask_of, topk, topk_of, extras)
        self._check_finite(out[0] if isinstance(out, tuple) else out)
        return out

    def _candidate_logits(self, hidden: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
        """Raw logits (N, K) of candidate ids at rows of hidden (soft-capped where the model caps)."""
        logits = self._head(hidden).float().gather(1, candidates)
        if self._softcap:
            logits = torch.tanh(logits / self._softcap) * self._softcap
        self._check_finite(logits)
        return logits.cpu()

    def _prefix(self, prefix: tuple[int, ...]):
        """Last hidden state, per-layer KV and token log-probs of a template prefix.

        Kept in an LRU cache: the same templates come back in every batch and every probe.
        """
        hit = self._prefix_cache.get(prefix)
        if hit is not None:
            self._prefix_cache.move_to_end(prefix)
            return hit
        self._run_prefixes([prefix])
        return self._prefix_cache[prefix]

    def _prefetch_prefixes(self, keys) -> None:
        """Run the template prefixes a call needs and the cache lacks a few passes at a time, not one
        pass each: a cold probe of every method needs 26, and one short row a pass ran the decoder at
        half its speed. Rows of similar length are right-padded together (a causal model never lets a
        token see the padding after it), as _batches groups sequences."""
        todo = sorted({k for k in keys if k and k not in self._prefix_cache}, key=lambda k: (len(k), k))
        todo = todo[-self.prefix_cache_size:]  # no more than the cache keeps
        group: list[tuple[int, ...]] = []
        for key in todo:
            if group and (len(group) == self.batch_size or not similar_length(len(key), len(group[0]))):
                self._run_prefixes(group)
                group = []
            group.append(key)
        if group:
            self._run_prefixes(group)

    def _run_prefixes(self, prefixes: list[tuple[int, ...]]) -> None:
        """One pass over prefixes (right-padded to the longest), each cached with its own KV and states."""
        width = max(len(p) for p in prefixes)
        ids = torch.tensor([list(p) + [self.start_id] * (width - len(p)) for p in prefixes])
        self.stats["decoder_tokens"] += ids.numel()
        out = self._decoder(input_ids=ids.to(self.device), use_cache=True)
        layers = out.past_key_values.layers
        for b, prefix in enumerate(prefixes):
            n = len(prefix)
            hidden = out.last_hidden_state[b, :n].clone()  # a copy: the batch's tensors can go
            # KV stacked (layers, 2, kv heads, tokens, head dim): one copy per prefix into a packed row.
            kv = torch.stack([torch.stack([layer.keys[b, :, :n], layer.values[b, :, :n]]) for layer in layers])
            # last_hidden a copy of its own: the states can go once the log-probs are made
            self._prefix_cache[prefix] = CachedPrefix(hidden[-1:].clone(), kv, hidden, ids[b, :n])
            while len(self._prefix_cache) > self.prefix_cache_size:
                self._prefix_cache.popitem(last=False)

    def _prefix_logprobs(self, pr: CachedPrefix) -> torch.Tensor:
        """The prefix's own tokens' log-probs, projected on first need (then its hidden states go)."""
        if pr.logprobs is None:
            pr.logprobs = self._logprobs_of(pr.hidden[:-1], pr.ids[1:]) if len(pr.ids) > 1 else torch.empty(0)
            pr.hidden = None
        return pr.logprobs

    # ---- batched core --------------------------------------------------------------
    def _shared_lengths(self, seqs: list[tuple[int, ...]], limits: list[int] | None) -> list[int]:
        """Per sequence, how many leading tokens come from its template's cached prefix.

        limits: per sequence, how many leading tokens (start token included) are its template's;
        a sequence always keeps at least one token of its own.
        """
        if not self.share_prefix or not limits:
            return [0] * len(seqs)
        window = getattr(self.model.config, "sliding_window", None)
        out = []
        for s, lim in zip(seqs, limits):
            p = min(lim, len(s) - 1)
            if p < MIN_SHARED_PREFIX or (window and len(s) >= window):
                p = 0  # too short to pay off, or a sliding window would drop cached keys
            out.append(p)
        return out

    def _batches(self, seqs: list[tuple[int, ...]], shared: list[int]):
        """Index batches of similar own length (length buckets: padding stays under ~30%, or under
        PASS_COST_TOKENS padded tokens, which cost less than another pass); templates may mix in a batch."""
        own = [len(s) - p for s, p in zip(seqs, shared)]
        order = sorted(range(len(seqs)), key=lambda i: (own[i], shared[i], seqs[i]))
        batch: list[int] = []
        tokens = 0
        for i in order:
            similar = similar_length(own[i], own[batch[0]]) if batch else True
            cheap = (len(batch) + 1) * own[i] - tokens - own[i] <= PASS_COST_TOKENS
            if batch and (len(batch) == self.batch_size or not (similar or cheap)):
                yield batch
                batch, tokens = [], 0
            batch.append(i)
            tokens += own[i]
        if batch:
            yield batch

    def _forward_batch(self, batch: list[tuple[int, ...]], shared: list[int]):
        """Hidden states of each row's own tokens, (B, L, H), with its prefix's KV as the past.

        Own tokens are right-padded; prefixes of different lengths are left-padded in the KV
        cache and masked out; positions are given explicitly, so every row sees exactly its
        own sequence.
        """
        own = [s[p:] for s, p in zip(batch, shared)]
        lengths = [len(o) for o in own]
        L = max(lengths)
        ids = torch.tensor([list(o) + [self.start_id] * (L - len(o)) for o in own])
        self.stats["decoder_tokens"] += ids.numel()
        pmax = max(shared)
        if pmax == 0:
            # Right padding after a token never changes it in a causal model: no mask needed.
            out = self._decoder(input_ids=ids.to(self.device), use_cache=False)
            return out.last_hidden_state, lengths, ids, [None] * len(batch)
        prefixes = [self._prefix(s[:p]) if p else None for s, p in zip(batch, shared)]
        n_layers = len(next(pr for pr in prefixes if pr is not None).kv)
        data = []
        for layer in range(n_layers):
            ks, vs = [], []
            for pr, p in zip(prefixes, shared):
                if pr is None:
                    ref = next(x for x in prefixes if x is not None).kv[layer][0][None]
                    k = v = ref.new_zeros(ref.shape[0], ref.shape[1], pmax, ref.shape[3])
                else:
                    k, v = pr.kv[layer][:, None]
                    if p < pmax:
                        pad = k.new_zeros(k.shape[0], k.shape[1], pmax - p, k.shape[3])
                        k, v = torch.cat([pad, k], dim=2), torch.cat([pad, v], dim=2)
                ks.append(k)
                vs.append(v)
            data.append((torch.cat(ks), torch.cat(vs)))
        # No config: a sliding layer's cache would keep only its window's keys, but rows padded to
        # the widest prefix may hold more; the mask decides what each token sees (every string is
        # shorter than the window, see _shared_lengths).
        past = DynamicCache(ddp_cache_data=data)
        mask = torch.zeros(len(batch), pmax + L, dtype=torch.long)
        for b, (p, n) in enumerate(zip(shared, lengths)):
            mask[b, pmax - p : pmax + n] = 1
        positions = torch.tensor(shared)[:, None] + torch.arange(L)[None, :]
        out = self._decoder(
            input_ids=ids.to(self.device), past_key_values=past, attention_mask=mask.to(self.device),
            position_ids=positions.to(self.device), use_cache=True,
        )
        return out.last_hidden_state, lengths, ids, prefixes

    def _packable(self, seqs: list[tuple[int, ...]], shared: list[int]) -> bool:
        """Pack several sequences a row when prefixes are shared (a mask is needed anyway) and
        no sequence reaches a sliding window (the 4-D mask replaces the model's own)."""
        window = getattr(self.model.config, "sliding_window", None)
        return self.pack and any(shared) and not (window and max(len(s) for s in seqs) >= window)

    def _packed_inputs(self, units: list[Unit], rows: list[list[int]], prefixes: dict, past_memory: Callable):
        """The decoder's inputs for token trees packed several to a row: each node sees its template
        prefix's cached KV (a unit's key is its prefix's tokens; prefixes maps it to its CachedPrefix), its
        ancestors and itself (a 4-D mask), at its own position. past_memory(like, B, P): Scratch.buffer.

        Returns the decoder's keyword arguments and, per unit, (row, offset of its first node).
        """
        cols: list[dict] = []  # per row: prefix -> first column of its KV in the row's past
        widths: list[int] = []
        for row in rows:
            at: dict = {}
            width = 0
            for u in row:
                key = units[u].key
                if key and key not in at:
                    at[key] = width
                    width += len(key)
            cols.append(at)
            widths.append(width)
        P = max(widths)
        L = max(sum(len(units[u].tokens) for u in row) for row in rows)
        B = len(rows)
        ids = np.full((B, L), self.start_id, dtype=np.int64)
        positions = np.zeros((B, L), dtype=np.int64)
        parents = np.full((B, L), -1, dtype=np.int64)  # per node its parent's column; padding none
        allowed = np.zeros((B, L, P + L), dtype=bool)
        place: dict[int, tuple[int, int]] = {}
        for b, row in enumerate(rows):
            off = 0
            for u in row:
                unit = units[u]
                n = len(unit.tokens)
                ids[b, off : off + n] = unit.tokens
                positions[b, off : off + n] = np.asarray(unit.depth) + len(unit.key)
                parent = np.asarray(unit.parent)
                parents[b, off : off + n] = np.where(parent >= 0, parent + off, -1)
                if unit.key:
                    c = cols[b][unit.key]
                    allowed[b, off : off + n, c : c + len(unit.key)] = True
                place[u] = (b, off)
                off += n
        allowed[:, :, P:] = ancestor_mask(parents)  # each node sees its ancestors and itself (padding: itself)
        cache = None
        if P:
            # The prefixes written into memory kept across the call's passes (prefilled_cache.py).
            buffer = past_memory(prefixes[next(k for at in cols for k in at)].kv, B, P)
            for b, at in enumerate(cols):
                for prefix, c in at.items():
                    buffer[:, :, b, :, c : c + len(prefix)] = prefixes[prefix].kv
            # No config, as in _forward_batch: a row's prefixes together may outgrow a sliding window.
            cache = prefilled_cache(buffer)
        mask = torch.from_numpy(allowed)[:, None]
        dtype = next(self.model.parameters()).dtype
        if self.model.config._attn_implementation == "eager" or not dtype.is_floating_point:
            mask = torch.zeros(mask.shape, dtype=torch.float32).masked_fill_(~mask, torch.finfo(torch.float32).min)
        inputs = dict(input_ids=torch.from_numpy(ids).to(self.device), past_key_values=cache,
                      attention_mask=mask.to(self.device), position_ids=torch.from_numpy(positions).to(self.device),
                      use_cache=cache is not None)
        return inputs, place

    def _packed_passes(self, units: list[Unit], groups: list[list[list[int]]], prefixes: dict, read: Callable,
                       begun: threading.Event | None = None):
        """(hidden states (B, L, H), read(place, B, L)) of each group of rows, one forward pass each (prefixes:
        each unit key's CachedPrefix, for _packed_inputs). The next pass's inputs (its mask, its rows' prefix KV
        copied into their past) and what its states will be read for (read: the pass's plan) are made on a second
        thread while the decoder runs the current one: on a GPU the host then no longer leaves the card waiting
        between passes, and on a CPU that work takes the core the decoder's thread leaves free. begun: set as the
        first pass goes to the decoder."""
        scratch = self._take_kept("scratch") or Scratch()  # two slots: the pass running, the pass being made

        def prepare(k: int):
            with torch.inference_mode():  # a thread's own mode: as the calling thread's
                inputs, place = self._packed_inputs(units, groups[k], prefixes, functools.partial(scratch.buffer, slot=k % 2))
                return inputs, read(place, *inputs["input_ids"].shape)

        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="accapp-pass") as ahead:
            coming = ahead.submit(prepare, 0)
            for k in range(len(groups)):
                inputs, plan = coming.result()
                if k + 1 < len(groups):
                    coming = ahead.submit(prepare, k + 1)
                self.stats["decoder_tokens"] += inputs["input_ids"].numel()
                if begun is not None:
                    begun.set()
                yield self._decoder(**inputs).last_hidden_state, plan
        self._keep("scratch", scratch)

    def layout(self, seqs: list[tuple[int, ...]], limits: list[int] | None) -> Layout:
        """How seqs go through the decoder (limits: see _shared_lengths): no model, only token ids."""
        shared = self._shared_lengths(seqs, limits)
        if not self._packable(seqs, shared):
            return Layout(shared, self.batch_size, None, None, None)
        owns = [s[p:] for s, p in zip(seqs, shared)]
        keys = [s[:p] for s, p in zip(seqs, shared)]
        units = build_units(owns, keys, max(self.row_tokens, max(len(o) for o in owns)))
        sizes = [len(u.tokens) for u in units]
        unit_keys = [u.key for u in units]
        budget = self.batch_size * self.pass_tokens_per_string
        rows = pack_rows(sizes, unit_keys, balanced_capacity(sizes, unit_keys, max(self.row_tokens, max(sizes)), budget))
        groups = [[rows[r] for r in group] for group in passes([sum(sizes[u] for u in r) for r in rows], budget)]
        return Layout(shared, self.batch_size, owns, units, groups)

    def _hidden_states(self, seqs: list[tuple[int, ...]], layout: Layout, plan_of: Callable,
                       begun: threading.Event | None = None):
        """(flat hidden states (N, H), plan) of each forward pass of seqs as layout lays them out; plan_of(members,
        nodes, ids, prefixes, N) makes the plan from the pass's sequences (their indices, rows of their own tokens,
        own ids, CachedPrefix or None). begun: set as the first pass goes to the decoder."""
        shared = layout.shared
        if layout.units is not None:
            owns, units = layout.owns, layout.units
            cached = {key: self._prefix(key) for key in dict.fromkeys(u.key for u in units) if key}  # once a call

            def read(place: dict, n_rows: int, width: int):
                members, nodes, ids, prefixes = [], [], [], []
                for u, (b, off) in place.items():
                    unit = units[u]
                    pr = cached.get(unit.key)
                    for i, path in zip(unit.members, unit.paths):
                        members.append(i)
                        nodes.append(np.asarray(path) + (b * width + off))
                        ids.append(owns[i])
                        prefixes.append(pr)
                return plan_of(members, nodes, ids, prefixes, n_rows * width)

            for hidden, plan in self._packed_passes(units, layout.groups, cached, read, begun):
                yield hidden.reshape(-1, hidden.shape[-1]), plan
            return
        for idx in self._batches(seqs, shared):
            batch = [seqs[i] for i in idx]
            if begun is not None:
                begun.set()
            hidden, lengths, ids, prefixes = self._forward_batch(batch, [shared[i] for i in idx])
            width = hidden.shape[1]
            nodes = [np.arange(n) + b * width for b, n in enumerate(lengths)]
            own = [batch[b][shared[idx[b]]:] for b in range(len(idx))]
            yield hidden.reshape(-1, hidden.shape[-1]), plan_of(idx, nodes, own, prefixes, hidden.shape[0] * width)

    @staticmethod
    def _plan_pass(members, nodes, ids, prefixes, n_rows: int, answers: list, boundaries: list) -> PassPlan:
        """A pass's PassPlan: rows predicting each scored token (its previous node, or for the first own token
        the prefix's last hidden state, appended after the pass's n_rows rows, one per prefix), the rows whose
        word-boundary mass is wanted, and the asked sequences' last rows with their candidates."""
        extra: dict = {}
        rows, targets, scored = [], [], []  # targets: token ids, one list for the pass
        asked, last = [], []
        bounded: list[tuple[int, np.ndarray]] = []  # (sequence, its rows): log P(B) wanted
        for i, node, own, pr in zip(members, nodes, ids, prefixes):
            if answers[i] is not None:
                asked.append(i)
                last.append(node[-1])
                continue
            scored.append((i, own, pr))
            if boundaries[i] is not None and pr is None and len(node) == len(boundaries[i]):
                bounded.append((i, node))
            if pr is None:  # the row starts with the start token: score from its 2nd token
                rows.append(node[:-1])
                targets += own[1:]
            else:  # its first own token is predicted by the prefix's last hidden state
                key = id(pr)
                if key not in extra:
                    extra[key] = (len(extra), pr.last_hidden)
                rows += [(n_rows + extra[key][0],), node[:-1]]
                targets += own
        empty = torch.empty(0, dtype=torch.long)
        wanted = uniq = inverse = empty
        kinds: list = []
        if scored:
            # Index arrays built in numpy, one tensor each: a small tensor op costs a GPU's launch or
            # ~20 us on this CPU, and a probe has thousands of sequences.
            wanted = torch.from_numpy(np.concatenate(rows))
            # Rows whose word-boundary mass is wanted join the projection that scores the tokens.
            kinds = [kind for i, _ in bounded for kind in boundaries[i]]
            brows = torch.from_numpy(np.concatenate([node for _, node in bounded])) if bounded else wanted[:0]
            uniq, inverse = torch.unique(torch.cat([wanted, brows]), return_inverse=True)
        candidates = candidate_rows = None
        if asked:
            width = max(len(answers[i]) for i in asked)
            candidates = torch.tensor([list(answers[i]) + [answers[i][0]] * (width - len(answers[i])) for i in asked])
            candidate_rows = torch.arange(len(asked)).repeat_interleave(width)
        prefixes = list({id(pr): pr for _, _, pr in scored if pr is not None}.values())
        return PassPlan(scored, prefixes, wanted, torch.tensor(targets, dtype=torch.long), [h for _, h in extra.values()],
                        bounded, kinds, uniq, inverse, asked, torch.from_numpy(np.asarray(last, dtype=np.int64)),
                        candidates, candidate_rows)

    @torch.inference_mode()
    def score(self, seqs: list[tuple[int, ...]], limits: list[int] | None = None,
              answers: list[tuple[int, ...] | None] | None = None, boundaries: list[list[str] | None] | None = None,
              boundary_out: dict | None = None, raw: list[bool] | None = None, topk: list[int] | None = None,
              topk_out: dict | None = None, begun: threading.Event | None = None,
              layout: Layout | None = None, deferred: list | None = None) -> list[np.ndarray]:
        """Per sequence (starting with the start token): with answers[i] None, log p(seq[i] | seq[:i])
        for i >= 1; with a tuple of candidate ids, the full-vocabulary log-probs of those candidates
        as the next token after the whole sequence (the vocabulary projection runs at that one
        position). Both kinds share the forward passes. limits: see _shared_lengths.
        boundaries[i], for a sequence with no template prefix: the kinds of _boundary_values at
        each of its positions; its log P(B) values go to boundary_out[i], from the same hidden
        states (no extra pass). raw[i]: the candidates' raw logits instead of their log-probs.
        topk[i] > 0, for such a sequence: its topk most probable next tokens at each position, from
        the same projection, go to topk_out[i] (a TopKResult; accapp/scoring/topk.py). begun: set as the first
        pass of the sequences goes to the decoder (the template prefixes' passes may come before). layout: how
        the sequences go through the decoder, made by layout(seqs, limits) (where made for another batch size, or
        None: made here). deferred: where given (emptied first), the results of most sequences are not filled
        in: each (fill, log-probs) goes there, and fill(log-probs) fills them in, on any thread (the model's work
        is done).
        """
        if deferred is not None:
            deferred.clear()
        answers = answers or [None] * len(seqs)
        raw = raw or [False] * len(seqs)
        boundaries = boundaries or [None] * len(seqs)
        topk = topk or [0] * len(seqs)
        if layout is None or layout.batch_size != self.batch_size:
            layout = self.layout(seqs, limits)
        self._prefetch_prefixes(s[:p] for s, p in zip(seqs, layout.shared) if p)
        results: list[np.ndarray | None] = [None] * len(seqs)
        waiting = _Waiting(self._take_kept("waiting"))  # passes' rows held for one vocabulary projection
        plan_of = functools.partial(self._plan_pass, answers=answers, boundaries=boundaries)
        for flat, plan in self._hidden_states(seqs, layout, plan_of, begun):
            if plan.scored:
                wanted, inverse, bounded = plan.wanted, plan.inverse, plan.bounded
                if bounded:
                    source = rows_among(flat, plan.extra, plan.uniq)
                    index = self._mask_table()[1]
                    mask_of = torch.full((len(plan.uniq),), -1, dtype=torch.long)
                    mask_of[inverse[len(wanted):]] = torch.tensor([index[k] if k else -1 for k in plan.kinds], dtype=torch.long)
                    k_top, topk_of, extras = top_rows(bounded, topk, inverse[len(wanted):], len(plan.uniq))
                    lp_t, mass = self._logprobs_of(source, plan.targets, inverse[: len(wanted)], mask_of,
                                                   k_top, topk_of, extras)
                    if k_top and topk_out is not None:
                        topk_out.update(split_top_rows(bounded, topk, inverse[len(wanted):], topk_of, extras))
                    m = mass[inverse[len(wanted):]].double().numpy()
                    has = np.array([bool(k) for k in plan.kinds])
                    vals = np.zeros(len(plan.kinds))  # 0.0: every token begins a word there
                    vals[has] = -np.logaddexp(0.0, m[has, 1] - m[has, 0])
                    at = 0
                    for i, node in bounded:
                        boundary_out[i] = vals[at : at + len(node)]
                        at += len(node)
                    self._fill_scored(plan.scored, results, lp_t.numpy())
                else:
                    for pr in plan.prefixes:  # projected here, where the model is used, if not yet
                        self._prefix_logprobs(pr)
                    rows_among(flat, plan.extra, plan.uniq, out=waiting.room(flat, len(plan.uniq)))
                    waiting.add(len(plan.uniq), plan.targets, inverse,
                                functools.partial(self._fill_scored, plan.scored, results))
            if plan.asked:
                asked, cand = plan.asked, plan.candidates
                at_end = torch.index_select(flat, 0, plan.last, out=waiting.room(flat, len(plan.last)))
                if any(raw[i] for i in asked):
                    logits = self._candidate_logits(at_end, cand).numpy()
                    for b, i in enumerate(asked):
                        if raw[i]:
                            results[i] = logits[b, : len(answers[i])].astype(np.float32)
                waiting.add(len(asked), cand.reshape(-1), plan.candidate_rows,
                            functools.partial(_fill_answers, asked, answers, raw, results))
            if waiting.rows >= self.head_chunk_rows:
                self._project_waiting(waiting, deferred)
        self._project_waiting(waiting, deferred)
        if waiting.memory is not None:
            self._keep("waiting", waiting.memory)
        return results  # type: ignore[return-value]

    def _take_kept(self, name: str):
        """What the last call kept under name, taken (None if nothing): a scorer used from two threads at once
        never hands one memory to both (dict.pop is one step under the GIL)."""
        return self._kept.pop(name, None)

    def _keep(self, name: str, memory) -> None:
        """Keep memory (a tensor or a Scratch: its nbytes) for the next call: on a CPU, where fresh memory costs
        page faults, and while everything kept stays under KEPT_BYTES. On a GPU the allocator keeps freed memory
        for reuse by itself."""
        if self.device.type != "cpu":
            return
        if sum(m.nbytes for k, m in self._kept.items() if k != name) + memory.nbytes <= KEPT_BYTES:
            self._kept[name] = memory

    def _fill_scored(self, scored: list, results: list, flat_lp: np.ndarray) -> None:
        """Each scored sequence's log-probs, in order from flat_lp, after its prefix's own."""
        pos = 0
        for i, own, pr in scored:
            k = len(own) - 1 if pr is None else len(own)
            mine = flat_lp[pos : pos + k]
            pos += k
            if pr is not None:
                mine = np.concatenate([self._prefix_logprobs(pr).numpy(), mine])
            results[i] = mine.astype(np.float32)

    def _project_waiting(self, waiting: "_Waiting", deferred: list | None = None) -> None:
        """One vocabulary projection for the rows several passes hold (each pass's own would stream
        the whole head matrix again: for Gemma 3's large vocabulary, most of a small pass's cost on a CPU).
        deferred: where given, each (fill, its log-probs) goes there, for the caller to fill later."""
        if not waiting.parts:
            return
        lp = self._logprobs_of(*waiting.joined()).numpy()
        at = 0
        for n_targets, fill in waiting.parts:
            if deferred is None:
                fill(lp[at : at + n_targets])
            else:
                deferred.append((fill, lp[at : at + n_targets]))
            at += n_targets
        waiting.clear()

    def _check_finite(self, values: torch.Tensor) -> None:
        """Log-probs or logits that are not numbers come from a precision the model overflows in
        (Gemma 3 in fp16 gave NaN for 92 % of its CLiMP scores on an H200, docs/gpu.md): say so,
        never a verdict. Checked where every projection's values come out, once a projection."""
        if not bool(torch.isfinite(values).all()):
            lm = self.lm
            raise UserError(
                f"{lm.spec.name} in {lm.dtype}{' (4-bit NF4)' if lm.quantization else ''} gave scores that are not numbers "
                "(NaN or infinite): its activations overflow in this precision. Load it in bf16 or fp32.")

    def _score_within_memory(self, *args, **kwargs):
        """score(), halving the pass and the projection after an out-of-memory error: the sizes
        were chosen from the memory free when the scorer was made, and another process or
        visitor may hold some of it now (seen with 13 runs on one GPU, docs/gpu.md)."""
        while True:
            try:
                return self.score(*args, **kwargs)
            except torch.OutOfMemoryError:
                if self.batch_size <= MIN_BATCH and self.head_chunk_rows <= MIN_HEAD_ROWS:
                    raise
                if torch.cuda.is_available():
                    torch.cuda.empty_cache()
                self.batch_size = max(MIN_BATCH, self.batch_size // 2)
                self.head_chunk_rows = max(MIN_HEAD_ROWS, self.head_chunk_rows // 2)
                self.memory_retries += 1

    # ---- word boundaries (accapp/scoring/boundary.py) ------------------------------------
    def boundary_masks(self) -> dict[str, torch.Tensor]:
        """B, the vocabulary items that begin a new word, one CPU bool mask per kind of last
        character (boundary.boundary_masks); built once per tokenizer and vocabulary size, and
        shared by every scorer of that tokenizer (building them takes seconds for Gemma's 262k)."""
        if self._boundary is None:
            built = _BOUNDARY.setdefault(self.tokenizer, {})
            key = (self._vocab, len(self.tokenizer))  # a token added to the tokenizer makes new masks
            if key not in built:
                built[key] = {k: torch.from_numpy(m) for k, m in boundary_masks(self.tokenizer, self._vocab).items()}
            self._boundary = built[key]
        return self._boundary

    def _mask_table(self) -> tuple[torch.Tensor, dict[str, int]]:
        """The boundary masks stacked, (K, V) bool, and each kind's row in it (built once)."""
        if self._masks is None:
            masks = self.boundary_masks()
            kinds = sorted(masks)
            self._masks = (torch.stack([masks[k] for k in kinds]), {k: n for n, k in enumerate(kinds)})
        return self._masks

    def _boundary_values(self, hidden: torch.Tensor, kinds: list[str]) -> np.ndarray:
        """log P(B) at each row of hidden (one row per position k = 0..n, predicting the token
        after it), B chosen by the kind of the character before (kinds[k]; '' = every token
        begins a word there: 0.0). Logits in float32 (soft-capped as the model does), each value
        -log(1 + P(not B)/P(B)) from the two logsumexps, so a P(B) near 1 keeps its precision."""
        masks = self.boundary_masks()
        vals = np.zeros(len(kinds), dtype=np.float64)
        for kind in sorted({k for k in kinds if k}):
            ks = [k for k, kk in enumerate(kinds) if kk == kind]
            rows = torch.tensor(ks, device=hidden.device)
            logits = self._project(hidden[rows], 0, self._vocab).float()
            if self._softcap:
                logits = torch.tanh(logits / self._softcap) * self._softcap
            mask = masks[kind].to(logits.device)
            inside = torch.logsumexp(logits[:, mask], dim=-1).double().cpu().numpy()
            outside = (torch.logsumexp(logits[:, ~mask], dim=-1).double().cpu().numpy()
                       if not bool(mask.all()) else np.full(len(ks), -np.inf))
            vals[ks] = -np.logaddexp(0.0, outside - inside)
        return vals

    @torch.inference_mode()
    def boundary_logprobs(self, texts: list[str], contexts: list[str] | None = None) -> list[np.ndarray]:
        """Per text, log P(next token begins a new word | start token + first k tokens), k = 0..n
        (float64; 0.0 where every token begins a word: k = 0, or after whitespace, punctuation,
        a symbol or a CJK character), from a plain right-padded forward pass of its own. The
        engine's calls get the same values from the pass that scores the sentence (execute).
        contexts[i]: the text the i-th follows (its tokens as SeqRequest((text,), context)'s)."""
        out: list[np.ndarray] = []
        contexts = contexts or [""] * len(texts)
        for i in range(0, len(texts), self.batch_size):
            chunk = texts[i : i + self.batch_size]
            reqs = [SeqRequest((t,), c) for t, c in zip(chunk, contexts[i : i + self.batch_size])]
            encs = [Encoded(t, tuple(e[0]), tuple(e[1])) for t, e in zip(chunk, map(self.encode_parts, reqs))]
            seqs = [self.with_start(self.context_ids(r) + e.ids) for r, e in zip(reqs, encs)]
            width = max(len(q) for q in seqs)
            ids = torch.tensor([list(q) + [self.start_id] * (width - len(q)) for q in seqs])
            hidden = self._decoder(input_ids=ids.to(self.device), use_cache=False).last_hidden_state
            for b, (text, enc, seq) in enumerate(zip(chunk, encs, seqs)):
                shift = len(seq) - len(enc.ids)  # 1: the start token was added
                out.append(self._boundary_values(hidden[b, shift - 1 : len(seq)], context_kinds(text, enc.offsets)))
        return out

    @torch.inference_mode()
    def top_k(self, texts: list[str], k: int) -> list[TopKResult]:
        """Per text, its TopKResult from a plain pass of its own after the start token (where the
        scoring pass cannot give it: a sentence that begins with the start token itself)."""
        out = []
        for text in texts:
            enc = self.encode(text)
            seq = self.with_start(enc.ids)
            hidden = self._decoder(input_ids=torch.tensor([seq]).to(self.device), use_cache=False).last_hidden_state[0]
            hidden = hidden[len(seq) - len(enc.ids) - 1 :]
            index = self._mask_table()[1]
            mask_of = torch.tensor([index[c] if c else -1 for c in context_kinds(text, enc.offsets)], dtype=torch.long)
            extras: dict = {}
            rows = torch.arange(hidden.shape[0])
            self._logprobs_of(hidden, torch.zeros(len(rows), dtype=torch.long), rows, mask_of, k,
                              torch.ones(len(rows), dtype=torch.bool), extras)
            out.append(TopKResult(extras["topk_ids"].numpy(), extras["topk_logprobs"].double().numpy(),
                                  extras["word_topk_ids"].numpy(), extras["word_topk_logprobs"].double().numpy()))
        return out

    def token_texts(self, ids) -> dict[int, str | None]:
        """{id: its text, leading space kept} (None: a special token), read from the vocabulary
        pieces as the word-boundary sets are (accapp/scoring/boundary.py); kept, so a probe reads
        only the ids it has not seen."""
        cache = self.__dict__.setdefault("_token_texts", {})
        missing = [int(i) for i in ids if int(i) not in cache]
        if missing:
            if len(cache) > 100_000:
                cache.clear()
            cache.update(surface_texts(self.tokenizer, self._vocab, missing))
        return {int(i): cache[int(i)] for i in ids}

    # ---- the engine's contract (accapp.scoring.api) ------------------------------------
    def n_tokens(self, text: str) -> int:
        return len(self.encode(text).ids)

    def token_requests(self, text: str, context: str = "") -> list:
        """The request whose result gives a sentence's per-token view (after `context`, if any)."""
        return [SeqRequest((text,), context)]

    def show(self, request) -> list[dict]:
        """The exact string a request feeds the model, start token included."""
        start = self.tokenizer.convert_ids_to_tokens(self.start_id)
        if isinstance(request, SeqRequest):
            lead = start if self.sentence_start or request.context else ""
            if request.context:  # the context is read, not scored
                text = "".join(request.parts)
                return [{"kind": "context (not scored), then the scored string",
                         "text": lead + request.context + seam(request.context, text) + text}]
            return [{"kind": "scored string", "text": lead + "".join(request.parts)}]
        if self.convention.start_token == "always":
            text = request.prompt if request.prompt.startswith(start) else start + request.prompt
        else:
            text = "".join(self.tokenizer.convert_ids_to_tokens(list(self.auto_prefix))) + request.prompt
        answers = " / ".join(request.answers)
        kind = f"prompt, then the token {answers}" if request.read == "vocabulary" else f"prompt, then one of {answers}"
        return [{"kind": kind, "text": text}]

    def encode_parts(self, req: SeqRequest):
        """(ids, character offsets in the joined text, part index) of a request's tokens. With a
        context, the first part is tokenized with the seam before it (accapp/scoring/context.py),
        its offsets still into the joined parts; the context's own tokens are context_ids'."""
        ids: list[int] = []
        offsets: list[tuple[int, int]] = []
        part_of: list[int] = []
        lead = seam(req.context, "".join(req.parts)) if req.context else ""
        base = -len(lead)
        for p, text in enumerate(req.parts):
            enc = self.encode(lead + text if p == 0 else text)
            ids.extend(enc.ids)
            # Into the joined parts; a seam's characters before the first part are none of them.
            offsets.extend(enc.offsets if base == 0 else shifted(enc.offsets, -base))
            part_of.extend([p] * len(enc.ids))
            base += len(text) + (len(lead) if p == 0 else 0)
        return ids, offsets, part_of

    def context_ids(self, req) -> tuple[int, ...]:
        """The context's tokens a request's parts follow (none without a context)."""
        return self.encode(req.context).ids if req.context else ()

    def request_seq(self, req: SeqRequest, ids) -> tuple[int, ...]:
        """The sequence a SeqRequest feeds the model: start token (as the convention puts one;
        always one before a context), the context's tokens, the parts' tokens."""
        if req.context:
            return self.with_start(self.context_ids(req) + tuple(ids))
        return self.seq_start(tuple(ids))

    def answer_plan(self, req: NextRequest):
        """Per answer: (context ids with start token, answer ids). read="vocabulary": the whole
        prompt as written (a trailing space is its own token), then the answer's vocabulary entry."""
        ctx_ids = self.ids_of(req.prompt)
        if req.read == "vocabulary":
            fed = self.prompt_start(ctx_ids)  # one tuple for every answer: the same context
            return [(fed, (self._vocabulary_id(answer),)) for answer in req.answers]
        plans = []
        for answer in req.answers:
            full = self.ids_of(req.prompt + answer)
            k = common_prefix_len(ctx_ids, full)
            if k == len(full):
                raise ValueError(f"answer {answer!r} adds no token after the prompt")
            plans.append((self.prompt_start(full[:k]), tuple(full[k:])))
        return plans

    def _vocabulary_id(self, answer: str) -> int:
        """An answer's vocabulary entry (vocabulary_id), looked up once: the same few answers come in every prompt."""
        tid = self._answer_ids.get(answer)
        if tid is None:
            tid = vocabulary_id(self.tokenizer, answer)
            if tid is None:
                raise ValueError(f"answer {answer!r} is not one token of {self.lm.spec.id}'s vocabulary")
            if len(self._answer_ids) >= ANSWER_IDS_MAX:
                self._answer_ids.clear()
            self._answer_ids[answer] = tid
        return tid

    def _seq_limit(self, req: SeqRequest) -> int:
        """Tokens a templated string shares with its template-mates: start token + first part;
        a string after a context shares the start token and the context."""
        if req.context:
            return 1 + len(self.context_ids(req))
        return int(self.sentence_start) + len(self.encode(req.parts[0]).ids) if len(req.parts) > 1 else 0

    def _prompt_limit(self, req: NextRequest) -> int:
        if not req.prefix:
            return 0
        a, b = self.ids_of(req.prefix), self.ids_of(req.prompt)
        return len(self.prompt_start(b[: common_prefix_len(a, b)]))

    def _seq_result(self, req: SeqRequest, encoded, seq, lp) -> SeqResult:
        """The SeqResult of a scored sentence: its scored tokens only (without a start token the
        first token is context, so it is left out, as in the authors' code)."""
        ids, offsets, part_of = encoded
        if req.context:  # the context's tokens are read, not scored
            lp = lp[len(lp) - len(ids):]
        skip = len(ids) - len(lp)  # 0 after a start token, 1 without one
        text = "".join(req.parts)
        ids, offsets, part_of = list(ids)[skip:], list(offsets)[skip:], list(part_of)[skip:]
        return SeqResult(ids, [text[a:b] for a, b in offsets], offsets, part_of, lp)

    def _tokenize_ahead(self, seq_reqs, next_reqs, bnd_reqs) -> None:
        """Every string a call tokenizes, in two batched calls of the tokenizer: the scored strings
        with their offsets, the prompts' ids (encode_many, ids_many)."""
        texts = [r.text for r in bnd_reqs]
        for r in seq_reqs:
            lead = seam(r.context, "".join(r.parts)) if r.context else ""
            texts += [lead + r.parts[0], *r.parts[1:]]
            if r.context:
                texts.append(r.context)
        self.encode_many(texts)
        prompts = []
        for r in next_reqs:
            prompts.append(r.prompt)
            if r.prefix:
                prompts.append(r.prefix)
            if r.read != "vocabulary":
                prompts += [r.prompt + a for a in r.answers]
        self.ids_many(prompts)

    def _by_kind(self, requests) -> tuple[list, list, list, list]:
        """(SeqRequests, NextRequests, BoundaryRequests, TopKRequests) of a call: a top-k rides on its sentence's
        word-boundary rows, and a sentence's word boundaries on the pass that scores it (its SeqRequest joins)."""
        seq_reqs = [r for r in requests if isinstance(r, SeqRequest)]
        next_reqs = [r for r in requests if isinstance(r, NextRequest)]
        bnd_reqs = [r for r in requests if isinstance(r, BoundaryRequest)]
        top_reqs = [r for r in requests if isinstance(r, TopKRequest)]
        if len(seq_reqs) + len(next_reqs) + len(bnd_reqs) + len(top_reqs) < len(requests):
            raise ValueError("a causal LM answers SeqRequest, NextRequest, BoundaryRequest and TopKRequest only "
                             "(PLL needs a masked LM)")
        have_bnd = set(bnd_reqs)
        bnd_reqs += [b for b in dict.fromkeys(BoundaryRequest(r.text) for r in top_reqs) if b not in have_bnd]
        have = set(seq_reqs)  # built once: a set built per item made this quadratic (docs/gpu.md)
        seq_reqs += [SeqRequest((r.text,), r.context) for r in bnd_reqs if SeqRequest((r.text,), r.context) not in have]
        return seq_reqs, next_reqs, bnd_reqs, top_reqs

    def tokenize(self, requests) -> None:
        """Tokenize every string the requests need into the caches, as execute does first: Engine.score_blocks
        runs this for the next block on a second thread while the model scores the current one (the
        tokenizer's own work leaves Python's lock free)."""
        seq_reqs, next_reqs, bnd_reqs, _ = self._by_kind(requests)
        self._tokenize_ahead(seq_reqs, next_reqs, bnd_reqs)

    # execute in three stages: Engine.score_blocks runs the next block's prepare_call and the last block's
    # collect_call (host work, no model) on a second thread while the calling thread runs one block's run_call.
    staged = True

    def execute(self, requests) -> dict:
        """SeqResult for every SeqRequest, answer log-probs (np.ndarray) for every NextRequest,
        word-boundary log-probs (np.ndarray, boundary_logprobs) for every BoundaryRequest."""
        return self.collect_call(self.run_call(self.prepare_call(requests)))

    def prepare_call(self, requests) -> "_Call":
        """execute's first stage, without the model: the requests tokenized, the prompts' answer plans, the
        sequences to score with their limits (what score() takes) and how they go through the decoder (layout)."""
        seq_reqs, next_reqs, bnd_reqs, top_reqs = self._by_kind(requests)
        self._tokenize_ahead(seq_reqs, next_reqs, bnd_reqs)
        encoded = {r: self.encode_parts(r) for r in seq_reqs}
        # A NextRequest whose answers are single tokens after one shared context needs one
        # pass and a projection at the answer position; others score the answer tokens.
        plans = {r: self.answer_plan(r) for r in next_reqs}
        simple = [r for r in next_reqs if one_context(plans[r]) and all(len(a) == 1 for _, a in plans[r])]
        simple_set = set(simple)
        chained = [(r, i) for r in next_reqs if r not in simple_set for i in range(len(r.answers))]

        seqs = [self.request_seq(r, encoded[r][0]) for r in seq_reqs]
        seqs += [plans[r][i][0] + plans[r][i][1] for r, i in chained]
        limits = [self._seq_limit(r) for r in seq_reqs] + [self._prompt_limit(r) for r, _ in chained]
        n_seq = len(seqs)
        # Questions answered by one next token join the same forward passes.
        seqs += [plans[r][0][0] for r in simple]
        limits += [self._prompt_limit(r) for r in simple]
        answers = [None] * n_seq + [tuple(a[0] for _, a in plans[r]) for r in simple]
        raw = [False] * n_seq + [r.raw for r in simple]
        if any(r.raw for r, _ in chained):
            raise ValueError("the raw-logit ratio needs answers of one token each after one context")
        kinds = {r.text: context_kinds(r.text, self.encode(r.text).offsets) for r in bnd_reqs}
        bounds = [kinds.get(r.parts[0]) if len(r.parts) == 1 and not r.context else None for r in seq_reqs]
        bounds += [None] * (len(seqs) - len(seq_reqs))
        want_k: dict[str, int] = {}
        for r in top_reqs:
            want_k[r.text] = max(want_k.get(r.text, 0), r.k)
        topk = [want_k.get(r.parts[0], 0) if len(r.parts) == 1 and not r.context else 0 for r in seq_reqs]
        topk += [0] * (len(seqs) - len(seq_reqs))
        layout = self.layout(seqs, limits) if seqs else None
        return _Call(requests, seq_reqs, bnd_reqs, top_reqs, encoded, plans, simple, chained, seqs,
                     limits, answers, raw, bounds, topk, n_seq, layout)

    def run_call(self, call: "_Call") -> "_Call":
        """execute's second stage, every use of the model: the sequences' forward passes and projections, and the
        passes of their own that some boundary and top-k requests need (into call's found, found_top, extra).
        call.begun is set as the sequences' first pass goes to the decoder, or at the end where none does. Most
        sequences' log-probs are filled in by collect_call (call.deferred): host work, off this thread."""
        args = (call.seqs, call.limits, call.answers, call.bounds, call.found, call.raw)
        args += (call.topk, call.found_top) if any(call.topk) else ()
        try:
            call.lps = (self._score_within_memory(*args, begun=call.begun, layout=call.layout, deferred=call.deferred)
                        if call.seqs else [])
        finally:
            call.begun.set()
        call.at = {r.parts[0]: i for i, r in enumerate(call.seq_reqs) if len(r.parts) == 1 and not r.context}
        # a sentence that starts with the start token itself, or one after a context: a pass of its own
        missing = [r for r in call.bnd_reqs if r.context or call.found.get(call.at[r.text]) is None]
        if missing:
            call.extra.update(zip(missing, self.boundary_logprobs([r.text for r in missing], [r.context for r in missing])))
        for r in call.top_reqs:
            top = call.found_top.get(call.at[r.text]) if r.text in call.at else None
            call.extra[r] = _first_k(top, r.k) if top is not None else self.top_k([r.text], r.k)[0]
        return call

    def collect_call(self, call: "_Call") -> dict:
        """execute's last stage, without the model: each request's result from what run_call found."""
        for fill, lp in call.deferred:
            fill(lp)
        call.deferred.clear()
        out: dict = {}
        lps, seq_reqs, n_seq = call.lps, call.seq_reqs, call.n_seq
        for r, lp, seq in zip(seq_reqs, lps, call.seqs):
            out[r] = self._seq_result(r, call.encoded[r], seq, lp)
        chained_lp: dict = {}
        for (r, i), lp in zip(call.chained, lps[len(seq_reqs) : n_seq]):
            n_ans = len(call.plans[r][i][1])
            chained_lp.setdefault(r, [0.0] * len(r.answers))[i] = float(np.sum(lp[-n_ans:], dtype=np.float64))
        for r, v in chained_lp.items():
            out[r] = np.asarray(v)
        for r, v in zip(call.simple, lps[n_seq:]):
            out[r] = v.astype(np.float64)
        for r in call.bnd_reqs:
            out[r] = call.extra[r] if r in call.extra else call.found.get(call.at[r.text])
        out.update((r, call.extra[r]) for r in call.top_reqs)
        wanted = set(call.requests)
        return {r: v for r, v in out.items() if r in wanted}


def one_context(plan) -> bool:
    """Whether every answer of a plan (answer_plan) comes after the same context (often the same tuple)."""
    if not plan:
        return False
    first = plan[0][0]
    return all(c is first or c == first for c, _ in plan)


def _first_k(top: TopKResult, k: int) -> TopKResult:
    """A TopKResult cut to its first k candidates (a pass may have served a larger k)."""
    return TopKResult(top.ids[:, :k], top.logprobs[:, :k], top.word_ids[:, :k], top.word_logprobs[:, :k])
