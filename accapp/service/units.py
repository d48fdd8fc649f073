"""Units and rounding of the numbers the app shows and writes: pure functions.

A method's score is in the unit its descriptor names (accapp/methods/data/methods.json, ``unit``):
a log-probability ("log", "log/token": natural log, nats, as the engine computes it), a probability
("probability": P(Yes) against No) or a share ("share": an ensemble's share of draws). The page
shows log-probabilities in bits or nats (the Probe's unit setting, bits by default); probabilities
and shares stay as they are. Every number shown gets its own unit, so a column that holds several
methods never hides one method's unit behind another's.
"""

from __future__ import annotations

import math

from accapp.methods import plain

LN2 = math.log(2.0)
PAGE_UNITS = ("bits", "nats")
DEFAULT_UNIT = "bits"  # the Probe tab's default; Explore's tables follow it


def score_unit(method: str) -> str:
    """The descriptor's unit of a method's score ('log', 'log/token', 'probability', 'share';
    an unknown id: a log-probability)."""
    return plain(method)["unit"]


def is_log(method: str) -> bool:
    return score_unit(method).startswith("log")


def in_unit(value: float, method: str, unit: str = DEFAULT_UNIT) -> float:
    """A method's score (or a difference of two) in the page's unit: log-probabilities (nats) in
    bits or nats, probabilities and shares as they are."""
    if unit not in PAGE_UNITS:
        raise ValueError(f"unit must be one of {PAGE_UNITS}, not {unit!r}")
    return value / LN2 if unit == "bits" and is_log(method) else value


def unit_label(method: str, unit: str = DEFAULT_UNIT) -> str:
    """What a method's number is in, as the page says it: 'bits', 'bits/token', 'P(Yes)', 'share of draws'."""
    u = score_unit(method)
    if u == "probability":
        return "P(Yes)"
    if u == "share":
        return "share of draws"
    return unit + ("/token" if u == "log/token" else "")


def file_unit(method: str) -> str:
    """The unit of a method's score as the files write it (log-probabilities are kept in nats)."""
    return unit_label(method, "nats")


def with_unit(value, method: str, unit: str = DEFAULT_UNIT, signed: bool = True, digits: int = 3) -> str:
    """'+5.12 bits', '-0.0495 bits/token', '+0.12 P(Yes)': a number in the page's unit with that unit,
    to `digits` significant digits ('' for a missing value)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    v = in_unit(float(value), method, unit)
    return f"{v:{'+' if signed else ''}.{digits}g} {unit_label(method, unit)}"


def percent_decimals(n: int | None) -> int:
    """Decimals of a percentage of n counted items that the data supports: one item more or less moves
    it by 100/n %, so whole percents below 10 items and 0.1 % from 10 on (the app reads no accuracy
    finer than 0.1 %)."""
    if n is None or n < 10:
        return 0
    return 1


def round_percent(value, n: int | None):
    """A percentage of n items rounded to what n supports (percent_decimals); NaN/None kept."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return value
    return round(float(value), percent_decimals(n))
