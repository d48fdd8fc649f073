"""One descriptor per judgment method, read from data/methods.json: the one home of what a method
is called, its family, source, formula, plain-language meaning, unit, vote rule, probe stage and
pass group, and of the headline method, the tabs' presets, the stages and the families' titles.

The code of a method (accapp/methods/*.py) holds its id and its maths; everything the pages,
the file jobs and the About tab say of it comes from here. Reading this needs no model and no torch.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

from accapp.methods import formulas as F

DATA_FILE = Path(__file__).with_name("data") / "methods.json"
# each method's entry, all required
FIELDS = ("name", "family", "source", "formula", "plain", "unit", "rule", "pass_group", "terms", "tie_rtol")
UNITS = ("log", "log/token", "probability", "share")


@dataclass(frozen=True)
class Descriptor:
    """Everything said of one method, apart from its code."""

    id: str
    name: str  # as every tab shows it ("LP", "In-template LP")
    family: str
    family_title: str  # the family as the page titles it
    kind: str  # the model kind it needs: "causal" or "masked" (its family's)
    source: str  # the paper and section
    formula: str
    plain: str  # its meaning in a line
    unit: str  # one of UNITS
    rule: str  # how its judgments become one vote in the probe
    stage: str  # the probe stage it runs in (its family's)
    pass_group: str  # methods of one group share their model passes (a method alone: its own id)
    terms: str = "sum"  # what its score is a sum or difference of: a rule of formulas.TERMS_RULES
    tie_rtol: float = 0.0  # the tie tolerance's constant, times the terms' size (docs/ties.md)
    drift: float | None = None  # the largest batching drift measured for it, in the same units
    length_rule: str = "none"  # how its score treats length in tokens: sum, average, penalty, credit, none
    frequency: bool = False  # its score subtracts what the tokens' frequencies alone predict
    inflates_split_words: bool = False  # its score is inflated for words split into several tokens

    def as_dict(self) -> dict:
        return asdict(self)


def _without_notes(d: dict) -> dict:
    return {k: v for k, v in d.items() if not k.startswith("_")}


@lru_cache(maxsize=1)
def _data() -> dict:
    return json.loads(DATA_FILE.read_text(encoding="utf-8"))


def _filled(method_id: str, text: str) -> str:
    """An ensemble's text with its numbers from formulas.py (the one home of the ensembles' settings)."""
    if method_id not in F.ENSEMBLE_SETTINGS:
        return text
    n_p, n_l = F.ENSEMBLE_SETTINGS[method_id]
    return text.replace("{n_p}", str(n_p)).replace("{n_l}", str(n_l)).replace("{trials}", str(F.ENSEMBLE_TRIALS))


@lru_cache(maxsize=1)
def families() -> dict[str, dict]:
    """{family: {title, kind, stage}} in the data's order."""
    return _without_notes(_data()["families"])


@lru_cache(maxsize=1)
def descriptors() -> dict[str, Descriptor]:
    """Every method's descriptor by id, in display order. A missing field, or a family, stage or
    unit the data does not define, raises ValueError naming the method (a mistake in methods.json)."""
    fams, stage_ids = families(), stage_texts()
    out = {}
    for mid, entry in _without_notes(_data()["methods"]).items():
        missing = [f for f in FIELDS if not str(entry.get(f, "")).strip()]
        if missing:
            raise ValueError(f"{DATA_FILE.name}: method {mid!r} lacks {', '.join(missing)}")
        fam = fams.get(entry["family"])
        if fam is None or fam["stage"] not in stage_ids or entry["unit"] not in UNITS:
            raise ValueError(f"{DATA_FILE.name}: method {mid!r} has an unknown family, stage or unit")
        _check_tie(mid, entry)
        out[mid] = Descriptor(
            id=mid, name=entry["name"], family=entry["family"], family_title=fam["title"], kind=fam["kind"],
            source=entry["source"], formula=_filled(mid, entry["formula"]), plain=_filled(mid, entry["plain"]),
            unit=entry["unit"], rule=entry["rule"], stage=fam["stage"], pass_group=entry["pass_group"],
            terms=entry["terms"], tie_rtol=float(entry["tie_rtol"]), drift=None if entry.get("drift") is None else float(entry["drift"]),
            length_rule=entry.get("length_rule", "none"), frequency=bool(entry.get("frequency", False)),
            inflates_split_words=bool(entry.get("inflates_split_words", False)))
    return out


def _check_tie(mid: str, entry: dict) -> None:
    """The tie rule's fields: a known terms rule, a constant >= 0, and (once measured) at most 10
    times the drift measured for the method."""
    rtol, drift = entry["tie_rtol"], entry.get("drift")
    if entry["terms"] not in F.TERMS_RULES or not isinstance(rtol, (int, float)) or rtol < 0:
        raise ValueError(f"{DATA_FILE.name}: method {mid!r} has an unknown terms rule or a bad tie_rtol")
    if drift is not None and rtol > 10 * float(drift):
        raise ValueError(f"{DATA_FILE.name}: method {mid!r}'s tie_rtol {rtol} exceeds 10 x its measured drift {drift}")


def describe(method_id: str) -> Descriptor:
    """One method's descriptor; an unknown id raises KeyError."""
    return descriptors()[method_id]


@lru_cache(maxsize=1)
def headline_methods() -> dict[str, str]:
    """{model kind: the headline method's id}."""
    return _without_notes(_data()["headline"])


@lru_cache(maxsize=1)
def presets() -> dict[str, tuple[str, ...]]:
    """{preset: method ids}: 'quick' (the Probe tab's Quick button), 'file' (the file tab's first
    selection), 'prompt' (the prompt inspector's first method), 'length_robust' (the reading Ide et al. 2025
    found least affected by a difference in length)."""
    return {k: tuple(v) for k, v in _without_notes(_data()["presets"]).items()}


@lru_cache(maxsize=1)
def stage_texts() -> dict[str, str]:
    """{stage: its words while it computes}, in the order the stages run."""
    return _without_notes(_data()["stages"])


def stage_families() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """((stage, its families), ...) in the order the stages run."""
    return tuple((s, tuple(f for f, d in families().items() if d["stage"] == s)) for s in stage_texts())


def split_stages(method_ids: list[str]) -> list[tuple[str, list[str]]]:
    """The methods split into the probe's stages (non-empty stages only, each in the given order);
    an id no descriptor knows goes in a last stage, 'other'."""
    table = descriptors()
    out = [(s, [m for m in method_ids if m in table and table[m].stage == s]) for s in stage_texts()]
    out = [(s, ids) for s, ids in out if ids]
    rest = [m for m in method_ids if m not in table]
    return out + ([("other", rest)] if rest else [])


@lru_cache(maxsize=1)
def context_families() -> frozenset[str]:
    """The families whose methods condition on a context before the sentences (methods.json's `context`)."""
    return frozenset(_data()["context"]["conditioned"])


def uses_context(method_id: str) -> bool:
    """Whether a method scores its sentences after the pair's context (False: it reads its template without it)."""
    d = descriptors().get(method_id)
    return d is not None and d.family in context_families()


def context_note() -> str:
    """What the page says of a method that does not use the context."""
    return _data()["context"]["not_applied"]


def pass_group_order() -> tuple[str, ...]:
    """The shared pass groups in the order a file job runs them; other groups follow, in the order asked."""
    return tuple(_data()["pass_groups"]["order"])
