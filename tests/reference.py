"""An independent slow reference: one plain forward pass per string, explicit gather.

Shares no code with accapp.scoring: it tokenizes with the tokenizer, prepends the start
token, runs the full CausalLM (logits over every position) in float64 (a copy of the model),
and gathers log-softmax values. Float64 makes it the ground truth the float32 engine is
measured against: two float32 computations differ by up to ~1e-4 nats a sentence
(measured: float32 reference vs float64 truth 1.8e-4, batched engine vs truth 5e-5).

``reference_many`` runs many strings' passes at once, right-padded: under the causal mask a
string's positions never see the padding after it, and its position ids are those of a lone
pass, so only float64 rounding moves its values (tests/test_causal_scorer.py holds it to lone
passes). A lone float64 pass is slow for what it computes: it reads the whole float64 model for
a dozen tokens.
"""

from __future__ import annotations

import copy

import torch

_DOUBLE: dict = {}
_TRUTH: dict = {}  # (float64 model, token ids) -> its log-probs: two tests ask for the same 150 strings' truth


def _model64(lm):
    if next(lm.model.parameters()).dtype == torch.float64:
        return lm.model  # already the float64 copy (a test that runs the engine on it): no copy of the copy
    key = id(lm.model)
    if key not in _DOUBLE:
        _DOUBLE[key] = copy.deepcopy(lm.model).double().eval()
    return _DOUBLE[key]


def reference_ids(lm, text_parts: tuple[str, ...]) -> list[int]:
    """The token ids the reference scores: each part tokenized alone, the start token in front."""
    ids = []
    for part in text_parts:
        ids += lm.tokenizer(part, add_special_tokens=False)["input_ids"]
    return ids if ids and ids[0] == lm.start_id else [lm.start_id] + ids


@torch.inference_mode()
def reference_token_logprobs(lm, text_parts: tuple[str, ...]) -> list[float]:
    ids = reference_ids(lm, text_parts)
    model = _model64(lm)
    key = (id(model), tuple(ids))
    if key not in _TRUTH:
        logp = torch.log_softmax(model(torch.tensor([ids])).logits[0], dim=-1)
        _TRUTH[key] = [logp[i - 1, ids[i]].item() for i in range(1, len(ids))]
    return list(_TRUTH[key])


@torch.inference_mode()
def reference_many(lm, texts: list[tuple[str, ...]], batch: int = 16) -> None:
    """The float64 truth of many strings (each a tuple of parts, as reference_token_logprobs takes
    them) into the cache, ``batch`` strings a pass, right-padded; reference_token_logprobs then
    returns them."""
    model = _model64(lm)
    todo = {}
    for parts in texts:
        ids = reference_ids(lm, parts)
        if (id(model), tuple(ids)) not in _TRUTH:
            todo[tuple(ids)] = None
    rows = sorted(todo, key=len)  # similar lengths share a pass: little padding
    for k in range(0, len(rows), batch):
        group = rows[k : k + batch]
        width = max(len(r) for r in group)
        ids = torch.tensor([list(r) + [lm.start_id] * (width - len(r)) for r in group])
        mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in group])
        logp = torch.log_softmax(model(ids, attention_mask=mask).logits, dim=-1)
        for b, r in enumerate(group):
            _TRUTH[(id(model), r)] = [logp[b, i - 1, r[i]].item() for i in range(1, len(r))]


@torch.inference_mode()
def reference_next_logprob(lm, prompt: str, answer: str) -> float:
    """log p(answer | prompt), the answer tokenized as written right after the prompt."""
    ctx = lm.tokenizer(prompt, add_special_tokens=False)["input_ids"]
    full = lm.tokenizer(prompt + answer, add_special_tokens=False)["input_ids"]
    k = 0
    while k < min(len(ctx), len(full)) and ctx[k] == full[k]:
        k += 1
    ids = full if full and full[0] == lm.start_id else [lm.start_id] + full
    k += len(ids) - len(full)
    logp = torch.log_softmax(_model64(lm)(torch.tensor([ids])).logits[0], dim=-1)
    return sum(logp[i - 1, ids[i]].item() for i in range(k, len(ids)))
