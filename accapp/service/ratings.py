"""Human ratings beside the model, as plain data for the tabs, the CSV and the API.

Two sources: a scored file whose rows carry ratings (``rating_good``/``rating_bad``, ``human_delta``,
``fc_good``, with or without ``participant``: accapp.benchmarks.RATING_COLUMNS), and the built-in
rated sets (``assets/ratings/<set>.parquet``) with the embedded models' precomputed results
(``precomputed/ratings/<model>__<set>.parquet``) and meaning distances
(``<model>__<set>_distance.parquet``, from the model's own hidden states: scripts/ratings_distances.py).

Per method (and template, and answer order) the model's difference is score(good) - score(bad); the
ensembles' scores are shares of votes, not scores of a sentence, so they are left out.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path

import pandas as pd

from accapp.analysis import ratings as R
from accapp.benchmarks import RATING_COLUMNS
from accapp.methods import headline
from accapp.schema import ENSEMBLE_METHODS

ROOT = Path(__file__).resolve().parents[2]
RATED = ROOT / "assets" / "ratings"
PRECOMPUTED = ROOT / "precomputed" / "ratings"
PUBLISHED = Path(__file__).resolve().parents[1] / "data" / "ratings_published.json"
KEY, SUMMARY_COLUMNS, POINT_COLUMNS = R.KEY, R.SUMMARY_COLUMNS, R.POINT_COLUMNS
# the numbers live in analysis/ (the CLI reaches them there)
summary, results_points, has_ratings = R.summary, R.results_points, R.has_ratings
SETS = {"li": "LI (Sprouse, Schütze & Almeida 2013)"}  # the built-in rated sets, their words on screen


def _with_deltas(results: pd.DataFrame) -> pd.DataFrame:
    """Result rows that score a sentence (ensembles left out), with model_delta = score_good - score_bad
    and the template and answer order as text (the points' keys)."""
    out = results[~results["method"].isin(list(ENSEMBLE_METHODS))].copy()
    out["model_delta"] = pd.to_numeric(out["score_good"], errors="coerce") - pd.to_numeric(out["score_bad"], errors="coerce")
    for c in ("template", "variant"):
        out[c] = out[c].fillna("").astype(str)
    return out


def model_deltas(long: pd.DataFrame) -> pd.DataFrame:
    """One row per scored line of the long layout (accapp.service.score_file.long_frame): ``row`` and
    KEY with model_delta = score_good - score_bad; ensembles and failed rows left out."""
    ok = _with_deltas(long[(long["error"] == "") & long["method"].notna()])
    return ok[["row"] + KEY + ["model_delta"]]


def file_points(long: pd.DataFrame, base: pd.DataFrame) -> pd.DataFrame:
    """Every (method, template, variant) x distinct pair of a scored file with ratings: POINT_COLUMNS
    plus KEY. ``base`` is the scored input (``row`` 1-based, the input's good/bad and rating columns);
    rows of the same pair (one per participant) are one point, the model's difference their mean."""
    human = R.human_pairs(base)
    rows = base[["row", "good", "bad"] + (["pair_id"] if "pair_id" in base else [])]
    d = model_deltas(long).merge(rows, on="row")
    d = d.groupby(KEY + ["good", "bad"], sort=False).agg(
        row=("row", "min"), model_delta=("model_delta", "mean"),
        **({"pair_id": ("pair_id", "first")} if "pair_id" in d else {})).reset_index()
    d = d.merge(human, on=["good", "bad"], how="left")
    if "pair_id" not in d:
        d["pair_id"] = d["row"].astype(str)
    d["meaning_distance"] = float("nan")
    return d[KEY + POINT_COLUMNS + ["human_source"]]


def file_summary(long: pd.DataFrame, base: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """(summary, points) for a scored file with ratings; None for a file without any."""
    if not has_ratings(base):
        return None
    points = file_points(long, base)
    return summary(points), points


# ------------------------------------------------------------------------------------ built-in sets
@lru_cache(maxsize=8)  # the few rated sets x embedded models there are
def _read(path: str) -> pd.DataFrame | None:
    p = Path(path)
    return pd.read_parquet(p) if p.exists() else None


def rated_set(name: str) -> pd.DataFrame:
    """A built-in rated set's pairs and ratings (assets/ratings/<name>.parquet)."""
    if name not in SETS:
        raise KeyError(f"no rated set {name!r}: {', '.join(SETS)}")
    return _read(str(RATED / f"{name}.parquet"))


def rated_models(name: str) -> list[str]:
    """The models with precomputed results on a rated set."""
    return sorted(p.name.split("__")[0] for p in PRECOMPUTED.glob(f"*__{name}.parquet"))


def run_rows(model: str, name: str) -> pd.DataFrame:
    """A model's precomputed results on a built-in rated set, as shipped (precomputed/ratings/), or an
    empty frame when there are none."""
    run = _read(str(PRECOMPUTED / f"{model}__{name}.parquet")) if name in SETS else None
    return run if run is not None else pd.DataFrame(columns=["method", "template", "pair_id", "score_good", "score_bad"])


def run_methods(model: str, name: str) -> list[str]:
    """The methods of a model's run on a built-in rated set (ensembles left out)."""
    run = run_rows(model, name)
    return sorted(set(run["method"]) - set(ENSEMBLE_METHODS))


def run_pairs(model: str, name: str) -> int:
    """How many pairs a model's run on a built-in rated set holds."""
    run = run_rows(model, name)
    return int(run["pair_id"].nunique()) if len(run) else 0


def pooled_scores(model: str, name: str, metrics) -> list[tuple[str, object, object]]:
    """(metric, good scores, bad scores) for each of ``metrics`` the run holds: every sentence of the rated
    set's pairs pooled, the acceptable ones one class, the unacceptable the other (Hu et al. 2025 §6.3)."""
    run = run_rows(model, name)
    out = []
    for metric in metrics:
        g = run[(run["method"] == metric) & (run["template"].astype(str) == "-")]
        if len(g):
            out.append((metric, g["score_good"].to_numpy(dtype=float), g["score_bad"].to_numpy(dtype=float)))
    return out


def builtin_points(model: str, name: str = "li", meaning_matched_only: bool = False) -> pd.DataFrame:
    """Every (method, template, variant) x pair of a built-in rated set for a model with precomputed
    results: KEY + POINT_COLUMNS (meaning_distance from the model's own hidden states where computed)."""
    pairs = rated_set(name)
    results = _read(str(PRECOMPUTED / f"{model}__{name}.parquet"))
    if results is None:
        raise KeyError(f"no precomputed results of {model} on {name}")
    res = _with_deltas(results)
    human = pairs[["pair_id", "good", "bad", "human_delta", "fc_good", "meaning_matched"]].reset_index(drop=True)
    human["row"] = range(1, len(human) + 1)
    dist = _read(str(PRECOMPUTED / f"{model}__{name}_distance.parquet"))
    human["meaning_distance"] = human["pair_id"].map(dist.set_index("pair_id")["meaning_distance"]) \
        if dist is not None else float("nan")
    if meaning_matched_only:
        human = human[human["meaning_matched"]]
    pts = res[KEY + ["pair_id", "model_delta"]].merge(human, on="pair_id")
    pts["human_source"] = "mean z-scores within participants (Sprouse et al. 2013, Likert)"
    return pts[KEY + POINT_COLUMNS + ["human_source"]]


def builtin_summary(model: str, name: str = "li", meaning_matched_only: bool = False) -> pd.DataFrame:
    """summary() of a built-in rated set's points for a model: the shipped one
    (precomputed/ratings/<model>__<set>_summary.parquet, scripts/ratings_summaries.py) where it was made
    from these very points and this summary's bootstrap; otherwise computed (its intervals take 7 to 12 s
    for 47 judgments x 725 pairs on this 2-core machine) and kept, as the shipped results do not change
    while the app runs."""
    return _builtin_summary(model, name, bool(meaning_matched_only)).copy()


@lru_cache(maxsize=8)  # the embedded models x built-in sets x {all, meaning-matched}
def _builtin_summary(model: str, name: str, meaning_matched_only: bool) -> pd.DataFrame:
    points = builtin_points(model, name, meaning_matched_only)
    shipped = _read(str(summary_path(model, name)))
    if shipped is not None and list(shipped.columns) == SUMMARY_COLUMNS + SUMMARY_STAMP:
        rows = shipped[(shipped["meaning_matched_only"] == meaning_matched_only)
                       & (shipped["points_sha256"] == points_digest(points))]
        if len(rows):
            return rows[SUMMARY_COLUMNS].reset_index(drop=True)
    return summary(points)


SUMMARY_STAMP = ["meaning_matched_only", "points_sha256"]  # a shipped summary's rows: which points they are of


def summary_path(model: str, name: str) -> Path:
    return PRECOMPUTED / f"{model}__{name}_summary.parquet"


def points_digest(points: pd.DataFrame) -> str:
    """sha256 of what summary() reads from the points (each judgment's differences, human majorities and
    source, in order) and of how it resamples (R.SOURCE names the resamples and the seed)."""
    cols = KEY + ["pair_id", "model_delta", "human_delta", "fc_good", "human_source"]
    digest = hashlib.sha256(R.SOURCE.encode())
    digest.update(pd.util.hash_pandas_object(points[cols], index=False).to_numpy().tobytes())
    return digest.hexdigest()


def shipped_summaries(model: str, name: str) -> pd.DataFrame:
    """Both summaries of a built-in set for a model (every pair, and the meaning-matched ones), computed now
    and stamped with their points' digest: what scripts/ratings_summaries.py ships."""
    parts = []
    for matched in (False, True):
        points = builtin_points(model, name, matched)
        part = summary(points)
        part["meaning_matched_only"], part["points_sha256"] = matched, points_digest(points)
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


def distance_bins(points: pd.DataFrame, method: str | None = None, template: str = "-", variant: str = "") -> pd.DataFrame:
    """r by bins of meaning distance for one method's points (Hu et al. 2025 Fig. 3b); the causal headline
    method (LP) by default."""
    method = method or headline("causal")
    g = points[(points["method"] == method) & (points["template"] == template) & (points["variant"] == variant)]
    return R.by_distance(g["model_delta"], g["human_delta"], g["meaning_distance"])


def published() -> list[dict]:
    """What Hu et al. 2025 report for prediction 2, each with its source (accapp/data/ratings_published.json)."""
    return json.loads(PUBLISHED.read_text(encoding="utf-8"))["records"]


def columns_present(frame: pd.DataFrame) -> list[str]:
    """The rating columns a parsed file has (for the summary's words)."""
    return [c for c in RATING_COLUMNS if c in frame.columns]


# ------------------------------------------------------------------------------------ the probe
SOURCES = {"li": "Sprouse, Schütze & Almeida 2013, 7-point Likert ratings z-scored within participants, mean per sentence"}
SHORT = {"li": "LI"}  # a rated set's name in a sentence


@lru_cache(maxsize=8)
def _by_sentences(name: str) -> dict:
    pairs = rated_set(name)
    return {(g, b): i for i, (g, b) in enumerate(zip(pairs["good"], pairs["bad"]))}


def _run_delta(model: str, name: str, pair_id: str, method: str) -> float | None:
    run = _read(str(PRECOMPUTED / f"{model}__{name}.parquet"))
    if run is None:
        return None
    hit = _with_deltas(run[(run["pair_id"] == pair_id) & (run["method"] == method)])
    return float(hit["model_delta"].iloc[0]) if len(hit) else None


def humans_of(model_id: str, good: str, bad: str) -> dict | None:
    """The humans' judgment of a pair that is in a built-in rated set (its sentences exactly as
    there), for the probe: each sentence's mean z-score, their difference, the forced-choice share,
    the set and source; and the model's precomputed run on the set: its LP difference for the pair, or
    a plain note that there is none ("no precomputed LI run for this model"). None for any other pair."""
    for name in SETS:
        i = _by_sentences(name).get((good, bad))
        if i is None:
            continue
        r = rated_set(name).iloc[i]
        fc = float(r["fc_good"]) if pd.notna(r.get("fc_good")) else None
        out = {"set": name, "set_name": SETS[name], "pair_id": str(r["pair_id"]), "source": SOURCES.get(name, SETS[name]),
               "rating_good": float(r["rating_good"]), "rating_bad": float(r["rating_bad"]),
               "human_delta": float(r["human_delta"]), "fc_good": fc}
        lp = headline("causal")
        if model_id in rated_models(name):
            delta = _run_delta(model_id, name, out["pair_id"], lp)
            out["run"] = {"method": lp, "model_delta_nats": delta, "file": f"precomputed/ratings/{model_id}__{name}.parquet"}
            out["run_note"] = (f"this model's precomputed {SHORT.get(name, name)} run: {lp.upper()} difference "
                               f"{delta:+.2f} nats" if delta is not None else
                               f"this model's precomputed {SHORT.get(name, name)} run has no {lp.upper()} score for this pair")
        else:
            out["run"] = None
            out["run_note"] = f"no precomputed {SHORT.get(name, name)} run for this model"
        return out
    return None


def humans_line(h: dict | None) -> str:
    """The humans' judgment of a rated pair in a line (plain text; the page escapes it)."""
    if not h:
        return ""
    fc = f"; {100 * h['fc_good']:.0f} % chose the acceptable one" if h.get("fc_good") is not None else ""
    return (f"Humans ({SHORT.get(h['set'], h['set'])} pair {h['pair_id']}): acceptable z = {h['rating_good']:+.2f}, unacceptable "
            f"z = {h['rating_bad']:+.2f} (difference {h['human_delta']:+.2f}){fc}. Source: {h['source']}. "
            f"{h['run_note'][0].upper() + h['run_note'][1:]}.")
