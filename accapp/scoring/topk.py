"""What a causal LM expected at each position: its k most probable next tokens, from the pass
that scores the sentence, and the same read as words.

The scorer (accapp/scoring/causal.py) answers a TopKRequest from the projection that scores the
sentence's tokens: streamed_target_logprobs keeps a running top-k per row as the vocabulary
streams through (accapp/scoring/logsoftmax.py), so no second pass and no (N, V) logits. Its
log-probs are the full-vocabulary softmax's, logit minus the row's logsumexp, exactly as the
scored tokens' own.

Two readings, as the word view has two (docs/word_probability.md):

- tokens: at position j (the context = the start token and the sentence's first j tokens),
  the k most probable next tokens, each with p(t | context);
- words: at the first token of each word (the context = the words before it), the k most
  probable tokens among those that begin a new word there (B, accapp/scoring/boundary.py),
  each with p(t | c) and p(t | c) / P(B | c): the probability that the next word begins with
  t, given that the word before has ended. That is the word rule's own normalisation
  (log p(w | c) = Σ log p(tokens of w) + log P(B | c, w) − log P(B | c)): the probabilities
  that the next word begins with each token of B sum to 1, and a word's probability is at most
  that of its first token. The probability of a candidate as a whole word needs
  P(B | c, t), the model's view after t, which only a further pass per candidate gives; the
  sentence's own word has it (the word view's ``logprob``), and it is shown beside the
  candidates. 1 − P(B | c) is what the model gives to the word before going on.

Records are plain dicts (JSON-able), probabilities in [0, 1] and log-probs in nats.

A token's rank (:func:`token_ranks`, for the GLTR-style colouring of a sentence): 1 + the number of
vocabulary entries more probable than the token at its position, over the whole vocabulary, from one
forward pass of the model over the sentence as the scorer feeds it (start token, context).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from accapp.scoring.api import SeqRequest, TopKResult

K_MAX = 20  # the most candidates a position lists (settings.ACCAPP_TOP_K is bounded by it)


# ------------------------------------------------------------------------------------------ in the scorer
def top_rows(bounded: list, topk: list[int], binverse: torch.Tensor, n_rows: int):
    """(k, topk_of, extras) for a projection of n_rows unique hidden rows: the largest k asked,
    which rows want their top-k (each bounded sequence with topk[i] > 0: every one of its rows;
    binverse maps the bounded sequences' rows, in order, to the unique rows), and the dict the
    projection fills. k = 0: none asked."""
    k = max((topk[i] for i, _ in bounded), default=0)
    if not k:
        return 0, None, None
    topk_of = torch.zeros(n_rows, dtype=torch.bool)
    at = 0
    for i, node in bounded:
        if topk[i]:
            topk_of[binverse[at : at + len(node)]] = True
        at += len(node)
    return k, topk_of, {}


def split_top_rows(bounded: list, topk: list[int], binverse: torch.Tensor, topk_of: torch.Tensor, extras: dict) -> dict:
    """{sequence: TopKResult} from the projection's extras (top_rows); a sequence asking fewer than
    the largest k gets the first of them (torch.topk's order: most probable first)."""
    where = torch.cumsum(topk_of.long(), 0) - 1  # a unique row's place among the rows with a top-k
    out = {}
    at = 0
    for i, node in bounded:
        if topk[i]:
            sel, k = where[binverse[at : at + len(node)]], topk[i]
            out[i] = TopKResult(extras["topk_ids"][sel, :k].numpy(), extras["topk_logprobs"][sel, :k].double().numpy(),
                                extras["word_topk_ids"][sel, :k].numpy(), extras["word_topk_logprobs"][sel, :k].double().numpy())
        at += len(node)
    return out


# ------------------------------------------------------------------------------------------ records
def _candidates(ids, logprobs, texts: dict, log_pb: float | None = None) -> list[dict]:
    """One dict per listed candidate (empty slots left out): its token text (None: a special
    token, such as the end of text), id, p and log-prob; with log_pb (log P(B | context)) also
    p_next_word_begins = p / P(B | context)."""
    out = []
    for rank, (tid, lp) in enumerate(zip(_plain(ids), _plain(logprobs)), start=1):  # Python numbers: numpy's cost more here
        if tid < 0 or not math.isfinite(lp):
            continue
        item = {"rank": rank, "id": tid, "token": texts.get(tid), "p": math.exp(lp), "logprob": lp}
        if log_pb is not None:
            item["p_next_word_begins"] = math.exp(lp - log_pb)
        out.append(item)
    return out


def token_records(text: str, offsets, logprobs, top: TopKResult, texts: dict) -> list[dict]:
    """Per position j = 0..n: {index, context (the text before token j), token (its text; None at
    j = n, after the sentence), p (the model's probability of it; None at j = n), expected: the
    top-k candidates}. texts: id -> token text for every listed id."""
    n = len(offsets)
    logprobs = _plain(logprobs)
    out = []
    for j in range(n + 1):
        end = offsets[j - 1][1] if j else 0
        token = text[offsets[j][0] : offsets[j][1]] if j < n else None
        out.append({"index": j, "context": text[:end], "token": token,
                    "p": math.exp(logprobs[j]) if j < n else None,
                    "expected": _candidates(top.ids[j], top.logprobs[j], texts)})
    return out


def word_records(text: str, words: list[dict], logprobs, top: TopKResult, boundary, texts: dict) -> list[dict]:
    """Per word that owns a token: {index, word, context (the text before it), p_word (the word
    view's probability of the word itself, by the word rule), p_first_token (p of its first token
    after the context), p_first_token_begins (the same / P(B | context)), p_word_before_goes_on
    (1 − P(B | context): the next token continues the word before), expected: the top-k tokens
    that begin a new word here, each with p and p_next_word_begins}. words: the word view's
    records (accapp/scoring/word_prob.py); boundary: log P(B | first k tokens), k = 0..n."""
    bnd = np.asarray(boundary, dtype=np.float64)
    out = []
    for w in words:
        if not w["tokens"]:
            continue
        a = w["tokens"][0]
        log_pb = float(bnd[a])
        first = float(logprobs[a])
        out.append({"index": w["index"], "word": w["word"], "context": text[: w["start"]],
                    "p_word": math.exp(w["logprob"]), "p_first_token": math.exp(first),
                    "p_first_token_begins": math.exp(first - log_pb), "p_word_before_goes_on": 0.0 - math.expm1(log_pb),
                    "expected": _candidates(top.word_ids[a], top.word_logprobs[a], texts, log_pb)})
    return out


def listed_ids(top: TopKResult) -> list[int]:
    """Every id a TopKResult lists (for their texts)."""
    ids = np.unique(np.concatenate([top.ids.ravel(), top.word_ids.ravel()]))
    return ids[ids >= 0].tolist()


def _plain(values) -> list:
    """A row of numbers as Python's own (a numpy array's or a tensor's tolist; a list as it is)."""
    return values.tolist() if hasattr(values, "tolist") else list(values)


# ------------------------------------------------------------------------------------------ ranks
@torch.inference_mode()
def token_ranks(scorer, text: str, context: str = "") -> list[int]:
    """Each scored token's rank among the model's next-token guesses at its position: 1 + the number of
    vocabulary ids whose logit is above its own (the softmax keeps the order, so these are the log-probs'
    ranks; a tie counts for the token). The tokens are the scorer's own for `text` after `context` (its
    SeqRequest: the same sequence, the same scored tokens as the sentence's log-probs). One forward pass
    over the sequence, whose logits are kept only where a scored token is predicted."""
    req = SeqRequest((text,), context)
    ids, _, _ = scorer.encode_parts(req)
    seq = list(scorer.request_seq(req, ids))
    n = min(len(ids), len(seq) - 1)  # scored tokens: without a start token the first is context only
    if n <= 0:
        return []
    inputs = torch.tensor([seq], device=scorer.device)
    logits = scorer.model(inputs, logits_to_keep=n + 1).logits[0, :-1].float()  # the rows before the n tokens
    targets = torch.tensor(seq[-n:], device=logits.device)
    own = logits.gather(1, targets[:, None])
    return (1 + (logits > own).sum(dim=1)).tolist()
