"""Teaching gallery tab: curated minimal pairs by topic, each with a one-sentence explanation,
a projection view for a classroom, and a button that puts a pair into the Probe tab.

Layout and wiring only: the pairs and their checks are :mod:`accapp.service.gallery`. No model
runs here: "Try it in the Probe tab" fills the Probe tab's sentences, switches to it and runs the probe.
A class clicks the same pair together: the probe's stages answer from the answers shipped with the app
(:mod:`accapp.service.probe_cache`), and the page's finished answer is kept (:class:`Answers`), so the
first click draws it and the others get it as drawn.
"""

from __future__ import annotations

import functools
import zlib
from dataclasses import dataclass

import gradio as gr

from accapp.service import gallery as data
from accapp.service import probe_cache
from accapp.service.pairs import find_pair
from accapp.ui.common import esc, intro, pair_label
from accapp.ui.probe import STARTED

ALL = "all"
GOOD_BG, BAD_BG, ASK_BG = "#15803d", "#b91c1c", "#475569"  # white text on each reads in light and dark themes
HIDDEN = dict(api_visibility="undocumented", queue=False)
GALLERY_EVENT = "gallery_probe"  # the event a gallery click runs (bench/class_load.py joins it by this name)


@dataclass
class GalleryTab:
    topic: gr.Dropdown
    language: gr.Radio
    pair: gr.Dropdown
    projection: gr.Checkbox


def topic_choices(pairs) -> list[tuple[str, str]]:
    return [(f"All topics ({len(pairs)})", ALL)] + [(f"{t} ({n})", t) for t, n in data.topic_counts(pairs)]


def language_choices(pairs: list[dict]) -> list[tuple[str, str]]:
    """The language filter: every language the gallery's pairs are in, in the language table's order."""
    present = [code for code in data.LANGUAGES if any(p["language"] == code for p in pairs)]
    return [("Both" if len(present) == 2 else "All", ALL)] + [(data.LANGUAGES[code], code) for code in present]


def pair_choices(pairs) -> list[tuple[str, str]]:
    """One choice per pair, by id: "3. A: … / B: …", the two sentences in the projection view's order
    and unmarked, so the picker does not give the answer away while it is hidden."""
    out = []
    for i, p in enumerate(pairs, 1):
        a, b = (p["bad"], p["good"]) if swapped(p) else (p["good"], p["bad"])
        out.append((f"{i}. A: {a}  /  B: {b}", p["id"]))
    return out


def _badge(text: str, bg: str, size: str = "0.85rem") -> str:
    return (f"<span style='display:inline-block;background:{bg};color:#fff;border-radius:0.4em;padding:0.1em 0.5em;"
            f"font-weight:700;font-size:{size};white-space:nowrap'>{text}</span>")


def _note(pair: dict) -> str:
    if "model_note" not in pair:
        return ""
    return f"<div class='acc-note acc-note-warn' style='margin-top:0.4rem'>⚠ {esc(pair['model_note'])}</div>"


def cards_html(pairs, selected: str | None = None) -> str:
    """Every pair of the current filter as a card: both sentences, the explanation, the source."""
    if not pairs:
        return "<div class='acc-note acc-note-info'>No pair in the gallery matches this topic and language.</div>"
    cards = []
    for i, p in enumerate(pairs, 1):
        edge = "var(--color-accent)" if p["id"] == selected else "var(--border-color-primary)"
        cards.append(
            f"<div id='gallery-card-{esc(p['id'])}' style='border:2px solid {edge};border-radius:0.6rem;"
            f"padding:0.6rem 0.8rem;margin:0 0 0.6rem 0;background:var(--block-background-fill)'>"
            f"<div class='acc-small'>{i}. {esc(p['topic'])} · {data.LANGUAGES[p['language']]}</div>"
            f"<div style='margin:0.25rem 0'>{_badge('✓ acceptable', GOOD_BG)} {esc(p['good'])}</div>"
            f"<div style='margin:0.25rem 0'>{_badge('✗ unacceptable', BAD_BG)} *{esc(p['bad'])}</div>"
            f"<div style='margin-top:0.35rem'>💡 {esc(p['explanation'])}</div>"
            f"<div class='acc-small'>Source: {esc(data.source_label(p['source']))}</div>{_note(p)}</div>")
    return "".join(cards)


def swapped(pair: dict) -> bool:
    """Whether the projection view shows the unacceptable sentence first (fixed per pair, so that
    the acceptable one is not always on top while the answer is hidden)."""
    return zlib.crc32(pair["id"].encode("utf-8")) % 2 == 1


