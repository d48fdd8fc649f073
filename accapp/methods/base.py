"""What a judgment method is: an id, a family, the templates it uses, the strings it needs
scored (requests) and how it turns their log-probs into a score per sentence."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from accapp.methods.formulas import verdict


@dataclass(frozen=True)
class Pair:
    good: str
    bad: str
    meta: dict = field(default_factory=dict, hash=False, compare=False)


@dataclass(frozen=True)
class SeqRequest:
    """Score every token of the concatenated parts (each part tokenized on its own)."""

    parts: tuple[str, ...]


@dataclass(frozen=True)
class NextRequest:
    """Log-probs of each answer written right after the prompt (full-vocabulary softmax)."""

    prompt: str
    answers: tuple[str, ...]
    prefix: str = field(default="", compare=False, hash=False)  # the prompt's text before any sentence


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
class Context:
    """Everything a method needs to know about the run, beside the pair."""

    lm: object  # LoadedModel
    language: str  # "en" or "zh"
    in_template_scope: str = "whole"  # or "sentence" (Ide §3.2 reports whole)
    cache: dict = field(default_factory=dict)

    @property
    def chat(self) -> bool:
        return self.lm.spec.is_chat

    @property
    def tokenizer(self):
        return self.lm.tokenizer


Results = Callable[[object], object]  # request -> SeqResult | np.ndarray


def row(method: str, template: str, score_good: float, score_bad: float, variant: str = "", prediction: str = "") -> dict:
    return {
        "method": method,
        "template": template,
        "variant": variant,
        "score_good": float(score_good),
        "score_bad": float(score_bad),
        "verdict": verdict(score_good, score_bad),
        "prediction": prediction,
    }


class Method:
    id: str = ""
    family: str = ""
    name: str = ""
    formula: str = ""
    source: str = ""

    def templates(self, ctx: Context) -> list[str]:
        return ["-"]

    def requests(self, pair: Pair, ctx: Context) -> list:
        raise NotImplementedError

    def score(self, pair: Pair, ctx: Context, res: Results) -> list[dict]:
        raise NotImplementedError

    def describe(self) -> dict:
        return {"id": self.id, "family": self.family, "name": self.name, "formula": self.formula, "source": self.source}
