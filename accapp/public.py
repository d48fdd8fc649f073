"""The Python API in three lines (minicons' habit: a researcher guesses the call):

    import accapp
    df = accapp.score_pairs([("These casseroles disgust Kayla.", "These casseroles disgusts Kayla.")],
                            model="smollm2-135m-instruct", methods=["lp", "mean_lp"])
    tokens = accapp.token_scores(["These casseroles disgust Kayla."])
    expected = accapp.next_tokens(["These casseroles disgust Kayla."], k=5)   # what the model expected instead

`model` is a registry id, a Hugging Face hub id (org/name[@revision]), a local folder or a .gguf file.
"""

from __future__ import annotations

import math
import warnings

import pandas as pd

from accapp.errors import UserError
from accapp.models import DEFAULT_MODEL
from accapp.schema import IDENTICAL_WARNING, duplicate_pairs, pair_flag

CHUNK = 64  # pairs per engine call: one progress step; methods share forward passes within it


def _engine(model: str, dtype: str, quantization: str | None, trust_remote_code: bool, max_memory, **options):
    """The model host's engine (accapp.service.host): the app's memory budget and pool of models and engines, so a
    second call with the same model and options reuses it, and models beyond the budget are unloaded."""
    from accapp.service.host import get_state

    return get_state().engine_for(model, dtype, quantization, trust_remote_code=trust_remote_code,
                                  max_memory=max_memory, **options)


def _as_pairs(pairs, context=None) -> list[tuple]:
    """(good, bad, context) of each pair; a pair's own context (a third item, a "context" key or
    column; empty or NaN = none) else the call's."""
    default = context or ""

    def own(c):
        return default if c is None or (isinstance(c, float) and c != c) or c == "" else c

    if isinstance(pairs, pd.DataFrame):
        ctx = pairs["context"] if "context" in pairs else [None] * len(pairs)
        return [(g, b, own(c)) for g, b, c in zip(pairs["good"], pairs["bad"], ctx)]
    out = []
    for p in pairs:
        if isinstance(p, dict):
            out.append((p["good"], p["bad"], own(p.get("context"))))
        else:
            p = tuple(p)
            if len(p) not in (2, 3):
                raise UserError(f"A pair is (good, bad) or (good, bad, context); got {len(p)} items.")
            out.append((p[0], p[1], own(p[2] if len(p) == 3 else None)))
    return out


def score_pairs(pairs, model: str = DEFAULT_MODEL, methods="all", *, language: str | None = None, dtype: str = "fp32",
                quantization: str | None = None, in_template_scope: str = "whole", progress: bool = True,
                trust_remote_code: bool = False, max_memory: int | str | None = None,
                context: str | None = None) -> pd.DataFrame:
    """Score minimal pairs: (good, bad) tuples, {"good", "bad"} dicts, or a DataFrame with those columns.

    `context`: text both sentences follow (a discourse, a question), conditioned on and never scored;
    a pair's own context (a third item, a "context" key or column) takes its place. The LP family and
    PLL condition on it; in-template and prompting methods read their templates without it
    (accapp/scoring/context.py). With any context the result has a `context` column after `bad`.

    Returns one row per pair x method x template x answer order: pair (its position), good, bad,
    method, template, variant, score_good, score_bad, verdict ("good" when the good sentence
    scores strictly higher), prediction (what a prompt method's model answered), len_good and
    len_bad (tokens), flag ("identical": the two sentences are the same after normalisation, no pair;
    a UserWarning names them, and pairs repeated in the input, also in the frame's attrs["warnings"]).
    `methods`: a list of method ids (accapp.methods.method_ids())
    or "all". A pair that fails the input checks raises UserError naming its position. `model`: a
    registry id, a hub id (org/name[@revision]), a local folder or a .gguf file; trust_remote_code
    lets a model that ships its own code run it; max_memory ('16GB', bytes) refuses a model whose
    estimate exceeds it before it loads. A method the model cannot run (an answer that is not one
    token) gets one row per pair with the reason in `prediction`, verdict "unavailable", no scores.
    """
    from tqdm.auto import tqdm

    from accapp.methods import resolve

    resolve(methods, None)  # too many or unknown method ids fail before a model loads
    engine = _engine(model, dtype, quantization, trust_remote_code, max_memory, language=language,
                     in_template_scope=in_template_scope)
    engine.resolve(methods)  # ... and methods the model's kind cannot run, before any work
    triples = _as_pairs(pairs, context)
    valid, errors = engine.check_pairs((i, good, bad, {"pair": i}, ctx) for i, (good, bad, ctx) in enumerate(triples))
    if errors:
        first = min(errors)
        raise UserError(f"Pair {first}: {errors[first]}")
    checked = [p for _, p in valid]
    notes = _pair_warnings(checked)
    for note in notes:
        warnings.warn(note, UserWarning, stacklevel=2)
    rows = []
    blocks = [checked[start : start + CHUNK] for start in range(0, len(checked), CHUNK)]
    scored = engine.score_blocks(blocks, methods, language)  # the next block tokenized while one is scored
    for results in tqdm(scored, total=len(blocks), desc=f"{model}", unit=f"×{CHUNK} pairs",
                        disable=not progress or len(blocks) < 2):
        for res in results:
            base = {"pair": res.pair.meta["pair"], "good": res.pair.good, "bad": res.pair.bad,
                    "context": res.pair.context, "flag": pair_flag(res.pair.good, res.pair.bad)}
            rows += [{**base, **s.as_dict(), "len_good": res.len_good, "len_bad": res.len_bad} for s in res.scores]
            rows += [{**base, "method": m, "template": "-", "variant": "", "score_good": math.nan, "score_bad": math.nan,
                      "verdict": "unavailable", "prediction": why, "len_good": res.len_good, "len_bad": res.len_bad}
                     for m, why in res.unavailable.items()]
    columns = ["pair", "good", "bad", "method", "template", "variant", "score_good", "score_bad", "verdict",
               "prediction", "len_good", "len_bad", "flag"]
    if any(ctx for *_, ctx in triples):
        columns.insert(3, "context")
    out = pd.DataFrame(rows, columns=columns)
    out.attrs["warnings"] = notes
    return out


