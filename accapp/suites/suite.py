"""Reading a SyntaxGym test suite (JSON, as syntaxgym-core defines it) into frozen dataclasses.

A suite is ``meta`` (name, metric, ...), ``region_meta`` ({"1": name, ...}: region numbers
1..R), ``predictions`` ([{"type": "formula", "formula": ...}]) and ``items``, each an
``item_number`` and ``conditions``, each a ``condition_name`` and its ``regions``
([{"region_number": n, "content": text}]).

A condition's sentence is built as syntaxgym-core builds it (``Suite.iter_sentences``): the
regions in order, empty ones (only whitespace) left out, the others joined by one space.
syntaxgym-core strips a region's leading whitespace there and refuses a region with leading or
trailing whitespace when it aligns tokens; Hu et al. (2020)'s published suites have such
regions, so here each region's content is stripped on both sides instead (for every region
syntaxgym-core accepts, the sentence is the same). Each region's character span in the sentence
is its stripped content's; an empty region's span is empty, where the next region begins.

Every problem is one UserError sentence naming the item, condition and region it is in.
"""

from __future__ import annotations

import gzip
import json
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from accapp.errors import MAX_SENTENCE_CHARS, UserError
from accapp.suites import formula as F

# Limits: the published suites have at most 40 items, 6 conditions, 9 regions, 2 predictions, 223 kB.
MAX_ITEMS = 1000
MAX_CONDITIONS = 16
MAX_REGIONS = 32
MAX_PREDICTIONS = 16
MAX_SUITE_CHARS = 5_000_000  # JSON text
MAX_NAME_CHARS = 200  # a suite, condition or region name
METRIC = "sum"  # the only region statistic supported (Hu et al. 2020's suites all use it)


@dataclass(frozen=True)
class Condition:
    name: str
    regions: tuple[tuple[int, str], ...]  # (region_number, content), in region order

    @property
    def sentence(self) -> str:
        return build_sentence([c for _, c in self.regions])[0]

    @property
    def spans(self) -> tuple[tuple[int, int], ...]:
        """Each region's (start, end) character span in the sentence, in region order."""
        return tuple(build_sentence([c for _, c in self.regions])[1])


@dataclass(frozen=True)
class Item:
    item_number: int
    conditions: tuple[Condition, ...]

    def condition(self, name: str) -> Condition:
        for c in self.conditions:
            if c.name == name:
                return c
        raise UserError(f"Item {self.item_number} has no condition {name!r} "
                        f"(its conditions: {', '.join(c.name for c in self.conditions)}).")


@dataclass(frozen=True)
class Prediction:
    index: int  # 0-based, in the suite's order
    formula: str
    tree: F.Node = field(repr=False, compare=False)


@dataclass(frozen=True)
class Suite:
    name: str
    meta: dict = field(compare=False)
    region_names: tuple[str, ...]  # region k + 1's name at index k
    predictions: tuple[Prediction, ...]
    items: tuple[Item, ...]

    @property
    def region_numbers(self) -> tuple[int, ...]:
        return tuple(range(1, len(self.region_names) + 1))

    @property
    def condition_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.items[0].conditions)

    def item(self, item_number: int) -> Item:
        for it in self.items:
            if it.item_number == item_number:
                return it
        raise UserError(f"The suite {self.name!r} has no item {item_number} (items "
                        f"{self.items[0].item_number} to {self.items[-1].item_number}).")

    def region_name(self, number: int) -> str:
        return self.region_names[number - 1]


def build_sentence(contents) -> tuple[str, list[tuple[int, int]]]:
    """(sentence, spans) from region contents in order (rule in the module doc)."""
    parts, spans, at = [], [], 0
    pending = []  # empty regions waiting for the next region's start
    for content in contents:
        text = content.strip()
        if not text:
            pending.append(len(spans))
            spans.append(None)
            continue
        if parts:
            at += 1  # the joining space
        for k in pending:
            spans[k] = (at, at)
        pending = []
        spans.append((at, at + len(text)))
        parts.append(text)
        at += len(text)
    for k in pending:
        spans[k] = (at, at)
    return " ".join(parts), spans


