"""The teaching gallery: its data file, the benchmark strings it quotes, the model notes it makes,
and the tab's pure helpers (fast: no model, no browser)."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from accapp.service import gallery as g

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "precomputed" / "results"


@pytest.fixture(scope="module")
def pairs():
    return g.load()


def test_the_file_loads_with_at_least_24_pairs_and_unique_ids(pairs):
    assert len(pairs) >= 24
    assert len({p["id"] for p in pairs}) == len(pairs)
    assert g.load(g.GALLERY_PATH) == pairs


def test_every_topic_is_covered(pairs):
    counts = dict(g.topic_counts(pairs))
    assert set(counts) == set(g.TOPICS) and all(n >= 2 for n in counts.values())
    assert any(p["language"] == "zh" for p in g.filter_pairs(pairs, "Chinese classifiers"))
    assert any(p["language"] == "zh" and ("把" in p["good"] + p["bad"] or "被" in p["good"] + p["bad"])
               for p in g.filter_pairs(pairs, "把/被 constructions"))
    for topic in ("Agreement without an attractor", "Agreement with an attractor", "NPI licensing",
                  "Filler-gap dependencies", "Islands", "Binding", "Argument structure", "Quantifiers"):
        assert any(p["language"] == "en" for p in g.filter_pairs(pairs, topic)), topic


def test_most_pairs_come_from_the_benchmarks_and_quote_them_exactly(pairs):
    from accapp.benchmarks import load_benchmark

    sourced = [p for p in pairs if g.parse_source(p["source"])]
    assert len(sourced) > 0.8 * len(pairs)
    for name in ("blimp", "climp"):
        df = load_benchmark(name)
        index = {(pa, i): (gd, bd) for pa, i, gd, bd in zip(df["paradigm"], df["pair_id"], df["good"], df["bad"])}
        mine = [p for p in sourced if g.parse_source(p["source"])[0] == name]
        assert mine, name
        for p in mine:
            _, paradigm, pair_id = g.parse_source(p["source"])
            assert index.get((paradigm, pair_id)) == (p["good"], p["bad"]), p["id"]


def test_every_model_note_is_true_in_the_shipped_results(pairs):
    from accapp.models import get_spec

    noted = [p for p in pairs if "model_note" in p]
    assert len(noted) >= 6 and {p["language"] for p in noted} == {"en", "zh"}
    frames = {}
    for p in noted:
        run = p["model_note_run"]
        if run not in frames:
            df = pd.read_parquet(RESULTS / f"{run}.parquet")
            frames[run] = df[df["method"] == "lp"]
        bench, paradigm, pair_id = g.parse_source(p["source"])
        model, run_bench = run.split("__")
        assert run_bench == bench
        rows = frames[run][(frames[run]["paradigm"] == paradigm) & (frames[run]["pair_id"] == pair_id)]
        assert len(rows) == 1, p["id"]
        row = rows.iloc[0]
        assert (row["good"], row["bad"]) == (p["good"], p["bad"]), p["id"]
        # the claim: LP prefers the unacceptable sentence (recomputed from the scores, not only the flag)
        assert row["correct"] == 0 and not bool(row["tie"]) and row["score_bad"] > row["score_good"], p["id"]
        name = get_spec(model).name.split(" (")[0]
        assert p["model_note"].startswith(f"{name}'s LP ") and "unacceptable" in p["model_note"], p["id"]


def test_no_note_where_the_model_gets_it_right(pairs):
    """Pairs without a note make no claim; the notes are not everywhere (most pairs are plain examples)."""
    assert sum("model_note" in p for p in pairs) < len(pairs) / 2


def test_explanations_are_one_sentence(pairs):
    for p in pairs:
        e = p["explanation"]
        assert e == e.strip() and e.endswith(".") and len(e) <= 200, p["id"]
        assert len(re.split(r"(?<=[.!?])\s+(?=[\"A-Z0-9])|(?<=[。！？])", e.rstrip("."))) == 1, p["id"]


def test_languages_match_the_sentences(pairs):
    han = re.compile(r"[\u4e00-\u9fff]")
    for p in pairs:
        assert bool(han.search(p["good"])) == (p["language"] == "zh"), p["id"]


@pytest.mark.parametrize("change, message", [
    (lambda p: p.update(topic="Phonology"), "unknown topic"),
    (lambda p: p.update(source="blimp:x"), "source"),
    (lambda p: p.update(source="climp:classifier:1"), "language"),
    (lambda p: p.pop("explanation"), "missing explanation"),
    (lambda p: p.update(bad=p["good"]), "the same"),
    (lambda p: p.update(model_note="LP is wrong"), "go together"),
    (lambda p: p.update(extra=1), "unknown extra"),
])
def test_validate_names_the_problem(pairs, change, message, tmp_path):
    bad = [dict(p) for p in pairs[:3]]
    change(bad[0])
    path = tmp_path / "g.json"
    path.write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        g.load(path)
    with pytest.raises(ValueError, match="id used twice"):
        g.validate([dict(pairs[0]), dict(pairs[0])])


def test_filters_and_labels(pairs):
    zh = g.filter_pairs(pairs, language="zh")
    assert zh and all(p["language"] == "zh" for p in zh)
    assert g.filter_pairs(pairs, "all", "all") == pairs
    assert g.filter_pairs(pairs, "Chinese classifiers", "en") == []
    assert g.source_label("blimp:adjunct_island:55") == "BLiMP · adjunct_island · pair 55"
    assert g.source_label("constructed").startswith("constructed")
    assert g.by_id(pairs, pairs[1]["id"]) is pairs[1] and g.by_id(pairs, "nope") is None


def test_tab_helpers_render_and_fill_the_probe(pairs):
    from accapp.ui import gallery as ui

    p = next(p for p in pairs if p["source"].startswith("blimp:") and "model_note" in p)
    cards = ui.cards_html([p], p["id"])
    assert "✓ acceptable" in cards and "⚠" in cards and html.escape(p["explanation"]) in cards
    shown = ui.projection_html(p, reveal=True, position=1, total=3)
    assert "Acceptable" in shown and "Unacceptable" in shown and "pair 1 of 3" in shown
    hidden = ui.projection_html(p, reveal=False)
    assert "Unacceptable" not in hidden and "Which sentence is acceptable?" in hidden
    assert {ui.swapped(q) for q in pairs} == {True, False}  # the acceptable sentence is not always on top
    assert "<b>" not in ui.cards_html([dict(p, good="<b>x</b>")])  # text is escaped
    good, bad, meta, label = ui.probe_fill(p)
    _, paradigm, pair_id = g.parse_source(p["source"])
    assert (good, bad) == (p["good"], p["bad"]) and meta["paradigm"] == paradigm and meta["pair_id"] == pair_id
    assert "BLiMP" in label
    made = next(q for q in pairs if q["source"] == "constructed")
    assert ui.probe_fill(made)[2] is None
    assert ui.step(pairs[0]["id"], "all", "all", -1)["value"] == pairs[-1]["id"]
    first, cards2, big = ui.on_filter("Binding", "zh", True)
    assert first["value"] == g.filter_pairs(pairs, "Binding", "zh")[0]["id"] and "pair 1 of" in big


def test_tab_builds_and_wires_into_the_probe():
    import gradio as gr

    from accapp.ui import gallery as ui

    class Probe:  # the Probe tab's components that the gallery fills
        pass

    with gr.Blocks() as demo:
        with gr.Tabs() as tabs:
            with gr.Tab("Probe", id="probe"):
                probe = Probe()
                probe.good, probe.bad = gr.Textbox(), gr.Textbox()
                probe.meta, probe.pair_label = gr.State(None), gr.HTML()

                def run_probe(good, bad):  # the Compare button's function, which Try it chains
                    return good

                probe.run_event = dict(fn=run_probe, inputs=[probe.good, probe.bad], outputs=[probe.pair_label])
            with gr.Tab("Gallery", id="gallery"):
                tab = ui.build(probe, tabs, "probe")
    assert tab.topic.value == ui.ALL and tab.pair.value == g.load()[0]["id"]
    targets = {id(c) for fn in demo.fns.values() for c in fn.outputs}
    assert {id(probe.good), id(probe.bad), id(probe.meta), id(tabs)} <= targets
    assert any(getattr(fn.fn, "__name__", "") == "run_probe" for fn in demo.fns.values())  # Try it runs the probe


def test_the_pair_picker_does_not_give_the_answer_away():
    """The picker beside the projection view lists both sentences as A and B, in the view's order,
    with no asterisk on the unacceptable one."""
    from accapp.ui import gallery as view

    pairs = g.load()
    for (label, pid), p in zip(view.pair_choices(pairs), pairs, strict=True):
        assert pid == p["id"] and "*" not in label
        first = p["bad"] if view.swapped(p) else p["good"]
        assert label.split(". A: ", 1)[1].startswith(first)
    assert any(view.swapped(p) for p in pairs) and not all(view.swapped(p) for p in pairs)
