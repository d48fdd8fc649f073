"""Human ratings beside the model (accapp/analysis/ratings.py): the correlations and their intervals
equal scipy's on the same numbers; z-scoring within participants on a hand-made table; the human
majority; r by bins of meaning distance."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from accapp.analysis import ratings as R
from accapp.errors import UserError


def _numbers(n=40, seed=1):
    rng = np.random.default_rng(seed)
    human = rng.normal(size=n)
    model = 0.6 * human + rng.normal(scale=0.8, size=n)
    return model, human


def test_correlation_equals_scipy():
    model, human = _numbers()
    r = R.correlation(model, human)
    assert r["pairs"] == 40
    assert r["pearson_r"] == pytest.approx(stats.pearsonr(model, human).statistic, abs=1e-12)
    assert r["pearson_p"] == pytest.approx(stats.pearsonr(model, human).pvalue, rel=1e-9)
    assert r["spearman_r"] == pytest.approx(stats.spearmanr(model, human).statistic, abs=1e-12)
    assert r["spearman_p"] == pytest.approx(stats.spearmanr(model, human).pvalue, rel=1e-9)


@pytest.mark.parametrize("which,fn", [("pearson", lambda x, y: stats.pearsonr(x, y).statistic),
                                      ("spearman", lambda x, y: stats.spearmanr(x, y).statistic)])
def test_interval_equals_scipy_bootstrap(which, fn):
    """The vectorised statistics resample exactly as scipy.stats.bootstrap does with scipy's own
    (unvectorised) pearsonr / spearmanr, from the same seed."""
    model, human = _numbers()
    r = R.correlation(model, human, n_resamples=500, seed=3)
    ref = stats.bootstrap((model, human), fn, paired=True, vectorized=False, n_resamples=500, method="percentile",
                          random_state=np.random.default_rng(3)).confidence_interval
    assert r[f"{which}_low"] == pytest.approx(ref.low, abs=1e-10)
    assert r[f"{which}_high"] == pytest.approx(ref.high, abs=1e-10)
    assert r[f"{which}_low"] < r[f"{which}_r"] < r[f"{which}_high"]


def test_correlation_drops_missing_and_refuses_too_few():
    model, human = _numbers(10)
    model[0] = np.nan
    human[1] = np.inf
    r = R.correlation(model, human, n_resamples=50)
    assert r["pairs"] == 8
    assert r["pearson_r"] == pytest.approx(stats.pearsonr(model[2:], human[2:]).statistic)
    assert np.isnan(R.correlation([1.0, 2.0], [1.0, 3.0])["pearson_r"])
    assert np.isnan(R.correlation([1.0, 1.0, 1.0], [1.0, 2.0, 3.0])["pearson_r"])  # the model never varies


def test_zscore_within_participants_by_hand():
    # p1 rates 1, 4, 7: mean 4, sd 3 -> -1, 0, 1; p2 rates 2, 2, 5: mean 3, sd sqrt(3); p3 never varies.
    t = pd.DataFrame({"participant": ["p1", "p1", "p1", "p2", "p2", "p2", "p3", "p3"],
                      "rating": [1, 4, 7, 2, 2, 5, 6, 6]})
    z = R.zscore_within(t)
    s3 = np.sqrt(3)
    assert z.iloc[:6].tolist() == pytest.approx([-1, 0, 1, -1 / s3, -1 / s3, 2 / s3])
    assert z.iloc[6:].isna().all()


def test_human_pairs_from_participants_by_hand():
    """Two participants rate two pairs' four sentences (7-point Likert). By hand:
    p1: A=7, a=1, B=5, b=3 -> mean 4, sd sqrt(20/3): A=+1.1619, a=-1.1619, B=+0.3873, b=-0.3873.
    p2: A=6, a=2, B=6, b=6 -> mean 5, sd 2: A=+0.5, a=-1.5, B=+0.5, b=+0.5.
    Pair 1 delta = mean(1.1619, 0.5) - mean(-1.1619, -1.5) = 2.1619; pair 2 = 0.4436 - 0.0564 = 0.3873."""
    rows = [("p1", "A", "a", 7, 1), ("p1", "B", "b", 5, 3), ("p2", "A", "a", 6, 2), ("p2", "B", "b", 6, 6)]
    t = pd.DataFrame(rows, columns=["participant", "good", "bad", "rating_good", "rating_bad"])
    h = R.human_pairs(t)
    assert h[["good", "bad"]].values.tolist() == [["A", "a"], ["B", "b"]]
    sd1 = np.sqrt(20 / 3)
    za = [(7 - 4) / sd1, 0.5]
    zb_bad = [(3 - 4) / sd1, 0.5]
    assert h["rating_good"].iloc[0] == pytest.approx(np.mean(za))
    assert h["human_delta"].iloc[0] == pytest.approx(np.mean(za) - np.mean([(1 - 4) / sd1, -1.5]))
    assert h["human_delta"].iloc[1] == pytest.approx(np.mean([(5 - 4) / sd1, 0.5]) - np.mean(zb_bad))
    assert h["human_delta"].tolist() == pytest.approx([2.16190, 0.38730], abs=1e-4)
    assert h["participants"].tolist() == [2, 2]
    assert h["human_source"].iloc[0] == "ratings z-scored within participants"


def test_human_pairs_other_inputs():
    t = pd.DataFrame({"good": ["A", "B", "A"], "bad": ["a", "b", "a"], "rating_good": [6, 5, 4], "rating_bad": [2, 5, 2]})
    h = R.human_pairs(t)
    assert h["human_delta"].tolist() == [3.0, 0.0]  # the repeated pair averaged: (4 + 2) / 2
    d = R.human_pairs(pd.DataFrame({"good": ["A"], "bad": ["a"], "human_delta": [1.5], "fc_good": [0.75]}))
    assert d["human_delta"].tolist() == [1.5] and d["fc_good"].tolist() == [0.75]
    f = R.human_pairs(pd.DataFrame({"good": ["A", "B"], "bad": ["a", "b"], "fc_good": [0.9, 0.2]}))
    assert f["human_delta"].tolist() == pytest.approx([0.4, -0.3])
    with pytest.raises(UserError, match="share"):
        R.human_pairs(pd.DataFrame({"good": ["A"], "bad": ["a"], "fc_good": [75]}))
    with pytest.raises(UserError, match="No human ratings"):
        R.human_pairs(pd.DataFrame({"good": ["A"], "bad": ["a"]}))


def test_majority_accuracy():
    model = [1.0, -2.0, 0.5, 0.0, 3.0]
    human = [1.0, -1.0, -0.5, 2.0, 0.0]  # humans prefer bad in pairs 2 and 3; pair 5 is split
    a = R.majority_accuracy(model, human)
    assert a["accuracy_labels"] == pytest.approx(60.0)  # pairs 1, 3, 5 prefer good; the tie (pair 4) is wrong
    assert a["human_pairs"] == 4 and a["human_ties"] == 1
    assert a["accuracy_humans"] == pytest.approx(50.0)  # agrees on pairs 1 and 2, not on 3 (model good) or 4 (tie)
    assert a["humans_agree_with_labels"] == pytest.approx(50.0)
    assert a["human_majority_from"] == "ratings"
    # a forced choice decides the majority where there is one: 0.4 < 0.5 -> humans chose bad in pair 1
    b = R.majority_accuracy(model, human, fc_good=[0.4, 0.1, 0.3, 0.9, 0.5])
    assert b["human_pairs"] == 4 and b["accuracy_humans"] == pytest.approx(25.0)  # only pair 2
    assert b["human_majority_from"] == "forced choice"


def test_by_distance_bins():
    rng = np.random.default_rng(0)
    n = 200
    d = np.linspace(0, 1, n)
    human = rng.normal(size=n)
    model = np.where(d < 0.5, human + rng.normal(scale=0.1, size=n), rng.normal(size=n))  # aligned only when near
    t = R.by_distance(model, human, d, bins=4, n_resamples=100)
    assert t["bin"].tolist() == [1, 2, 3, 4] and t["pairs"].tolist() == [50, 50, 50, 50]
    first = slice(0, 50)
    assert t["pearson_r"].iloc[0] == pytest.approx(stats.pearsonr(model[first], human[first]).statistic)
    assert t["pearson_r"].iloc[0] > 0.9 and abs(t["pearson_r"].iloc[3]) < 0.4
    assert (t["distance_low"].diff().dropna() > 0).all()


def test_cosine_distance():
    a = np.array([[1.0, 0.0], [1.0, 1.0]])
    b = np.array([[0.0, 2.0], [2.0, 2.0]])
    assert R.cosine_distance(a, b).tolist() == pytest.approx([1.0, 0.0])


# ------------------------------------------------------------------------------------ a scored file
def _scored_file(tiny_llama, text: bytes, name: str = "rated.csv"):
    from accapp.benchmarks import parse_pairs
    from accapp.engine import Engine
    from accapp.scoring.causal import CausalScorer
    from accapp.service import score_file as sf

    pairs = parse_pairs(text, name, bad_lines="row")
    engine = Engine(CausalScorer(tiny_llama), "en")
    scored = sf.finish(sf.scored_steps(pairs, "smollm2-135m-instruct", ["lp", "mean_lp"], run=sf.direct(engine)))
    return pairs, scored, sf.long_frame(scored)


def test_a_file_with_participants_gets_r_beside_scipy(tiny_llama):
    """A rating study's file (one row per participant and pair): the ratings pass through parse_pairs,
    the scored rows are joined to the humans' z-scored differences, and r is scipy's on those numbers."""
    from accapp.service import ratings as svc

    sentences = [("The dogs bark.", "The dogs barks."), ("She has eaten.", "She have eaten."),
                 ("They were here.", "They was here."), ("It rains today.", "It rain today."),
                 ("We like tea.", "We likes tea.")]
    rows = ["participant,good,bad,rating_good,rating_bad"]
    for p, shift in (("p1", 0), ("p2", 1)):
        for k, (g, b) in enumerate(sentences):
            rows.append(f"{p},{g},{b},{7 - shift - (k % 2)},{1 + k}")
    pairs, scored, long = _scored_file(tiny_llama, ("\n".join(rows) + "\n").encode())
    assert {"participant", "rating_good", "rating_bad"} <= set(pairs.columns)
    assert "rating_good" in scored.wide().columns  # the ratings stay in the result CSV
    summary, points = svc.file_summary(long, scored.base)
    assert summary["method"].tolist() == ["lp", "mean_lp"] and (summary["pairs"] == 5).all()
    human = R.human_pairs(pairs)
    lp = points[points["method"] == "lp"].merge(human[["good", "bad"]], on=["good", "bad"])
    by_row = {(r.pair.good, r.pair.bad): r.scores for r in scored.results.values()}
    model = [next(s.score_good - s.score_bad for s in by_row[(g, b)] if s.method == "lp") for g, b in zip(lp.good, lp.bad)]
    assert lp["model_delta"].tolist() == pytest.approx(model)
    ref = stats.pearsonr(lp["model_delta"], human.set_index(["good", "bad"]).loc[list(zip(lp.good, lp.bad)), "human_delta"])
    assert summary.loc[summary.method == "lp", "pearson_r"].item() == pytest.approx(ref.statistic)
    assert summary["human_source"].iloc[0] == "ratings z-scored within participants"


def test_a_file_without_ratings_has_no_summary(tiny_llama):
    from accapp.service import ratings as svc

    pairs, scored, long = _scored_file(tiny_llama, b"good,bad\nThe dogs bark.,The dogs barks.\n")
    assert not svc.has_ratings(pairs) and svc.file_summary(long, scored.base) is None


def test_builtin_li_set_shipped():
    """The shipped LI set: 725 pairs, z-scored ratings, a forced-choice share, and each embedded model's
    precomputed differences, whose r with the humans is positive with an interval above zero."""
    from accapp.service import ratings as svc

    li = svc.rated_set("li")
    assert len(li) == 725 and li["pair_id"].is_unique
    assert li["human_delta"].tolist() == pytest.approx((li["rating_good"] - li["rating_bad"]).tolist())
    assert li["fc_good"].between(0, 1).all() and li["rating_good"].abs().max() < 3
    assert set(svc.rated_models("li")) >= {"smollm2-135m-instruct", "gemma3-270m"}
    points = svc.builtin_points("smollm2-135m-instruct", "li")
    lp = points[points["method"] == "lp"]
    assert len(lp) == 725
    r = R.correlation(lp["model_delta"], lp["human_delta"], n_resamples=200)
    assert r["pearson_r"] == pytest.approx(stats.pearsonr(lp["model_delta"], lp["human_delta"]).statistic)
    assert 0 < r["pearson_low"] < r["pearson_r"] < r["pearson_high"]


def test_bench_file_with_ratings_reports_r(tiny_llama, tmp_path, capsys):
    """`bench FILE` on a file with ratings: r per method, printed and written beside the run, equal
    to scipy's on the run's own scores and the file's ratings."""
    import argparse

    from accapp.cli.bench import _ratings_report
    from accapp.engine import Engine
    from accapp.runner.runner import run_benchmark
    from accapp.scoring.causal import CausalScorer

    li = pd.read_parquet(Path(__file__).resolve().parents[1] / "assets" / "ratings" / "li.parquet").head(12)
    path = tmp_path / "rated.csv"
    li[["pair_id", "good", "bad", "rating_good", "rating_bad"]].to_csv(path, index=False)
    engine = Engine(CausalScorer(tiny_llama), "en")
    summary = run_benchmark(engine, str(path), ["lp"], tmp_path / "runs", progress=False)
    _ratings_report(argparse.Namespace(benchmark=str(path), out=str(tmp_path / "runs")), summary["model"])
    out = capsys.readouterr().out
    assert "lp: Pearson r = " in out and "12 pairs" in out
    written = pd.read_csv(next((tmp_path / "runs").glob("*/rated/ratings.csv")))
    units = pd.concat(pd.read_parquet(u) for u in (tmp_path / "runs").glob("*/rated/units/*/*/*.parquet"))
    both = units.merge(li, on=["good", "bad"])
    ref = stats.pearsonr(both["score_good"] - both["score_bad"], both["rating_good"] - both["rating_bad"]).statistic
    assert written.loc[0, "pearson_r"] == pytest.approx(ref)


