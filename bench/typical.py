"""What the probe benchmarks call "a typical pair", and how they sum up its latencies.

bench/perf.py (in the engine) and bench/probe_latency.py --blimp (through the app) time the same
pairs: one BLiMP pair from each paradigm, the first of that paradigm's seeded sample.
"""

from __future__ import annotations

import statistics

import pandas as pd

from accapp.benchmarks import load_benchmark, stratified_sample

TARGET_S = 2.0  # the probe's answer time the speed issue asks for


def typical_pairs(n: int = 67, blimp: pd.DataFrame | None = None) -> list[tuple[str, str]]:
    """(good, bad) of the first n paradigms' first pairs (BLiMP has 67 paradigms)."""
    df = stratified_sample(load_benchmark("blimp") if blimp is None else blimp, 1, seed=0).head(n)
    return list(zip(df.good, df.bad))


def spread(times: list[float], digits: int = 3) -> dict:
    """Median, 90th percentile, max and the share within TARGET_S of a list of seconds.

    The percentile is statistics.quantiles' default ("exclusive") method, which extrapolates
    beyond the max for a handful of times: read it over many pairs (67), as the benchmarks do.
    """
    p90 = statistics.quantiles(times, n=10)[8] if len(times) > 1 else times[0]
    return {"median_s": round(statistics.median(times), digits), "p90_s": round(p90, digits),
            "max_s": round(max(times), digits),
            "share_within_2s": round(sum(t <= TARGET_S for t in times) / len(times), 3)}
