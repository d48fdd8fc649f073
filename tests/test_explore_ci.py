"""Explore tab (issue 19, item 5 and the Explore part of item 1): bootstrap intervals checked against an
independent scipy.stats.bootstrap over the raw result rows, pair counts, CSV downloads (atomic, bounded
folder), the wrong-pairs filters, the CLiMP human figure, legends below plots, the template labels,
and the link that restores a selection."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from accapp.analysis import intervals as CI
from accapp.methods.ties import tolerance as tie_tolerance
from accapp.service import host as state
from accapp.ui import explore, links, plots

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "precomputed" / "results"
MODEL, BENCH = "smollm2-135m-instruct", "blimp"
SHIPPED = RESULTS / f"{MODEL}__{BENCH}.parquet"
pytestmark = pytest.mark.skipif(not SHIPPED.exists(), reason="needs the shipped SmolLM2 BLiMP results")


@pytest.fixture(scope="module")  # one store for the module: its views are read, never changed, by these tests
def shipped_state():
    st = state.AppState(results_dir=RESULTS)
    state.set_state(st)
    yield st
    state.set_state(None)


def raw_pairs(method: str) -> pd.DataFrame:
    return _raw_pairs(method).copy()


@functools.cache  # read once for the module's tests: the 47 MB file's 3.4 M rows take seconds
def _raw_pairs(method: str) -> pd.DataFrame:
    """Per-pair correctness straight from the Parquet file (pandas, not the store or the analysis code), by
    the papers' rule Explore shows (score_good > score_bad; an ensemble: its share), pairs flagged
    "identical" left out (issue 35)."""
    rows = pd.read_parquet(SHIPPED, columns=["method", "template", "paradigm", "phenomenon", "pair_id", "correct",
                                             "score_good", "score_bad", "flag"])
    rows = rows[(rows.method == method) & (rows.flag.fillna("") == "")]
    if not method.startswith("ens_"):
        rows = rows.assign(correct=(rows.score_good > rows.score_bad).astype(float))
    return rows.groupby(["paradigm", "pair_id"]).agg(phenomenon=("phenomenon", "first"),
                                                    correct=("correct", "mean")).reset_index()


def tolerance(res, n: int) -> float:
    """How far two percentile intervals of 1,000 resamples each may lie apart, in percentage points.

    Each endpoint is a 2.5 % / 97.5 % quantile estimated from B = 1,000 resamples: its Monte Carlo
    standard error is sqrt(q (1 - q) / B) / f(x_q), which for a near-normal bootstrap distribution
    (f(x_q) = φ(1.96) / SE = 0.058 / SE) is 0.085 SE. Two independent runs differ by sqrt(2) x that,
    0.12 SE; 4 of those (0.5 SE) bound the difference except once in ~16,000. Plus one step of the
    accuracy's grid (100 / n points: a mean of n 0/1 values moves in steps of 1 / n).
    """
    return 0.5 * 100 * float(res.standard_error) + 100 / n


@pytest.fixture(scope="module")
def lp_view(shipped_state) -> dict:
    """Explore's views of LP (mean over templates, all phenomena), drawn once for the tests that read them."""
    return explore._render(BENCH, MODEL, ["lp"], "mean", False, "all", "lp")


def trace_interval(fig, name: str, category: str) -> tuple[float, float, float]:
    """(accuracy, low, high) of a bar in the phenomenon figure, read from its error bars."""
    trace = next(t for t in fig.data if t.name == name)
    i = list(trace.y).index(category)
    acc = trace.x[i]
    return acc, acc - trace.error_x.arrayminus[i], acc + trace.error_x.array[i]


def test_phenomenon_interval_matches_scipy_bootstrap(lp_view):
    out = lp_view
    acc, lo, hi = trace_interval(out["phenomenon"], "LP", "island effects")  # the descriptor's words for island_effects
    pairs = raw_pairs("lp")
    x = pairs[pairs.phenomenon == "island_effects"].correct.to_numpy()
    res = stats.bootstrap((x,), np.mean, n_resamples=1000, confidence_level=0.95, method="percentile",
                          rng=np.random.default_rng(12345))
    tol = tolerance(res, len(x))
    assert acc == pytest.approx(100 * x.mean(), abs=1e-9)
    assert lo == pytest.approx(100 * res.confidence_interval.low, abs=tol)
    assert hi == pytest.approx(100 * res.confidence_interval.high, abs=tol)
    hover = next(t for t in out["phenomenon"].data if t.name == "LP").hovertext
    assert any("95 % CI" in h and f"{len(x):,} pairs" in h for h in hover)  # the pairs behind the point


def test_whole_benchmark_is_said_and_narrows_the_interval(shipped_state):
    """Explore says "every pair", not a sample, and the interval over all 1,000 pairs of each paradigm is
    narrower than the one the same code gives on the first 100 of each (the former shipped sample's size)."""
    status = explore.status_html(BENCH, MODEL)
    assert "67,000 pairs" in status and "every pair of the benchmark" in status and "seeded sample" not in status
    pairs = raw_pairs("lp")
    whole = [g.correct.to_numpy() for _, g in pairs.groupby("paradigm")]
    sample = [x[:100] for x in whole]
    lo_w, hi_w = CI.interval_of_mean_of_means(whole)
    lo_s, hi_s = CI.interval_of_mean_of_means(sample)
    # Widths scale as 1/sqrt(pairs): 10x the pairs, about 1/3.2 the width; 1/2 leaves room for chance.
    assert (hi_w - lo_w) < 0.5 * (hi_s - lo_s)
    assert lo_w <= 100 * np.mean([x.mean() for x in whole]) <= hi_w


