"""The shipped benchmarks' pairs, for the probe: find a pair by its sentences, draw a random one,
list phenomena and paradigms. Benchmarks of single sentences (their shape: accapp/data/benchmarks.json)
have no pairs to offer and are left out."""

from __future__ import annotations

import random
from functools import lru_cache

import numpy as np
import pandas as pd

from accapp.benchmarks import BUILTIN, load_benchmark
from accapp.errors import UserError, shown

ANY = "any"  # the filter value that keeps every phenomenon / paradigm
META_KEYS = ("benchmark", "paradigm", "phenomenon", "pair_id", "good", "bad")
BENCHMARKS = tuple(name for name, b in BUILTIN.items() if b.shape != "sentences")  # those with pairs, in display order


@lru_cache(maxsize=len(BENCHMARKS))  # each shipped benchmark once (all of them together: a few hundred MB at most)
def benchmark(name: str) -> pd.DataFrame:
    if name not in BENCHMARKS:
        raise UserError(f"Unknown benchmark '{shown(name)}'; choose one of {', '.join(BENCHMARKS)}.")
    return load_benchmark(name)


def pair_meta(name: str, i: int) -> dict:
    """A pair as the app passes it around: benchmark, paradigm, phenomenon, pair_id, good, bad (strings)."""
    row = benchmark(name).iloc[int(i)]
    return {k: str(row[k]) for k in META_KEYS}


def find_pair(good: str, bad: str) -> dict | None:
    """The benchmark pair with exactly these sentences (meta dict), or None."""
    good, bad = (good or "").strip(), (bad or "").strip()
    for name in BENCHMARKS:
        try:
            df = benchmark(name)
        except Exception:  # noqa: BLE001 - a missing asset only means no match
            continue
        # compared column-wise in Arrow's buffers: no per-pair Python objects kept (a dict of BLiMP's pairs held ~90 MB)
        hit = np.flatnonzero(((df["good"] == good) & (df["bad"] == bad)).to_numpy(dtype=bool, na_value=False))
        if hit.size:
            return pair_meta(name, int(hit[-1]))  # the last, as a dict of the pairs kept it
    return None


def phenomena(name: str) -> list[str]:
    return sorted(set(benchmark(name)["phenomenon"]))


def paradigms(name: str, phenomenon: str | None = None) -> list[str]:
    df = benchmark(name)
    if phenomenon and phenomenon != ANY:
        df = df[df["phenomenon"] == phenomenon]
    return sorted(set(df["paradigm"]))


def random_pair(name: str, phenomenon: str | None = None, paradigm: str | None = None, rng=None) -> dict:
    """A random pair of a benchmark, within a phenomenon and / or paradigm ('any' = no filter)."""
    df = benchmark(name)
    mask = pd.Series(True, index=df.index)
    if phenomenon and phenomenon != ANY:
        mask &= df["phenomenon"] == phenomenon
    if paradigm and paradigm != ANY:
        mask &= df["paradigm"] == paradigm
    # identical sentences (7 BLiMP pairs) make a pointless demo
    mask &= df["good"] != df["bad"]
    idx = df.index[mask]
    if len(idx) == 0:
        raise UserError("No pair matches this phenomenon and paradigm.")
    rng = rng or random.Random()
    return pair_meta(name, df.index.get_loc(idx[rng.randrange(len(idx))]))
