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

import pandas as pd

from accapp.errors import UserError
from accapp.models import DEFAULT_MODEL

CHUNK = 64  # pairs per engine call: one progress step; methods share forward passes within it


def _engine(model: str, dtype: str, quantization: str | None, trust_remote_code: bool, max_memory, **options):
    """The model host's engine (accapp.service.host): the app's memory budget and pool of models and engines, so a
    second call with the same model and options reuses it, and models beyond the budget are unloaded."""
    from accapp.service.host import get_state

    return get_state().engine_for(model, dtype, quantization, trust_remote_code=trust_remote_code,
                                  max_memory=max_memory, **options)


def _as_pairs(pairs) -> list[tuple[str, str]]:
    if isinstance(pairs, pd.DataFrame):
        return list(zip(pairs["good"], pairs["bad"]))
    out = []
    for p in pairs:
        out.append((p["good"], p["bad"]) if isinstance(p, dict) else tuple(p))
    return out


def score_pairs(pairs, model: str = DEFAULT_MODEL, methods="all", *, language: str | None = None, dtype: str = "fp32",
                quantization: str | None = None, in_template_scope: str = "whole", progress: bool = True,
                trust_remote_code: bool = False, max_memory: int | str | None = None) -> pd.DataFrame:
    """Score minimal pairs: (good, bad) tuples, {"good", "bad"} dicts, or a DataFrame with those columns.

    Returns one row per pair x method x template x answer order: pair (its position), good, bad,
    method, template, variant, score_good, score_bad, verdict ("good" when the good sentence
    scores strictly higher), prediction (what a prompt method's model answered), len_good and
    len_bad (tokens). `methods`: a list of method ids (accapp.methods.method_ids())
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
    valid, errors = engine.check_pairs((i, good, bad, {"pair": i}) for i, (good, bad) in enumerate(_as_pairs(pairs)))
    if errors:
        first = min(errors)
        raise UserError(f"Pair {first}: {errors[first]}")
    checked = [p for _, p in valid]
    rows = []
    steps = range(0, len(checked), CHUNK)
    for start in tqdm(steps, desc=f"{model}", unit=f"×{CHUNK} pairs", disable=not progress or len(steps) < 2):
        for res in engine.score_pairs(checked[start : start + CHUNK], methods, language):
            base = {"pair": res.pair.meta["pair"], "good": res.pair.good, "bad": res.pair.bad}
            rows += [{**base, **s.as_dict(), "len_good": res.len_good, "len_bad": res.len_bad} for s in res.scores]
            rows += [{**base, "method": m, "template": "-", "variant": "", "score_good": math.nan, "score_bad": math.nan,
                      "verdict": "unavailable", "prediction": why, "len_good": res.len_good, "len_bad": res.len_bad}
                     for m, why in res.unavailable.items()]
    columns = ["pair", "good", "bad", "method", "template", "variant", "score_good", "score_bad", "verdict",
               "prediction", "len_good", "len_bad"]
    return pd.DataFrame(rows, columns=columns)


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
