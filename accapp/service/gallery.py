"""The teaching gallery: curated minimal pairs, each with a one-sentence explanation, as data.

The pairs live in ``accapp/data/gallery.json``: a list of {id, topic, language, good, bad,
explanation, source} and, where a shipped run of a small model gets the pair wrong,
``model_note`` (what it gets wrong, in words) with ``model_note_run`` (the results file under
precomputed/results/ that says so). ``source`` is ``blimp:<paradigm>:<pairID>``,
``climp:<paradigm>:<pair_id>`` (the sentences exactly as the shipped benchmark has them) or
``constructed``. Pure: no Gradio, no model.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

from accapp.benchmarks import BUILTIN, LANGUAGE_NAMES, label_of

GALLERY_PATH = Path(__file__).resolve().parents[1] / "data" / "gallery.json"
TOPICS = (
    "Agreement without an attractor",
    "Agreement with an attractor",
    "NPI licensing",
    "Filler-gap dependencies",
    "Islands",
    "Binding",
    "Argument structure",
    "Quantifiers",
    "Chinese classifiers",
    "把/被 constructions",
)
LANGUAGES = LANGUAGE_NAMES  # the languages a gallery pair may be in
SOURCE_BENCHMARK = {b.name: b.language for b in BUILTIN.values()}  # a source's benchmark -> its language
REQUIRED = ("id", "topic", "language", "good", "bad", "explanation", "source")
OPTIONAL = ("model_note", "model_note_run")
_NAMES = "|".join(map(re.escape, BUILTIN))
_SOURCE = re.compile(rf"({_NAMES}):(\w+):(\d+)")
_RUN = re.compile(rf"[\w.-]+__({_NAMES})")


def parse_source(source: str) -> tuple[str, str, str] | None:
    """(benchmark, paradigm, pair_id) of a benchmark source; None for "constructed"."""
    if source == "constructed":
        return None
    m = _SOURCE.fullmatch(source or "")
    if not m:
        raise ValueError(f"source {source!r}: use {', '.join(f'{b}:<paradigm>:<pair id>' for b in BUILTIN)} or constructed")
    return m.group(1), m.group(2), m.group(3)


def validate(pairs) -> list[dict]:
    """The pairs, checked: ValueError naming every problem (fields, topic, language, source, ids)."""
    if not isinstance(pairs, list):
        raise ValueError("the gallery must be a list of pairs")
    problems, seen = [], set()
    for n, p in enumerate(pairs):
        name = p.get("id", f"#{n}") if isinstance(p, dict) else f"#{n}"
        if not isinstance(p, dict):
            problems.append(f"{name}: not an object")
            continue
        missing = [k for k in REQUIRED if not isinstance(p.get(k), str) or not p[k].strip()]
        extra = sorted(set(p) - set(REQUIRED) - set(OPTIONAL))
        if missing or extra:
            problems.append(f"{name}: " + "; ".join(([f"missing {', '.join(missing)}"] if missing else [])
                                                   + ([f"unknown {', '.join(extra)}"] if extra else [])))
            continue
        if p["id"] in seen:
            problems.append(f"{name}: id used twice")
        seen.add(p["id"])
        if p["topic"] not in TOPICS:
            problems.append(f"{name}: unknown topic {p['topic']!r}")
        if p["language"] not in LANGUAGES:
            problems.append(f"{name}: language must be one of {', '.join(LANGUAGES)}")
        if p["good"] == p["bad"]:
            problems.append(f"{name}: the two sentences are the same")
        try:
            src = parse_source(p["source"])
        except ValueError as exc:
            problems.append(f"{name}: {exc}")
            continue
        if src and SOURCE_BENCHMARK[src[0]] != p["language"]:
            problems.append(f"{name}: a {src[0]} pair must have language {SOURCE_BENCHMARK[src[0]]}")
        if ("model_note" in p) != ("model_note_run" in p):
            problems.append(f"{name}: model_note and model_note_run go together")
        elif "model_note" in p:
            run = _RUN.fullmatch(str(p["model_note_run"]))
            if src is None or run is None or run.group(1) != src[0]:
                problems.append(f"{name}: a model note needs a benchmark source and a run of that benchmark")
    if problems:
        raise ValueError("gallery: " + " | ".join(problems))
    return pairs


def load(path: Path | str | None = None) -> list[dict]:
    """The gallery's pairs, validated, in file order (the shipped file is read once)."""
    if path is None:
        return _shipped()
    return validate(json.loads(Path(path).read_text(encoding="utf-8")))


@lru_cache(maxsize=1)
def _shipped() -> list[dict]:
    return validate(json.loads(GALLERY_PATH.read_text(encoding="utf-8")))


def filter_pairs(pairs, topic: str | None = None, language: str | None = None) -> list[dict]:
    """The pairs of a topic and / or language (None, "" or "all" keeps every one)."""
    keep = [p for p in pairs if topic in (None, "", "all") or p["topic"] == topic]
    return [p for p in keep if language in (None, "", "all") or p["language"] == language]


def topic_counts(pairs) -> list[tuple[str, int]]:
    """(topic, number of pairs) in TOPICS order, for the topics that have pairs."""
    return [(t, n) for t in TOPICS if (n := sum(p["topic"] == t for p in pairs))]


def by_id(pairs, pair_id: str) -> dict | None:
    return next((p for p in pairs if p["id"] == pair_id), None)


def source_label(source: str) -> str:
    """How a source reads on screen: "BLiMP · adjunct_island · pair 55" or "constructed for the gallery"."""
    src = parse_source(source)
    if src is None:
        return "constructed for the gallery"
    return f"{label_of(src[0])} · {src[1]} · pair {src[2]}"
