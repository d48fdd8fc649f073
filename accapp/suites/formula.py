"""SyntaxGym prediction formulas: a recursive-descent parser into a tree, evaluated on numbers.

The grammar is syntaxgym-core's (its pyparsing ``infixNotation``, syntaxgym/prediction.py), levels
from the loosest to the tightest:

    formula    = logic ;
    logic      = comparison { ( "&" | "|" ) comparison } ;      one level, left to right
    comparison = sum [ ( "<" | ">" | "=" ) sum ] ;
    sum        = term { ( "+" | "-" ) term } ;                  left to right
    term       = atom { ( "*" | "/" ) atom } ;                  left to right (an extension)
    atom       = reference | number | "(" logic ")" | "[" logic "]" ;
    reference  = "(" ( digits | "*" ) ";%" name "%" ")" ;
    name       = { letter | digit | "_" | "-" }+ ;              ASCII, as pyparsing's alphanums
    number     = [ "+" | "-" ] ( digits [ "." [ digits ] ] | "." digits ) [ ( "e" | "E" ) [ "+" | "-" ] digits ] ;

Whitespace may stand between any two of these tokens (pyparsing skips it), not inside one
(``;%`` is one token, as is a number with its sign). Semantics, as syntaxgym-core's:

- ``(n;%c%)`` is the surprisal of region n in condition c; ``(*;%c%)`` the sum over all of c's regions.
- ``&`` and ``|`` share one level and group from the left: ``a & b | c`` is ``(a & b) | c``.
- ``=`` is numpy's ``isclose(left, right, rtol=1e-5, atol=1e-3)``: |left - right| <= 1e-3 + 1e-5 |right|.
- A number may carry a sign (``5 - -3`` is 8); there is no other unary minus (``-(1;%a%)`` is refused).

Where this parser differs, it refuses rather than guesses: a chained comparison (``a < b < c``,
whose second comparison syntaxgym-core silently drops) and a formula mixing truth values and
numbers (``(1;%a%) & 2``, or a formula that is a number, not a prediction) are errors. Square
brackets group as parentheses do: Hu et al. (2020)'s published suites write their formulas with
them, which syntaxgym-core's evaluator of the time turned into parentheses. ``*`` and ``/`` bind
tighter than ``+`` and ``-``; syntaxgym-core has neither (a ``*`` there only names all regions).

Nothing is evaluated as code: the tree holds numbers, references and operators only.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Mapping, Union

from accapp.errors import UserError

MAX_FORMULA_CHARS = 1000  # the published suites' longest formula is 239 characters
MAX_NESTING = 32  # parentheses and brackets inside one another
EQUALITY_RTOL = 1e-5  # syntaxgym-core's tolerances for "=" (numpy.isclose)
EQUALITY_ATOL = 1e-3

_SPACE = " \t\r\n"  # pyparsing's default whitespace
_NUMBER = re.compile(r"[+-]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?")
_NAME = re.compile(r"[A-Za-z0-9_-]+")
_REGION = re.compile(r"\d+|\*")
_CLOSE = {"(": ")", "[": "]"}


@dataclass(frozen=True)
class Ref:
    """A region reference: region number (None for ``*``, every region) in a condition."""

    region: int | None
    condition: str
    pos: int  # 0-based character offset of its "(" in the formula

    def __str__(self) -> str:
        return f"({'*' if self.region is None else self.region};%{self.condition}%)"


@dataclass(frozen=True)
class Num:
    value: float
    pos: int

    def __str__(self) -> str:
        return repr(self.value)


@dataclass(frozen=True)
class Arith:
    op: str  # + - * /
    left: "Node"
    right: "Node"
    pos: int  # the operator's offset

    def __str__(self) -> str:
        return f"({self.left} {self.op} {self.right})"


@dataclass(frozen=True)
class Compare:
    op: str  # < > =
    left: "Node"
    right: "Node"
    pos: int

    def __str__(self) -> str:
        return f"({self.left} {self.op} {self.right})"


@dataclass(frozen=True)
class Logic:
    op: str  # & |
    left: "Node"
    right: "Node"
    pos: int

    def __str__(self) -> str:
        return f"({self.left} {self.op} {self.right})"


Node = Union[Ref, Num, Arith, Compare, Logic]


def _is_truth(node: Node) -> bool:
    return isinstance(node, (Compare, Logic))


def _shown(text: str, i: int) -> str:
    return "the end of the formula" if i >= len(text) else repr(text[i])


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.depth = 0

    def fail(self, what: str, at: int | None = None) -> UserError:
        at = self.i if at is None else at
        return UserError(f"The formula {self.text!r} is not valid at character {at + 1} "
                         f"({_shown(self.text, at)}): {what}.")

    def skip(self) -> None:
        while self.i < len(self.text) and self.text[self.i] in _SPACE:
            self.i += 1

    def peek(self) -> str:
        self.skip()
        return self.text[self.i] if self.i < len(self.text) else ""

    # ---- levels ----------------------------------------------------------------------
    def logic(self) -> Node:
        left = self.comparison()
        while self.peek() in ("&", "|"):
            pos, op = self.i, self.text[self.i]
            self.i += 1
            right = self.comparison()
            for side in (left, right):
                if not _is_truth(side):
                    raise self.fail(f"'{op}' joins comparisons, and {side} is a number", pos)
            left = Logic(op, left, right, pos)
        return left

    def comparison(self) -> Node:
        left = self.sum()
        c = self.peek()
        if c and c in "<>=":
            pos = self.i
            self.i += 1
            right = self.sum()
            for side in (left, right):
                if _is_truth(side):
                    raise self.fail(f"'{c}' compares numbers, and {side} is a comparison", pos)
            nxt = self.peek()
            if nxt and nxt in "<>=":
                raise self.fail("a comparison cannot be chained; put each comparison in parentheses and join them "
                                "with & or |")
            return Compare(c, left, right, pos)
        return left

    def sum(self) -> Node:
        left = self.term()
        while self.peek() in ("+", "-"):
            pos, op = self.i, self.text[self.i]
            self.i += 1
            left = self._arith(op, left, self.term(), pos)
        return left

    def term(self) -> Node:
        left = self.atom()
        while self.peek() in ("*", "/"):
            pos, op = self.i, self.text[self.i]
            self.i += 1
            left = self._arith(op, left, self.atom(), pos)
        return left

    def _arith(self, op: str, left: Node, right: Node, pos: int) -> Arith:
        for side in (left, right):
            if _is_truth(side):
                raise self.fail(f"'{op}' works on numbers, and {side} is a comparison", pos)
        return Arith(op, left, right, pos)

    def atom(self) -> Node:
        c = self.peek()
        start = self.i
        if c == "(":
            ref = self.reference()
            if ref is not None:
                return ref
        if c in ("(", "["):
            self.depth += 1
            if self.depth > MAX_NESTING:
                raise self.fail(f"more than {MAX_NESTING} parentheses inside one another")
            self.i += 1
            inner = self.logic()
            if self.peek() != _CLOSE[c]:
                raise self.fail(f"expected '{_CLOSE[c]}' to close the '{c}' at character {start + 1}")
            self.i += 1
            self.depth -= 1
            return inner
        m = _NUMBER.match(self.text, self.i)
        if m:
            self.i = m.end()
            return Num(float(m.group()), start)
        raise self.fail("expected a region reference such as (5;%condition%), a number or a parenthesis")

    def reference(self) -> Ref | None:
        """A region reference at self.i (a "("), or None (self.i unchanged) if none starts here:
        then the "(" opens a group, as pyparsing tries the reference first."""
        start = self.i
        self.i += 1
        self.skip()
        m = _REGION.match(self.text, self.i)
        if not m:
            self.i = start
            return None
        self.i = m.end()
        self.skip()
        if not self.text.startswith(";%", self.i):
            self.i = start
            return None
        self.i += 2
        self.skip()
        name = _NAME.match(self.text, self.i)
        if not name:
            raise self.fail("expected a condition name (letters, digits, '_' or '-') after ';%'")
        self.i = name.end()
        if self.peek() != "%":
            raise self.fail(f"expected '%' to end the condition name {name.group()!r}")
        self.i += 1
        if self.peek() != ")":
            raise self.fail("expected ')' to close the region reference")
        self.i += 1
        region = None if m.group() == "*" else int(m.group())
        return Ref(region, name.group(), start)


def parse(text: object) -> Node:
    """The formula's tree, or UserError naming what is wrong and where (1-based character)."""
    if not isinstance(text, str):
        raise UserError(f"A formula must be text, not a {type(text).__name__}.")
    if len(text) > MAX_FORMULA_CHARS:
        raise UserError(f"The formula is {len(text):,} characters long; the limit is {MAX_FORMULA_CHARS:,}.")
    if not text.strip():
        raise UserError("The formula is empty: write a prediction such as (5;%ungrammatical%) > (5;%grammatical%).")
    p = _Parser(text)
    tree = p.logic()
    if p.peek():
        raise p.fail("expected an operator (+ - * / < > = & |) or the end of the formula")
    if not _is_truth(tree):
        raise UserError(f"The formula {text!r} is a number, not a prediction: it needs a comparison (<, > or =).")
    return tree