# ---- reading -------------------------------------------------------------------------------
def _load(source) -> tuple[dict, str]:
    """(suite dict, a default name) from a dict, a path (.json or .json.gz) or JSON text."""
    if isinstance(source, dict):
        return source, ""
    if isinstance(source, Path) or (isinstance(source, str) and not source.lstrip().startswith("{")):
        path = Path(source)
        if not path.is_file():
            raise UserError(f"No suite file at {str(path)[:200]!r}: give a path to a SyntaxGym JSON file or the JSON text.")
        raw = path.read_bytes()
        if path.name.endswith(".gz"):
            raw = gzip.decompress(raw)
        text, name = raw.decode("utf-8", errors="strict"), path.name.split(".")[0]
    elif isinstance(source, str):
        text, name = source, ""
    else:
        raise UserError(f"A suite must be a dict, a file path or JSON text, not a {type(source).__name__}.")
    if len(text) > MAX_SUITE_CHARS:
        raise UserError(f"The suite is {len(text):,} characters of JSON; the limit is {MAX_SUITE_CHARS:,}.")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(f"The suite is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}.") from None
    if not isinstance(data, dict):
        raise UserError(f"A suite's JSON must be an object with meta, region_meta, predictions and items, "
                        f"not a {type(data).__name__}.")
    return data, name


