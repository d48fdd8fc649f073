"""The Design view's service without a model: typed conditions and their markups, each bad input's one
sentence, the 2x2 interaction in words from given numbers, a shipped item's round trip, the link and
the export's rows."""

from __future__ import annotations

from urllib.parse import parse_qsl

import pytest

from accapp.errors import UserError
from accapp.service import design as D
from accapp.suites import formula as F
from accapp.suites.evaluate import evaluate_item

LION = ("what_gap: I know | what | the lion devoured | at sunrise.\n"
        "that_gap: I know | that | the lion devoured | at sunrise.\n"
        "what_nogap: I know | what | the lion devoured the gazelle | at sunrise.\n"
        "that_nogap: I know | that | the lion devoured the gazelle | at sunrise.")
NAMES = "prefix | comp | clause | end"
INTERACTION = "((4;%what_gap%) - (4;%that_gap%)) < ((4;%what_nogap%) - (4;%that_nogap%))"


def refused(*args, **kwargs) -> str:
    with pytest.raises(UserError) as exc:
        D.to_suite(D.parse_conditions(*args, **kwargs))
    text = str(exc.value)
    assert "\n" not in text and "Traceback" not in text
    return text


# ------------------------------------------------------------------------------------------ parsing
def test_bars_name_the_conditions_and_number_the_regions():
    d = D.parse_conditions(LION, NAMES, INTERACTION)
    assert d.condition_names == ("what_gap", "that_gap", "what_nogap", "that_nogap")
    assert d.region_names == ("prefix", "comp", "clause", "end")
    assert d.conditions[2][1] == ("I know", "what", "the lion devoured the gazelle", "at sunrise.")
    suite = D.to_suite(d)
    assert suite.items[0].condition("what_gap").sentence == "I know what the lion devoured at sunrise."
    assert suite.predictions[0].formula == INTERACTION


def test_double_brackets_give_before_critical_after_and_unnamed_lines_letters():
    d = D.parse_conditions("I know what the lion devoured [[at sunrise]].\nI know that the lion devoured [[at sunrise]].",
                           "", "(2;%a%) < (2;%b%)")
    assert d.condition_names == ("a", "b")
    assert d.region_names == ("before", "critical", "after")
    assert d.conditions[0][1] == ("I know what the lion devoured", "at sunrise", ".")
    assert D.to_suite(d).items[0].condition("a").sentence == "I know what the lion devoured at sunrise ."


def test_an_empty_region_is_nothing_between_two_bars():
    d = D.parse_conditions("g: I know | who | | grabbed the food\nn: I know | who | our uncle | grabbed the food")
    assert d.conditions[0][1] == ("I know", "who", "", "grabbed the food")
    assert D.to_suite(d).items[0].condition("g").sentence == "I know who grabbed the food"


def test_a_shipped_item_round_trips_through_the_typed_markup():
    from accapp.suites import load_suite

    t = D.item_text("fgd_subject", 1)
    d = D.parse_conditions(t["conditions"], t["regions"], t["formula"], t["suite"], t["item"])
    typed = D.to_suite(d).items[0]
    shipped = load_suite("fgd_subject").item(1)
    assert [(c.name, c.sentence, c.spans) for c in typed.conditions] == \
           [(c.name, c.sentence, c.spans) for c in shipped.conditions]
    assert d.region_names == load_suite("fgd_subject").region_names


def test_suite_choices_are_grouped_by_circuit():
    labels = [label for label, _ in D.suite_choices()]
    assert len(labels) == 34 and labels[0].startswith("Licensing · ")
    assert labels[-1].startswith("no circuit · nn-nv-rpl")


# ------------------------------------------------------------------------------------------ bad input
def test_a_region_missing_in_one_condition_names_item_condition_and_region():
    text = "a: I know | what | the lion devoured | at sunrise.\nb: I know | that | the lion devoured at sunrise."
    msg = refused(text, NAMES)
    assert msg.startswith("Item 1, condition 'b' has 3 regions") and "region 4 ('end') is missing" in msg