def test_overall_interval_matches_stratified_scipy_bootstrap(lp_view):
    overall = lp_view["overall"]
    row = overall[(overall.Model == MODEL) & (overall.Method == "LP")].iloc[0]
    lo, hi = (float(v) for v in row[explore.CI_COLUMN].strip("[]").split(","))
    pairs = raw_pairs("lp")
    groups = tuple(g.correct.to_numpy() for _, g in pairs.groupby("paradigm"))

    def mean_of_means(*samples, axis=-1):  # each paradigm resampled on its own, as the tab does
        return np.mean([s.mean(axis=axis) for s in samples], axis=0)

    res = stats.bootstrap(groups, mean_of_means, n_resamples=1000, method="percentile", vectorized=True,
                          rng=np.random.default_rng(7))
    tol = tolerance(res, len(pairs)) + 0.1  # + the table's rounding to 0.1 point
    assert row["Pairs"] == len(pairs) == 67000 - 7  # the whole of BLiMP (issue 32) but its 7 identical pairs
    assert lo == pytest.approx(100 * res.confidence_interval.low, abs=tol)
    assert hi == pytest.approx(100 * res.confidence_interval.high, abs=tol)
    assert row["Accuracy (%)"] == pytest.approx(100 * np.mean([g.mean() for g in groups]), abs=0.05)


def test_resampling_is_the_index_bootstrap_in_distribution():
    """The multinomial shortcut and plain index resampling give the same interval (both 20,000 resamples)."""
    x = np.random.default_rng(1).choice([0.0, 0.5, 1.0], size=300, p=[0.2, 0.1, 0.7])
    rng = np.random.default_rng(2)
    fast = CI.percentile_interval(CI.resampled_means(x, 20_000, rng))
    slow = CI.percentile_interval(x[rng.integers(0, len(x), size=(20_000, len(x)))].mean(axis=1))
    assert fast == pytest.approx(slow, abs=0.006)  # 0.6 points: 20,000-resample Monte Carlo error, ~4 SE
    assert np.isnan(CI.interval_of_mean([1.0])[0])  # one pair: no interval


def test_every_accuracy_view_has_intervals_and_pairs(shipped_state):
    out = explore.render_page(BENCH, MODEL, ["lp", "in_template_lp"], "mean", False, "all", "lp", [], "", "all",
                              "order")
    length, para, ens, shuffle, attract = (out[k] for k in ("length", "paradigm", "ensembles_table", "shuffle",
                                                            "attractors"))
    for fig in (length, shuffle, attract):
        assert any(t.error_y and t.error_y.array for t in fig.data)
    assert any(t.error_x and t.error_x.array for t in para.data)
    assert any("pairs" in h for t in length.data for h in t.hovertext)
    assert any(c.endswith(explore.CI_COLUMN) for c in ens.columns)
    assert any(c.endswith("pairs") for c in ens.columns)


def test_csv_downloads_written_atomically_and_bounded(shipped_state, tmp_path, monkeypatch):
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path))
    out = explore.render_page(BENCH, MODEL, ["lp"], "mean", False, "all", "lp", [], "", "all", "order")
    paths = {k: out[f"csv:{k}"]["value"] for k in explore.DOWNLOADS}
    assert all(paths.values()), paths  # a CSV for every table and every figure's data
    phen = pd.read_csv(paths["accuracy-by-phenomenon"])
    assert {"accuracy", "ci_low", "ci_high", "pairs", "source"} <= set(phen.columns)
    assert pd.read_csv(paths["overall-accuracy"])[explore.CI_COLUMN].notna().any()
    folder = explore.csv_dir()
    assert folder.parent == tmp_path and not list(folder.glob("*.part"))  # no half-written file left
    for i in range(explore.CSV_KEEP + 15):
        explore.write_csv(pd.DataFrame({"i": [i]}), "bulk")
    assert len(list(folder.glob("*.csv"))) == explore.CSV_KEEP  # the bound
    again = explore.write_csv(pd.DataFrame({"i": [1]}), "same")
    assert explore.write_csv(pd.DataFrame({"i": [1]}), "same") == again  # content-named: written once
    assert explore.write_csv(pd.DataFrame(), "empty") is None


