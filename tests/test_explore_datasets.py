"""Explore over every dataset of Hu et al. 2025: the picker from the descriptors (and the rated sets), the
views that say plainly when a dataset lacks what they need, runs read from what the results folder holds,
separation AUC with its interval for a run of pairs, of single sentences and of a rated set, the view
across datasets beside the paper's stated numbers, and CSVs that write counts whole and numbers as shown."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from accapp.service import explore as svc
from accapp.service import host as state
from accapp.service import ratings as rated
from accapp.ui import explore, explore_plots

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "precomputed" / "results"
GEMMA_GYM = RESULTS / "gemma3-270m__syntaxgym.parquet"
pytestmark = pytest.mark.skipif(not GEMMA_GYM.exists(), reason="needs the shipped Gemma SyntaxGym results")


@pytest.fixture(scope="module")
def toy_results(tmp_path_factory):
    """A results folder of two runs: Gemma's shipped SyntaxGym, and the same rows under SCaMP-P's id (a run
    the code has never been told of), so that what Explore shows is what the folder holds."""
    folder = tmp_path_factory.mktemp("results")
    rows = pd.read_parquet(GEMMA_GYM)
    rows.to_parquet(folder / GEMMA_GYM.name)
    rows.assign(benchmark="scamp_plausible").to_parquet(folder / "gemma3-270m__scamp_plausible.parquet")
    st = state.AppState(results_dir=folder)
    state.set_state(st)
    yield folder
    state.set_state(None)


def test_picker_lists_every_descriptor_then_the_rated_sets():
    ids = json.loads((ROOT / "accapp/data/benchmarks.json").read_text(encoding="utf-8"))
    assert svc.BENCHMARKS == tuple(k for k in ids if not k.startswith("_")) + tuple(rated.SETS)
    assert {"blimp", "climp", "li", "zhoblimp", "sling", "syntaxgym", "cola", "scamp_plausible",
            "scamp_implausible"} <= set(svc.BENCHMARKS)
    assert svc.label_of("li") == "LI" and svc.label_of("scamp_plausible") == "SCaMP-P"
    assert [svc.kind_of(b) for b in ("blimp", "cola", "li")] == ["pairs", "sentences", "rated"]


def test_runs_are_read_from_the_folder_and_missing_ones_said_plainly(toy_results):
    sel = svc.select("scamp_plausible", None, None)
    assert sel.model == "gemma3-270m" and sel.kind == "pairs" and not svc.missing(sel)
    nothing = svc.select("scamp_implausible", "gemma3-270m", None)
    assert nothing.model is None and svc.missing(nothing) == (
        f"No results shipped for SCaMP-I yet with {svc.model_label('gemma3-270m')} or any other model.")
    for bench in ("scamp_implausible", "cola"):
        out = explore.render_page(bench, "gemma3-270m", None, "mean", False, "all", None, [], "", "all", "order")
        why = svc.missing(svc.select(bench, "gemma3-270m", None))
        for view in ("paradigm", "length"):
            assert out[view].layout.annotations[0].text == why, view  # the figure says why, in words
        assert why in out["wrong_note"] and "Traceback" not in json.dumps(out["status"])
    cola = svc.missing(svc.select("cola", None, None))
    assert cola.startswith("CoLA has single sentences, not pairs: see Separation")
    li = svc.select("li", "gemma3-270m", None)
    assert li.picked == "gemma3-270m" and "rated by humans" in svc.missing(li)
    assert svc.other_run_line(li).startswith(f"{svc.model_label('gemma3-270m')} on LI: 725 pairs with human ratings.")


def test_separation_of_a_run_of_pairs_and_of_a_rated_set(toy_results):
    sel = svc.select("scamp_plausible", "gemma3-270m", None)
    df = svc.separation_frame(sel)
    rows = pd.read_parquet(GEMMA_GYM)
    lp = rows[rows.method == "lp"]
    ref = roc_auc_score(np.r_[np.ones(len(lp)), np.zeros(len(lp))], np.r_[lp.score_good, lp.score_bad])
    got = df.set_index("metric").loc["lp"]
    assert got.auc == pytest.approx(ref) and got.strings == 2 * len(lp)
    assert got.auc_ci_low < got.auc < got.auc_ci_high and got.auc_ci_high - got.auc_ci_low < 0.1
    assert list(df.metric[:3]) == ["lp", "mean_lp", "pen_lp"]
    li = svc.separation_frame(svc.select("li", "gemma3-270m", None)).set_index("metric")
    run = rated.run_rows("gemma3-270m", "li")
    run = run[run.method == "slor"]
    assert li.loc["slor"].auc == pytest.approx(roc_auc_score(
        np.r_[np.ones(len(run)), np.zeros(len(run))], np.r_[run.score_good, run.score_bad]))
    assert li.loc["slor"].strings == 2 * 725


def test_across_datasets_beside_the_papers_numbers(toy_results, tmp_path, monkeypatch):
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path))
    choices, html, fig, table, csv = explore.cross_section(None, "gemma3-270m")
    # what the folders hold, no more; the SCaMP-P run (SyntaxGym's rows) holds 23 of its 67 paradigms, and says so
    assert set(table.Dataset) == {"SyntaxGym", "SCaMP-P (23 of 67 paradigms)", "LI"}
    gym = table[(table.Dataset == "SyntaxGym") & (table.Measure == "LP")].iloc[0]
    assert gym.Pairs == 1018 and gym["Hu et al. 2025 (Table 1a)"] == "1,018 items; predictions 1, 3"
    # the part-way run's count on a tick line of its own, with room for it above the legend
    assert "SCaMP-P<br>(23 of 67 paradigms)" in fig.data[0].x
    whole = explore_plots.cross_dataset_figure(
        svc.cross_dataset_frame("gemma3-270m").query("benchmark != 'scamp_plausible'"), explore._paper_refs())
    assert fig.layout.margin.b - whole.layout.margin.b == 40
    # the lines' words wrapped for a laptop's narrower plot (an annotation does not wrap by itself)
    lines = fig.layout.annotations[-1].text.split("<br>")
    assert all(len(line) <= 104 for line in lines) and any(line.startswith("    ") for line in lines)
    words = " ".join(line.strip() for line in lines)
    assert "Hu et al. 2025, §6.4, Fig. 4b: at most 0.75" in words and "Hu et al. 2025, §6.4, Fig. 8: about 80 %" in words
    assert "do not exceed 0.75" in html and "No run of this model shipped yet on" in html
    written = pd.read_csv(csv["value"], encoding="utf-8-sig")
    assert written.pairs.dtype == np.int64 and written.strings.dtype == np.int64  # counts whole
    assert (written.auc == written.auc.round(3)).all() and (written.accuracy == written.accuracy.round(1)).all()


def test_csv_frame_writes_counts_whole_and_rounds_as_shown():
    df = pd.DataFrame({"pairs": [2000.0, None], "Pairs": [66993, None], "accuracy": [79.71104689931096, 1.0],
                       "ci_low": [78.92859524338742, 0.5], "auc": [0.55328612, 0.6], "template": ["1", "mean"],
                       "Score: good": [-12.345678, 1.0], "Mixtral (Ide et al. 2025)": [85.4123, 1.0]})
    text = svc.csv_frame(df).to_csv(index=False)
    assert text.splitlines()[1] == "2000,66993,79.7,78.9,0.553,1,-12.3457,85.4"
    assert text.splitlines()[2] == ",,1.0,0.5,0.6,mean,1.0,1.0"


def test_the_ratings_view_follows_explores_model():
    from accapp.ui import ratings_view

    for model in rated.rated_models("li"):
        out = ratings_view.follow_explore("blimp", model, "li", None, None, False)
        html, model_update = out[0], out[-1]
        assert model_update["value"] == model and f"li: {model}" not in html and model in html
        assert "BLiMP has no human ratings of its sentences one by one" in html
    out = ratings_view.follow_explore("li", "no-such-model", "li", None, None, False)
    assert "no-such-model has no run on LI" in out[0]