def references(tree: Node) -> list[Ref]:
    """The tree's region references, left to right (repeats kept)."""
    if isinstance(tree, Ref):
        return [tree]
    if isinstance(tree, Num):
        return []
    return references(tree.left) + references(tree.right)


def check_references(tree: Node, conditions, regions, text: str = "") -> None:
    """UserError naming the first reference to a condition or region number the suite lacks."""
    conditions, regions = list(conditions), list(regions)
    where = f"The formula {text!r}" if text else "The formula"
    for ref in references(tree):
        if ref.condition not in conditions:
            raise UserError(f"{where} names condition {ref.condition!r} at character {ref.pos + 1}, which the suite "
                            f"does not have (its conditions: {', '.join(conditions)}).")
        if ref.region is not None and ref.region not in regions:
            raise UserError(f"{where} names region {ref.region} at character {ref.pos + 1}, which the suite does not "
                            f"have (its regions: {', '.join(map(str, regions))}).")


def ref_value(ref: Ref, values: Mapping[tuple[str, int], float]) -> float:
    """A reference's number: values[(condition, region)], or for ``*`` the sum over the condition's regions."""
    if ref.region is None:
        return float(sum(v for (c, _), v in values.items() if c == ref.condition))
    return float(values[ref.condition, ref.region])


def is_close(a: float, b: float) -> bool:
    """numpy.isclose(a, b, rtol=EQUALITY_RTOL, atol=EQUALITY_ATOL), as syntaxgym-core's "="."""
    if math.isnan(a) or math.isnan(b):
        return False
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= EQUALITY_ATOL + EQUALITY_RTOL * abs(b)


def evaluate(tree: Node, values: Mapping[tuple[str, int], float]):
    """The tree's value on values[(condition, region_number)] (surprisals): a bool for a
    prediction, a float for an arithmetic part. A division by zero is a UserError."""
    if isinstance(tree, Num):
        return tree.value
    if isinstance(tree, Ref):
        return ref_value(tree, values)
    a, b = evaluate(tree.left, values), evaluate(tree.right, values)
    op = tree.op
    if isinstance(tree, Logic):
        return bool(a and b) if op == "&" else bool(a or b)
    if isinstance(tree, Compare):
        return a < b if op == "<" else a > b if op == ">" else is_close(a, b)
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if b == 0:
        raise UserError(f"The formula divides by zero at character {tree.pos + 1} ({tree.right} is 0).")
    return a / b
