"""Reading SyntaxGym suites (accapp/suites/suite.py, catalog.py): the 34 shipped suites, sentences
built as syntaxgym-core builds them (its own test data, tests/fixtures/syntaxgym/core_*), region
spans, and bad input refused with one sentence naming item, condition and region."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path

import pytest

from accapp.errors import UserError
from accapp.suites import catalog
from accapp.suites import suite as S
from accapp.suites.suite import build_sentence, read_suite, suite_as_dict

FIXTURES = Path(__file__).parent / "fixtures" / "syntaxgym"


def _suite_dict() -> dict:
    """A small 2x2 filler-gap suite: 2 items, 4 conditions, 4 regions (one empty in the gap conditions)."""
    def cond(name, comp, obj, end="at the party."):
        return {"condition_name": name, "regions": [
            {"region_number": 1, "content": "I know"}, {"region_number": 2, "content": comp},
            {"region_number": 3, "content": f"the lion devoured {obj}".strip()}, {"region_number": 4, "content": end}]}

    items = []
    for n, obj in ((1, "the meat"), (2, "a zebra")):
        items.append({"item_number": n, "conditions": [
            cond("what_nogap", "what", obj), cond("that_nogap", "that", obj),
            cond("what_gap", "what", ""), cond("that_gap", "that", "")]})
    return {"meta": {"name": "toy_fgd", "metric": "sum"},
            "region_meta": {"1": "prefix", "2": "comp", "3": "embedded", "4": "end"},
            "predictions": [{"type": "formula", "formula": "(4;%what_gap%) < (4;%that_gap%)"},
                            {"type": "formula", "formula": "(3;%what_nogap%) > (3;%that_nogap%)"}],
            "items": items}


# ---- the shipped suites ---------------------------------------------------------------------
def test_all_34_shipped_suites_load_with_their_circuits():
    suites = catalog.list_suites()
    assert len(suites) == 34
    info = {s.id: s for s in suites}
    assert info["fgd_object"].circuit == "Long-Distance Dependencies" and info["fgd_object"].items == 24
    assert info["fgd_hierarchy"].conditions == 6 and info["fgd_hierarchy"].predictions == 2
    assert {s.circuit for s in suites if s.in_paper_figures} == set(catalog.circuits()["circuits"])
    assert len(catalog.circuits()["circuits"]) == 6
    assert sorted(s.id for s in suites if not s.in_paper_figures) == ["fgd-embed3", "fgd-embed4", "nn-nv-rpl"]
    assert info["nn-nv-rpl"].circuit is None
    counts = {}
    for s in suites:
        if s.in_paper_figures:
            counts[s.circuit] = counts.get(s.circuit, 0) + 1
    assert counts == {"Licensing": 10, "Long-Distance Dependencies": 6, "Agreement": 3, "Garden-Path Effects": 6,
                      "Gross Syntactic State": 4, "Center Embedding": 2}


def test_shipped_item_counts_match_the_published_outcomes():
    """Every published model has one outcome per item of every suite we ship."""
    pub = catalog.published_accuracies("gpt-2-pretrained__0")
    items = {s.id: s.items for s in catalog.list_suites()}
    assert dict(zip(pub["suite"], pub["items"])) == items


def test_shipped_files_are_the_published_json():
    raw = gzip.decompress((catalog.ASSETS / "json" / "npz_obj.json.gz").read_bytes())
    assert read_suite(raw.decode("utf-8")) == catalog.load_suite("npz_obj")
    assert json.loads(raw)["predictions"][0]["formula"].startswith("[(5;%no-obj_no-comma%) >")


def test_an_unknown_suite_id_lists_the_known_ones():
    with pytest.raises(UserError, match=r"No shipped suite 'fgd_objet'; the suites are: center_embed, .*fgd_object, .*"
                                        r"subordination_src-src\."):
        catalog.load_suite("fgd_objet")
    with pytest.raises(UserError, match="No shipped suite '../x'"):
        catalog.load_suite("../x")


# ---- sentences ----------------------------------------------------------------------------
@pytest.mark.parametrize("stem", ["core_test", "core_unk"])
def test_sentences_as_syntaxgym_core_builds_them(stem):
    """syntaxgym-core's own test data: its suite and the sentences it lists for it."""
    data = json.loads((FIXTURES / f"{stem}_in.json" if stem == "core_test" else FIXTURES / "core_unk_in.json").read_text())
    expected = (FIXTURES / ("core_test_sentences.txt" if stem == "core_test" else "core_unk_sentences.txt")).read_text()
    built = [build_sentence([r["content"] for r in c["regions"]])[0] for it in data["items"] for c in it["conditions"]]
    assert built == expected.strip("\n").split("\n")