def projection_html(pair: dict | None, reveal: bool = True, position: int = 0, total: int = 0) -> str:
    """A pair in big type for a projector: sentences A and B, the verdict on each and the takeaway
    (the explanation) once revealed."""
    if pair is None:
        return "<div class='acc-note acc-note-info'>Choose a topic with pairs in it.</div>"
    rows = [(pair["good"], True), (pair["bad"], False)]
    if swapped(pair):
        rows.reverse()
    lines = []
    for letter, (text, good) in zip("AB", rows):
        if reveal:
            verdict = _badge("✓ Acceptable", GOOD_BG, "1.6rem") if good else _badge("✗ Unacceptable", BAD_BG, "1.6rem")
        else:
            verdict = _badge("?", ASK_BG, "1.6rem")
        star = "*" if reveal and not good else ""
        # classes (accapp.ui.common.CSS): the sentence wraps between words and fits a phone's width
        lines.append(f"<div class='acc-proj-row'><span class='acc-proj-letter'>{letter}</span>"
                     f"<span class='acc-proj-verdict'>{verdict}</span>"
                     f"<span class='acc-proj-sentence'>{star}{esc(text)}</span></div>")
    where = f" · pair {position} of {total}" if total else ""
    takeaway = (f"<div class='acc-proj-takeaway'>💡 {esc(pair['explanation'])}</div>{_note(pair)}"
                if reveal else "<div class='acc-proj-ask'>Which sentence is acceptable? Tick <b>Show the answer</b> "
                "to reveal it.</div>")
    return (f"<div class='acc-proj'><div class='acc-proj-where'>{esc(pair['topic'])}{where} · "
            f"{esc(data.source_label(pair['source']))}</div>{''.join(lines)}{takeaway}</div>")


def probe_fill(pair: dict | None):
    """What the Probe tab's inputs get for a pair: good, bad, meta (the benchmark pair, or None) and its label."""
    if pair is None:
        return gr.update(), gr.update(), gr.update(), gr.update()
    meta = find_pair(pair["good"], pair["bad"]) if data.parse_source(pair["source"]) else None
    return pair["good"], pair["bad"], meta, pair_label(meta)


class Answers:
    """The Probe tab's finished outputs for a gallery pair, kept: at most MAX entries, the least
    recently used dropped (a class on one pair needs one; the gallery's pairs in both units, a few
    more). Keyed by every input of the probe, the models' keys (id, revision, precision, parameters),
    the settings' key and the results the benchmark box reads, so a change to any of them draws it
    anew. Clicks on the same pair wait for the first to finish drawing (probe_cache.Once)."""

    MAX = 96
    SAVED = 13  # where `saved` stands in the probe's outputs (ui/probe.py: run_outputs)

    def __init__(self) -> None:
        self.kept = probe_cache.BoundedCache(self.MAX)
        self.once = probe_cache.Once()

    @staticmethod
    def key(good, bad, model_id, model2, methods, unit, view, bench_method, meta, context):
        models = [model_id] + ([model2] if model2 and model2 != model_id else [])
        keys = [probe_cache.model_key(m) for m in models if m]
        if not models[0] or any(k is None for k in keys):
            return None
        meta_key = tuple(sorted((str(k), str(v)) for k, v in (meta or {}).items()))
        return (good, bad, model_id, model2 or "", tuple(methods or ()), unit, view, bench_method, meta_key,
                context or "", tuple(keys), probe_cache.settings_key(), probe_cache.results_version())

    @classmethod
    def finished(cls, out) -> bool:
        """A probe's last output that is whole: every stage in, no error (an error or a stop leaves
        `saved` empty or a stage pending)."""
        saved = out[cls.SAVED] if out is not None and len(out) > cls.SAVED else None
        reports = [r for r in ((saved or {}).get("reports") or []) if r]
        return bool(reports) and not any(r.get("pending") for r in reports)

    def run(self, run_probe, good, bad, model_id, model2, methods, unit, view, bench_method, meta, request=None,
            context=None):
        """run_probe's outputs, or the kept finished ones of the same inputs (at once, in one step)."""
        args = (good, bad, model_id, model2, methods, unit, view, bench_method, meta)
        key = self.key(*args, context) if probe_cache.enabled() else None
        if key is None:
            yield from run_probe(*args, request, context)
            return
        kept = self.kept.get(key)
        leader = kept is None and self.once.lead(key)
        if kept is None and not leader:
            kept = self.kept.get(key)  # the leader's drawing, or None when it stopped without one
        if kept is not None:
            yield (f"<div class='{STARTED}'></div>", *kept[1:])  # the page scrolls to the answer, as a run's first note does
            return
        try:
            last = None
            for last in run_probe(*args, request, context):
                yield last
            if self.finished(last):
                self.kept.put(key, last)
        finally:
            if leader:
                self.once.done(key)


ANSWERS = Answers()


