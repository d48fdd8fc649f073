"""The Design view as plain data: two to four conditions of one item, their regions, predictions about
the regions' surprisals, and what a causal LM makes of them (SyntaxGym's designs, accapp/suites/).

Typed conditions, one a line (``parse_conditions``):

- ``name: text`` names the condition (letters, digits, ``_`` and ``-``: what a formula's
  ``%name%`` reads); a line without a name is called a, b, c or d after its place.
- The regions are marked one of three ways, the same for every condition:
  ``I know | what | the lion | devoured | | at sunrise .`` (numbered regions split by ``|``, as
  SyntaxGym's items have them; an empty region is nothing between two bars), or
  ``I know what the lion devoured [[at sunrise]].`` (the probe's critical region: regions 1
  "before", 2 "critical" and 3 "after"), or no mark at all (the whole sentence is region 1).
- Region names (optional): split by ``|``, one a region; a shipped suite's when one of its items
  is loaded.

A condition's sentence is its regions joined by one space, empty ones left out, each region
stripped (accapp/suites/suite.py, as syntaxgym-core builds it); a region's surprisal is the sum
of its words' surprisals in bits (accapp/suites/regions.py).

The 2x2 interaction (``interaction``): for a prediction that compares (a − b) with (c − d), or
whose two ``&``-joined comparisons at one region predict simple effects in opposite directions
(a crossover: a > b and c < d), the value of (a − b) − (c − d) in bits, its predicted sign and
whether it has it; for any other prediction, a sentence saying no 2x2 interaction is defined.

Every problem is one UserError sentence naming the item, condition and region. Nothing is
evaluated as code (the formula parser: accapp/suites/formula.py).
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlencode

from accapp.errors import MAX_SENTENCE_CHARS, UserError
from accapp.files import CSV_ENCODING, rows_csv_text, safe_name, write_atomic
from accapp.service.export import flat_fields
from accapp.suites import catalog
from accapp.suites import formula as F
from accapp.suites.score import score_item
from accapp.suites.suite import MAX_NAME_CHARS, read_suite

MIN_CONDITIONS, MAX_CONDITIONS = 2, 4
TYPED_ITEM = 1  # the item number of typed conditions
DEFAULT_NAMES = ("a", "b", "c", "d")
MARKED_REGIONS = ("before", "critical", "after")  # the regions of the [[ ]] markup
MAX_DESIGN_CHARS = MAX_CONDITIONS * (MAX_SENTENCE_CHARS + 300)  # the conditions' text: names and bars besides
MAX_FORMULAS = 4
FORMAT = "accapp-design-export/1"
KEEP_FILES = 200  # export files kept in their folder (older ones deleted)
TAB = "design"
LINK_KEYS = ("conditions", "regions", "formula", "model", "suite", "item")
_NAME = re.compile(r"^\s*([A-Za-z0-9_-]{1,40})\s*:(?:\s+|$)")
_OPEN, _CLOSE = "[[", "]]"
SOURCE_NOTE = "Hu et al. 2020 (cpllab/syntactic-generalization), assets/suites/README.md"


@dataclass(frozen=True)
class Design:
    """Conditions of one item, each (name, region contents), the region names, the predictions' text,
    and where the item came from (a shipped suite and item, or typed)."""

    conditions: tuple[tuple[str, tuple[str, ...]], ...]
    region_names: tuple[str, ...]
    formulas: tuple[str, ...]
    suite: str = ""
    item: int = TYPED_ITEM
    markup: str = "bars"  # bars | brackets | none
    text: str = field(default="", compare=False)  # the conditions as typed (for the link)
    names_text: str = field(default="", compare=False)

    @property
    def condition_names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.conditions)

    def where(self) -> str:
        return f"Item {self.item}" + (f" of {self.suite}" if self.suite else "")


# ------------------------------------------------------------------------------------------ typed input
def _regions_of(text: str, where: str) -> tuple[str, tuple[str, ...]]:
    """(markup, region contents) of one condition's text."""
    if "|" in text:
        if _OPEN in text or _CLOSE in text:
            raise UserError(f"{where} mixes the two markups: split its regions with | or mark one region with [[ ]], not both.")
        return "bars", tuple(r.strip() for r in text.split("|"))
    if _OPEN in text or _CLOSE in text:
        a = text.find(_OPEN)
        b = text.find(_CLOSE, a + 2) if a >= 0 else -1
        if a < 0 or b < 0 or text.find(_CLOSE) < a:
            raise UserError(f"{where} has an unmatched bracket: mark its critical region as [[words]].")
        inner, rest = text[a + 2:b], text[b + 2:]
        if _OPEN in inner or _OPEN in rest or _CLOSE in rest:
            raise UserError(f"{where} marks more than one region with [[ ]]: mark one, or split every region with |.")
        if not inner.strip():
            raise UserError(f"{where}: the critical region [[ ]] is empty; put its words inside it.")
        return "brackets", (text[:a].strip(), inner.strip(), rest.strip())
    return "none", (text.strip(),)


