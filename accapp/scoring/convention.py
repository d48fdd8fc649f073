"""Scoring conventions: the project's default, and the authors' code reproduced exactly.

The maths of a method is the paper's; a convention fixes the details a paper leaves to its
code (data: scoring/data/conventions.json, with its source):
- start_token: "always" (the project: every string after the model's start token, so every
  token is scored) or "authors" (Ide et al.'s code: sentence scores get one only for Llama-3
  and Mixtral, so the first token is conditioned on nothing and not scored; prompts get what
  the tokenizer adds by itself, add_special_tokens=True);
- two_way: "softmax" (eq. 5) or "raw_logit" (their code's logit(Yes) / (logit(Yes) + logit(No)));
- pll_words: "project" (accapp.words, one rule for every family) or "tokenizer" (the
  tokenizer's own word split, as Kauf & Ivanova's code and minicons).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

DATA = Path(__file__).with_name("data") / "conventions.json"


@dataclass(frozen=True)
class Convention:
    id: str
    name: str
    plain: str
    start_token: str  # "always" | "authors"
    two_way: str  # "softmax" | "raw_logit"
    pll_words: str  # "project" | "tokenizer"

    def sentence_start(self, model_name: str) -> bool:
        """Whether a scored sentence (LP family, in-template) begins with the start token."""
        return self.start_token == "always" or any(f in model_name for f in _data()["authors_start_token_families"])


@lru_cache(maxsize=1)
def _data() -> dict:
    return json.loads(DATA.read_text(encoding="utf-8"))


def conventions() -> dict[str, Convention]:
    return {cid: Convention(cid, **spec) for cid, spec in _data()["conventions"].items()}


DEFAULT = _data()["default"]


def get(convention: "str | Convention | None") -> Convention:
    """A convention by id (None: the default); an unknown id is a clear error."""
    if isinstance(convention, Convention):
        return convention
    known = conventions()
    cid = DEFAULT if convention is None else str(convention).strip()
    if cid not in known:
        raise ValueError(f"unknown convention {cid!r}; known: {', '.join(known)}")
    return known[cid]


def source() -> str:
    return _data()["source"]


def family_name(spec) -> str:
    """The model's name as the authors' code matches it (hub id, else display name)."""
    return re.sub(r"\s+", "-", str(getattr(spec, "hub_id", None) or getattr(spec, "name", "")))
