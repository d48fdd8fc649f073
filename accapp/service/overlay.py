"""The sentence itself coloured token by token, as GLTR colours a text (Gehrmann, Strobelt & Rush 2019):
by the rank of each token among the model's guesses for that position, or by its surprisal.

Rank: 1 + the number of vocabulary entries the model found more probable than the token actually there,
from the real model's next-token log-probabilities (scoring/topk.token_ranks); GLTR's four buckets, in
its colours: among the top 10 (green), the top 100 (yellow), the top 1000 (red), beyond (purple).
Surprisal: the same four colours at the matching probabilities, p of at least 1/10, 1/100, 1/1000 and
below, i.e. up to log2(10) = 3.32 bits, log2(100), log2(1000) and beyond (in nats: ln 10, ...).

The colouring is pure (:func:`segments`, :func:`legend`): tokens and ranks in, coloured pieces of the
sentence out. :func:`pair_ranks` asks the model host for the ranks of a probed pair (one forward pass
per sentence, kept in a small cache, so a repeated pair costs nothing).
"""

from __future__ import annotations

import math

from accapp.service.host import get_state
from accapp.service.probe_cache import BoundedCache

LN2 = math.log(2.0)
MODES = ("rank", "surprisal")
# GLTR's own colours (its demo's top-10, top-100, top-1000 and other).
COLOURS = ("#ADFF80", "#FFEA80", "#FF9280", "#E5B0FF")
RANK_LIMITS = (10, 100, 1000)  # a rank at most 10 is in bucket 0, at most 100 in 1, at most 1000 in 2, else 3
SURPRISAL_LIMITS_NATS = tuple(math.log(n) for n in RANK_LIMITS)  # -ln p at p = 1/10, 1/100, 1/1000


def rank_bucket(rank: int) -> int:
    """0 (top 10), 1 (top 100), 2 (top 1000) or 3 (beyond) of a rank counted from 1."""
    for bucket, limit in enumerate(RANK_LIMITS):
        if rank <= limit:
            return bucket
    return len(RANK_LIMITS)


def surprisal_bucket(logprob: float) -> int:
    """0 (p at least 1/10), 1 (at least 1/100), 2 (at least 1/1000) or 3 (below) of a log-probability in nats."""
    surprisal = -logprob
    for bucket, limit in enumerate(SURPRISAL_LIMITS_NATS):
        if surprisal <= limit + 1e-12:  # p = 1/10 exactly is still "at least 1/10"
            return bucket
    return len(SURPRISAL_LIMITS_NATS)


def _number(x: float) -> str:
    return f"{x:.1f}"


def legend(mode: str, unit: str = "bits") -> list[dict]:
    """The four colours and what each means: [{colour, label}], in the mode's own words."""
    if mode == "rank":
        labels = ["among the model's top 10 guesses", "top 100", "top 1000", "beyond the top 1000"]
    else:
        scale = LN2 if unit == "bits" else 1.0
        lim = [_number(v / scale) for v in SURPRISAL_LIMITS_NATS]
        labels = [f"up to {lim[0]} {unit} (p at least 1 in 10)", f"up to {lim[1]} {unit} (1 in 100)",
                  f"up to {lim[2]} {unit} (1 in 1000)", f"over {lim[2]} {unit} (rarer than 1 in 1000)"]
    return [{"colour": c, "label": t} for c, t in zip(COLOURS, labels)]


def _title(token: str, rank: int | None, logprob: float, unit: str) -> str:
    scale = LN2 if unit == "bits" else 1.0
    text = f"“{token.strip() or token}”: {_number(-logprob / scale)} {unit}"
    return text + (f", rank {rank:,} among the model's guesses" if rank is not None else "")


def segments(text: str, tokens: list[dict], mode: str, unit: str = "bits", ranks: list[int] | None = None) -> list[dict]:
    """The sentence cut into pieces: each token's text (a leading space left uncoloured) with its bucket
    (0-3), colour, rank (or None), surprisal in `unit` and a hover title; the text between tokens as
    pieces with bucket None. mode "rank" needs `ranks` (one per token); without them it colours by
    surprisal. tokens: [{start, end, logprob (nats)}] with character offsets into text."""
    if mode not in MODES:
        raise ValueError(f"no such colouring: {mode!r} (one of {', '.join(MODES)})")
    by_rank = mode == "rank" and ranks is not None and len(ranks) == len(tokens)
    scale = LN2 if unit == "bits" else 1.0
    out: list[dict] = []
    at = 0

    def plain(a: int, b: int) -> None:
        if b > a:
            out.append({"text": text[a:b], "bucket": None, "colour": None, "rank": None, "surprisal": None, "title": ""})

    for i, t in enumerate(tokens):
        start, end = max(int(t["start"]), at), int(t["end"])
        if end <= start:
            continue  # a token with no text of its own here (a piece of a character already shown)
        plain(at, start)
        body = text[start:end]
        lead = len(body) - len(body.lstrip())
        plain(start, start + lead)
        rank = int(ranks[i]) if ranks is not None and len(ranks) == len(tokens) else None
        bucket = rank_bucket(rank) if by_rank else surprisal_bucket(float(t["logprob"]))
        if start + lead < end:
            out.append({"text": text[start + lead : end], "bucket": bucket, "colour": COLOURS[bucket], "rank": rank,
                        "surprisal": -float(t["logprob"]) / scale, "title": _title(body, rank, float(t["logprob"]), unit)})
        at = end
    plain(at, len(text))
    return out


def counts(pieces: list[dict]) -> list[int]:
    """How many tokens fall in each of the four buckets."""
    n = [0] * len(COLOURS)
    for p in pieces:
        if p["bucket"] is not None:
            n[p["bucket"]] += 1
    return n


# ------------------------------------------------------------------------------------------ the ranks of a pair
_CACHE_SIZE = 256
_cache = BoundedCache(_CACHE_SIZE)  # pairs' ranks, least recently used dropped first


def _token_ranks(engine, text: str, context: str) -> list[int]:
    """The engine's ranks of a sentence's tokens (the scoring layer's token_ranks on its scorer)."""
    return engine.token_ranks(text, context)


def _ranks_of(engine, good: str, bad: str, context: str) -> dict:
    return {"good": _token_ranks(engine, good, context), "bad": _token_ranks(engine, bad, context)}


def pair_ranks(model_id: str, kind: str, good: str, bad: str, context: str = "", state=None) -> dict | None:
    """{good, bad: each token's rank} for a probed pair from the model itself (None for a masked LM, which
    has no next-token guesses). Kept in a small cache by model, sentences and context."""
    if kind != "causal":
        return None
    key = (model_id, good, bad, context or "")
    known = _cache.get(key)
    if known is not None:
        return known
    state = state or get_state()
    ranks = state.with_engine(model_id, _ranks_of, good, bad, context or "")
    if ranks is not None:
        _cache.put(key, ranks)
    return ranks