def test_explore_view_of_the_builtin_set():
    """Explore's "Human ratings" view for each embedded model: r per method beside the paper's findings
    (labelled with their source), LP's scatter and pairs, r by meaning-distance bins where computed."""
    from accapp.service import ratings as svc
    from accapp.ui import ratings_view as v

    for model in ("smollm2-135m-instruct", "gemma3-270m"):
        html, scatter, bins, table, choices = v.explore_view("li", model, None, False)
        assert "Hu et al. 2025, §5.2, Fig. 3a" in html and "Pearson r [95 % CI]" in html and model in html
        points = scatter.data[0]  # a plotly scatter: each point a pair, its customdata what a click sends
        assert choices["value"] == "lp|-|" and len(points.x) == 725 and len(table) == v.MAX_TABLE_ROWS
        li = svc.rated_set("li").set_index("pair_id")
        pid, good, bad = points.customdata[0]
        assert (li.loc[pid, "good"], li.loc[pid, "bad"]) == (good, bad) and points.x[0] == pytest.approx(li.loc[pid, "human_delta"])
        if (svc.PRECOMPUTED / f"{model}__li_distance.parquet").exists():  # r by bins: a plotly figure, its CI
            line = bins.data[0]
            assert len(line.x) == 10 and line.error_y.array is not None and "meaning distance" in bins.layout.xaxis.title.text
        # the axes span the data and say their units (LP's difference in bits, as the probe shows it)
        xs, ys = points.x, points.y
        (x0, x1), (y0, y1) = scatter.layout.xaxis.range, scatter.layout.yaxis.range
        assert x0 <= min(xs) and x1 >= max(xs) and y0 <= min(ys) and y1 >= max(ys)
        assert x1 - x0 < 1.2 * (max(xs) - min(xs)) and y1 - y0 < 1.2 * (max(ys) - min(ys))
        assert "(bits," in scatter.layout.yaxis.title.text and "z-score" in scatter.layout.xaxis.title.text
        lp = svc.builtin_points(model, "li")
        lp = lp[(lp.method == "lp") & (lp.pair_id == pid)].model_delta.iloc[0]
        assert points.y[0] == pytest.approx(lp / math.log(2))  # nats to bits
    html, scatter, *_ = v.explore_view("li", "smollm2-135m-instruct", "mean_lp|-|", True)
    assert "meaning-matched" in html and len(scatter.data[0].x) == 541


