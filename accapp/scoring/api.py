"""The contract between judgment methods and scorers, in the spirit of lm-evaluation-harness's
`api/instance.py`: a pair, what a method asks a scorer to compute (a request), and what
comes back (a result). Plain types only: a scorer never knows which method asked, and a
method never touches a model.

Every scorer answers `execute(requests) -> {request: result}`:
- SeqRequest  -> SeqResult   (causal LMs: log p of every token of a string)
- NextRequest -> np.ndarray  (causal LMs: log p of each answer written right after a prompt;
  raw logits when NextRequest.raw)
- PLLRequest  -> SentencePLL (masked LMs: pseudo-log-likelihood under one PLL variant)
- BoundaryRequest -> np.ndarray (causal LMs: log P(next token begins a word) after each token)
- TopKRequest -> TopKResult (causal LMs: the k most probable next tokens after each token)

A scorer with `staged = True` also answers it in three stages, execute(r) =
collect_call(run_call(prepare_call(r))), where only run_call uses the model: Engine.score_blocks then runs
the other two for neighbouring blocks on a second thread while the model runs. The prepared call carries
`begun`, a threading.Event that run_call sets as its first pass goes to the model (and at its end in any
case): the second thread's stages wait for it, so the work that pass needs on the calling thread comes first.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Protocol

import numpy as np

# Nats: PLL-original - PLL-word-l2r of a multi-token word above this marks it inflated.
INFLATION_MARGIN = 1.0


@dataclass(frozen=True)
class Pair:
    good: str
    bad: str
    meta: dict = field(default_factory=dict, hash=False, compare=False)
    # Text both sentences follow (a discourse, a question): conditioned on, never scored
    # (accapp/scoring/context.py). "" = none. Which methods use it: methods.json's families.
    context: str = ""


@dataclass(frozen=True)
class SeqRequest:
    """Score every token of the concatenated parts (each part tokenized on its own). With a
    context, the parts follow it (start token, context, seam, parts: accapp/scoring/context.py)
    and only the parts' tokens are scored; offsets stay those of the joined parts."""

    parts: tuple[str, ...]
    context: str = ""


@dataclass(frozen=True)
class NextRequest:
    """Log-probs of each answer written right after the prompt (full-vocabulary softmax)."""

    prompt: str
    answers: tuple[str, ...]
    prefix: str = field(default="", compare=False, hash=False)  # the prompt's text before any sentence
    # "continuation": an answer's tokens are those of prompt + answer past the prompt's own tokens
    # (so "Answer: " + "Yes" reads " Yes" after "Answer:"); "vocabulary": the prompt exactly as
    # written, then the vocabulary entry spelled as the answer ("Yes"), as Ide et al.'s code reads it.
    read: str = "continuation"
    raw: bool = False  # raw logits of the answers instead of log-probs (the authors' raw-logit ratio)


@dataclass(frozen=True)
class PLLRequest:
    """A sentence's pseudo-log-likelihood under one variant (Kauf & Ivanova 2023). ``words``:
    the word rule of PLL-word-l2r / PLL-whole-word, "project" (accapp.words) or "tokenizer"
    (the tokenizer's own word split, as Kauf & Ivanova's code and minicons; docs/pll_words.md)."""

    text: str
    variant: str
    words: str = "project"
    context: str = ""  # left context, never masked nor scored (accapp/scoring/context.py)


@dataclass(frozen=True)
class BoundaryRequest:
    """log P(the next token begins a new word | start token + the sentence's first k tokens)
    for k = 0..n (n tokens of the sentence, tokenized as a SeqRequest((text,)) is): an array
    of n + 1 values, k = 0 defined as 0.0. Which tokens begin a word: accapp/scoring/boundary.py;
    what the values are for: accapp/scoring/word_prob.py (Pimentel & Meister 2024). With a
    context, the sentence's first k tokens follow the context (k = 0 is still 0.0: the seam is
    a space or a CJK character, after which every token begins a word)."""

    text: str
    context: str = ""


@dataclass(frozen=True)
class TopKRequest:
    """The k most probable next tokens at each position k = 0..n of a sentence (n tokens,
    tokenized as a SeqRequest((text,)) is; position j predicts token j, position n what follows
    the sentence), from the pass that scores it: a TopKResult. Also the k most probable among
    the tokens that begin a new word there (accapp/scoring/boundary.py's B; every token where
    every token begins a word), for the word view (accapp/scoring/topk.py)."""

    text: str
    k: int


@dataclass
class TopKResult:
    """A TopKRequest's answer: arrays of shape (n + 1, k), row j predicting the sentence's token j
    (row n: what follows the sentence). Log-probs in nats, full-vocabulary softmax; an empty slot
    (fewer than k candidates) has id -1 and log-prob -inf."""

    ids: np.ndarray
    logprobs: np.ndarray
    word_ids: np.ndarray  # the same among the tokens that begin a new word at that position
    word_logprobs: np.ndarray  # log p(token | context), not renormalised


@dataclass
class SeqResult:
    ids: list[int]
    tokens: list[str]
    offsets: list[tuple[int, int]]
    part_of_token: list[int]
    logprobs: np.ndarray

    def part_logprobs(self, part: int) -> np.ndarray:
        mask = np.asarray(self.part_of_token) == part
        return self.logprobs[mask]


@dataclass
class TokenPLL:
    index: int  # among the scored tokens (0-based)
    position: int  # in the model input (special tokens counted)
    token_id: int
    token: str  # the characters it covers, text[start:end]
    piece: str  # the tokenizer's token string ("##la", "Ġdon", ...)
    start: int
    end: int
    word_index: int
    word: str
    logprob: dict = field(default_factory=dict)  # variant -> log p (nats)
    masked: dict = field(default_factory=dict)  # variant -> scored-token indices masked for it


@dataclass
class WordPLL:
    index: int
    text: str
    start: int
    end: int
    tokens: list  # scored-token indices
    pieces: list  # their texts
    logprob: dict = field(default_factory=dict)  # variant -> sum over the word's tokens
    inflation: float | None = None  # logprob["original"] - logprob["word_l2r"], when both computed
    inflated: bool = False


@dataclass
class SentencePLL:
    text: str
    variants: tuple
    tokens: list  # TokenPLL
    words: list  # WordPLL
    scores: dict  # variant -> PLL

    def to_dict(self) -> dict:
        return {
            "text": self.text,
            "variants": list(self.variants),
            "scores": dict(self.scores),
            "tokens": [asdict(t) for t in self.tokens],
            "words": [asdict(w) for w in self.words],
            "inflation_margin": INFLATION_MARGIN,
        }

    def token_logprobs(self, variant: str) -> np.ndarray:
        return np.array([t.logprob[variant] for t in self.tokens], dtype=np.float64)


class Scorer(Protocol):
    """What the engine needs of a scorer; causal, masked and the naive reference all answer it."""

    kind: str  # "causal" or "masked": which methods it can serve
    lm: object  # the LoadedModel

    def execute(self, requests: list) -> dict: ...  # staged scorers: also prepare_call, run_call, collect_call

    def n_tokens(self, text: str) -> int: ...

    def token_requests(self, text: str) -> list: ...

    def show(self, request) -> list[dict]: ...
