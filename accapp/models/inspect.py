"""What the registry states by hand, found from the model itself (its tokenizer and config, no weights):

- the start token: the BOS, else the document separator, else none (docs/conventions.md). A BOS
  that opens every turn of the chat template (SmolLM2's ``<|im_start|>``) marks turns, not
  documents, so the document separator (``<|endoftext|>``) is taken instead;
- instruct or base: whether the tokenizer carries a chat template (it decides the prompt form);
- the answer tokens of Yes/No and A/B: each must be one vocabulary entry, read right after the
  prompt's own trailing text, as the methods read it (Ide et al.'s ``convert_tokens_to_ids``);
  where one is not, the methods that need it are unavailable for the model, with the reason;
- languages: unknown, so no language warning is suppressed.

A registry entry with the same hub id overrides these findings.
"""

from __future__ import annotations

import dataclasses

from accapp.prompts import render_prompt, template_set

# Spellings of a document separator, most specific first (GPT-2, SmolLM2, Qwen: <|endoftext|>;
# Llama-3: <|end_of_text|>; SentencePiece models: </s>; Gemma: <eos>).
DOCUMENT_SEPARATORS = ("<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>")
ANSWER_SETS = {"yes_no": ("Yes", "No"), "ab": ("A", "B"), "yes_no_zh": ("是", "否")}
PROBE_SENTENCE = "The cat sleeps."


def vocabulary_id(tokenizer, answer: str) -> int | None:
    """The id of the vocabulary entry spelled exactly as `answer` (Ide et al.'s
    convert_tokens_to_ids("Yes")); else the single token the answer encodes to on its own
    (their code's fallback for 是/否); None when it is neither."""
    tid = tokenizer.convert_tokens_to_ids(answer)
    unk = getattr(tokenizer, "unk_token_id", None)
    if tid is not None and (tid != unk or answer == getattr(tokenizer, "unk_token", None)):
        return int(tid)
    ids = tokenizer(answer, add_special_tokens=False)["input_ids"]
    return int(ids[0]) if len(ids) == 1 else None


def has_chat_template(tokenizer) -> bool:
    return bool(getattr(tokenizer, "chat_template", None))


def _chat_text(tokenizer) -> str:
    """A two-turn chat rendered as text, or '' where the template fails."""
    try:
        return tokenizer.apply_chat_template([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}],
                                             tokenize=False)
    except Exception:  # noqa: BLE001 - a template that cannot render marks nothing
        return ""


def marks_turns(tokenizer, token: str | None) -> bool:
    """The token opens or closes every turn of the chat template (more than once in two turns)."""
    if not token or not has_chat_template(tokenizer):
        return False
    return _chat_text(tokenizer).count(token) >= 2


def _in_vocabulary(tokenizer, token: str) -> bool:
    return token in tokenizer.get_vocab()


def find_start_token(tokenizer, kind: str) -> tuple[str, str]:
    """(start token, where it came from). A masked LM has none (its [CLS]/<s> comes with the tokenizer)."""
    if kind == "masked":
        return "", "none: a masked LM's tokenizer adds its own [CLS] or <s>"
    bos = getattr(tokenizer, "bos_token", None)
    if bos and _in_vocabulary(tokenizer, bos) and not marks_turns(tokenizer, bos):
        return bos, "the tokenizer's BOS"
    for token in DOCUMENT_SEPARATORS:
        if _in_vocabulary(tokenizer, token) and not marks_turns(tokenizer, token):
            why = f"the BOS {bos} opens every chat turn" if bos else "the tokenizer has no BOS"
            return token, f"the document separator ({why})"
    eos = getattr(tokenizer, "eos_token", None)
    if eos and _in_vocabulary(tokenizer, eos) and not marks_turns(tokenizer, eos):
        return eos, "the EOS as document separator (no BOS, no other separator)"
    return "", "none: the tokenizer has no BOS and no document separator"