def test_shipped_summaries_are_of_the_shipped_points_and_equal_a_fresh_summary():
    """precomputed/ratings/<model>__li_summary.parquet (scripts/ratings_summaries.py): every judgment, both
    ways (every pair, meaning-matched), stamped with the digest of today's points (a stale file would
    make the app bootstrap for its first visitor: rerun the script); three judgments recomputed here equal
    the shipped rows within a relative 1e-10 (a correlation's last bits follow the CPU's BLAS kernels: an
    AMD EPYC differs from the machine that wrote them by up to 2e-15 in r and 1e-13 in its p); what
    builtin_summary returns is the shipped rows."""
    from accapp.service import ratings as svc

    for model in svc.rated_models("li"):
        shipped = pd.read_parquet(svc.summary_path(model, "li"))
        assert list(shipped.columns) == svc.SUMMARY_COLUMNS + svc.SUMMARY_STAMP
        for matched in (False, True):
            points = svc.builtin_points(model, "li", matched)
            rows = shipped[shipped["meaning_matched_only"] == matched]
            assert (rows["points_sha256"] == svc.points_digest(points)).all(), f"{model}: rerun scripts/ratings_summaries.py"
            assert len(rows) == points.groupby(svc.KEY).ngroups == 47
            some = points[points["method"].isin(["lp", "slor", "meta_question_simple"])]
            fresh = svc.summary(some)
            kept = rows.merge(fresh[svc.KEY], on=svc.KEY)[svc.SUMMARY_COLUMNS]
            assert len(fresh) >= 3
            pd.testing.assert_frame_equal(kept.reset_index(drop=True), fresh.reset_index(drop=True), check_exact=False, rtol=1e-10, atol=0)
            pd.testing.assert_frame_equal(svc.builtin_summary(model, "li", matched), rows[svc.SUMMARY_COLUMNS].reset_index(drop=True))


