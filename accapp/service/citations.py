"""BibTeX for Acceptability Explorer and the papers and benchmarks behind it, as data.

The entries live in ``accapp/data/citations.bib``; the ``% Used for:`` line above each says what
it is used for in the app. Pure: no Gradio, no model.

    bibtex(["warstadt2020blimp", "xiang2021climp"])  # the two benchmarks, each after its "% Used for:" line
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from accapp.benchmarks import BUILTIN  # each benchmark names its own entry

BIB_PATH = Path(__file__).resolve().parents[1] / "data" / "citations.bib"
APP_KEY = "acceptability_explorer"
RATED_KEYS = ("sprouse2013li", "tjuatja2025morcela")  # the rated pairs beside the model, and the copy shipped
# The app, then the papers, then the benchmarks: the order the Cite panel shows them in.
KEYS = (APP_KEY, "ide2025llmacceptability", "kauf2023better", "hu2023prompting", "hu2025stringprobability",
        *dict.fromkeys(b.bibkey for b in BUILTIN.values() if b.bibkey), *RATED_KEYS)
USED_FOR = "% Used for:"


@dataclass(frozen=True)
class Entry:
    key: str
    kind: str  # article, inproceedings, misc, software
    fields: dict  # lower-cased field name -> value with its outer braces removed
    text: str  # the entry exactly as in the file, from "@" to its closing brace
    used_for: str  # the "% Used for:" line above it, without the prefix ("" if none)


def parse(text: str) -> list[Entry]:
    """The entries of a BibTeX text; ValueError for an entry whose braces do not balance."""
    entries = []
    pos = 0
    for m in re.finditer(r"@(\w+)\s*\{\s*([^,\s]+)\s*,", text):
        if m.start() < pos:
            continue  # an "@" inside an entry already read
        start, depth = m.start(), 0
        for i in range(start + m.group(0).index("{"), len(text)):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            if depth == 0:
                break
        if depth:
            raise ValueError(f"BibTeX entry {m.group(2)!r}: unbalanced braces")
        body = text[m.end():i]
        before = text[:start].rstrip("\n").rsplit("\n", 1)[-1]
        used = before[len(USED_FOR):].strip() if before.startswith(USED_FOR) else ""
        entries.append(Entry(m.group(2), m.group(1).lower(), _fields(body, m.group(2)), text[start:i + 1], used))
        pos = i + 1
    return entries


def _fields(body: str, key: str) -> dict:
    out, i = {}, 0
    while True:
        m = re.compile(r"\s*(\w+)\s*=\s*").match(body, i)
        if not m:
            break
        j = m.end()
        if j < len(body) and body[j] == "{":
            depth, k = 0, j
            for k in range(j, len(body)):
                depth += {"{": 1, "}": -1}.get(body[k], 0)
                if depth == 0:
                    break
            if depth:
                raise ValueError(f"BibTeX entry {key!r}: field {m.group(1)!r} has unbalanced braces")
            value, i = body[j + 1:k], k + 1
        else:
            end = re.compile(r"[^,]*").match(body, j).end()
            value, i = body[j:end].strip().strip('"'), end
        out[m.group(1).lower()] = value
        i = re.compile(r"\s*,?").match(body, i).end()
    if body[i:].strip():
        raise ValueError(f"BibTeX entry {key!r}: cannot read {body[i:i + 40].strip()!r}")
    return out


@lru_cache(maxsize=1)
def entries() -> dict[str, Entry]:
    """Every entry of the shipped file, by key."""
    return {e.key: e for e in parse(BIB_PATH.read_text(encoding="utf-8"))}


def bibtex(keys=KEYS, used_for: bool = True) -> str:
    """BibTeX for these keys, in this order (each after its "% Used for:" line); KeyError for an unknown key."""
    known = entries()
    missing = [k for k in keys if k not in known]
    if missing:
        raise KeyError(f"no citation for {', '.join(missing)}; known: {', '.join(known)}")
    blocks = [(f"{USED_FOR} {known[k].used_for}\n" if used_for and known[k].used_for else "") + known[k].text for k in keys]
    return "\n\n".join(blocks) + "\n"
