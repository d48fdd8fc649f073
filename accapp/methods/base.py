"""What a judgment method is: an id, a family, the model kind it needs, the templates it uses,
the strings it needs scored (requests, accapp.scoring.api) and how it turns their results
into one MethodScore per template and answer order."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from accapp.methods import ties
from accapp.methods.formulas import strict_verdict


@dataclass
class Context:
    """Everything a method needs to know about the run, beside the pair."""

    lm: object  # LoadedModel
    language: str  # "en" or "zh"
    in_template_scope: str = "whole"  # or "sentence" (Ide §3.2 reports whole)
    cache: dict = field(default_factory=dict)
    convention: object = None  # accapp.scoring.convention.Convention; None: the project's default

    @property
    def chat(self) -> bool:
        return self.lm.spec.is_chat

    @property
    def tokenizer(self):
        return self.lm.tokenizer


Results = Callable[[object], object]  # request -> its result (see accapp.scoring.api)


class CallResults:
    """One scoring call's results (called with a request, as any Results), and the method scores already
    made from them: an ensemble's members are the methods' own, made once a pair (score_of)."""

    def __init__(self, answers: dict) -> None:
        self.answers = answers
        self.scored: dict = {}  # (method id, pair) -> its scores; as many as the call's pairs and methods

    def __call__(self, request):
        return self.answers[request]


def score_of(method, pair, ctx, res: Results) -> list:
    """method.score(pair, ctx, res), made once per pair where res keeps what was scored (CallResults)."""
    scored = getattr(res, "scored", None)
    if scored is None:
        return method.score(pair, ctx, res)
    key = (method.id, pair)
    hit = scored.get(key)
    if hit is None:
        hit = scored[key] = method.score(pair, ctx, res)
    return hit


REQUESTS_MAX = 20_000  # requests a context keeps (remembered): a block's, cleared when full


def remembered(ctx: Context, key: tuple, make: Callable[[], object]):
    """The request `key` names, made once per context: a method asks for each of its requests twice (its
    requests, then its score), and ensembles ask for their members' again."""
    memo = ctx.cache.get("requests")
    if memo is None:
        memo = ctx.cache["requests"] = {}
    hit = memo.get(key)
    if hit is None:
        if len(memo) >= REQUESTS_MAX:
            memo.clear()
        hit = memo[key] = make()
    return hit


@dataclass(frozen=True)
class Answers:
    """What a prompt method's model answered, as data (None where a method has no such answer)."""

    letter: str | None = None  # A/B prompting: "A", "B" or "tie", in this answer order
    good: str | None = None  # a judgment prompt's answer for the good sentence: "Yes", "No" or "tie"
    bad: str | None = None  # ... and for the bad sentence
    p_votes: int | None = None  # ensembles: Yes/No prob comp templates that judged the pair right (of 5)
    l_votes: int | None = None  # ensembles: in-template LP templates that judged the pair right (of 5)
    # a comparison prompt's answer ("1", "2" or "tie") in each order: order1 = the good sentence
    # as option 1, order2 = the good sentence as option 2 (Hu & Levy 2023, Exp. 3b)
    order1: str | None = None
    order2: str | None = None

    def text(self) -> str:
        """The `prediction` text the results files keep."""
        if self.letter is not None:
            return self.letter
        if self.good is not None:
            return f"good:{self.good} bad:{self.bad}"
        if self.p_votes is not None:
            return f"P votes {self.p_votes}/5, L votes {self.l_votes}/5"
        if self.order1 is not None:
            return f"order1:{self.order1} order2:{self.order2}"
        return ""


@dataclass(frozen=True)
class MethodScore:
    """One judgment: a method's score of each sentence under one template and answer order."""

    method: str
    template: str
    score_good: float
    score_bad: float
    variant: str = ""  # the answer order, for methods that ask both ("good=A", "good=B")
    answers: Answers = field(default_factory=Answers)
    # the size of the terms each score is a sum or difference of, where the score does not show it
    # (a Bayes factor's or SLOR's LP and unigram LP): its tie tolerance's scale (methods/ties.py)
    size_good: float | None = None
    size_bad: float | None = None

    @property
    def verdict(self) -> str:
        """'good' when the good sentence scores higher by more than the method's tie tolerance,
        'bad' when lower by more, else 'tie' (the project's rule, docs/ties.md)."""
        return ties.verdict(self.method, self.score_good, self.score_bad, self.size_good, self.size_bad)

    @property
    def strict_verdict(self) -> str:
        """The papers' rule: 'good' when score_good > score_bad, 'bad' when lower, 'tie' when equal."""
        return strict_verdict(self.score_good, self.score_bad)

    @property
    def tolerance(self) -> float:
        return ties.tolerance(self.method, self.score_good, self.score_bad, self.size_good, self.size_bad)

    @property
    def prediction(self) -> str:
        return self.answers.text()

    def as_dict(self) -> dict:
        return {"method": self.method, "template": self.template, "variant": self.variant,
                "score_good": self.score_good, "score_bad": self.score_bad, "verdict": self.verdict,
                "prediction": self.prediction}


def judged(method: str, template: str, score_good, score_bad, variant: str = "", answers: Answers | None = None,
           sizes: tuple[float, float] | None = None) -> MethodScore:
    sg, sb = (None, None) if sizes is None else (float(sizes[0]), float(sizes[1]))
    return MethodScore(method, template, float(score_good), float(score_bad), variant, answers or Answers(), sg, sb)


class Method:
    """A method's code: its id, the strings it needs, its score. What is said of it (name, family,
    kind, formula, source, ...) is its descriptor's (accapp/methods/data/methods.json)."""

    id: str = ""

    @property
    def descriptor(self):
        from accapp.methods.descriptor import describe

        return describe(self.id)

    @property
    def name(self) -> str:
        return self.descriptor.name

    @property
    def family(self) -> str:
        return self.descriptor.family

    @property
    def kind(self) -> str:
        """The model kind it needs: "causal" or "masked"."""
        return self.descriptor.kind

    @property
    def formula(self) -> str:
        return self.descriptor.formula

    @property
    def source(self) -> str:
        return self.descriptor.source

    def templates(self, ctx: Context) -> list[str]:
        return ["-"]

    # True for a method that scores one string on its own (string_requests, score_string): it scores
    # single labelled sentences as well as pairs. A method that needs both sentences of a pair does not.
    per_string: bool = False

    def requests(self, pair, ctx: Context) -> list:
        raise NotImplementedError

    def score(self, pair, ctx: Context, res: Results) -> list[MethodScore]:
        raise NotImplementedError

    def string_requests(self, text: str, ctx: Context, context: str = "") -> list:
        """The requests that score one string on its own (a per-string method only)."""
        raise NotImplementedError(f"{self.id} needs a pair")

    def score_string(self, text: str, ctx: Context, res: Results, context: str = "") -> float:
        """One string's score (a per-string method only)."""
        raise NotImplementedError(f"{self.id} needs a pair")

    def describe(self) -> dict:
        return {"id": self.id, "family": self.family, "kind": self.kind, "name": self.name, "formula": self.formula,
                "source": self.source}