def test_points_digest_sees_a_changed_difference():
    from accapp.service import ratings as svc

    points = svc.builtin_points("smollm2-135m-instruct", "li")
    moved = points.copy()
    moved.loc[moved.index[100], "model_delta"] = np.nextafter(moved.loc[moved.index[100], "model_delta"], np.inf)
    assert svc.points_digest(moved) != svc.points_digest(points) == svc.points_digest(points.copy())
    swapped = points.copy()
    swapped.loc[swapped.index[7], "fc_good"] = 1 - swapped.loc[swapped.index[7], "fc_good"]
    assert svc.points_digest(swapped) != svc.points_digest(points)


def test_api_ratings_summary_beside_score_pairs_frame(tiny_llama):
    """accapp.ratings_summary on a frame in score_pairs' layout (pair, good, bad, method, template,
    variant, score_good, score_bad), from the engine's own scores."""
    import accapp
    from accapp.engine import Engine
    from accapp.scoring.api import Pair
    from accapp.scoring.causal import CausalScorer

    li = pd.read_parquet(Path(__file__).resolve().parents[1] / "assets" / "ratings" / "li.parquet").head(8)
    results = Engine(CausalScorer(tiny_llama), "en").score_pairs([Pair(g, b) for g, b in zip(li.good, li.bad)], ["lp"])
    frame = pd.DataFrame([{"pair": i, "good": r.pair.good, "bad": r.pair.bad, **s.as_dict()}
                          for i, r in enumerate(results) for s in r.scores])
    out = accapp.ratings_summary(frame, li[["good", "bad", "human_delta", "fc_good"]], n_resamples=100)
    assert out["method"].tolist() == ["lp"] and out["pairs"].tolist() == [8]
    ref = stats.pearsonr(frame["score_good"] - frame["score_bad"], li["human_delta"]).statistic
    assert out["pearson_r"].item() == pytest.approx(ref)
    assert out["human_majority_from"].item() == "forced choice"