def _int(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise UserError(f"{what} must be a whole number, not {value!r:.60}.")
    try:
        return int(value)
    except ValueError:
        raise UserError(f"{what} must be a whole number, not {value!r:.60}.") from None


def _name(value, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise UserError(f"{what} must be a non-empty text, not {value!r:.60}.")
    if len(value) > MAX_NAME_CHARS:
        raise UserError(f"{what} is {len(value):,} characters long; the limit is {MAX_NAME_CHARS}.")
    return value


def _list(data: dict, key: str, what: str) -> list:
    value = data.get(key)
    if not isinstance(value, list) or not value:
        raise UserError(f"{what} needs a non-empty list {key!r}.")
    return value


def _check_content(content, where: str) -> str:
    if not isinstance(content, str):
        raise UserError(f"{where}: the content must be text, not {content!r:.60}.")
    for ch in content:
        cat = unicodedata.category(ch)
        if (cat in ("Cc", "Cs") and ch not in " \t") or ch in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069":
            raise UserError(f"{where} contains a control character (U+{ord(ch):04X}).")
    if "\t" in content.strip():
        raise UserError(f"{where} contains a tab inside its text.")
    return content


def _region_meta(data: dict) -> tuple[str, ...]:
    meta = data.get("region_meta")
    if not isinstance(meta, dict) or not meta:
        raise UserError("The suite needs 'region_meta', an object from region numbers to names ({\"1\": \"subject\", ...}).")
    if len(meta) > MAX_REGIONS:
        raise UserError(f"The suite has {len(meta)} regions; the limit is {MAX_REGIONS}.")
    numbered = {}
    for key, name in meta.items():
        n = _int(key, f"Region number {key!r} in region_meta")
        numbered[n] = _name(name, f"The name of region {n} in region_meta")
    if sorted(numbered) != list(range(1, len(numbered) + 1)):
        raise UserError(f"region_meta's region numbers must be 1 to {len(numbered)}, not {sorted(numbered)}.")
    return tuple(numbered[n] for n in range(1, len(numbered) + 1))


def _condition(raw, item_number: int, k: int, region_names: tuple[str, ...]) -> Condition:
    if not isinstance(raw, dict):
        raise UserError(f"Item {item_number}: condition {k + 1} must be an object with condition_name and regions.")
    name = _name(raw.get("condition_name"), f"Item {item_number}: the name of condition {k + 1}")
    regions = raw.get("regions")
    if not isinstance(regions, list):
        raise UserError(f"Item {item_number}, condition {name!r}: 'regions' must be a list.")
    if len(regions) > MAX_REGIONS:
        raise UserError(f"Item {item_number}, condition {name!r} has {len(regions)} regions; the limit is {MAX_REGIONS}.")
    by_number: dict[int, str] = {}
    for r in regions:
        if not isinstance(r, dict):
            raise UserError(f"Item {item_number}, condition {name!r}: each region must be an object with "
                            "region_number and content.")
        n = _int(r.get("region_number"), f"Item {item_number}, condition {name!r}: a region number")
        where = f"Item {item_number}, condition {name!r}, region {n}"
        if not 1 <= n <= len(region_names):
            raise UserError(f"{where} is not in region_meta (regions 1 to {len(region_names)}).")
        if n in by_number:
            raise UserError(f"{where} ({region_names[n - 1]!r}) appears twice.")
        by_number[n] = _check_content(r.get("content"), f"{where} ({region_names[n - 1]!r})")
    for n in range(1, len(region_names) + 1):
        if n not in by_number:
            raise UserError(f"Item {item_number}, condition {name!r} lacks region {n} ({region_names[n - 1]!r}).")
    cond = Condition(name, tuple((n, by_number[n]) for n in range(1, len(region_names) + 1)))
    sentence = cond.sentence
    if not sentence:
        raise UserError(f"Item {item_number}, condition {name!r}: every region is empty.")
    if len(sentence) > MAX_SENTENCE_CHARS:
        raise UserError(f"Item {item_number}, condition {name!r}: the sentence is {len(sentence)} characters long; "
                        f"the limit is {MAX_SENTENCE_CHARS}.")
    return cond


def _items(data: dict, region_names: tuple[str, ...]) -> tuple[Item, ...]:
    raw_items = _list(data, "items", "The suite")
    if len(raw_items) > MAX_ITEMS:
        raise UserError(f"The suite has {len(raw_items):,} items; the limit is {MAX_ITEMS:,}.")
    items: list[Item] = []
    seen: set[int] = set()
    expected: list[str] | None = None
    for k, raw in enumerate(raw_items):
        if not isinstance(raw, dict):
            raise UserError(f"Item {k + 1} of the suite must be an object with item_number and conditions.")
        number = _int(raw.get("item_number"), f"The item number of item {k + 1}")
        if number in seen:
            raise UserError(f"Item number {number} appears twice.")
        seen.add(number)
        conds = raw.get("conditions")
        if not isinstance(conds, list) or not conds:
            raise UserError(f"Item {number} needs a non-empty list 'conditions'.")
        if len(conds) > MAX_CONDITIONS:
            raise UserError(f"Item {number} has {len(conds)} conditions; the limit is {MAX_CONDITIONS}.")
        conditions = tuple(_condition(c, number, j, region_names) for j, c in enumerate(conds))
        names = [c.name for c in conditions]
        dup = next((n for n in names if names.count(n) > 1), None)
        if dup is not None:
            raise UserError(f"Item {number}: condition {dup!r} appears twice.")
        if expected is None:
            expected = names
        elif sorted(names) != sorted(expected):
            missing = [n for n in expected if n not in names]
            extra = [n for n in names if n not in expected]
            what = f"lacks condition {missing[0]!r}" if missing else f"has condition {extra[0]!r}, which item {items[0].item_number} lacks"
            raise UserError(f"Item {number} {what} (every item needs the same conditions: {', '.join(expected)}).")
        items.append(Item(number, conditions))
    return tuple(items)


def _predictions(data: dict, conditions, regions) -> tuple[Prediction, ...]:
    raw = data.get("predictions", [])
    if not isinstance(raw, list):
        raise UserError("The suite's 'predictions' must be a list of {\"type\": \"formula\", \"formula\": ...}.")
    if len(raw) > MAX_PREDICTIONS:
        raise UserError(f"The suite has {len(raw)} predictions; the limit is {MAX_PREDICTIONS}.")
    out = []
    for k, p in enumerate(raw):
        if not isinstance(p, dict) or p.get("type", "formula") != "formula":
            kind = p.get("type") if isinstance(p, dict) else type(p).__name__
            raise UserError(f"Prediction {k + 1} must be of type 'formula', not {kind!r:.40}.")
        text = p.get("formula")
        try:
            tree = F.parse(text)
            F.check_references(tree, conditions, regions, text)
        except UserError as exc:
            raise UserError(f"Prediction {k + 1}: {exc}") from None
        out.append(Prediction(k, text, tree))
    return tuple(out)


def read_suite(source, name: str | None = None) -> Suite:
    """A Suite from a dict, a path to a .json or .json.gz file, or JSON text; UserError (one
    sentence naming item, condition and region) when anything is malformed or over a limit."""
    data, default = _load(source)
    meta = data.get("meta", {})
    if not isinstance(meta, dict):
        raise UserError("The suite's 'meta' must be an object (name, metric, ...).")
    metric = meta.get("metric", METRIC)
    # syntaxgym-core's "all" and a list of statistics include the sum, which is what is computed
    if not (metric in (METRIC, "all") or (isinstance(metric, list) and METRIC in metric)):
        raise UserError(f"The suite asks for the region statistic {metric!r:.40}; only {METRIC!r} "
                        "(the sum of the region's surprisals) is supported.")
    suite_name = name or meta.get("name") or default or "suite"
    suite_name = _name(str(suite_name), "The suite's name")
    region_names = _region_meta(data)
    items = _items(data, region_names)
    conditions = [c.name for c in items[0].conditions]
    predictions = _predictions(data, conditions, range(1, len(region_names) + 1))
    return Suite(suite_name, dict(meta), region_names, predictions, items)


def suite_as_dict(suite: Suite) -> dict:
    """The suite back as SyntaxGym JSON (a dict), e.g. for an export or a user's edited copy."""
    return {
        "meta": dict(suite.meta),
        "region_meta": {str(k + 1): n for k, n in enumerate(suite.region_names)},
        "predictions": [{"type": "formula", "formula": p.formula} for p in suite.predictions],
        "items": [{"item_number": it.item_number,
                   "conditions": [{"condition_name": c.name,
                                   "regions": [{"region_number": n, "content": t} for n, t in c.regions]}
                                  for c in it.conditions]} for it in suite.items],
    }