def find_variant(tokenizer) -> tuple[str, str]:
    if has_chat_template(tokenizer):
        return "instruct", "the tokenizer has a chat template: prompts use it"
    return "base", "no chat template: prompts are the paper's base templates"


def trailing_text(tokenizer, chat: bool) -> str:
    """The end of a Yes/No prompt as the model sees it, after the sentence: what an answer follows."""
    tpl = template_set("ide2025")["yes_no"]["en"]["chat" if chat else "base"][0]
    try:
        text = render_prompt(tokenizer, chat, tpl["system"], tpl["user"].replace("{sentence}", PROBE_SENTENCE))
    except Exception:  # noqa: BLE001 - a chat template that fails: the base prompt's ending
        text = tpl["user"]
    return text[text.rindex(PROBE_SENTENCE) + len(PROBE_SENTENCE):] if PROBE_SENTENCE in text else text[-12:]


def written_after(tokenizer, prompt_end: str, answer: str) -> list[str]:
    """The tokens (as text) an answer becomes when written right after the prompt's trailing text."""
    before = tokenizer(prompt_end, add_special_tokens=False)["input_ids"]
    full = tokenizer(prompt_end + answer, add_special_tokens=False)["input_ids"]
    k = 0
    while k < min(len(before), len(full)) and before[k] == full[k]:
        k += 1
    pieces = [tokenizer.decode([t]) for t in full[k:]]
    if any("\ufffd" in p for p in pieces):  # part of a character's bytes: the vocabulary's own spelling says more
        return tokenizer.convert_ids_to_tokens(full[k:])
    return pieces


def find_answers(tokenizer, chat: bool) -> dict:
    """Per answer set: {answer: {"id": int | None, "one_token": bool, "after_prompt": [tokens]}}."""
    end = trailing_text(tokenizer, chat)
    out = {}
    for name, answers in ANSWER_SETS.items():
        out[name] = {}
        for answer in answers:
            tid = vocabulary_id(tokenizer, answer)
            out[name][answer] = {"id": tid, "one_token": tid is not None, "after_prompt": written_after(tokenizer, end, answer)}
    return out


def answer_reason(answers: dict, name: str) -> str | None:
    """Why a method reading this answer set cannot run on the model, or None when it can."""
    split = {a: f["after_prompt"] for a, f in answers.get(name, {}).items() if not f["one_token"]}
    if not split:
        return None
    parts = "; ".join(f"'{a}' is {len(t)} tokens ({' + '.join(map(repr, t))})" for a, t in split.items())
    return f"they read each answer as one token of the model's vocabulary after the prompt, and {parts}"


def findings(tokenizer, kind: str) -> dict:
    """Everything found from the tokenizer, each with where it came from."""
    start, start_from = find_start_token(tokenizer, kind)
    variant, variant_from = find_variant(tokenizer)
    out = {"start_token": start, "start_token_from": start_from, "variant": variant, "variant_from": variant_from,
           "languages": "unknown from the model itself: no language warning is suppressed"}
    if kind == "causal":
        out["answers"] = find_answers(tokenizer, variant == "instruct")
    return out


def apply_findings(spec, tokenizer):
    """The spec with what was found filled in; a registry entry with the same hub id overrides it.
    A registry model is returned as it is: its facts are the registry's."""
    if spec.in_registry:
        return spec
    from accapp.models.resolve import registry_by_hub_id

    found = findings(tokenizer, spec.kind)
    facts = {"start_token": found["start_token"], "variant": found["variant"], "languages": ()}
    listed = registry_by_hub_id(spec.hub_id) if spec.hub_id else None
    if listed is not None:  # the registry's hand-stated facts win over the findings
        facts = {"start_token": listed.start_token, "variant": listed.variant, "languages": listed.languages,
                 "name": listed.name, "license": listed.license, "license_url": listed.license_url}
        found["overridden_by_registry"] = listed.id
    return dataclasses.replace(spec, **facts, findings={**spec.findings, "found": found})