def test_the_probe_label_carries_the_humans_judgment():
    """A rated pair opened in the probe names the humans' z-scores and forced choice beside it."""
    from accapp.ui import ratings_view as v

    li = pd.read_parquet(Path(__file__).resolve().parents[1] / "assets" / "ratings" / "li.parquet").set_index("pair_id")
    r = li.loc["32.1.martin.20a.g.01"]
    text = v.humans_text("li", pd.Series({"Pair": "32.1.martin.20a.g.01"}))
    assert f"acceptable z = {r['rating_good']:+.2f}" in text and f"unacceptable z = {r['rating_bad']:+.2f}" in text
    assert f"{100 * r['fc_good']:.0f} % chose the acceptable one" in text
    assert v.humans_text("rated.csv", pd.Series({"Pair": "3", "Human difference": -0.5})) == " · humans: difference -0.50"


def test_a_rated_pair_reaches_the_probe_with_the_humans():
    """Explore's pairs table -> the probe: a built-in rated pair's meta carries the humans' line, and the
    probe's label (ui.common.pair_label, what run_probe redraws) shows it."""
    import gradio as gr

    from accapp.ui import ratings_view as v
    from accapp.ui.common import pair_label

    table = pd.DataFrame({"Pair": ["32.1.martin.20a.g.01"], "Acceptable sentence": ["It seems to him that Kim solved the problem."],
                          "Unacceptable sentence": ["He seems to that Kim solved the problem."], "Human difference": [1.85]})
    good, bad, meta, label, _ = v.open_pair(table, "li", "gemma3-270m", gr.SelectData(None, {"index": [0, 1], "value": ""}))
    assert good == table.iloc[0, 1] and meta["pair_id"] == "32.1.martin.20a.g.01" and meta["paradigm"] == "32.1.martin.20a"
    assert "acceptable z = +0.82" in meta["humans"] and "acceptable z = +0.82" in pair_label(meta) == label