def parse_conditions(text, names_text="", formulas_text="", suite: str = "", item: int = TYPED_ITEM) -> Design:
    """A Design from the typed conditions (one a line), region names and predictions (one a line), or
    UserError naming the item, condition and region at fault."""
    text = "" if text is None else text
    if not isinstance(text, str) or not isinstance(names_text or "", str) or not isinstance(formulas_text or "", str):
        raise UserError("The conditions, region names and predictions must be text.")
    if len(text) > MAX_DESIGN_CHARS:
        raise UserError(f"The conditions are {len(text):,} characters long; the limit is {MAX_DESIGN_CHARS:,}.")
    where_item = f"Item {item}" + (f" of {suite}" if suite else "")
    lines = [ln for ln in text.replace("\r\n", "\n").replace("\r", "\n").split("\n") if ln.strip()]
    if len(lines) < MIN_CONDITIONS:
        raise UserError(f"{where_item} has {len(lines)} condition{'s' if len(lines) != 1 else ''}: type "
                        f"{MIN_CONDITIONS} to {MAX_CONDITIONS}, one a line (e.g. 'what_gap: I know what the lion "
                        "devoured [[at sunrise]].').")
    if len(lines) > MAX_CONDITIONS:
        raise UserError(f"{where_item} has {len(lines)} conditions; the Design view takes {MIN_CONDITIONS} to "
                        f"{MAX_CONDITIONS} (a suite's bigger designs run in full with `accapp bench --suite`).")
    parsed = []
    for k, line in enumerate(lines):
        m = _NAME.match(line)
        name = m.group(1) if m else None
        body = line[m.end():] if m else line
        parsed.append((k, name, body))
    named = {n for _, n, _ in parsed if n}
    spare = [n for n in DEFAULT_NAMES if n not in named]
    conditions, markups, seen = [], [], set()
    for k, name, body in parsed:
        name = name or spare.pop(0)
        where = f"{where_item}, condition '{name}' (line {k + 1})"
        if name in seen:
            raise UserError(f"{where_item}: two conditions are called '{name}'; give each its own name.")
        seen.add(name)
        if not body.strip() or not body.replace("|", "").replace(_OPEN, "").replace(_CLOSE, "").strip():
            raise UserError(f"{where} is empty: type its sentence after the name.")
        markup, regions = _regions_of(body, where)
        conditions.append((name, regions))
        markups.append(markup)
    if len(set(markups)) > 1:
        first = markups[0]
        k = next(i for i, mk in enumerate(markups) if mk != first)
        words = {"bars": "splits its regions with |", "brackets": "marks a region with [[ ]]", "none": "marks no region"}
        raise UserError(f"{where_item}, condition '{conditions[k][0]}' {words[markups[k]]} and condition "
                        f"'{conditions[0][0]}' {words[first]}: mark every condition the same way.")
    markup = markups[0]
    counts = [len(r) for _, r in conditions]
    names = _region_names(names_text, markup, max(counts), where_item)
    most = max(counts)
    for (name, regions), n in zip(conditions, counts):
        if n < most:
            missing = n + 1
            raise UserError(f"{where_item}, condition '{name}' has {n} region{'s' if n != 1 else ''} and another "
                            f"has {most}: region {missing} ('{names[missing - 1]}') is missing in condition "
                            f"'{name}' (an empty region is nothing between two bars: '| |').")
    formulas = tuple(f.strip() for f in (formulas_text or "").replace("\r", "\n").split("\n") if f.strip())
    if len(formulas) > MAX_FORMULAS:
        raise UserError(f"{len(formulas)} predictions were written; the Design view takes up to {MAX_FORMULAS}, one a line.")
    for name, regions in conditions:
        sentence = " ".join(r for r in regions if r)
        if len(sentence) > MAX_SENTENCE_CHARS:
            raise UserError(f"{where_item}, condition '{name}': the sentence is {len(sentence)} characters long; "
                            f"the limit is {MAX_SENTENCE_CHARS}.")
    return Design(tuple(conditions), names, formulas, suite, item, markup, text, names_text or "")


