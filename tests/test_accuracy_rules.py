"""Accuracy the papers' way beside the project's (issue 35, part 2), on the shipped results.

- the strict rule (BLiMP, Ide et al. 2025, Kauf & Ivanova 2023: right when score_good > score_bad)
  reproduces a plain pandas count of score_good > score_bad exactly, per method, template and
  paradigm, for every shipped run (pairs flagged "identical" left out);
- the tie-aware rule reproduces the stored verdicts, and those are the methods' own tie rules
  (accapp.methods.ties) applied to the stored scores: the shipped results were re-ruled;
- Explore's comparison with Ide et al. is computed with their rule, the project's beside it only
  where it differs; `accapp report` carries both. (The 252 published rows: tests/test_published.py.)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from accapp.analysis.accuracy import STRICT, TIES, accuracy_by_paradigm, accuracy_overall, left_out
from accapp.methods.ties import verdicts_of_results
from accapp.schema import ENSEMBLE_METHODS
from accapp.store import DEFAULT_RESULTS_DIR, Store

HUGE = 500_000  # rows
COLUMNS = ["paradigm", "pair_id", "method", "template", "variant", "score_good", "score_bad", "correct", "tie", "flag",
           "good", "bad"]
PLAIN = COLUMNS[:-2]  # without the sentences, where a check needs only scores


@pytest.fixture(scope="module")
def store():
    with Store() as s:
        yield s


def _runs(store) -> list[tuple[str, str]]:
    cat = store.catalog()
    return sorted(set(zip(cat.model, cat.benchmark)))


def _shipped(model: str, bench: str, columns: list[str] = COLUMNS, filters: list | None = None,
             whole: bool = False) -> pd.DataFrame:
    """A shipped run's rows; of a run over HUGE rows (SmolLM2's BLiMP: 3.4 million, every method on every pair)
    every 7th paradigm, unless ``whole``: each check's arithmetic is the same on every paradigm, and reading and
    re-deriving the rest was most of this file's time. The other runs whole."""
    path = DEFAULT_RESULTS_DIR / f"{model}__{bench}.parquet"
    filters = list(filters or [])
    if not whole and pq.ParquetFile(path).metadata.num_rows > HUGE:
        filters.append(("paradigm", "in", _sampled_paradigms(path)))
    return pd.read_parquet(path, columns=columns, filters=filters or None)


def _sampled_paradigms(path: Path) -> list[str]:
    return sorted(pq.read_table(path, columns=["paradigm"]).column("paradigm").unique().to_pylist())[::7]


def test_strict_rule_reproduces_a_plain_count_on_every_shipped_run(store):
    runs = _runs(store)
    assert len(runs) >= 3
    for model, bench in runs:
        df = _shipped(model, bench, PLAIN)
        df = df[(df.flag.fillna("") == "") & ~df.method.isin(list(ENSEMBLE_METHODS))]
        plain = df.assign(right=df.score_good > df.score_bad).groupby(["method", "template", "paradigm"]).right.agg(["sum", "size"])
        paradigms = df.paradigm.unique()  # not set(): a Python loop over millions of Arrow strings
        got = accuracy_by_paradigm(store, model, bench, sorted(df.method.unique()), rule=STRICT)
        assert set(paradigms) <= set(got.paradigm), (model, bench)
        got = got[got.paradigm.isin(paradigms)].set_index(["method", "template", "paradigm"]).accuracy
        assert len(got) == len(plain), (model, bench)
        counts = (got.reindex(plain.index) / 100 * plain["size"]).round(6)
        assert (counts == plain["sum"]).all(), (model, bench)  # the same count of right judgments, exactly
        overall = accuracy_overall(store, model, bench, ["lp"], rule=STRICT).accuracy.iloc[0]
        lp = _shipped(model, bench, PLAIN, [("method", "==", "lp")], whole=True)  # every paradigm's
        lp = lp[lp.flag.fillna("") == ""]
        assert overall == pytest.approx(100 * (lp.score_good > lp.score_bad).groupby(lp.paradigm).mean().mean(), abs=1e-9)