@pytest.mark.parametrize("suite_id, item, condition, sentence", [
    # from the repository's test_suites/txt (the sentences of each suite)
    ("npz_obj", 1, "no-obj_no-comma", "As the criminal shot the woman yelled at the top of her lungs"),
    ("subordination_pp-pp", 16, "sub_no-matrix", "Before the assistant from the crowded office down the hall wrote "
                                                 "the letter about potential corruption and bribery ."),
    ("fgd-embed3", 8, "what_gap", "We all know what the accountant said his colleague recalled the partners knew the "
                                  "investor repaid to the criminal kingpin"),
])
def test_published_sentences_with_stray_spaces(suite_id, item, condition, sentence):
    """Regions with leading or trailing spaces (syntaxgym-core refuses them) are stripped: the
    sentence is the one the repository lists."""
    assert catalog.load_suite(suite_id).item(item).condition(condition).sentence == sentence


def test_empty_regions_are_left_out_and_spans_point_into_the_sentence():
    sentence, spans = build_sentence(["", "This", "is", "", "a test.", ""])
    assert sentence == "This is a test."
    assert spans == [(0, 0), (0, 4), (5, 7), (8, 8), (8, 15), (15, 15)]
    for suite_id in ("cleft", "npz_ambig", "fgd_hierarchy"):
        for it in catalog.load_suite(suite_id).items:
            for c in it.conditions:
                for (_, content), (a, b) in zip(c.regions, c.spans):
                    assert c.sentence[a:b] == content.strip()


# ---- reading and writing ----------------------------------------------------------------------
def test_read_from_dict_text_path_and_gzip(tmp_path):
    d = _suite_dict()
    s = read_suite(d)
    assert s.name == "toy_fgd" and s.region_names == ("prefix", "comp", "embedded", "end")
    assert s.condition_names == ("what_nogap", "that_nogap", "what_gap", "that_gap")
    assert s.item(1).condition("what_gap").sentence == "I know what the lion devoured at the party."
    (tmp_path / "t.json").write_text(json.dumps(d))
    (tmp_path / "t.json.gz").write_bytes(gzip.compress(json.dumps(d).encode()))
    assert read_suite(json.dumps(d)) == s == read_suite(tmp_path / "t.json") == read_suite(str(tmp_path / "t.json.gz"))
    assert read_suite(suite_as_dict(s)) == s


def _bad(mutate):
    d = _suite_dict()
    mutate(d)
    with pytest.raises(UserError) as err:
        read_suite(d)
    return str(err.value)


def test_a_region_missing_in_one_condition_names_item_condition_and_region():
    msg = _bad(lambda d: d["items"][1]["conditions"][2]["regions"].pop(2))
    assert msg == "Item 2, condition 'what_gap' lacks region 3 ('embedded')."