def _region_names(names_text, markup: str, count: int, where_item: str) -> tuple[str, ...]:
    if markup == "brackets":
        return MARKED_REGIONS
    given = [n.strip() for n in (names_text or "").split("|")] if (names_text or "").strip() else []
    if not given:
        return tuple(f"region {k + 1}" for k in range(count))
    if len(given) != count:
        raise UserError(f"{where_item}: {len(given)} region names were given for {count} regions; give one a "
                        "region, split by |, or none.")
    for k, n in enumerate(given):
        if not n:
            raise UserError(f"{where_item}: region {k + 1} has an empty name; name it or leave every name out.")
        if len(n) > MAX_NAME_CHARS:
            raise UserError(f"{where_item}: the name of region {k + 1} is {len(n)} characters long; the limit is "
                            f"{MAX_NAME_CHARS}.")
    return tuple(given)


def check_formulas(design: Design) -> list:
    """Each prediction's parsed tree, checked against the design's conditions and regions; UserError
    naming the item, the prediction and the unknown condition or region."""
    trees = []
    regions = range(1, len(design.region_names) + 1)
    for k, text in enumerate(design.formulas):
        try:
            tree = F.parse(text)
            F.check_references(tree, design.condition_names, regions, text)
        except UserError as exc:
            msg = str(exc).replace("which the suite does not have", "which this item does not have")
            raise UserError(f"{design.where()}, prediction {k + 1}: {msg}") from None
        trees.append(tree)
    return trees


def as_suite_dict(design: Design) -> dict:
    """The design as a one-item SyntaxGym suite (JSON as a dict)."""
    return {"meta": {"name": design.suite or "typed design", "metric": "sum"},
            "region_meta": {str(k + 1): n for k, n in enumerate(design.region_names)},
            "predictions": [{"type": "formula", "formula": f} for f in design.formulas],
            "items": [{"item_number": design.item,
                       "conditions": [{"condition_name": name,
                                       "regions": [{"region_number": k + 1, "content": c} for k, c in enumerate(regions)]}
                                      for name, regions in design.conditions]}]}


def to_suite(design: Design):
    check_formulas(design)
    return read_suite(as_suite_dict(design), name=design.suite or "typed design")


# ------------------------------------------------------------------------------------------ shipped items
def suite_choices() -> list[tuple[str, str]]:
    """(label, id) of the shipped suites, grouped by circuit in the paper's order, then those in none."""
    order = {c: k for k, c in enumerate(catalog.circuits()["circuits"])}
    infos = sorted(catalog.list_suites(), key=lambda s: (order.get(s.circuit, len(order)), s.id))
    return [(f"{s.circuit or 'no circuit'} · {s.id} ({s.items} items, {s.conditions} conditions)", s.id) for s in infos]


def item_numbers(suite_id: str) -> list[int]:
    return [it.item_number for it in catalog.load_suite(suite_id).items]


