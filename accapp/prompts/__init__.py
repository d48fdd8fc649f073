"""Prompt and template sets, kept as data files in prompts/data/ (each carries its source)."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

DATA = Path(__file__).with_name("data")


@lru_cache(maxsize=None)
def template_set(name: str) -> dict:
    """'ide2025' or 'hu_levy2023'."""
    return json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))


def split_template(text: str) -> list[str]:
    """'Intro\\n\\nA: {sentence}\\nB: {other_sentence}' -> ['Intro\\n\\nA: ', '{sentence}', '\\nB: ', '{other_sentence}']."""
    return [p for p in re.split(r"(\{sentence\}|\{other_sentence\})", text) if p]


def fill_parts(template: str, sentence: str, other: str | None = None) -> tuple[str, ...]:
    """The template as parts, with the sentences in; parts are tokenized one by one (as Ide et al.)."""
    out = []
    for part in split_template(template):
        if part == "{sentence}":
            out.append(sentence)
        elif part == "{other_sentence}":
            out.append(other if other is not None else "")
        else:
            out.append(part)
    return tuple(out)


def render_prompt(tokenizer, chat: bool, system: str | None, user: str, joiner: str = " ") -> str:
    """The exact string the model sees for a prompt method.

    Base models: system and user joined (Ide et al.'s code). Instruct models: the model's chat
    template with the generation prompt; a template that rejects the system role gets the
    system text prepended to the user message (as Ide et al. did for Mixtral).
    """
    if not chat:
        return f"{system}{joiner}{user}" if system else user
    messages = [{"role": "user", "content": user}]
    if system:
        messages.insert(0, {"role": "system", "content": system})
    try:
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    except Exception:  # noqa: BLE001 - templates raise their own TemplateError on a system role
        if not system:
            raise
        merged = [{"role": "user", "content": f"{system}{joiner}{user}"}]
        return tokenizer.apply_chat_template(merged, tokenize=False, add_generation_prompt=True)