def _pair_warnings(pairs) -> list[str]:
    """Warnings about checked pairs that are no pairs (identical sentences) or repeat an earlier one."""
    out = []
    same = [p.meta["pair"] for p in pairs if pair_flag(p.good, p.bad)]
    if same:
        out.append(f"Pair{'s' if len(same) > 1 else ''} {', '.join(map(str, same))}: {IDENTICAL_WARNING}")
    repeats, distinct = duplicate_pairs((p.good, p.bad) for p in pairs)
    if repeats:
        out.append(f"{repeats} pair{'s' if repeats > 1 else ''} repeat{'s' if repeats == 1 else ''} an earlier pair "
                   f"({distinct} distinct pair{'s' if distinct > 1 else ''} occur more than once); each is scored.")
    return out


def token_scores(sentences, model: str = DEFAULT_MODEL, *, dtype: str = "fp32", quantization: str | None = None,
                 trust_remote_code: bool = False, max_memory: int | str | None = None) -> pd.DataFrame:
    """Per-token log-probabilities of each sentence: sentence (its position), text, token
    (its position), token_text, start and end (character offsets), logprob (nats; a masked LM's
    PLL-original), surprisal_bits (-logprob / ln 2). `model`: any form score_pairs takes."""
    if isinstance(sentences, str):
        sentences = [sentences]
    engine = _engine(model, dtype, quantization, trust_remote_code, max_memory)
    rows = []
    for i, (text, (tokens, _)) in enumerate(zip(sentences, engine.token_scores(list(sentences)))):
        for k, t in enumerate(tokens):
            rows.append({"sentence": i, "text": text.strip(), "token": k, "token_text": t["token"], "start": t["start"],
                         "end": t["end"], "logprob": t["logprob"], "surprisal_bits": -t["logprob"] / math.log(2)})
    return pd.DataFrame(rows, columns=["sentence", "text", "token", "token_text", "start", "end", "logprob",
                                       "surprisal_bits"])


def next_tokens(sentences, model: str = DEFAULT_MODEL, k: int = 5, *, dtype: str = "fp32", quantization: str | None = None,
                trust_remote_code: bool = False, max_memory: int | str | None = None) -> pd.DataFrame:
    """What a causal LM expected instead, at each position of each sentence: its k (1 to 20) most
    probable next tokens, from the pass that scores the sentence. One row per sentence x position
    x candidate: sentence (its position), text, level ("token": at each token position, the last
    one after the sentence; "word": at the first token of each word, among the tokens that begin
    a new word), position (token index or word index), item (the token or word there), context
    (the text before it), rank, candidate (the token's text, leading space kept; "" for a special
    token such as the end of text), probability (p(candidate | context), 0 to 1), logprob (nats),
    next_word_begins_probability (level "word": probability / P(a new word begins there)),
    item_probability (the token's, or the word's by the word view's rule). A masked LM: UserError.
    `model`: any form score_pairs takes."""
    if isinstance(sentences, str):
        sentences = [sentences]
    engine = _engine(model, dtype, quantization, trust_remote_code, max_memory)
    found = engine.expected_scores(list(sentences), k)
    rows = []
    for i, text in enumerate(sentences):
        e = found[text]
        for t in e["tokens"]:
            for c in t["expected"]:
                rows.append({"sentence": i, "text": text.strip(), "level": "token", "position": t["index"],
                             "item": t["token"] or "", "context": t["context"], "rank": c["rank"],
                             "candidate": c["token"] or "", "probability": c["p"], "logprob": c["logprob"],
                             "next_word_begins_probability": math.nan,
                             "item_probability": t["p"] if t["p"] is not None else math.nan})
        for w in e["words"]:
            for c in w["expected"]:
                rows.append({"sentence": i, "text": text.strip(), "level": "word", "position": w["index"],
                             "item": w["word"], "context": w["context"], "rank": c["rank"],
                             "candidate": c["token"] or "", "probability": c["p"], "logprob": c["logprob"],
                             "next_word_begins_probability": c["p_next_word_begins"], "item_probability": w["p_word"]})
    return pd.DataFrame(rows, columns=["sentence", "text", "level", "position", "item", "context", "rank", "candidate",
                                       "probability", "logprob", "next_word_begins_probability", "item_probability"])