def test_the_project_rule_is_the_stored_verdict_and_each_method_s_own(store):
    for model, bench in _runs(store):
        df = _shipped(model, bench)
        plain = df[~df.method.isin(list(ENSEMBLE_METHODS))]
        ours = np.asarray(verdicts_of_results(plain))
        assert ((ours == "good") == (plain.correct == 1.0).to_numpy()).all(), (model, bench)
        assert ((ours == "tie") == plain.tie.to_numpy()).all(), (model, bench)
        lp = _shipped(model, bench, COLUMNS, [("method", "==", "lp")], whole=True)  # every paradigm's pairs
        for rows in (df, lp):
            assert (rows.flag.fillna("") == np.where(rows.good.str.strip() == rows.bad.str.strip(), "identical", "")).all()
        ties = accuracy_overall(store, model, bench, ["lp"], rule=TIES).accuracy.iloc[0]
        lp = lp[lp.flag.fillna("") == ""]
        assert ties == pytest.approx(100 * lp.groupby("paradigm").correct.mean().mean(), abs=1e-9)


def test_length_figures_and_shuffling_flags_are_plain_counts_on_every_shipped_run(store):
    """The length figures and the word-shuffling flags come from per-run counts (Store.derived); on every
    shipped run they equal plain pandas over its rows, on every template (three methods: a single score,
    two orders, an ensemble's shares)."""
    from scipy import stats

    from accapp.analysis.length import accuracy_by_length, length_bias
    from accapp.analysis.paradigms import word_shuffling, word_shuffling_paradigms

    for model, bench in _runs(store):
        df = _shipped(model, bench, PLAIN + ["len_diff"], [("method", "in", ["lp", "ab_prompting", "ens_mix_p3"])],
                      whole=True)  # the figures are over the whole run
        methods = sorted(df.method.unique())
        rows = df[df.flag.fillna("") == ""]  # the papers' rule, as Ide et al.'s Table 4 and Fig. 2
        rows = rows.assign(correct=np.where(rows.method.isin(list(ENSEMBLE_METHODS)), rows.correct,
                                            (rows.score_good > rows.score_bad).astype(float)),
                           bin=rows.len_diff.clip(-2, 2))
        got = accuracy_by_length(store, model, bench, methods, template=None, clip=2).set_index(["method", "template", "len_diff"])
        plain = rows.groupby(["method", "template", "bin"]).agg(n=("correct", "size"), accuracy=("correct", "mean"))
        plain["pairs"] = rows.drop_duplicates(["method", "template", "paradigm", "pair_id"]).groupby(["method", "template", "bin"]).size()
        assert got.index.equals(plain.index), (model, bench)
        assert (got.n == plain.n).all() and (got.pairs == plain.pairs).all(), (model, bench)
        assert np.allclose(got.accuracy, 100 * plain.accuracy, rtol=0, atol=1e-9), (model, bench)
        bias = length_bias(store, model, bench, methods, template=None).set_index(["method", "template"])
        for (m, t), g in rows.groupby(["method", "template"]):
            x, y = g.correct.to_numpy(float), g.len_diff.to_numpy(float)
            r = stats.pointbiserialr(x, y).statistic if np.ptp(x) > 0 and np.ptp(y) > 0 else np.nan
            assert bias.loc[(m, t), "n"] == len(g)
            assert bias.loc[(m, t), "r"] == pytest.approx(r, abs=1e-12, nan_ok=True), (model, bench, m, t)
        pairs = _shipped(model, bench, ["paradigm", "pair_id", "good", "bad"], [("method", "==", "lp")], whole=True)
        pairs = pairs.drop_duplicates(["paradigm", "pair_id"])[["paradigm", "good", "bad"]]  # every run has LP
        flags = word_shuffling_paradigms(store, model, bench)
        assert flags.equals(word_shuffling(pairs).sort_values("paradigm", ignore_index=True)), (model, bench)