def test_wrong_pairs_sort_and_filter(shipped_state):
    from accapp.service import explore as view_model

    df = view_model.wrong_pairs(view_model.select(BENCH, MODEL, ["lp"], "mean"), "lp")
    assert len(df) > explore.WRONG_LIMIT  # wrong: the bad sentence wins, or a tie
    slack = [tie_tolerance("lp", g, b) + 1e-4 for g, b in zip(df["Score: good"], df["Score: bad"])]  # + the 4-decimal rounding
    assert (df["Margin (good − bad)"] <= slack).all()
    worst = explore.filter_wrong(df, sort="margin")
    assert worst["Margin (good − bad)"].is_monotonic_increasing
    assert explore.filter_wrong(df, sort="-margin")["Margin (good − bad)"].is_monotonic_decreasing
    isl = explore.filter_wrong(df, phenomenon="island_effects")
    assert len(isl) and set(isl.Phenomenon) == {"island_effects"}
    word = df["Acceptable sentence"].iloc[0].split()[1]
    hits = explore.filter_wrong(df, text=word.upper())
    assert len(hits) and all(word.casefold() in (a + b + p).casefold() for a, b, p in
                             zip(hits["Acceptable sentence"], hits["Unacceptable sentence"], hits.Paradigm))
    out = explore._render(BENCH, MODEL, ["lp"], "mean", False, "all", "lp", None, "", "island_effects", "margin")
    assert len(out["wrong"]) == min(len(isl), explore.WRONG_LIMIT) and "of" in out["wrong_note"]
    # the list's own controls redo the list alone, with the same views and CSV as a whole render
    light = explore.render_wrong(BENCH, MODEL, ["lp"], "mean", False, "all", "lp", None, "", "island_effects", "margin")
    assert set(light) == {*explore.WRONG_VIEWS, "csv:wrong-pairs"} and set(explore.WRONG_VIEWS) <= set(explore.VIEWS)
    assert light["wrong"].equals(out["wrong"]) and light["wrong_note"] == out["wrong_note"]
    assert light["csv:wrong-pairs"]["value"] == out["files"]["wrong-pairs"]  # content-named: the same file
    none = explore.render_wrong(BENCH, MODEL, ["lp"], "mean", False, "all", "lp", None, "no such words", "all", "order")
    assert none["wrong"].empty and none["csv:wrong-pairs"]["interactive"] is False and "0 of" in none["wrong_note"]


def test_climp_human_baseline_published_and_labelled(shipped_state):
    from accapp.analysis import published_human
    from accapp.service import explore as view_model

    hum = published_human(shipped_state.store(), "climp", "overall")
    assert hum.accuracy.tolist() == [95.8] and "Xiang et al. 2021" in hum.source.iloc[0]
    overall = view_model.overall_table(view_model.select("climp", None, ["lp"], "mean"))
    row = overall[overall.Model == "humans"].iloc[0]
    assert row["Accuracy (%)"] == 95.8 and "Xiang et al. 2021" in row.Source and "agreement" in row.Method
    assert "95.8 %" in explore.human_note_html("climp") and explore.human_note_html("blimp") == ""


def test_template_default_is_the_mean_and_best_says_upper_bound():
    assert explore.DEFAULT_TEMPLATE == "mean" and explore.TEMPLATE_CHOICES[0] == ("mean over templates", "mean")
    label = dict((v, k) for k, v in explore.TEMPLATE_CHOICES)["best"]
    assert "same pairs" in label and "upper bound" in label


def test_legends_sit_below_the_plot_never_over_the_title():
    df = pd.DataFrame({"phenomenon": ["a", "b"] * 3, "accuracy": [60, 70, 65, 75, 80, 85],
                       "method": ["lp"] * 2 + ["mean_lp"] * 2 + ["pen_lp"] * 2, "template": "-", "model": "m",
                       "pairs": 100, "ci_low": [55, 65, 60, 70, 75, 80], "ci_high": [65, 75, 70, 80, 85, 90]})
    fig = plots.phenomenon_figure(df, None, "A title")
    assert fig.layout.legend.y < 0 and fig.layout.legend.yanchor == "top"  # under the x axis
    assert fig.layout.margin.b >= plots.AXIS_TITLE_PX + 3 * plots.LEGEND_ROW_PX
    assert list(fig.data[0].error_x.array) == [5, 5] and list(fig.data[0].error_x.arrayminus) == [5, 5]


def test_explore_link_round_trip(shipped_state):
    q = links.explore_query({"bench": "blimp", "model": MODEL, "methods": ["lp", "in_template_lp"],
                             "template": "best", "phenomenon": "island_effects"})
    params = links.parse_query("?" + q)
    sel = explore.selection_from_query(params)
    assert sel["model"] == MODEL and sel["methods"] == ["lp", "in_template_lp"]
    assert sel["template"] == "best" and sel["phenomenon"] == "island_effects" and sel["bench"] == "blimp"
    odd = explore.selection_from_query({"tab": "explore", "bench": "nope", "template": "x", "methods": "zzz"})
    assert odd["bench"] == "blimp" and odd["template"] == "mean" and odd["methods"]  # defaults, not errors
    assert explore.selection_from_query({"tab": "probe"}) is None and explore.selection_from_query({}) is None


def test_csv_dir_is_under_gradio_temp(monkeypatch, tmp_path):
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path))
    assert explore.csv_dir() == tmp_path / explore.CSV_DIR_NAME
    monkeypatch.delenv("GRADIO_TEMP_DIR")
    assert explore.csv_dir().parent == Path(tempfile.gettempdir())