def item_text(suite_id: str, item: int) -> dict:
    """A shipped item as the view's inputs: {conditions (one a line, regions split by |), regions (names
    split by |), formula (one a line), suite, item, note}; UserError for a suite of more than 4 conditions."""
    suite = catalog.load_suite(suite_id)
    it = suite.item(int(item))
    if len(it.conditions) > MAX_CONDITIONS:
        raise UserError(f"The suite {suite_id} has {len(it.conditions)} conditions an item; the Design view takes "
                        f"{MIN_CONDITIONS} to {MAX_CONDITIONS} (run it whole with `accapp bench --suite {suite_id}`).")
    lines = [f"{c.name}: " + " | ".join(content.strip() for _, content in c.regions) for c in it.conditions]
    return {"conditions": "\n".join(lines), "regions": " | ".join(suite.region_names),
            "formula": "\n".join(p.formula.strip() for p in suite.predictions), "suite": suite_id,
            "item": it.item_number}


# ------------------------------------------------------------------------------------------ scoring
def check_model(model_id: str) -> None:
    """UserError unless the model is a causal LM of the registry (region surprisal is left to right)."""
    from accapp.service.catalog import get_spec

    spec = get_spec(model_id)
    if spec.kind != "causal":
        raise UserError(f"The Design view needs a causal language model: {spec.name} is a {spec.kind} LM, which "
                        "gives no left-to-right surprisal of a region. Pick a causal model.")


def score_design(engine, design: Design) -> dict:
    """On the model thread: the design's region surprisals and predictions with this engine (plain data)."""
    suite = to_suite(design)
    scored = score_item(engine, suite.items[0], suite)
    return result_of(design, scored.regions.to_dict("records"), scored.evaluation.outcomes,
                     getattr(engine, "model_id", ""), getattr(engine, "word_rule", ""))


def result_of(design: Design, regions: list[dict], outcomes, model: str = "", word_rule: str = "") -> dict:
    """The view's data from region rows (condition, region_number, surprisal_bits, ...) and outcomes."""
    values = {(r["condition"], int(r["region_number"])): float(r["surprisal_bits"]) for r in regions}
    table = [{"region": k + 1, "name": name,
              "cells": [{"condition": c, "content": regs[k], "surprisal_bits": values.get((c, k + 1))}
                        for c, regs in design.conditions]}
             for k, name in enumerate(design.region_names)]
    sentences = {c: " ".join(r for r in regs if r) for c, regs in design.conditions}
    trees = check_formulas(design)
    predictions = []
    for o, tree in zip(outcomes, trees):
        refs = [{"reference": ref, "bits": bits, **_ref_parts(ref, design)} for ref, bits in o.values]
        predictions.append({"index": o.prediction, "formula": o.formula, "passed": bool(o.passed), "values": refs,
                            "interaction": interaction(tree, values, design)})
    return {"suite": design.suite, "item": design.item, "conditions": list(design.condition_names),
            "sentences": sentences, "region_names": list(design.region_names), "table": table,
            "predictions": predictions, "model": model, "word_rule": word_rule,
            "inputs": {"conditions": design.text, "regions": design.names_text, "formula": "\n".join(design.formulas)}}


def _ref_parts(ref_text: str, design: Design) -> dict:
    m = re.fullmatch(r"\((\d+|\*);%(.+)%\)", ref_text)
    if not m:
        return {}
    region = None if m.group(1) == "*" else int(m.group(1))
    name = "every region" if region is None else design.region_names[region - 1]
    return {"condition": m.group(2), "region_number": region, "region_name": name}


def run(model_id: str, conditions_text, names_text="", formulas_text="", suite: str = "", item=TYPED_ITEM) -> dict:
    """The whole view for a model: the input checked, then scored through the model host (queued with the
    probes). UserError for bad input or a masked LM, before any model loads."""
    from accapp.service.catalog import DEFAULT_MODEL
    from accapp.service.host import get_state

    model_id = model_id or DEFAULT_MODEL
    check_model(model_id)
    suite = suite if suite in catalog.suite_ids() else ""
    design = parse_conditions(conditions_text, names_text, formulas_text, suite, _item_number(item))
    to_suite(design)  # every problem named before the model loads
    return get_state().with_engine(model_id, score_design, design)


def _item_number(item) -> int:
    try:
        return int(item) if item not in (None, "") else TYPED_ITEM
    except (TypeError, ValueError):
        raise UserError(f"The item number must be a whole number, not {str(item)[:40]!r}.") from None


