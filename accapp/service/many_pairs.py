"""Many minimal pairs pasted into the Probe tab, probed one after another: one pair a line, the
acceptable sentence, a tab, the unacceptable one (what a spreadsheet's two columns give when
copied). Each line gets the probe's headline (its headline method's verdict and margin) and its
majority over every judgment, as one row of a table that exports as CSV (service/export.py).

Bounded: at most ACCAPP_MANY_PAIRS_MAX lines (accapp/settings.py) a request; more are refused
with a message before anything is scored. A line that cannot be read or scored gets its message
in the row's `error` column, and the others are still probed.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

from accapp import logs, settings
from accapp.errors import UserError
from accapp.methods import parse_ids
from accapp.service import region as regions
from accapp.service import verdicts
from accapp.service.messages import message_of

log = logging.getLogger("accapp.service")
LN2 = math.log(2)
MAX_LINE_CHARS = 2000  # two sentences of 400 characters, with room for brackets and spaces


def max_lines() -> int:
    """The most lines one request probes (ACCAPP_MANY_PAIRS_MAX)."""
    return settings.integer("ACCAPP_MANY_PAIRS_MAX")


@dataclass(frozen=True)
class Line:
    """One pasted line: its number (1-based, blank lines counted), its two sentences as typed, or
    why it cannot be read."""

    number: int
    good: str = ""
    bad: str = ""
    error: str = ""


def parse_lines(text, limit: int | None = None) -> list[Line]:
    """The pasted box as lines (blank lines skipped); UserError when there is no pair or more than
    `limit` (default max_lines()). A line without exactly one tab is kept with its error."""
    limit = max_lines() if limit is None else limit
    if not isinstance(text, str) or not text.strip():
        raise UserError("Paste at least one pair: the acceptable sentence, a tab, the unacceptable sentence.")
    raw = [(n, ln) for n, ln in enumerate(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), 1) if ln.strip()]
    if len(raw) > limit:
        raise UserError(f"The box has {len(raw):,} pairs; at most {limit:,} are probed at once "
                        f"(ACCAPP_MANY_PAIRS_MAX). Split them, or score them as a file in the Score a file tab.")
    out = []
    for n, ln in raw:
        if len(ln) > MAX_LINE_CHARS:
            out.append(Line(n, error=f"Line {n} is {len(ln):,} characters long; the limit is {MAX_LINE_CHARS:,}."))
            continue
        parts = ln.split("\t")
        if len(parts) != 2:
            what = "no tab" if len(parts) == 1 else f"{len(parts) - 1} tabs"
            out.append(Line(n, error=f"Line {n} has {what}: put one tab between the acceptable and the "
                                     "unacceptable sentence."))
            continue
        out.append(Line(n, parts[0].strip(), parts[1].strip()))
    return out


def check_methods(methods) -> list[str]:
    """The methods every line is probed with, as the Probe tab ticks them: refused when none is ticked
    or none is known (the /probe API's rule for unknown ids; an empty list never means "all" here)."""
    ids = parse_ids(methods) if methods not in (None, "") else []
    if not ids:
        raise UserError("Tick at least one method above: the box's pairs are probed with the methods ticked there.")
    return ids


COLUMNS = ["line", "acceptable", "unacceptable", "headline_method", "verdict", "margin_bits", "margin_nats",
           "headline", "judgments_for_good", "judgments_for_bad", "judgments", "region_difference_bits",
           "region_difference_nats", "error"]


def row_of(line: Line, report: dict | None, unit: str = "bits", error: str = "") -> dict:
    """One table row: the line, its headline (verdict, margin good − bad in bits and nats, the sentence
    in `unit`), its majority over every judgment, its region's bad − good surprisal, or its error."""
    row = {c: None for c in COLUMNS}
    row.update(line=line.number, acceptable=line.good, unacceptable=line.bad, error=error or line.error)
    if report is None:
        return row
    head = report.get("headline")
    if head:
        row.update(headline_method=head["name"], verdict=head["verdict"], margin_nats=head["margin"],
                   margin_bits=head["margin"] / LN2, headline=verdicts.headline_text(head, unit))
    maj = report.get("majority") or {}
    row.update(judgments_for_good=maj.get("good"), judgments_for_bad=maj.get("bad"), judgments=maj.get("judgments"))
    diff = ((report.get("region") or {}).get("difference") or {}).get("region")
    if diff:
        row.update(region_difference_bits=diff["surprisal_bits"], region_difference_nats=diff["surprisal_nats"])
    return row


def probe_lines(lines: list[Line], probe, unit: str = "bits", progress=None):
    """Probe each readable line with `probe(good, bad) -> report` (service.probe.probe_api with the
    tab's model, methods and context), one after another; yields (done, total, rows so far).
    progress(fraction, desc): gradio's Progress, or None."""
    rows: list[dict] = []
    total = len(lines)
    for k, line in enumerate(lines):
        if progress is not None:
            progress(k / total, desc=f"Pair {k + 1} of {total}")
        if line.error:
            rows.append(row_of(line, None))
        else:
            try:
                regions.split_pair(line.good, line.bad)  # a bracket error names the line, not only the sentence
                rows.append(row_of(line, probe(line.good, line.bad), unit))
            except Exception as exc:  # noqa: BLE001 - one bad line never stops the others; its message stays
                if not isinstance(exc, UserError):
                    logs.failed(log, f"many pairs: line {line.number}", exc)
                rows.append(row_of(line, None, error=f"Line {line.number}: {message_of(exc)}"))
        yield k + 1, total, rows
