"""Shared probe links (issue 19, item 1): the query <-> values helpers of accapp.ui.links, and the
Probe tab's load handler on good, missing and hostile links (a message, never a traceback)."""

from __future__ import annotations

from types import SimpleNamespace
from urllib.parse import urlencode

import pytest
from starlette.datastructures import QueryParams

from accapp.errors import MAX_SENTENCE_CHARS, UserError
from accapp.methods import method_ids
from accapp.models import DEFAULT_MODEL
from accapp.ui import links, probe

CASSEROLES = {"good": "These casseroles disgust Kayla.", "bad": "These casseroles disgusts Kayla.",
              "model": DEFAULT_MODEL, "model2": "gemma3-270m", "methods": ["lp", "mean_lp", "yes_no_prob_comp"],
              "unit": "nats", "view": "tokens", "context": ""}


def test_round_trip_keeps_every_value():
    query = links.probe_query(CASSEROLES)
    assert query.startswith("tab=probe&good=These%20casseroles")
    params = links.parse_query("?" + query)
    assert links.is_probe_link(params)
    assert links.probe_values(params) == CASSEROLES


def test_round_trip_chinese_punctuation_and_all_methods():
    values = dict(CASSEROLES, good="有个学生的最好的朋友把坡卖了。", bad="有个学生的最好的朋友被坡卖了。",
                  model2="", methods=None, unit="bits", view="words: sum of tokens")
    values["good"] += " & a=b?#%"
    assert links.probe_values(links.parse_query(links.probe_query(values))) == values


def test_the_page_query_is_read_like_a_string():
    """What the page's JS writes (URLSearchParams: spaces as '+') and what Starlette hands the handler."""
    raw = "tab=probe&good=The+dogs+bark.&bad=The+dogs+barks.&methods=lp%2Cmean_lp&unit=bits&view=words"
    params = links.parse_query(str(QueryParams(raw)))
    assert links.probe_values(params)["good"] == "The dogs bark."
    assert links.probe_values(params)["methods"] == ["lp", "mean_lp"]


def test_defaults_and_links_without_a_probe():
    v = links.probe_values({"good": "A b.", "bad": "A c."})
    assert (v["model"], v["model2"], v["methods"], v["unit"], v["view"]) == (DEFAULT_MODEL, "", None, "bits", "words")
    assert not links.is_probe_link({})
    assert not links.is_probe_link({"tab": "explore", "model": DEFAULT_MODEL})
    assert links.parse_query(None) == {} and links.parse_query("") == {}
    assert links.parse_query("a=1&a=2") == {"a": "1"}  # a repeated key: the first value


@pytest.mark.parametrize("params, said", [
    ({"good": "A b.", "bad": "A c.", "model": "gpt-17"}, "Unknown model 'gpt-17'"),
    ({"good": "A b.", "bad": "A c.", "model": "x" * 5000}, "not a model this app knows"),
    ({"good": "A b.", "bad": "A c.", "model2": "nope"}, "Unknown model 'nope'"),
    ({"good": "A b.", "bad": "A c.", "methods": "lp,rm -rf"}, "cannot run: rm -rf"),
    ({"good": "A b.", "bad": "A c.", "methods": "pll_original"}, "cannot run"),  # a masked-LM method on a causal LM
    ({"good": "A b.", "bad": "A c.", "methods": ","}, "no method"),
    ({"good": "A b.", "bad": "A c.", "unit": "furlongs"}, "unit must be one of bits, nats"),
    ({"good": "A b.", "bad": "A c.", "view": "<script>"}, "view must be one of"),
    ({"good": "x" * (MAX_SENTENCE_CHARS + 1), "bad": "A c."}, f"the limit is {MAX_SENTENCE_CHARS}"),
    ({"good": "A\x00b.", "bad": "A c."}, "control character"),
    ({"good": "A b."}, "sentence in the link is missing"),
    ({"good": "   ", "bad": "A c."}, "is empty"),
])
def test_hostile_values_give_a_clear_message(params, said):
    with pytest.raises(UserError, match=None) as err:
        links.probe_values(params)
    assert said in str(err.value)


