"""Masked-LM scorer: per-token pseudo-log-likelihoods under Kauf & Ivanova's four variants.

Definitions (mask sets per variant) live in accapp.scoring.pll_variants. Words (which tokens
PLL-word-l2r and PLL-whole-word mask together) follow one of two rules, the request's
``words`` (docs/pll_words.md):
- "project" (default): accapp.words, one character-level rule for every model family
  ("couldn't", "Kayla's", "well-known", "3,000" are one word each);
- "tokenizer": the tokenizer's own word split, ``encoding.word_ids()`` of the fast tokenizer
  (its pre-tokenizer's words), exactly as minicons' ``within_word_l2r`` and Kauf & Ivanova's
  code: BERT cuts "couldn't" into couldn ' t. A token with no word id is a word by itself
  (minicons masks only that token). Each word's span runs from its first token's start to its
  last token's end.

It answers the engine's ``execute(requests)`` for ``PLLRequest``s (accapp.scoring.api): every
request for one sentence gets the same ``SentencePLL``, computed once for all the variants
asked of it, and kept in a bounded LRU cache (``cache_size`` sentences).

What it computes, per sentence (``MaskedScorer.score_sentences`` / ``sentence_pll``):
``SentencePLL`` with
- ``tokens``: one ``TokenPLL`` per scored token (special tokens such as [CLS]/[SEP]/<s>/</s>
  are never masked and never scored): its text and character span, the tokenizer's piece,
  the word it belongs to (index and text), and per variant its log-prob and the scored-token
  indices that were masked when predicting it (``masked[variant]``, always containing the
  token's own index);
- ``words``: one ``WordPLL`` per word (of the request's word rule): its tokens, its summed log-prob per
  variant, ``inflation`` = PLL-original - PLL-word-l2r of the word (nats) and ``inflated``,
  True for a word of two or more tokens whose inflation exceeds ``INFLATION_MARGIN``
  (1 nat): the original PLL lets each piece see the others (Kauf & Ivanova, Fig. 2);
- ``scores``: the sentence PLL per variant (sum of its tokens' log-probs, float64).

How (the chunking rule): every (sentence, mask set) pair is one masked copy of the
sentence; copies with equal mask sets are computed once (every token of a word shares its
whole-word copy, a word's last token has the same word-l2r and original copy, the last
token's sentence-l2r copy is its original copy). The copies of all sentences asked for
at once are sorted by length and run through the encoder ``batch_size`` copies at a time
(default pass_size.DEFAULT_BATCH, right-padded with an attention mask), never all at once, so memory is bounded
by batch_size x sentence length whatever the sentence. Only the hidden states at the
target positions go through the MLM head, ``DEFAULT_DEFAULT_HEAD_ROWS`` rows at a time, and the
log-softmax over the vocabulary is taken in float32 whatever the model dtype (float64
for a float64 model). Models whose
head the scorer does not know fall back to the full logits of each chunk (still bounded by
batch_size).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np
import torch

from accapp.errors import UserError
from accapp.scoring.api import INFLATION_MARGIN, PLLRequest, SentencePLL, TokenPLL, WordPLL
from accapp.scoring.context import seam, shifted
from accapp.scoring.logsoftmax import target_logprobs
from accapp.scoring.pass_size import DEFAULT_BATCH, DEFAULT_HEAD_ROWS
from accapp.scoring.pll_variants import VARIANTS, mask_sets
from accapp.words import Word, assign_words, split_words

ALWAYS = ("original", "word_l2r")  # every sentence's token view and inflation flag need these
WORD_RULES = ("project", "tokenizer")  # PLLRequest.words


class InContext(NamedTuple):
    """A sentence after a context (PLLRequest.context): the context is left context in every
    masked copy, never masked nor scored. Where the scorer takes a text it takes one of these."""

    context: str
    text: str


def source_of(r: PLLRequest):
    """What a request's sentence is to the scorer: its text, or InContext(context, text)."""
    return InContext(r.context, r.text) if r.context else r.text


def _check_rule(words: str) -> str:
    if words not in WORD_RULES:
        raise ValueError(f"unknown PLL word rule {words!r}; known: {', '.join(WORD_RULES)}")
    return words