def test_a_clicked_point_opens_its_pair():
    """The scatter's click (click_hook's event data {pair, good, bad}) -> the probe's pair: for a built-in
    set the sentences come from the set (the page's strings are not trusted), for a file from its points;
    a click without a usable pair changes nothing."""
    import gradio as gr

    from accapp.ui import ratings_view as v

    def click(data):
        return gr.EventData(None, data)

    good, bad, meta, label, _ = v.open_row(v.point_row(None, "li", click({"pair": "32.1.martin.20a.g.01", "good": "x", "bad": "y"})),
                                           "li", "gemma3-270m")
    assert (good, bad) == ("It seems to him that Kim solved the problem.", "He seems to that Kim solved the problem.")
    assert meta["pair_id"] == "32.1.martin.20a.g.01" and "acceptable z = +0.82" in label
    frame = pd.DataFrame({"pair": ["3"], "good": ["A b c."], "bad": ["A c b."], "human difference": [0.5]})
    good, bad, meta, label, _ = v.open_row(v.point_row(frame, "your file", click({"pair": "3", "good": "?", "bad": "?"})),
                                           "your file", "")
    assert (good, bad) == ("A b c.", "A c b.") and "your file · pair 3 · humans: difference +0.50" in label
    # the probe that runs next keeps the file's pair line: its meta is the sentences' (service.probe.pair_meta),
    # and run_probe redraws the line from it (was: no meta, the line cleared by the probe's first stage)
    from accapp.service.probe import pair_meta
    from accapp.ui.common import pair_label
    assert pair_meta(good, bad, meta) is meta and pair_label(meta) == label
    assert pair_meta("A b c d.", bad, meta) is None  # other sentences typed: the line goes
    for data in ({}, {"pair": 3}, {"pair": "no.such.pair"}, {"pair": "x" * 300}):
        assert v.point_row(frame, "li", click(data)) is None
        assert v.open_row(None, "li", "") == [gr.update()] * 5


