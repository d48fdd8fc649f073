"""SyntaxGym prediction formulas (accapp/suites/formula.py): syntaxgym-core's own prediction test
cases (tests/fixtures/syntaxgym/prediction_cases.json, with the dummy suite of its conftest.py),
precedence, the `=` tolerance, and refusals that name what is wrong and where."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from accapp.errors import UserError
from accapp.suites import formula as F

FIXTURES = Path(__file__).parent / "fixtures" / "syntaxgym"
CASES = json.loads((FIXTURES / "prediction_cases.json").read_text(encoding="utf-8"))
DUMMY = json.loads((FIXTURES / "dummy_suite.json").read_text(encoding="utf-8"))


def _dummy_values() -> dict:
    item = DUMMY["items"][0]
    return {(c["condition_name"], r["region_number"]): r["metric_value"]["sum"]
            for c in item["conditions"] for r in c["regions"]}


def _values(case) -> dict:
    values = _dummy_values() if case.get("item") == "dummy" else {}
    if "bump" in case:
        cond, region, by = case["bump"]
        values[cond, region] += by
    return values


@pytest.mark.parametrize("case", CASES["cases"], ids=[c["test"] for c in CASES["cases"]])
def test_syntaxgym_core_prediction_cases(case):
    if case["expected"] == "error":
        with pytest.raises(UserError):
            F.parse(case["formula"])
        return
    tree = F.parse(case["formula"])
    assert F.evaluate(tree, _values(case)) is case["expected"]
    # printed and parsed again (syntaxgym-core's serialization test), the same outcome
    assert F.evaluate(F.parse(str(tree)), _values(case)) is case["expected"]


@pytest.mark.parametrize("case", CASES["parses"], ids=[c["test"] for c in CASES["parses"]])
def test_syntaxgym_core_parse_cases(case):
    tree = F.parse(case["formula"])
    if "printed" in case:  # syntaxgym-core's str() of the parsed formula: & groups from the left
        assert str(tree) == case["printed"]
    if "referenced" in case:
        assert {(r.condition, r.region) for r in F.references(tree)} == {tuple(x) for x in case["referenced"]}


def test_the_dummy_suites_prediction_fails_for_the_reason_syntaxgym_core_gives():
    values = _dummy_values()
    first = F.parse("(5;%sub_no-matrix%) > (5;%no-sub_no-matrix%)")
    second = F.parse("(5;%sub_matrix%) < (5;%no-sub_matrix%)")
    assert F.evaluate(first, values) is False and F.evaluate(second, values) is True


@pytest.mark.parametrize("text, expected", [
    ("1<2 | 1<2 & 2<1", False),  # & and | share one level, from the left: (T | T) & F
    ("2<1 & 2<1 | 1<2", True),  # (F & F) | T
    ("10 - 4 - 3 = 3", True),  # left to right
    ("2 + 3 * 4 = 14", True),  # * binds tighter than +
    ("12 / 3 / 2 = 2", True),
    ("1 + 1 > 1", True),  # comparisons are looser than arithmetic
    ("5 - -3 = 8", True),  # a signed number
    ("-2.5e1 < -24", True),
    (".5 + 1. = 1.5", True),
    ("[1 < 2] & [2 > 1]", True),  # Hu et al. 2020's brackets
    ("[ [2 - 1] > [0] ] & (1 < 2)", True),
    ("( 5 ;% a % ) > 1", True),  # whitespace between the tokens of a reference
    ("1 = 1.0009", True),  # "=": |a - b| <= 1e-3 + 1e-5 |b|
    ("1 = 1.0011", False),
    ("1000 = 1000.005", True),
])
def test_precedence_and_semantics(text, expected):
    assert F.evaluate(F.parse(text), {("a", 5): 2.0}) is expected


def test_a_star_sums_every_region_of_the_condition():
    values = {("a", 1): 1.0, ("a", 2): 2.5, ("b", 1): 10.0}
    assert F.evaluate(F.parse("(*;%a%) = 3.5"), values) is True
    assert F.ref_value(F.parse("(*;%b%) > 0").left, values) == 10.0


def test_python_code_is_refused_with_a_message():
    with pytest.raises(UserError, match=r"not valid at character 1 \('_'\): expected a region reference"):
        F.parse("__import__('os').system('x')")
    for text in ["eval('1')", "(1;%a%) > (1;%a%).__class__", "1 < 2 and 2 < 3", "1 < 2 or x", "(1;%a'%) > 0", "1 < 2; 1"]:
        with pytest.raises(UserError):
            F.parse(text)


def test_the_module_never_evaluates_code():
    tree = ast.parse(Path(F.__file__).read_text(encoding="utf-8"))
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert not called & {"eval", "exec", "compile", "__import__", "getattr"}


@pytest.mark.parametrize("text, message", [
    ("(1;%a%) < (1;%b%) < (1;%c%)", r"character 19 \('<'\): a comparison cannot be chained"),
    ("(1;%a%) & (1;%b%)", r"character 9 \('&'\): '&' joins comparisons, and \(1;%a%\) is a number"),
    ("((1;%a%) < 1) + 1 > 0", r"'\+' works on numbers"),
    ("((1;%a%) < 1) < 1", r"'<' compares numbers"),
    ("(1;%a%) - (1;%b%)", r"is a number, not a prediction"),
    ("((1;%a%) < 1", r"character 13 \(the end of the formula\): expected '\)' to close the '\(' at character 1"),
    ("[(1;%a%) < 1)", r"expected '\]' to close the '\['"),
    ("(1;%a b%) < 1", r"expected '%' to end the condition name 'a'"),
    ("(1;%%) < 1", r"expected a condition name"),
    ("-(1;%a%) < 1", r"character 1 \('-'\)"),
    ("(1;%a%) < 1 1", r"character 13 \('1'\): expected an operator"),
    ("   ", r"empty"),
])
def test_errors_name_what_is_wrong_and_where(text, message):
    with pytest.raises(UserError, match=message):
        F.parse(text)


def test_limits_are_stated_and_checked():
    too_long = "1 < 2" + " " * F.MAX_FORMULA_CHARS
    with pytest.raises(UserError, match=f"the limit is {F.MAX_FORMULA_CHARS:,}"):
        F.parse(too_long)
    deep = "(" * (F.MAX_NESTING + 1) + "1" + ")" * (F.MAX_NESTING + 1) + " < 2"
    with pytest.raises(UserError, match=f"more than {F.MAX_NESTING} parentheses"):
        F.parse(deep)
    assert F.evaluate(F.parse("(" * F.MAX_NESTING + "1" + ")" * F.MAX_NESTING + " < 2"), {}) is True
    with pytest.raises(UserError, match="must be text"):
        F.parse(None)


def test_unknown_condition_and_region_are_named():
    tree = F.parse("(5;%what_gap%) < (5;%that_gap%) & (9;%what_gap%) > 0")
    with pytest.raises(UserError, match=r"names condition 'that_gap' at character 18, which the suite does not have "
                                        r"\(its conditions: what_gap, what_nogap\)"):
        F.check_references(tree, ["what_gap", "what_nogap"], range(1, 10))
    with pytest.raises(UserError, match=r"names region 9 at character 35, which the suite does not have"):
        F.check_references(tree, ["what_gap", "that_gap"], range(1, 9))
    F.check_references(F.parse("(*;%a%) > 0"), ["a"], [1])  # "*" names no region


def test_division_by_zero_is_an_error_not_a_crash():
    with pytest.raises(UserError, match="divides by zero at character 3"):
        F.evaluate(F.parse("1 / (1;%a%) > 0"), {("a", 1): 0.0})
