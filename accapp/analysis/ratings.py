"""Human ratings beside the model: Hu et al. 2025's second prediction (§5, Fig. 3).

Within minimal pairs, the model's difference (score of the good sentence minus the bad one's)
should correlate with the humans' difference in acceptability, and less so as the two sentences
drift apart in meaning. Pure functions over arrays and frames:

- :func:`zscore_within`: each participant's ratings as z-scores over that participant's own ratings
  (centred on their mean, scaled by their standard deviation, ddof=1 as R's ``scale()``), the paper's
  step before a sentence's mean; a participant whose ratings do not vary has no scale: NaN.
- :func:`human_pairs`: the human side of each pair from what a file gives (per-sentence ratings with
  or without a participant column, a per-pair ``human_delta``, or a forced-choice share ``fc_good``).
- :func:`correlation`: Pearson and Spearman r (``scipy.stats.pearsonr`` / ``spearmanr``) with 95 %
  percentile bootstrap intervals over pairs (``scipy.stats.bootstrap``, paired, seeded).
- :func:`by_distance`: r in equal-sized bins of a meaning distance (the paper's 10 bins, Fig. 3b).
- :func:`majority_accuracy`: accuracy against the labels beside accuracy against the human majority.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from scipy import stats

from accapp.errors import UserError
from accapp.schema import ENSEMBLE_METHODS

N_RESAMPLES = 1000
SEED = 0
LEVEL = 0.95
BINS = 10  # Hu et al. 2025 §4.2: 10 equally sized bins of within-pair cosine distance
MIN_PAIRS = 3  # fewer pairs: no r (and no interval)
SOURCE = (f"Pearson / Spearman r (scipy.stats) between the model's and the humans' differences; {LEVEL:.0%} percentile "
          f"bootstrap over pairs (scipy.stats.bootstrap, paired), {N_RESAMPLES:,} resamples, seed {SEED}")
CORRELATION_KEYS = ["pairs", "pearson_r", "pearson_low", "pearson_high", "pearson_p", "spearman_r", "spearman_low",
                    "spearman_high", "spearman_p"]
BIN_COLUMNS = ["bin", "distance_low", "distance_high", "distance_mid", "pairs", "pearson_r", "pearson_low", "pearson_high"]
KEY = ["method", "template", "variant"]  # one judgment: a method, its template and answer order
SUMMARY_COLUMNS = KEY + CORRELATION_KEYS + ["accuracy_labels", "accuracy_humans", "human_pairs", "human_ties",
                                            "humans_agree_with_labels", "human_majority_from", "human_source", "source"]
POINT_COLUMNS = ["row", "pair_id", "good", "bad", "model_delta", "human_delta", "fc_good", "meaning_distance"]
HUMAN_COLUMNS = ["good", "bad", "rating_good", "rating_bad", "human_delta", "fc_good", "participants", "human_source"]


# ------------------------------------------------------------------------------------ the human side
def has_ratings(frame: pd.DataFrame) -> bool:
    """Whether a frame of pairs carries human ratings :func:`human_pairs` can read."""
    cols = set(frame.columns)
    return {"rating_good", "rating_bad"} <= cols or "human_delta" in cols or "fc_good" in cols


def zscore_within(ratings: pd.DataFrame, participant: str = "participant", rating: str = "rating") -> pd.Series:
    """Each rating as a z-score within its participant: (x - participant's mean) / participant's sd
    (ddof=1). NaN for a participant with fewer than two ratings or ratings that never vary."""
    x = pd.to_numeric(ratings[rating], errors="coerce").astype(float)
    groups = x.groupby(ratings[participant].astype(str))
    mean, sd = groups.transform("mean"), groups.transform("std")
    return ((x - mean) / sd.where(sd > 0)).rename("z")


def _shares(values: pd.Series) -> pd.Series:
    v = pd.to_numeric(values, errors="coerce").astype(float)
    if ((v < 0) | (v > 1)).any():
        raise UserError("fc_good must be the share (0 to 1) of participants who chose the good sentence.")
    return v


def human_pairs(frame: pd.DataFrame) -> pd.DataFrame:
    """The human side of each distinct pair (good, bad) of a frame, one row each, in order of first
    appearance: HUMAN_COLUMNS. ``human_source`` says which input it came from:

    - ``participant`` with ``rating_good`` / ``rating_bad`` (one row per participant and pair): every
      rating z-scored within its participant over all of that participant's ratings (good and bad
      sentences together), then a sentence's mean z-score; human_delta = mean z(good) - mean z(bad);
    - ``rating_good`` / ``rating_bad`` without participants (means, raw or z-scored, Likert or
      magnitude estimation): human_delta = rating_good - rating_bad (rows of the same pair averaged);
    - ``human_delta`` alone: as given;
    - ``fc_good`` alone (the share choosing the good sentence in a forced choice): human_delta =
      fc_good - 0.5.
    ``fc_good`` rides along whenever it is there (the human majority, :func:`majority_accuracy`).
    """
    cols = set(frame.columns)
    if not ({"rating_good", "rating_bad"} <= cols or "human_delta" in cols or "fc_good" in cols):
        raise UserError("No human ratings: give rating_good and rating_bad, or human_delta, or fc_good.")
    key = ["good", "bad"]
    df = frame.reset_index(drop=True)
    out = df[key].drop_duplicates().reset_index(drop=True)
    fc = _shares(df["fc_good"]).groupby([df["good"], df["bad"]], sort=False).mean() if "fc_good" in cols else None
    if {"rating_good", "rating_bad"} <= cols and "participant" in cols:
        long = pd.concat([
            pd.DataFrame({"participant": df["participant"], "sentence": df[side], "rating": df[f"rating_{side}"]})
            for side in ("good", "bad")], ignore_index=True)
        long = long.drop_duplicates(["participant", "sentence"])  # a sentence in two of a participant's pairs, once
        long["z"] = zscore_within(long)
        by_sentence = long.groupby("sentence")["z"].mean()
        people = long.dropna(subset=["z"]).groupby("sentence")["participant"].nunique()
        out["rating_good"] = out["good"].map(by_sentence)
        out["rating_bad"] = out["bad"].map(by_sentence)
        out["participants"] = np.minimum(out["good"].map(people), out["bad"].map(people))
        source = "ratings z-scored within participants"
    elif {"rating_good", "rating_bad"} <= cols:
        means = df.assign(**{c: pd.to_numeric(df[c], errors="coerce") for c in ("rating_good", "rating_bad")}) \
            .groupby(key, sort=False)[["rating_good", "rating_bad"]].mean()
        out = out.join(means, on=key)
        out["participants"] = np.nan
        source = "ratings as given"
    else:
        out["rating_good"] = out["rating_bad"] = out["participants"] = np.nan
        source = "human_delta as given" if "human_delta" in cols else "forced-choice share - 0.5"
    if {"rating_good", "rating_bad"} <= cols:
        out["human_delta"] = out["rating_good"] - out["rating_bad"]
    elif "human_delta" in cols:
        given = pd.to_numeric(df["human_delta"], errors="coerce").groupby([df["good"], df["bad"]], sort=False).mean()
        out["human_delta"] = [given.get((g, b), np.nan) for g, b in zip(out["good"], out["bad"])]
    else:
        out["human_delta"] = [fc.get((g, b), np.nan) - 0.5 for g, b in zip(out["good"], out["bad"])]
    out["fc_good"] = [fc.get((g, b), np.nan) for g, b in zip(out["good"], out["bad"])] if fc is not None else np.nan
    out["human_source"] = source
    return out[HUMAN_COLUMNS]


# ------------------------------------------------------------------------------------ correlations
def _pearson(x, y, axis=-1):
    """Pearson r along an axis (the bootstrap's vectorised statistic; equal to scipy.stats.pearsonr)."""
    x = x - x.mean(axis=axis, keepdims=True)
    y = y - y.mean(axis=axis, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (x * y).sum(axis=axis) / np.sqrt((x * x).sum(axis=axis) * (y * y).sum(axis=axis))


def _spearman(x, y, axis=-1):
    """Spearman rho along an axis: Pearson r of average ranks (scipy.stats.spearmanr's definition)."""
    return _pearson(stats.rankdata(x, axis=axis), stats.rankdata(y, axis=axis), axis=axis)


def _clean(model_delta, human_delta) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(model_delta, dtype=float)
    y = np.asarray(human_delta, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"model and human differences differ in length: {x.shape} vs {y.shape}")
    keep = np.isfinite(x) & np.isfinite(y)
    return x[keep], y[keep]


def _interval(statistic, x, y, n_resamples, seed, level):
    with warnings.catch_warnings():  # few pairs: some resamples never vary; scipy warns, the interval says so (NaN)
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        res = stats.bootstrap((x, y), statistic, paired=True, vectorized=True, n_resamples=n_resamples,
                              confidence_level=level, method="percentile", random_state=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def correlation(model_delta, human_delta, n_resamples: int = N_RESAMPLES, seed: int = SEED,
                level: float = LEVEL) -> dict:
    """Pearson and Spearman r between two differences over the pairs where both are finite, each
    with its p-value and a percentile bootstrap interval over pairs: CORRELATION_KEYS. NaN where
    there are fewer than MIN_PAIRS pairs or either side never varies."""
    x, y = _clean(model_delta, human_delta)
    out = dict.fromkeys(CORRELATION_KEYS, float("nan"))
    out["pairs"] = int(len(x))
    if len(x) < MIN_PAIRS or np.ptp(x) == 0 or np.ptp(y) == 0:
        return out
    p = stats.pearsonr(x, y)
    s = stats.spearmanr(x, y)
    out.update(pearson_r=float(p.statistic), pearson_p=float(p.pvalue), spearman_r=float(s.statistic),
               spearman_p=float(s.pvalue))
    with np.errstate(invalid="ignore"):  # a resample whose values never vary has no r: its interval end is NaN
        out["pearson_low"], out["pearson_high"] = _interval(_pearson, x, y, n_resamples, seed, level)
        out["spearman_low"], out["spearman_high"] = _interval(_spearman, x, y, n_resamples, seed, level)
    return out


def by_distance(model_delta, human_delta, distance, bins: int = BINS, n_resamples: int = N_RESAMPLES,
                seed: int = SEED) -> pd.DataFrame:
    """Pearson r (with its bootstrap interval) in ``bins`` equally sized bins of a within-pair
    meaning distance (quantile bins, as Hu et al. 2025 Fig. 3b; fewer when distances repeat):
    BIN_COLUMNS, one row per bin, nearest pairs first."""
    d = pd.DataFrame({"x": np.asarray(model_delta, float), "y": np.asarray(human_delta, float),
                      "d": np.asarray(distance, float)}).replace([np.inf, -np.inf], np.nan).dropna()
    if d.empty:
        return pd.DataFrame(columns=BIN_COLUMNS)
    d["bin"] = pd.qcut(d["d"], q=min(bins, len(d)), labels=False, duplicates="drop")
    rows = []
    for b, part in d.groupby("bin", sort=True):
        r = correlation(part["x"], part["y"], n_resamples, seed)
        rows.append({"bin": int(b) + 1, "distance_low": part["d"].min(), "distance_high": part["d"].max(),
                     "distance_mid": part["d"].median(), "pairs": len(part), "pearson_r": r["pearson_r"],
                     "pearson_low": r["pearson_low"], "pearson_high": r["pearson_high"]})
    return pd.DataFrame(rows, columns=BIN_COLUMNS)


def majority_accuracy(model_delta, human_delta, fc_good=None, tolerance: float = 0.0) -> dict:
    """Accuracy against the labels (the model prefers the sentence labelled good: delta > tolerance;
    a tie is wrong) beside accuracy against the human majority (the sentence most participants chose,
    fc_good > 0.5; without a forced choice, the one rated higher: human_delta > 0), over the pairs
    where the humans are not split; and how often the humans' majority agrees with the labels.
    Percent; ``pairs`` counted, ``human_ties`` left out of the second."""
    x = np.asarray(model_delta, dtype=float)
    y = np.asarray(human_delta, dtype=float)
    fc = np.full_like(x, np.nan) if fc_good is None else np.asarray(fc_good, dtype=float)
    ok = np.isfinite(x)
    x, y, fc = x[ok], y[ok], fc[ok]
    lean = np.where(np.isfinite(fc), fc - 0.5, y)  # > 0: humans prefer the labelled-good sentence
    decided = np.isfinite(lean) & (lean != 0)
    model_good = x > tolerance
    model_bad = x < -tolerance
    human_good = lean > 0
    agree = np.where(human_good, model_good, model_bad)[decided]
    n = int(len(x))
    return {
        "pairs": n,
        "accuracy_labels": float(100 * model_good.mean()) if n else float("nan"),
        "accuracy_humans": float(100 * agree.mean()) if decided.any() else float("nan"),
        "human_pairs": int(decided.sum()),
        "human_ties": int((~decided).sum()),
        "humans_agree_with_labels": float(100 * human_good[decided].mean()) if decided.any() else float("nan"),
        "human_majority_from": "forced choice" if np.isfinite(fc).any() else "ratings",
    }


def cosine_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """1 - cosine similarity of matching rows of two embedding matrices."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    num = (a * b).sum(axis=1)
    den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return 1.0 - num / den


# ------------------------------------------------------------------------------------ per judgment
def results_points(results: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """A benchmark run's result rows (the runner's: method, template, variant, pair_id, good, bad,
    score_good, score_bad) beside the ratings of the file it ran on (``bench FILE``): KEY + POINT_COLUMNS."""
    res = results[~results["method"].isin(list(ENSEMBLE_METHODS))].copy()
    res["model_delta"] = pd.to_numeric(res["score_good"], errors="coerce") - pd.to_numeric(res["score_bad"], errors="coerce")
    for c in ("template", "variant"):
        res[c] = res[c].fillna("").astype(str)
    if "pair_id" not in res:  # accapp.score_pairs' frame: the pair's position
        res["pair_id"] = res["pair"].astype(str) if "pair" in res else res.index.astype(str)
    res = res.groupby(KEY + ["good", "bad"], sort=False).agg(pair_id=("pair_id", "first"),
                                                           model_delta=("model_delta", "mean")).reset_index()
    pts = res.merge(human_pairs(pairs), on=["good", "bad"])
    pts["row"] = range(1, len(pts) + 1)
    pts["meaning_distance"] = float("nan")
    return pts[KEY + POINT_COLUMNS + ["human_source"]]


def summary(points: pd.DataFrame, n_resamples: int = N_RESAMPLES) -> pd.DataFrame:
    """One row per (method, template, variant): SUMMARY_COLUMNS (r with intervals, accuracy against the
    labels and against the human majority), in the order the methods came."""
    out = []
    for key, g in points.groupby(KEY, sort=False):
        corr = correlation(g["model_delta"], g["human_delta"], n_resamples=n_resamples)
        acc = majority_accuracy(g["model_delta"], g["human_delta"], g["fc_good"])
        out.append({**dict(zip(KEY, key)), **corr, **{k: v for k, v in acc.items() if k != "pairs"},
                    "human_source": g["human_source"].iloc[0] if "human_source" in g else "",
                    "source": SOURCE})
    return pd.DataFrame(out, columns=SUMMARY_COLUMNS)