def tokenizer_words(text: str, word_ids, positions, offsets) -> tuple[tuple[Word, ...], tuple[int, ...]]:
    """(words, word_of) from the tokenizer's word ids (``encoding.word_ids()``, one per model
    input position): the scored tokens sharing a word id are one word, numbered in order; a
    scored token with no word id is a word by itself. A word's span runs from the first start
    to the last end of its tokens' non-empty spans (of any span when all are empty)."""
    index: dict = {}
    word_of = []
    for t, p in enumerate(positions):
        w = word_ids[p]
        word_of.append(index.setdefault(("id", w) if w is not None else ("token", t), len(index)))
    words = []
    for k in range(len(index)):
        spans = [offsets[t] for t in range(len(positions)) if word_of[t] == k]
        spans = [sp for sp in spans if sp[1] > sp[0]] or spans
        a, b = min(sp[0] for sp in spans), max(sp[1] for sp in spans)
        words.append(Word(k, a, b, text[a:b]))
    return tuple(words), tuple(word_of)


@dataclass(frozen=True)
class EncodedSentence:
    """A sentence tokenized for PLL scoring."""

    text: str
    input_ids: tuple[int, ...]  # the model input, special tokens included
    positions: tuple[int, ...]  # input position of each scored token
    offsets: tuple[tuple[int, int], ...]  # character span of each scored token
    pieces: tuple[str, ...]  # tokenizer's token string of each scored token
    words: tuple[Word, ...]
    word_of: tuple[int, ...]  # word index of each scored token

    def __len__(self) -> int:
        return len(self.positions)


def _at_least_fp32(logits: torch.Tensor) -> torch.Tensor:
    """Logits for the log-softmax: float32 for half-precision models, float64 stays float64."""
    return logits if logits.dtype == torch.float64 else logits.float()


def _split_model(model):
    """(encoder, head) of a known masked-LM class, or None to use the full logits."""
    base = getattr(model, getattr(model, "base_model_prefix", ""), None)
    if base is None:
        return None
    if hasattr(model, "cls") and hasattr(model.cls, "predictions"):  # BERT
        return base, model.cls
    if hasattr(model, "lm_head"):  # RoBERTa, XLM-R, CamemBERT
        return base, model.lm_head
    if all(hasattr(model, a) for a in ("vocab_transform", "activation", "vocab_layer_norm", "vocab_projector")):
        def head(h):  # DistilBERT
            return model.vocab_projector(model.vocab_layer_norm(model.activation(model.vocab_transform(h))))
        return base, head
    if hasattr(model, "generator_predictions") and hasattr(model, "generator_lm_head"):  # ELECTRA generator
        return base, lambda h: model.generator_lm_head(model.generator_predictions(h))
    if hasattr(model, "predictions") and type(model).__name__.startswith("Albert"):
        return base, model.predictions
    return None