def test_an_unknown_condition_in_the_formula_is_named():
    msg = refused(LION, NAMES, "(4;%what_gapp%) < (4;%that_gap%)")
    assert msg.startswith("Item 1, prediction 1:") and "condition 'what_gapp'" in msg and "this item does not have" in msg


def test_an_unknown_region_in_the_formula_is_named():
    msg = refused(LION, NAMES, "(9;%what_gap%) < (4;%that_gap%)")
    assert "prediction 1" in msg and "region 9" in msg


def test_a_malformed_formula_and_code_are_refused():
    assert "not valid at character" in refused(LION, NAMES, "(4;%what_gap% < 3")
    msg = refused(LION, NAMES, "__import__('os').system('x')")
    assert "not valid at character 1" in msg


def test_more_than_four_conditions_and_fewer_than_two():
    five = LION + "\ne: I know | who | the lion devoured | at sunrise."
    assert "has 5 conditions; the Design view takes 2 to 4" in refused(five, NAMES)
    assert "has 1 condition" in refused("a: I know | what | x | y")
    with pytest.raises(UserError, match="fgd_hierarchy has 6 conditions"):
        D.item_text("fgd_hierarchy", 1)


def test_an_empty_condition_and_mixed_markups():
    assert refused("a: I know what.\nb:") == \
        "Item 1, condition 'b' (line 2) is empty: type its sentence after the name."
    assert "mark every condition the same way" in refused("a: I know | what\nb: I know [[that]]")
    assert "two conditions are called 'a'" in refused("a: one | two\na: three | four")
    assert "region names were given" in refused(LION, "one | two")


def test_a_masked_model_is_refused_before_it_loads():
    from accapp.service.catalog import registry

    masked = next(m for m, s in registry().items() if s.kind == "masked")
    with pytest.raises(UserError, match="needs a causal language model"):
        D.run(masked, LION, NAMES, INTERACTION)


# ------------------------------------------------------------------------------------------ interaction
def _values(wg, tg, wn, tn, region=4):
    return {("what_gap", region): wg, ("that_gap", region): tg, ("what_nogap", region): wn, ("that_nogap", region): tn}


def test_interaction_in_words_from_given_numbers():
    d = D.parse_conditions(LION, NAMES, INTERACTION)
    out = D.interaction(F.parse(INTERACTION), _values(2.0, 6.0, 5.0, 5.8), d)
    assert out["defined"] and out["as_predicted"] and out["bits"] == pytest.approx(-3.2)
    assert out["text"] == ("The 2x2 interaction at region 4 ('end'): (what_gap − that_gap) − (what_nogap − that_nogap) "
                           "= -3.20 bits, as predicted.")
    wrong = D.interaction(F.parse(INTERACTION), _values(6.0, 2.0, 5.0, 5.8), d)
    assert not wrong["as_predicted"] and "not as predicted (the prediction wants it below 0)" in wrong["text"]


def test_interaction_in_its_other_written_forms():
    d = D.parse_conditions(LION, NAMES)
    v = _values(2.0, 6.0, 5.0, 5.8)
    for f in ("(4;%what_gap%) - (4;%that_gap%) - (4;%what_nogap%) + (4;%that_nogap%) < 0",
              "0 > [(4;%what_gap%) - (4;%that_gap%)] - [(4;%what_nogap%) - (4;%that_nogap%)]",
              "(4;%what_gap%) + (4;%that_nogap%) < (4;%that_gap%) + (4;%what_nogap%)"):
        out = D.interaction(F.parse(f), v, d)
        assert out["defined"] and out["bits"] == pytest.approx(-3.2) and out["as_predicted"], f


def test_a_crossover_at_one_region_is_an_interaction_and_at_two_it_is_said_plainly():
    d = D.parse_conditions(LION, NAMES)
    v = _values(2.0, 6.0, 5.0, 5.8)
    cross = D.interaction(F.parse("[(4;%what_nogap%) > (4;%that_nogap%)] & [(4;%what_gap%) < (4;%that_gap%)]"), v, d)
    assert cross["defined"] and cross["bits"] == pytest.approx((5.0 - 5.8) - (2.0 - 6.0))
    assert "(what_nogap − that_nogap) − (what_gap − that_gap) = +3.20 bits" in cross["text"]
    # the prediction fails (5.0 < 5.8 where it wants >), yet the interaction it implies has its predicted sign
    assert cross["as_predicted"] and cross["text"].endswith("bits, as predicted.")
    v.update({("what_nogap", 3): 1.0, ("that_nogap", 3): 0.0})
    two = D.interaction(F.parse("[(3;%what_nogap%) > (3;%that_nogap%)] & [(4;%what_gap%) < (4;%that_gap%)]"), v, d)
    assert not two["defined"] and "regions 3 ('clause') and 4 ('end')" in two["text"]