def probe_event(run_event: dict) -> dict:
    """The Probe tab's run event, answering from ANSWERS: what a gallery click runs."""
    run_probe = run_event["fn"]

    @functools.wraps(run_probe)  # its name and signature (Gradio passes the request by the signature)
    def gallery_probe(good, bad, model_id, model2, methods, unit, view, bench_method, meta,
                      request: gr.Request = None, context=None):
        yield from ANSWERS.run(run_probe, good, bad, model_id, model2, methods, unit, view, bench_method, meta,
                               request, context)

    return dict(run_event, fn=gallery_probe, api_name=GALLERY_EVENT)


def _shown(topic, language):
    return data.filter_pairs(data.load(), topic, language)


def on_filter(topic, language, reveal):
    """A new topic or language: its pairs in the list and the first of them selected."""
    pairs = _shown(topic, language)
    first = pairs[0]["id"] if pairs else None
    return (gr.update(choices=pair_choices(pairs), value=first), *render(first, topic, language, reveal))


def render(pair_id, topic, language, reveal):
    pairs = _shown(topic, language)
    ids = [p["id"] for p in pairs]
    pair = data.by_id(pairs, pair_id) or (pairs[0] if pairs else None)
    position = ids.index(pair["id"]) + 1 if pair else 0
    return cards_html(pairs, pair["id"] if pair else None), projection_html(pair, reveal, position, len(pairs))


def step(pair_id, topic, language, delta: int):
    ids = [p["id"] for p in _shown(topic, language)]
    if not ids:
        return gr.update()
    i = ids.index(pair_id) if pair_id in ids else 0
    return gr.update(value=ids[(i + delta) % len(ids)])


def build(probe, tabs, probe_tab_id: str) -> GalleryTab:
    """The tab; ``probe`` is the Probe tab (its sentences get filled), ``tabs`` the app's Tabs."""
    pairs = data.load()
    head = gr.HTML(intro(
        "Teaching gallery",
        "Minimal pairs chosen for teaching: one acceptable sentence, one unacceptable (marked *), and one "
        "sentence on why. Most come from BLiMP (English) and CLiMP (Chinese) exactly as the benchmarks have them; "
        "⚠ marks pairs a small model gets wrong in the app's shipped benchmark runs. Turn on the projection view "
        "for a classroom, or send a pair to the Probe tab to see what a model makes of it."), elem_id="gallery-intro")
    with gr.Row():
        topic = gr.Dropdown(topic_choices(pairs), value=ALL, label="Topic", scale=3, elem_id="gallery-topic")
        language = gr.Radio(language_choices(pairs), value=ALL, label="Language",
                            scale=2, elem_id="gallery-language")
    with gr.Row(equal_height=True):
        pair = gr.Dropdown(pair_choices(pairs), value=pairs[0]["id"], label="Pair", scale=6, elem_id="gallery-pair")
        # wide enough for their labels on one line: a low row, so the projection view starts high
        prev_btn = gr.Button("◀ Previous", scale=1, min_width=130, elem_id="gallery-prev")
        next_btn = gr.Button("Next ▶", scale=1, min_width=110, elem_id="gallery-next")
        try_btn = gr.Button("Try it in the Probe tab", variant="primary", scale=2, min_width=260, elem_id="gallery-try")
    with gr.Row():
        projection = gr.Checkbox(False, label="Projection view: one pair in big type, for a classroom",
                                 elem_id="gallery-projection-toggle")
        reveal = gr.Checkbox(True, label="Show the answer (untick to let the class guess first)", visible=False,
                             elem_id="gallery-reveal")
    cards0, big0 = render(pairs[0]["id"], ALL, ALL, True)
    big = gr.HTML(big0, visible=False, elem_id="gallery-big")
    cards = gr.HTML(cards0, elem_id="gallery-cards")

    view_inputs = [pair, topic, language, reveal]
    for comp in (topic, language):
        comp.input(on_filter, [topic, language, reveal], [pair, cards, big], **HIDDEN)
    pair.change(render, view_inputs, [cards, big], **HIDDEN)
    reveal.change(render, view_inputs, [cards, big], **HIDDEN)
    prev_btn.click(lambda *a: step(*a, -1), [pair, topic, language], [pair], **HIDDEN)
    next_btn.click(lambda *a: step(*a, 1), [pair, topic, language], [pair], **HIDDEN)
    # the projection view hides the tab's explanation, so the pair starts high on a projector's screen
    projection.change(lambda on: (gr.update(visible=on), gr.update(visible=on), gr.update(visible=not on),
                                  gr.update(visible=not on)),
                      [projection], [big, reveal, cards, head], **HIDDEN)

    def try_in_probe(pair_id, topic_value, language_value):
        return (*probe_fill(data.by_id(data.load(), pair_id)), gr.Tabs(selected=probe_tab_id))

    try_btn.click(try_in_probe, [pair, topic, language], [probe.good, probe.bad, probe.meta, probe.pair_label, tabs],
                  api_visibility="undocumented").then(**probe_event(probe.run_event))  # and runs it: a class sees the answer at once
    return GalleryTab(topic, language, pair, projection)