class MaskedScorer:
    """PLL scorer around a masked LM and its fast tokenizer (see the module doc)."""

    kind = "masked"

    def __init__(self, model, tokenizer, batch_size: int = DEFAULT_BATCH, lm=None, split_head: bool = True,
                 cache_size: int = 512) -> None:
        # batch_size: masked copies one forward pass takes (the causal scorer's strings a pass)
        if batch_size is None or int(batch_size) < 1:
            raise UserError("batch_size must be a positive number of masked copies.")
        if not getattr(tokenizer, "is_fast", False):
            raise ValueError("PLL scoring needs a fast tokenizer (character offsets).")
        if tokenizer.mask_token_id is None:
            raise ValueError("the tokenizer has no mask token")
        self.model = model
        self.tokenizer = tokenizer
        self.lm = lm
        self.batch_size = int(batch_size)
        self.mask_id = int(tokenizer.mask_token_id)
        pad = tokenizer.pad_token_id
        self.pad_id = int(pad) if pad is not None else self.mask_id
        self._split = _split_model(model) if split_head else None
        self.device = next(model.parameters()).device
        self._encode_cache: OrderedDict = OrderedDict()
        self.forward_passes = 0  # chunks run (for tests and benchmarks)
        self.copies_scored = 0
        self.cache_size = cache_size
        self._detail_cache: OrderedDict = OrderedDict()  # sentence -> SentencePLL

    @classmethod
    def from_loaded(cls, lm, batch_size: int = DEFAULT_BATCH) -> "MaskedScorer":
        return cls(lm.model, lm.tokenizer, batch_size=batch_size, lm=lm)

    # ---- the engine's contract (accapp.scoring.api) ------------------------------------
    def execute(self, requests) -> dict:
        """SentencePLL for every PLLRequest; all requests of one sentence share one result."""
        wanted: dict[str, dict[str, set]] = {rule: {} for rule in WORD_RULES}
        for r in requests:
            if not isinstance(r, PLLRequest):
                raise UserError(f"A masked LM cannot answer {type(r).__name__}: pick a causal LM for this method.")
            if r.variant not in VARIANTS:
                raise ValueError(f"unknown PLL variant {r.variant!r}")
            wanted[_check_rule(r.words)].setdefault(source_of(r), set()).add(r.variant)
        out: dict = {}
        # Chunks of sentences keep the cache from evicting what this call still needs.
        step = max(1, self.cache_size // 4)
        for rule, by_text in wanted.items():
            texts = list(by_text)
            for i in range(0, len(texts), step):
                part = texts[i : i + step]
                variants = set().union(*(by_text[t] for t in part)) | set(ALWAYS)
                for t, d in zip(part, self.sentence_details(part, variants, words=rule)):
                    out[(t, rule)] = d
        return {r: out[(source_of(r), r.words)] for r in requests}

    def n_tokens(self, text: str) -> int:
        """Scored tokens of the bare sentence (special tokens excluded)."""
        return len(self.encode(text))

    def token_requests(self, text: str, words: str = "project", context: str = "") -> list:
        """The requests whose results give a sentence's per-token view (PLL-original, and
        PLL-word-l2r for the inflation of multi-token words), under the word rule `words`."""
        return [PLLRequest(text, v, _check_rule(words), context) for v in ALWAYS]

    def show(self, request) -> list[dict]:
        """The masked inputs a PLL request feeds the model, one per scored token, as text."""
        words = getattr(request, "words", "project")
        enc = self.encode(source_of(request), words)
        shown = []
        for t, m in enumerate(mask_sets(enc.word_of, request.variant)):
            pieces = self.tokenizer.convert_ids_to_tokens(self.masked_input(source_of(request), m, words))
            shown.append({"kind": f"predicts token {t} ({enc.pieces[t]})", "masked": list(m), "text": " ".join(pieces)})
        return shown

    def sentence_details(self, texts: list[str], variants, words: str = "project") -> list[SentencePLL]:
        """SentencePLL of each text with at least `variants` under the word rule `words`, from
        the cache where possible (keyed by text and rule)."""
        want = set(variants)
        cache = self._detail_cache
        missing = [t for t in dict.fromkeys(texts) if not ((t, words) in cache and want <= set(cache[(t, words)].variants))]
        if missing:
            order = tuple(v for v in VARIANTS if v in want)
            for t, d in zip(missing, self.score_sentences(missing, order, words=words)):
                cache[(t, words)] = d
        out = []
        for t in texts:
            cache.move_to_end((t, words))
            out.append(cache[(t, words)])
        while len(cache) > self.cache_size:
            cache.popitem(last=False)
        return out

    # ---- tokenization -------------------------------------------------------------
    def encode(self, text, words: str = "project") -> EncodedSentence:
        """The sentence tokenized, with its words under the rule `words` (see the module doc).
        An InContext: the sentence tokenized with the seam before it, the context's tokens put
        before its first scored token; positions, offsets and words are the sentence's own."""
        key = (text, _check_rule(words))
        hit = self._encode_cache.get(key)
        if hit is not None:
            return hit
        if isinstance(text, InContext):
            hit = self._encode_in_context(text, words)
            self._encode_cache[key] = hit
            return hit
        kwargs = dict(add_special_tokens=True, return_offsets_mapping=True, return_special_tokens_mask=True)
        try:  # text that looks like "[MASK]" is text, not a special token
            enc = self.tokenizer(text, split_special_tokens=True, **kwargs)
        except TypeError:
            enc = self.tokenizer(text, **kwargs)
        ids = list(enc["input_ids"])
        special = list(enc["special_tokens_mask"])
        offs = [tuple(o) for o in enc["offset_mapping"]]
        positions = tuple(p for p in range(len(ids)) if not special[p])
        offsets = tuple((int(offs[p][0]), int(offs[p][1])) for p in positions)
        pieces = tuple(self.tokenizer.convert_ids_to_tokens([ids[p] for p in positions]))
        if words == "tokenizer":
            word_list, word_of = tokenizer_words(text, enc.word_ids(), positions, offsets)
        else:
            word_list = tuple(split_words(text))
            word_of = tuple(assign_words(offsets, [(w.start, w.end) for w in word_list]))
        hit = EncodedSentence(text, tuple(int(i) for i in ids), positions, offsets, pieces, word_list, word_of)
        self._encode_cache[key] = hit
        if len(self._encode_cache) > 50_000:
            self._encode_cache.popitem(last=False)
        return hit

    def _encode_in_context(self, source: InContext, words: str) -> EncodedSentence:
        lead = seam(source.context, source.text)
        enc = self.encode(lead + source.text, words)
        try:
            ctx = self.tokenizer(source.context, add_special_tokens=False, split_special_tokens=True)["input_ids"]
        except TypeError:
            ctx = self.tokenizer(source.context, add_special_tokens=False)["input_ids"]
        at = enc.positions[0] if enc.positions else len(enc.input_ids)
        n = len(ctx)
        text = source.text
        offsets = tuple(shifted(enc.offsets, len(lead)))
        found = tuple(replace(w, start=max(w.start - len(lead), 0), end=max(w.end - len(lead), 0)) for w in enc.words)
        found = tuple(replace(w, text=text[w.start : w.end]) for w in found)
        return EncodedSentence(text, enc.input_ids[:at] + tuple(int(i) for i in ctx) + enc.input_ids[at:],
                               tuple(p + n for p in enc.positions), offsets, enc.pieces, found, enc.word_of)

    def masked_input(self, text: str, masked: tuple[int, ...], words: str = "project") -> list[int]:
        """Model input ids of `text` with the given scored tokens replaced by the mask token."""
        enc = self.encode(text, words)
        ids = list(enc.input_ids)
        for t in masked:
            ids[enc.positions[t]] = self.mask_id
        return ids

    # ---- scoring ----------------------------------------------------------------------
    def _run_chunk(self, chunk: list, encs: list[EncodedSentence]) -> list[np.ndarray]:
        """chunk: list of (sentence index, mask set, target token indices). Log-probs per copy."""
        lengths = [len(encs[s].input_ids) for s, _, _ in chunk]
        width = max(lengths)
        ids = torch.full((len(chunk), width), self.pad_id, dtype=torch.long)
        att = torch.zeros((len(chunk), width), dtype=torch.long)
        rows_b, rows_p, gold = [], [], []
        for b, (s, masked, targets) in enumerate(chunk):
            enc = encs[s]
            x = list(enc.input_ids)
            for t in masked:
                x[enc.positions[t]] = self.mask_id
            ids[b, : len(x)] = torch.tensor(x)
            att[b, : len(x)] = 1
            for t in targets:
                rows_b.append(b)
                rows_p.append(enc.positions[t])
                gold.append(enc.input_ids[enc.positions[t]])
        ids, att = ids.to(self.device), att.to(self.device)
        rb = torch.tensor(rows_b, device=self.device)
        rp = torch.tensor(rows_p, device=self.device)
        gold_t = torch.tensor(gold, device=self.device).unsqueeze(1)
        if self._split is not None:
            encoder, head = self._split
            hidden = encoder(input_ids=ids, attention_mask=att)[0]
            rows = hidden[rb, rp]
            parts = []
            for r0 in range(0, rows.shape[0], DEFAULT_HEAD_ROWS):
                logits = _at_least_fp32(head(rows[r0 : r0 + DEFAULT_HEAD_ROWS]))
                parts.append(target_logprobs(logits, gold_t[r0 : r0 + DEFAULT_HEAD_ROWS, 0]))
            lp = torch.cat(parts)
        else:
            logits = self.model(input_ids=ids, attention_mask=att).logits
            rows = _at_least_fp32(logits[rb, rp])
            lp = target_logprobs(rows, gold_t[:, 0])
        self.forward_passes += 1
        self.copies_scored += len(chunk)
        lp = lp.double().cpu().numpy()
        out, k = [], 0
        for _, _, targets in chunk:
            out.append(lp[k : k + len(targets)])
            k += len(targets)
        return out

    def score_sentences(self, texts: list[str], variants=VARIANTS, words: str = "project") -> list[SentencePLL]:
        """PLL detail of every text under the given variants and word rule; all copies share
        the chunks."""
        variants = tuple(dict.fromkeys(variants))
        for v in variants:
            if v not in VARIANTS:
                raise ValueError(f"unknown PLL variant {v!r}")
        encs = [self.encode(t, words) for t in texts]
        uniq: dict[tuple, int] = {}
        sent_of = [uniq.setdefault(e.input_ids + (-1,) + tuple(e.word_of), len(uniq)) for e in encs]
        first = {}
        for i, s in enumerate(sent_of):
            first.setdefault(s, i)
        u_encs = [encs[first[s]] for s in range(len(uniq))]
        plans = [{v: mask_sets(e.word_of, v) for v in variants} for e in u_encs]
        copies: dict[tuple, dict] = {}  # (sentence, mask set) -> targets (ordered set)
        for s, plan in enumerate(plans):
            for v in variants:
                for t, m in enumerate(plan[v]):
                    copies.setdefault((s, m), {})[t] = None
        order = sorted(copies, key=lambda k: (len(u_encs[k[0]].input_ids), k[0], k[1]))
        table: dict[tuple, float] = {}
        with torch.inference_mode():
            for c0 in range(0, len(order), self.batch_size):
                chunk = [(s, m, tuple(copies[(s, m)])) for s, m in order[c0 : c0 + self.batch_size]]
                for (s, m, targets), lps in zip(chunk, self._run_chunk(chunk, u_encs)):
                    for t, x in zip(targets, lps):
                        table[(s, m, t)] = float(x)
        return [self._assemble(encs[i], plans[s], s, table, variants) for i, s in enumerate(sent_of)]

    def sentence_pll(self, text: str, variants=VARIANTS, words: str = "project") -> SentencePLL:
        return self.score_sentences([text], variants, words=words)[0]

    @staticmethod
    def _assemble(enc: EncodedSentence, plan: dict, s: int, table: dict, variants: tuple) -> SentencePLL:
        text = enc.text
        tokens = []
        for t in range(len(enc)):
            a, b = enc.offsets[t]
            w = enc.word_of[t]
            tokens.append(TokenPLL(
                index=t,
                position=enc.positions[t],
                token_id=enc.input_ids[enc.positions[t]],
                token=text[a:b],
                piece=enc.pieces[t],
                start=a,
                end=b,
                word_index=w,
                word=enc.words[w].text if 0 <= w < len(enc.words) else "",
                logprob={v: table[(s, plan[v][t], t)] for v in variants},
                masked={v: list(plan[v][t]) for v in variants},
            ))
        words = []
        for word in enc.words:
            mine = [t for t in range(len(enc)) if enc.word_of[t] == word.index]
            lp = {v: float(np.sum([tokens[t].logprob[v] for t in mine], dtype=np.float64)) for v in variants}
            inflation = lp["original"] - lp["word_l2r"] if "original" in lp and "word_l2r" in lp else None
            words.append(WordPLL(
                index=word.index,
                text=word.text,
                start=word.start,
                end=word.end,
                tokens=mine,
                pieces=[tokens[t].token for t in mine],
                logprob=lp,
                inflation=inflation,
                inflated=bool(len(mine) > 1 and inflation is not None and inflation > INFLATION_MARGIN),
            ))
        scores = {v: float(np.sum([tk.logprob[v] for tk in tokens], dtype=np.float64)) for v in variants}
        return SentencePLL(text, variants, tokens, words, scores)