@pytest.mark.parametrize("formula, message", [
    ("(4;%what_gapp%) < (4;%that_gap%)", "Prediction 1: The formula '(4;%what_gapp%) < (4;%that_gap%)' names condition "
                                         "'what_gapp' at character 1, which the suite does not have"),
    ("(5;%what_gap%) < (4;%that_gap%)", "names region 5 at character 1, which the suite does not have (its regions: 1, 2, 3, 4)"),
    ("(4;%what_gap%) <", "Prediction 1: The formula '(4;%what_gap%) <' is not valid at character 17 (the end of the formula)"),
    ("__import__('os').system('x')", "Prediction 1: The formula \"__import__('os').system('x')\" is not valid at character 1"),
])
def test_a_bad_prediction_is_named(formula, message):
    msg = _bad(lambda d: d["predictions"].__setitem__(0, {"type": "formula", "formula": formula}))
    assert message in msg


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d["items"][0]["conditions"][1]["regions"][2].__setitem__("region_number", 7),
     "Item 1, condition 'that_nogap', region 7 is not in region_meta (regions 1 to 4)."),
    (lambda d: d["items"][0]["conditions"][1]["regions"][2].__setitem__("region_number", 2),
     "Item 1, condition 'that_nogap', region 2 ('comp') appears twice."),
    (lambda d: d["items"][1]["conditions"][3]["regions"][1].__setitem__("content", "that\nthat"),
     "Item 2, condition 'that_gap', region 2 ('comp') contains a control character (U+000A)."),
    (lambda d: d["items"][1]["conditions"][3]["regions"][1].__setitem__("content", 3),
     "Item 2, condition 'that_gap', region 2 ('comp'): the content must be text"),
    (lambda d: d["items"][1]["conditions"][3]["regions"][3].__setitem__("content", "x" * 500),
     "Item 2, condition 'that_gap': the sentence is 530 characters long; the limit is 400."),
    (lambda d: d["items"][1]["conditions"].pop(3), "Item 2 lacks condition 'that_gap'"),
    (lambda d: d["items"][1]["conditions"][3].__setitem__("condition_name", "what_gap"), "Item 2: condition 'what_gap' appears twice."),
    (lambda d: d["items"][1].__setitem__("item_number", 1), "Item number 1 appears twice."),
    (lambda d: d["region_meta"].pop("2"), "region_meta's region numbers must be 1 to 3, not [1, 3, 4]."),
    (lambda d: d["meta"].__setitem__("metric", "mean"), "only 'sum' (the sum of the region's surprisals) is supported"),
    (lambda d: d.__setitem__("items", []), "The suite needs a non-empty list 'items'."),
    (lambda d: d["predictions"].append({"type": "regex"}), "Prediction 3 must be of type 'formula', not 'regex'."),
])
def test_bad_shapes_give_one_sentence(mutate, message):
    assert message in _bad(mutate)


def test_sizes_over_the_stated_limits_are_refused(monkeypatch):
    d = _suite_dict()
    d["items"] = [dict(copy.deepcopy(d["items"][0]), item_number=k + 1) for k in range(S.MAX_ITEMS + 1)]
    with pytest.raises(UserError, match=f"has {S.MAX_ITEMS + 1:,} items; the limit is {S.MAX_ITEMS:,}"):
        read_suite(d)
    d = _suite_dict()
    d["region_meta"] = {str(k): f"r{k}" for k in range(1, S.MAX_REGIONS + 2)}
    with pytest.raises(UserError, match=f"the limit is {S.MAX_REGIONS}"):
        read_suite(d)
    monkeypatch.setattr(S, "MAX_SUITE_CHARS", 100)
    with pytest.raises(UserError, match="characters of JSON; the limit is 100"):
        read_suite(json.dumps(_suite_dict()))


@pytest.mark.parametrize("source, message", [
    ('{"meta": {', "The suite is not valid JSON: "),
    ("[1, 2]", "No suite file at"),  # not JSON object text: taken as a path
    (["x"], "A suite must be a dict, a file path or JSON text, not a list."),
    ('{"meta": {}, "items": 3}', "The suite needs 'region_meta'"),
])
def test_malformed_input(source, message):
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_suite(source)