def test_no_interaction_for_other_shapes_or_fewer_conditions():
    d = D.parse_conditions(LION, NAMES)
    v = _values(2.0, 6.0, 5.0, 5.8)
    same = D.interaction(F.parse("[(4;%what_gap%) < (4;%that_gap%)] & [(4;%what_nogap%) < (4;%that_nogap%)]"), v, d)
    assert not same["defined"] and "same direction" in same["text"]
    plain = D.interaction(F.parse("(4;%what_gap%) < (4;%that_gap%)"), v, d)
    assert not plain["defined"] and plain["text"].startswith("No 2x2 interaction is defined")
    two = D.parse_conditions("a: x | y\nb: x | z")
    assert "the item has 2 conditions" in D.interaction(F.parse("(2;%a%) < (2;%b%)"), {}, two)["text"]


def test_result_of_gives_the_table_the_verdicts_and_the_numbers_that_decided_them():
    d = D.parse_conditions(LION, NAMES, INTERACTION)
    suite = D.to_suite(d)
    v = _values(2.0, 6.0, 5.0, 5.8)
    rows = [{"condition": c, "region_number": n, "surprisal_bits": v.get((c, n), 1.0)}
            for c in d.condition_names for n in range(1, 5)]
    values = {(r["condition"], r["region_number"]): r["surprisal_bits"] for r in rows}
    result = D.result_of(d, rows, evaluate_item(1, values, suite.predictions), "m")
    assert [r["name"] for r in result["table"]] == ["prefix", "comp", "clause", "end"]
    assert result["table"][3]["cells"][0] == {"condition": "what_gap", "content": "at sunrise.", "surprisal_bits": 2.0}
    p = result["predictions"][0]
    assert p["passed"] and [(x["reference"], x["bits"]) for x in p["values"]] == [
        ("(4;%what_gap%)", 2.0), ("(4;%that_gap%)", 6.0), ("(4;%what_nogap%)", 5.0), ("(4;%that_nogap%)", 5.8)]
    assert p["values"][0]["region_name"] == "end" and p["interaction"]["as_predicted"]
    record = D.export_record(result, {"model_id": "m", "weights": [{"sha256": "ab"}]}, "tab=design")
    kinds = [r["record"] for r in D.csv_rows(record)]
    assert kinds.count("region") == 16 and kinds.count("reference") == 4 and "interaction" in kinds
    assert {"record": "provenance", "field": "weights.0.sha256", "value": "ab"} in D.csv_rows(record)


# ------------------------------------------------------------------------------------------ link
def test_the_link_round_trips():
    values = {"conditions": LION, "regions": NAMES, "formula": INTERACTION, "model": "smollm2-135m-instruct",
              "suite": "", "item": 1}
    query = D.link_query(values)
    assert query.startswith("tab=design&") and "item" not in query and "%7C" in query
    params = dict(parse_qsl(query))
    assert D.is_design_link(params)
    assert D.link_values(params) == values
    shipped = D.item_text("fgd_object", 3)
    values = {"conditions": shipped["conditions"], "regions": shipped["regions"], "formula": shipped["formula"],
              "model": "smollm2-135m-instruct", "suite": "fgd_object", "item": 3}
    assert D.link_values(dict(parse_qsl(D.link_query(values)))) == values


def test_a_bad_link_is_one_sentence():
    with pytest.raises(UserError, match="names no shipped suite"):
        D.link_values({"tab": "design", "conditions": LION, "suite": "nope"})
    with pytest.raises(UserError, match="has 5 conditions"):
        D.link_values({"tab": "design", "conditions": LION + "\ne: a | b | c | d"})