def test_the_bound_on_the_query():
    with pytest.raises(UserError, match="8,192"):
        links.parse_query("good=" + "a" * links.MAX_QUERY_CHARS)
    with pytest.raises(UserError, match="parameters"):
        links.parse_query("&".join(f"k{i}=1" for i in range(links.MAX_KEYS + 1)))
    # The longest valid probe (two 400-character Chinese sentences, every method) fits the bound.
    longest = dict(CASSEROLES, good="把" * MAX_SENTENCE_CHARS, bad="被" * MAX_SENTENCE_CHARS, methods=method_ids("causal"))
    assert len(links.probe_query(longest)) <= links.MAX_QUERY_CHARS


def test_garbage_queries_never_raise_anything_but_a_user_error():
    for raw in ["%", "%%%zz", "good=%FF%FE&bad=%C0", "=&=&&", "good=a&bad=b&tab=probe&model=%00",
                "tab=probe", "good[]=1&bad[]=2", "good=%E2%80%AE.evil&bad=b"]:
        try:
            links.probe_values(links.parse_query(raw))
        except UserError:
            pass


def _request(query: str):
    return SimpleNamespace(query_params=QueryParams(query))


def test_load_link_fills_the_inputs_and_sets_the_flag():
    out = probe.load_link(_request(links.probe_query(CASSEROLES)))
    assert len(out) == 12 and out[-1] is True
    assert out[:4] == (CASSEROLES["good"], CASSEROLES["bad"], DEFAULT_MODEL, "gemma3-270m")
    assert out[4]["value"] == CASSEROLES["methods"]
    assert (out[5], out[6]) == ("nats", "tokens")
    assert "Opening the shared link" in out[9]
    assert out[10] == ""  # no context in this link


def test_load_link_without_a_probe_changes_nothing():
    out = probe.load_link(_request(""))
    assert out[-1] is False and all(o == {"__type__": "update"} for o in out[:-1])
    assert probe.load_link(None)[-1] is False


@pytest.mark.parametrize("query", [
    urlencode({"tab": "probe", "good": "A b.", "bad": "A c.", "model": "<img src=x onerror=alert(1)>"}),
    urlencode({"good": "A b.", "bad": "A c.", "methods": "nope"}),
    urlencode({"good": "z" * 1000, "bad": "A c."}),
    "tab=probe&good=" + "%41" * 9000,
])
def test_load_link_hostile_gives_a_message_and_no_run(query):
    out = probe.load_link(_request(query))
    assert out[-1] is False
    assert "This link cannot be opened" in out[9] and "Traceback" not in out[9]
    assert "<img src=x" not in out[9]  # the message is escaped


def test_run_linked_does_nothing_without_the_flag():
    (only,) = list(probe.run_linked(False, "a", "b", DEFAULT_MODEL, "", ["lp"], "bits", "words", "lp", None))
    assert len(only) == 17 and all(o == {"__type__": "update"} for o in only)


def test_the_page_js_writes_probe_query_keys():
    for key in links.PROBE_KEYS:
        assert f'"{key}"' in links.PROBE_URL_JS
    assert "history.replaceState" in links.PROBE_URL_JS and "navigator.clipboard" in links.PROBE_COPY_JS
    assert "Link copied" in links.PROBE_COPY_JS


def test_figures_name_their_png():
    """The modebar's "Download plot as a PNG" saves a file named after the probe, not newplot.png."""
    import json

    import plotly.graph_objects as go

    name = probe.png_name("surprisal", {"model": "m-1", "good": "The dogs bark loudly / <now>."}, "bits", "words: sum of tokens")
    assert name.startswith("surprisal_m-1_The-dogs-bark_bits_words-sum") and all(c.isalnum() or c in "-_." for c in name)
    fig = probe.with_png_name(go.Figure(go.Bar(y=[1.0])), name)
    config = json.loads(fig.to_json())["config"]
    assert config["toImageButtonOptions"] == {"format": "png", "filename": name, "scale": 2}
    assert fig.data[0].y == (1.0,) and probe.with_png_name(None, name) is None