def test_the_probe_names_the_humans_and_the_run():
    """A pair of the LI set typed into the probe: the humans' z-scores (from assets/ratings/li.parquet)
    and this model's precomputed LP difference (score_good - score_bad of precomputed/ratings/); a model
    without a run on LI gets "no precomputed LI run for this model"; any other pair gets nothing."""
    from accapp.service import ratings as svc

    li = svc.rated_set("li")
    row = li.iloc[100]
    for model in svc.rated_models("li"):
        h = svc.humans_of(model, row["good"], row["bad"])
        assert (h["pair_id"], h["rating_good"], h["rating_bad"]) == (row["pair_id"], row["rating_good"], row["rating_bad"])
        run = pd.read_parquet(svc.PRECOMPUTED / f"{model}__li.parquet")
        lp = run[(run["pair_id"] == row["pair_id"]) & (run["method"] == "lp")].iloc[0]
        assert h["run"]["model_delta_nats"] == pytest.approx(lp["score_good"] - lp["score_bad"])
        line, delta = svc.humans_line(h), lp["score_good"] - lp["score_bad"]
        assert f"acceptable z = {row['rating_good']:+.2f}" in line and f"LP difference {delta:+.2f} nats" in line
    assert set(svc.rated_models("li")) == {"smollm2-135m-instruct", "gemma3-270m"}
    none = svc.humans_of("bert-base-uncased", row["good"], row["bad"])
    assert none["run"] is None and "No precomputed LI run for this model." in svc.humans_line(none)
    assert svc.humans_of("gemma3-270m", row["bad"], row["good"]) is None and svc.humans_line(None) == ""


PROMPTING_ON_ALL = ("in_template_comparative_lp", "ab_prompting", "yes_no_prob_comp", "meta_question_simple",
                    "meta_instruct", "meta_question_complex")


def test_every_method_on_every_pair_is_recorded():
    """Every method on LI ran on all 725 pairs, the in-template LP family in two runs (the first pair of each
    paradigm, then the other 628: docs/ratings.md): the manifest says so, for each model, and matches the
    shipped rows (every template, A/B in both answer orders, Hu & Levy's two prompt kinds, no row twice)."""
    import json

    from accapp.service import ratings as svc

    for model in ("smollm2-135m-instruct", "gemma3-270m"):
        run = pd.read_parquet(svc.PRECOMPUTED / f"{model}__li.parquet")
        manifest = json.loads((svc.PRECOMPUTED / f"{model}__li.manifest.json").read_text(encoding="utf-8"))
        per = run.groupby("method")["pair_id"].nunique().to_dict()
        assert per == manifest["pairs_by_method"]
        assert set(per.values()) == {725} and len(per) == 15
        for m in ("in_template_lp", "in_template_mean_lp", "in_template_pen_lp"):
            assert manifest["sample_by_method"][m].startswith("all 725 pairs")
            assert sorted(run.loc[run["method"] == m, "template"].unique()) == ["1", "2", "3", "4", "5"]
            assert (run[run["method"] == m].groupby("template")["pair_id"].nunique() == 725).all()
        assert [r["pairs"] for r in manifest["runs"] if "in_template_lp" in r["methods"]] == [97, 628]
        for m in PROMPTING_ON_ALL:
            assert manifest["sample_by_method"][m] == "all 725 pairs", m
        variants = run[run["method"].isin(PROMPTING_ON_ALL)].groupby("method").agg(
            templates=("template", lambda t: sorted(set(t))), variants=("variant", lambda v: sorted(set(v))))
        assert variants.loc["ab_prompting", "variants"] == ["good=A", "good=B"]
        assert variants.loc["yes_no_prob_comp", "templates"] == ["1", "2", "3", "4", "5"]
        assert variants.loc["meta_instruct", "templates"] == ["comparison", "judgment"]
        assert not run.duplicated(["pair_id", "method", "template", "variant"]).any()