# ------------------------------------------------------------------------------------------ interaction
def _linear(node):
    """({(condition, region): coefficient}, constant, refs in formula order) of an arithmetic node, or None
    when it is not a sum of references and numbers (a product of two references, a division by one)."""
    if isinstance(node, F.Num):
        return {}, node.value, []
    if isinstance(node, F.Ref):
        return {(node.condition, node.region): 1.0}, 0.0, [(node.condition, node.region)]
    if not isinstance(node, F.Arith):
        return None
    a, b = _linear(node.left), _linear(node.right)
    if a is None or b is None:
        return None
    (ca, ka, ra), (cb, kb, rb) = a, b
    if node.op in "+-":
        sign = 1.0 if node.op == "+" else -1.0
        out = dict(ca)
        for key, v in cb.items():
            out[key] = out.get(key, 0.0) + sign * v
        return out, ka + sign * kb, ra + rb
    if node.op == "*" and (not ca or not cb):
        scale, coefs, k = (kb, ca, ka) if not cb else (ka, cb, kb)
        return {key: v * scale for key, v in coefs.items()}, k * scale, ra + rb
    if node.op == "/" and not cb and kb != 0:
        return {key: v / kb for key, v in ca.items()}, ka / kb, ra
    return None


def _difference(node: F.Compare):
    """(coefficients, constant, refs) of left − right of a comparison, or None."""
    left, right = _linear(node.left), _linear(node.right)
    if left is None or right is None:
        return None
    coefs = dict(left[0])
    for key, v in right[0].items():
        coefs[key] = coefs.get(key, 0.0) - v
    coefs = {k: v for k, v in coefs.items() if abs(v) > 1e-12}
    return coefs, left[1] - right[1], left[2] + right[2]


def _conjuncts(tree) -> list:
    if isinstance(tree, F.Logic) and tree.op == "&":
        return _conjuncts(tree.left) + _conjuncts(tree.right)
    return [tree]


def _sign(op: str) -> int:
    return {">": 1, "<": -1}.get(op, 0)


def _four(compare: F.Compare):
    """(a, b, c, d, predicted sign) when the comparison is (a − b) − (c − d) against 0, in any of its
    written forms, four conditions; else None."""
    diff = _difference(compare)
    if diff is None:
        return None
    coefs, const, order = diff
    if abs(const) > 1e-12 or len(coefs) != 4 or sorted(coefs.values()) != [-1.0, -1.0, 1.0, 1.0]:
        return None
    if len({c for c, _ in coefs}) != 4 or any(r is None for _, r in coefs):
        return None
    order = [k for k in dict.fromkeys(order) if k in coefs]
    flip = -1 if coefs[order[0]] < 0 else 1  # the first reference written is a
    a = order[0]
    negatives = [k for k in order if coefs[k] * flip < 0]
    b, c = negatives
    d = next(k for k in order if k not in (a, b, c))
    return a, b, c, d, _sign(compare.op) * flip if compare.op != "=" else 0


def _simple(compare):
    """(x, y, predicted sign of x − y) of a comparison of two references of two conditions, else None."""
    if not isinstance(compare, F.Compare) or compare.op == "=":
        return None
    if not (isinstance(compare.left, F.Ref) and isinstance(compare.right, F.Ref)):
        return None
    x, y = (compare.left.condition, compare.left.region), (compare.right.condition, compare.right.region)
    if x[1] is None or y[1] is None or x[0] == y[0]:
        return None
    return x, y, _sign(compare.op)