def test_per_pair_values_of_each_template_view_are_plain_means_on_the_shipped_gemma_runs(store):
    """The values the bootstrap intervals resample (intervals.per_pair): each pair's mean correct (the
    papers' rule) over its rows, and in the "mean" view over the numbered templates of the methods that
    have them; a template id keeps that template of those methods; the other methods as they are."""
    from accapp.analysis.intervals import per_pair

    keys = ["method", "template", "paradigm", "pair_id"]
    for bench in ("blimp", "climp"):
        df = _shipped("gemma3-270m", bench)
        df = df[df.flag.fillna("") == ""]
        df = df.assign(correct=np.where(df.method.isin(list(ENSEMBLE_METHODS)), df.correct,
                                        (df.score_good > df.score_bad).astype(float)))
        pairs = df.groupby(keys).correct.mean().reset_index()
        numbered = pairs.template.str.fullmatch(r"[0-9]+")
        templated = set(pairs.method[numbered].unique())
        others = pairs[~pairs.method.isin(templated)]
        views = {None: pairs,
                 "mean": pd.concat([pairs[numbered].groupby(["method", "paradigm", "pair_id"]).correct.mean()
                                    .reset_index().assign(template="mean"), others]),
                 "2": pd.concat([pairs[numbered & (pairs.template == "2")], others])}
        for view, plain in views.items():
            got = per_pair(store, "gemma3-270m", bench, sorted(df.method.unique()), view)
            got = got[got.paradigm.isin(df.paradigm.unique())]  # of a HUGE run _shipped read every 7th paradigm
            got, plain = (f.sort_values(keys, ignore_index=True)[keys + ["correct"]] for f in (got, plain))
            assert got[keys].equals(plain[keys]), (bench, view)
            assert np.allclose(got.correct, plain.correct, rtol=0, atol=1e-12), (bench, view)


def test_identical_blimp_pairs_are_left_out_and_counted(store):
    gone = left_out(store, "smollm2-135m-instruct", "blimp", ["lp", "yes_no_prob_comp"])
    assert dict(zip(gone.method, gone.pairs)) == {"lp": 7, "yes_no_prob_comp": 7}  # BLiMP's 7 identical pairs
    strict = accuracy_overall(store, "smollm2-135m-instruct", "blimp", ["lp"], rule=STRICT)
    assert int(strict.ties.iloc[0]) == 0  # the only exact ties were those 7 pairs


def test_explore_compares_with_ide_by_their_rule(store):
    from accapp.service import explore

    sel = explore.select("blimp", "smollm2-135m-instruct", ["lp", "in_template_lp", "yes_no_prob_comp"], "mean")
    table = explore.overall_table(sel)
    ours = table[table.Model == "smollm2-135m-instruct"].set_index("Method")
    strict = explore.by_template(accuracy_overall, store, "smollm2-135m-instruct", "blimp", ["lp", "in_template_lp",
                                 "yes_no_prob_comp"], "mean", [], rule=STRICT).set_index("method").accuracy.round(1)
    tied = explore.by_template(accuracy_overall, store, "smollm2-135m-instruct", "blimp", ["lp", "in_template_lp",
                               "yes_no_prob_comp"], "mean", [], rule=TIES).set_index("method").accuracy.round(1)
    for method, name in (("lp", "LP"), ("in_template_lp", "In-template LP"), ("yes_no_prob_comp", "Yes/No prob comp")):
        assert ours.loc[name, "Accuracy (%)"] == strict[method]
        beside = ours.loc[name, explore.TIES_COLUMN]
        assert beside == ("" if tied[method] == strict[method] else f"{tied[method]:.1f}")
    published = table[~table.Model.isin(["smollm2-135m-instruct", "humans"])]
    assert len(published) and (published[explore.TIES_COLUMN] == "").all()  # the papers' numbers stand alone


def test_report_gives_both_rules_and_the_pairs_left_out(store):
    from accapp.analysis.report import report_rows

    rows = {(r["method"], r["template"]): r for r in report_rows(store, "smollm2-135m-instruct", "blimp", ["lp", "yes_no_prob_comp"])}
    lp = rows[("lp", "-")]
    assert lp["accuracy"] == pytest.approx(accuracy_overall(store, "smollm2-135m-instruct", "blimp", ["lp"]).accuracy.iloc[0], abs=1e-4)
    assert lp["accuracy_ties_wrong"] == pytest.approx(
        accuracy_overall(store, "smollm2-135m-instruct", "blimp", ["lp"], rule=TIES).accuracy.iloc[0], abs=1e-4)
    assert lp["left_out"] == 7 and lp["accuracy_ties_wrong"] <= lp["accuracy"]