@pytest.mark.slow
def test_shipped_in_template_scores_are_the_engines(smollm):
    """Two of the shipped in-template LP rows of SmolLM2 on LI, scored again by the engine: the same
    numbers (all five templates); and a pair's A/B, Yes/No and MetaQuestionSimple rows."""
    from accapp.engine import Engine
    from accapp.scoring.api import Pair
    from accapp.scoring.causal import CausalScorer
    from accapp.service import ratings as svc

    run = pd.read_parquet(svc.PRECOMPUTED / "smollm2-135m-instruct__li.parquet")
    rows = run[run["method"] == "in_template_lp"]
    ids = ["32.1.martin.20a.g.01", "32.1.martin.20a.g.02"]  # one of each run: a paradigm's first pair, and one of the rest
    pairs = [Pair(*rows.loc[rows["pair_id"] == i, ["good", "bad"]].iloc[0]) for i in ids]
    results = Engine(CausalScorer(smollm), "en").score_pairs(pairs, ["in_template_lp"])
    for pid, result in zip(ids, results):
        for s in result.scores:
            shipped = rows[(rows["pair_id"] == pid) & (rows["template"] == str(s.template))].iloc[0]
            assert float(s.score_good) == pytest.approx(shipped["score_good"], abs=1e-3)
            assert float(s.score_bad) == pytest.approx(shipped["score_bad"], abs=1e-3)
    # a pair's prompting methods (every template and order)
    prompted = run[run["method"].isin(["ab_prompting", "yes_no_prob_comp", "meta_question_simple"])]
    pid = ids[1]
    mine = prompted[prompted["pair_id"] == pid]
    (result,) = Engine(CausalScorer(smollm), "en").score_pairs([Pair(*mine[["good", "bad"]].iloc[0])],
                                                              ["ab_prompting", "yes_no_prob_comp", "meta_question_simple"])
    assert len(result.scores) == len(mine) == 5 * 2 + 5 + 2
    for s in result.scores:
        shipped = mine[(mine["method"] == s.method) & (mine["template"] == str(s.template))
                       & (mine["variant"] == (s.variant or ""))].iloc[0]
        assert float(s.score_good) == pytest.approx(shipped["score_good"], abs=1e-3), (s.method, s.template, s.variant)
        assert float(s.score_bad) == pytest.approx(shipped["score_bad"], abs=1e-3), (s.method, s.template, s.variant)


def test_a_file_pair_in_the_probe_says_there_is_no_benchmark_result():
    """A pair of the user's file opened in the probe (its meta: no phenomenon, no paradigm): the benchmark
    box names the file and pair and says there is nothing to compare, against the real precomputed store."""
    from accapp.service.probe import method_context, run_context
    from accapp.store import Store
    from accapp.ui.probe_view import context_html

    good, bad = "It seems to him that Kim solved the problem.", "He seems to that Kim solved the problem."
    meta = {"benchmark": "your file", "paradigm": "", "phenomenon": "", "pair_id": "7", "good": good, "bad": bad,
            "humans": "humans: difference +1.85"}
    with Store() as store:
        assert run_context(store, "gemma3-270m", meta, good, bad).meta is meta
        ctx = method_context(store, "gemma3-270m", "lp", meta, good, bad)
    assert ctx.meta is meta and not ctx.has_run
    html = context_html(ctx, "Gemma 3 270M", "LP")
    assert "This pair is your file · pair 7. It is not in BLiMP or CLiMP" in html and "phenomenon" not in html