def interaction(tree, values: dict, design: Design) -> dict:
    """The prediction's 2x2 interaction (module doc): {"defined": True, "a", "b", "c", "d" ([condition,
    region]), "bits", "predicted" (1 above 0, -1 below, 0 equal), "as_predicted", "text"} or {"defined":
    False, "text": why not}."""
    if len(design.conditions) != 4:
        return {"defined": False, "text": f"No 2x2 interaction is defined: the item has {len(design.conditions)} "
                                          "conditions, and a 2x2 design has four."}
    conjuncts = _conjuncts(tree)
    found = next((f for f in (_four(c) for c in conjuncts if isinstance(c, F.Compare)) if f), None)
    if found is None and len(conjuncts) == 2:
        s1, s2 = _simple(conjuncts[0]), _simple(conjuncts[1])
        if s1 and s2 and len({s1[0][0], s1[1][0], s2[0][0], s2[1][0]}) == 4:
            regions = {s1[0][1], s1[1][1], s2[0][1], s2[1][1]}
            if s1[2] == s2[2]:
                return {"defined": False, "text": "No 2x2 interaction is defined: the prediction's two comparisons "
                                                  "ask for effects in the same direction (two simple effects, not a "
                                                  "crossover)."}
            if len(regions) > 1:
                shown = " and ".join(f"{r} ('{design.region_names[r - 1]}')" for r in sorted(regions))
                return {"defined": False, "text": f"No 2x2 interaction at one region is defined: the prediction's two "
                                                  f"comparisons are at regions {shown}; each comparison's numbers are "
                                                  "shown above."}
            (x1, y1, sign), (x2, y2, _) = s1, s2
            found = (x1, y1, x2, y2, sign)
    if found is None:
        return {"defined": False, "text": "No 2x2 interaction is defined: the prediction is not of the shape "
                                          "(a − b) compared with (c − d), nor two comparisons at one region in "
                                          "opposite directions."}
    return describe_interaction(*found, values=values, region_names=design.region_names)


def describe_interaction(a, b, c, d, predicted: int, values: dict, region_names) -> dict:
    """The interaction (a − b) − (c − d) of four (condition, region) references, in words and bits."""
    bits = values[a] - values[b] - values[c] + values[d]
    regions = sorted({k[1] for k in (a, b, c, d)})
    at = (f"region {regions[0]} ('{region_names[regions[0] - 1]}')" if len(regions) == 1 else
          "regions " + " and ".join(f"{r} ('{region_names[r - 1]}')" for r in regions))
    terms = f"({a[0]} − {b[0]}) − ({c[0]} − {d[0]})"
    if predicted == 0:
        ok = F.is_close(bits, 0.0)
        wanted = "equal to 0"
    else:
        ok = bits > 0 if predicted > 0 else bits < 0
        wanted = "above 0" if predicted > 0 else "below 0"
    verdict = "as predicted" if ok else f"not as predicted (the prediction wants it {wanted})"
    text = f"The 2x2 interaction at {at}: {terms} = {bits:+.2f} bits, {verdict}."
    return {"defined": True, "a": list(a), "b": list(b), "c": list(c), "d": list(d), "bits": bits,
            "predicted": predicted, "as_predicted": ok, "text": text}


# ------------------------------------------------------------------------------------------ link
def link_query(values: dict) -> str:
    """The view's inputs -> the query string of its link ('tab=design&conditions=...')."""
    out = {"tab": TAB, **{k: values.get(k) for k in LINK_KEYS}}
    if not out.get("suite"):
        out.pop("item", None)
    return urlencode([(k, str(v)) for k, v in out.items() if v not in (None, "")], quote_via=quote)


def is_design_link(params) -> bool:
    return params.get("tab") == TAB


def link_values(params) -> dict:
    """A design link's checked values: {conditions, regions, formula, model, suite, item}; UserError for a
    value the view would refuse (the conditions, region names and formulas are checked when it runs)."""
    from accapp.service.catalog import DEFAULT_MODEL, get_spec

    model = str(params.get("model") or DEFAULT_MODEL)
    if len(model) > 200:
        raise UserError("The link's model is not a model this app knows.")
    model = get_spec(model).id
    check_model(model)
    suite = str(params.get("suite") or "")
    if suite and suite not in catalog.suite_ids():
        raise UserError(f"The link names no shipped suite {suite[:60]!r}.")
    item = _item_number(params.get("item")) if suite else TYPED_ITEM
    conditions = str(params.get("conditions") or "")
    regions = str(params.get("regions") or "")
    formula = str(params.get("formula") or "")
    parse_conditions(conditions, regions, formula, suite, item)  # the link's own fault, said before anything runs
    return {"conditions": conditions, "regions": regions, "formula": formula, "model": model, "suite": suite,
            "item": item}


# ------------------------------------------------------------------------------------------ export
def engine_provenance(engine) -> dict:
    from accapp.service.provenance import provenance

    return provenance(engine)


def export_record(result: dict, provenance: dict, link: str = "") -> dict:
    return {"format": FORMAT, "app": "Acceptability Explorer", "link_query": link,
            "units": "surprisal_bits: a region's surprisal, the sum of its words' surprisals in bits "
                     "(1 bit = ln 2 nats); the words' probabilities as the probe's word view gives them.",
            "source": SOURCE_NOTE if result.get("suite") else "typed in the Design view",
            **{k: result[k] for k in ("suite", "item", "conditions", "sentences", "region_names", "model", "word_rule")},
            "regions": [{"condition": cell["condition"], "region_number": row["region"], "region_name": row["name"],
                         "content": cell["content"], "surprisal_bits": cell["surprisal_bits"]}
                        for row in result["table"] for cell in row["cells"]],
            "predictions": result["predictions"], "provenance": provenance}


CSV_COLUMNS = ["record", "item", "condition", "sentence", "region_number", "region_name", "content", "surprisal_bits",
               "prediction", "formula", "passed", "reference", "text", "field", "value"]


def csv_rows(record: dict) -> list[dict]:
    rows = []
    for field_, value in flat_fields(record["provenance"]):
        rows.append({"record": "provenance", "field": field_, "value": value})
    for r in record["regions"]:
        rows.append({"record": "region", "item": record["item"], "condition": r["condition"],
                     "sentence": record["sentences"].get(r["condition"], ""), "region_number": r["region_number"],
                     "region_name": r["region_name"], "content": r["content"], "surprisal_bits": r["surprisal_bits"]})
    for p in record["predictions"]:
        rows.append({"record": "prediction", "item": record["item"], "prediction": p["index"] + 1, "formula": p["formula"],
                     "passed": p["passed"]})
        for v in p["values"]:
            rows.append({"record": "reference", "item": record["item"], "prediction": p["index"] + 1,
                         "reference": v["reference"], "condition": v.get("condition"),
                         "region_number": v.get("region_number"), "region_name": v.get("region_name"),
                         "surprisal_bits": v["bits"]})
        inter = p["interaction"]
        rows.append({"record": "interaction", "item": record["item"], "prediction": p["index"] + 1, "text": inter["text"],
                     "surprisal_bits": inter.get("bits"), "passed": inter.get("as_predicted")})
    return rows


_SEQ = [0]


def write_exports(record: dict, folder: Path, keep: int = KEEP_FILES) -> tuple[Path, Path]:
    """(JSON, CSV) files of the export, each written atomically; the folder's older design exports pruned."""
    import json

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    _SEQ[0] += 1
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    stem = safe_name(f"design-{record.get('model') or 'model'}-{stamp}-{os.getpid()}-{_SEQ[0]}")
    text = json.dumps(record, ensure_ascii=False, indent=1, default=str)
    js = write_atomic(folder / f"{stem}.json", lambda tmp: tmp.write_text(text, encoding="utf-8"))
    csv = rows_csv_text(csv_rows(record), CSV_COLUMNS)
    cs = write_atomic(folder / f"{stem}.csv", lambda tmp: tmp.write_bytes(csv.encode(CSV_ENCODING)))
    files = sorted((p for p in folder.glob("design-*") if p.is_file()), key=lambda p: p.stat().st_mtime_ns)
    for p in files[:max(0, len(files) - keep)]:
        try:
            p.unlink()
        except OSError:
            pass
    return js, cs


def export(result: dict, link: str = "") -> tuple[Path, Path]:
    """The shown result as JSON and CSV files with the model's provenance (read through the model host)."""
    from accapp.service.host import get_state

    if not result or not result.get("model"):
        raise UserError("Run the design first: the export is of the result shown.")
    state = get_state()
    prov = state.with_engine(result["model"], engine_provenance)
    return write_exports(export_record(result, prov, link), state.tmpdir() / "exports")

