"""Score a file, issue 19 item 6: the long layout, the tokens CSV, the metadata sidecar and the
summary by phenomenon, on the real SmolLM2 (the service with the engine in hand, the tab's own
path through the app state, and the API endpoints through gradio_client)."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import gradio as gr
import numpy as np
import pandas as pd
import pytest

from accapp.errors import UserError
from accapp.schema import ENSEMBLE_METHODS
from accapp.service import host as state
from accapp.service import score_file as svc
from accapp.ui import score_file
from tests.ui_server import CHROMIUM

MODEL = "smollm2-135m-instruct"
METHODS = ["lp", "mean_lp", "in_template_lp", "ab_prompting", "ens_mix_p3"]
ROWS = [  # (phenomenon, good, bad): three phenomena, a failing row, one pair with a tie (identical)
    ("agreement", "These casseroles disgust Kayla.", "These casseroles disgusts Kayla."),
    ("agreement", "The dogs bark.", "The dogs barks."),
    ("wh", "Who should Derek hug after shocking Richard?", "Who should Derek hug Richard after shocking?"),
    ("agreement", "", "An empty good sentence."),
    ("npi", "Nobody has ever left.", "Somebody has ever left."),
    ("wh", "What did you see?", "What did you see it?"),
    ("npi", "The cat sat.", "The cat sat."),
]
pytestmark = pytest.mark.slow  # every test scores on the real SmolLM2 (the smollm fixture, or the app it starts)


@pytest.fixture(scope="module")
def engine(smollm):
    from accapp.engine import build_engine

    return build_engine(smollm.spec.id, lm=smollm)


@pytest.fixture(scope="module")
def upload(tmp_path_factory):
    path = tmp_path_factory.mktemp("upload") / "my pairs.csv"
    pd.DataFrame(ROWS, columns=["phenomenon", "good", "bad"]).to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def app(engine, tmp_path_factory):
    st = state.AppState(results_dir=tmp_path_factory.mktemp("results"))
    st.register_engine(MODEL, engine)
    state.set_state(st)
    yield st
    state.set_state(None)


@pytest.fixture(scope="module")
def written(app, upload):
    """The tab's path: long layout, tokens, a phenomenon column."""
    return score_file.score_upload_all(str(upload), MODEL, METHODS, layout="long", tokens=True)


def _read(path) -> pd.DataFrame:
    return pd.read_csv(path, keep_default_na=False, na_values=[""])


def test_long_layout_equals_wide_and_score_pairs(written, engine, monkeypatch):
    import accapp.public

    long, wide = written.frame, written.wide
    assert list(long.columns[-16:]) == svc.FILE_LONG_COLUMNS + ["model", "error"]
    assert svc.FILE_LONG_COLUMNS == svc.LONG_COLUMNS[:6] + ["score_good", "score_bad", "score_unit"] + svc.LONG_COLUMNS[8:]
    scored = long[long["error"] == ""]
    failed = long[long["error"] != ""]
    assert list(failed["row"]) == [4] and failed["method"].isna().all()  # a failed row keeps one line
    for r in scored.itertuples():
        w = wide.loc[r.row - 1]
        for field in ("score_good", "score_bad", "verdict"):  # a score's column names its unit, as the long row does
            unit = r.score_unit if field != "verdict" else ""
            assert w[svc.column_name(r.method, str(r.template), str(r.variant), field, unit)] == getattr(r, field)
        assert r.score_unit == {"ab_prompting": "nats", "mean_lp": "nats/token", "ens_mix_p3": "share of draws"}.get(
            r.method, "nats")
    n_judgments = sum(c.endswith(": verdict") for c in wide.columns)
    assert len(scored) == n_judgments * 6 and len(long) == len(scored) + 1
    # accapp.score_pairs on the same engine: the same judgments, in the same order, the same values
    monkeypatch.setattr(accapp.public, "_engine", lambda *a, **options: engine)
    ok = [(g, b) for _, g, b in ROWS if g]
    api = accapp.score_pairs(ok, MODEL, METHODS, progress=False)
    mine = scored.reset_index(drop=True)
    assert len(api) == len(mine)
    for col in ("method", "template", "variant", "verdict", "len_good", "len_bad", "good", "bad", "flag"):
        assert [str(v) for v in api[col]] == [str(v) for v in mine[col]], col
    pred = lambda s: s.fillna("").astype(str).replace("None", "")  # noqa: E731
    assert list(pred(api["prediction"])) == list(pred(mine["prediction"]))
    for col in ("score_good", "score_bad"):  # other batches: float32 sums may differ in the last digits
        np.testing.assert_allclose(api[col].to_numpy(float), mine[col].to_numpy(float), rtol=1e-5, atol=1e-4)
    # and the CSV holds the frame
    csv = _read(written.results)
    assert len(csv) == len(long) and list(csv.columns) == list(long.columns)
    np.testing.assert_allclose(csv["score_good"].to_numpy(float), long["score_good"].to_numpy(float), rtol=1e-9)


def test_tokens_csv_bits_nats_and_sums_equal_lp(written):
    tokens = _read(next(p for p in written.files if p.endswith("-tokens.csv")))
    assert list(tokens.columns) == svc.TOKEN_COLUMNS
    np.testing.assert_allclose(tokens["surprisal_bits"], tokens["surprisal_nats"] / math.log(2), rtol=1e-12)
    np.testing.assert_allclose(tokens["surprisal_nats"], -tokens["logprob_nats"], rtol=1e-12)
    lp = written.frame[(written.frame["method"] == "lp")].set_index("row")
    toks = tokens[tokens["unit"] == "token"]
    words = tokens[tokens["unit"] == "word"]
    assert set(toks["row"]) == set(lp.index) == {1, 2, 3, 5, 6, 7}  # the failed row has no tokens
    for (row, side), group in toks.groupby(["row", "side"]):
        # the sentence's LP from the same run: the sum of its token log-probs
        assert group["logprob_nats"].sum() == pytest.approx(lp.loc[row, f"score_{side}"], abs=1e-4)
        assert list(group["index"]) == list(range(len(group)))
        assert len(group) == lp.loc[row, f"len_{side}"]
        # every token lies in one word, and the words' plain sums add up to the same LP
        w = words[(words["row"] == row) & (words["side"] == side)]
        assert w["logprob_sum_nats"].sum() == pytest.approx(group["logprob_nats"].sum(), abs=1e-4)
        assert group["word_index"].notna().all() and set(group["word_index"]) <= set(w["index"])
        text = written.frame[(written.frame["row"] == row)][side].iloc[0]
        assert [text[a:b] for a, b in zip(w["start"], w["end"])] == list(w["text"].astype(str))
    barks = words[(words["row"] == 2) & (words["side"] == "bad") & (words["text"] == "barks")]
    assert len(barks) == 1 and bool(barks["correction_applies"].iloc[0])  # the probe's word, corrected


def test_sidecar_has_the_provenance_and_the_input(written, upload, smollm):
    from accapp.models.loading import weight_files

    meta_path = Path(next(p for p in written.files if p.endswith(".meta.json")))
    assert meta_path.name == Path(written.results).name.removesuffix(".csv") + ".meta.json"
    assert meta_path.parent == Path(written.results).parent and written.files[0] == written.results
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    prov = meta["provenance"]
    assert prov["model_id"] == smollm.spec.id == MODEL and prov["model_name"] == smollm.spec.name
    files = weight_files(smollm)
    assert files and [w["file"] for w in prov["weights"]] == [p.name for p in files]
    for w, p in zip(prov["weights"], files):
        assert w["sha256"] == hashlib.sha256(p.read_bytes()).hexdigest()
    for key in ("app_version", "torch_version", "transformers_version", "dtype", "quantization", "device",
                "convention", "date_utc"):
        assert key in prov
    assert meta["input"]["file"] == "my pairs.csv"
    assert meta["input"]["sha256"] == hashlib.sha256(upload.read_bytes()).hexdigest()
    assert meta["rows"] == meta["input"]["rows"] == len(ROWS) and meta["rows_failed"] == 1
    assert meta["methods"] == METHODS and meta["format"] == "long" and meta["tokens"] is True
    assert set(meta["files"]) == {"results", "tokens", "phenomena", "metadata"}
    assert sorted(meta["files"].values()) == sorted(Path(p).name for p in written.files)
    # every file in place, none left half-written under a temporary name
    assert sorted(p.name for p in meta_path.parent.iterdir()) == sorted(Path(p).name for p in written.files)


def test_phenomenon_summary_equals_an_independent_groupby(written):
    got = _read(next(p for p in written.files if p.endswith("-phenomena.csv")))
    long = _read(written.results)
    ok = long[long["error"].isna() | (long["error"] == "")].copy()
    # the identical pair (row 7) is flagged, and left out of the accuracy
    assert set(ok.loc[ok["row"] == 7, "flag"]) == {"identical"} and ok.loc[ok["row"] != 7, "flag"].isna().all()
    flagged = ok[ok["flag"] == "identical"]
    ok = ok[ok["flag"] != "identical"]
    ens = ok["method"].isin(list(ENSEMBLE_METHODS))
    # the papers' rule: correct iff score_good > score_bad; the project's: the verdict is "good" (a
    # tie within the method's tolerance is wrong); an ensemble: its share under both
    ok["correct"] = np.where(ens, ok["score_good"], (ok["score_good"] > ok["score_bad"]).astype(float))
    ok["ours"] = np.where(ens, ok["score_good"], (ok["verdict"] == "good").astype(float))
    ok["tie"] = (ok["verdict"] == "tie") & ~ens
    want = ok.groupby(["phenomenon", "method"]).agg(pairs=("row", "nunique"), ties=("tie", "sum"),
                                                     accuracy=("correct", "mean"), ours=("ours", "mean")).reset_index()
    want["accuracy"] *= 100
    want["ours"] *= 100
    merged = want.merge(got, on=["phenomenon", "method"], suffixes=("_want", ""))
    assert len(merged) == len(want) == len(got) == 3 * len(METHODS)
    # rounded to what the judgments support: whole percents under 10 judgments, else 0.1 % (issue 34, item 9)
    digits = np.where(merged["judgments"] < 10, 0, 1)
    for col, want_col in (("accuracy_percent", "accuracy"), ("accuracy_ties_wrong_percent", "ours")):
        np.testing.assert_allclose(merged[col], [round(a, d) for a, d in zip(merged[want_col], digits)], atol=1e-9)
        assert (np.abs(merged[col] - merged[want_col]) <= np.where(digits == 0, 0.5, 0.05) + 1e-9).all()
    assert (merged["pairs"] == merged["pairs_want"]).all() and (merged["ties"] == merged["ties_want"]).all()
    assert dict(zip(got["phenomenon"], got["pairs"])) == {"agreement": 2, "wh": 2, "npi": 1}
    # the identical pair: counted as left out, for every method, in its phenomenon only
    left = got.set_index(["phenomenon", "method"])["left_out"]
    assert all(left[("npi", m)] == 1 for m in METHODS) and left.sum() == len(METHODS)
    assert set(flagged["method"]) == set(METHODS)
    lp_npi = got[(got["phenomenon"] == "npi") & (got["method"] == "lp")].iloc[0]
    # the tab's table: one row per phenomenon, one column per method (ties-wrong columns only where they differ)
    table = score_file.phenomenon_table(written.summary)
    assert list(table["Phenomenon"]) == ["agreement", "wh", "npi"] and list(table["Pairs"]) == [2, 2, 1]
    assert table.columns[2] == "LP (%)" and table.loc[2, "LP (%)"] == lp_npi["accuracy_percent"]
    extra = [c for c in table.columns if c.endswith("ties wrong (%)")]
    assert table.shape[1] == 2 + len(METHODS) + len(extra)
    # and the sidecar and the page's summary count it
    assert written.meta["rows_identical"] == 1 and written.meta["rows_repeated"] == 0
    assert any("identical" in line and "row 7" in line for line in svc.flag_notes(written.wide))


def test_wide_default_and_a_file_without_phenomena(app, tmp_path):
    path = tmp_path / "plain.jsonl"
    pd.DataFrame([r[1:] for r in ROWS[:2]], columns=["good", "bad"]).to_json(path, orient="records", lines=True)
    out, df = score_file.score_upload(str(path), MODEL, ["lp"])  # the old call: the wide CSV
    assert Path(out).name == f"plain-scored-{MODEL}.csv" and "lp: verdict" in df.columns and len(df) == 2
    files = sorted(p.name for p in Path(out).parent.iterdir())
    assert files == [f"plain-scored-{MODEL}.csv", f"plain-scored-{MODEL}.meta.json"]  # no summary, no tokens
    meta = json.loads((Path(out).parent / files[1]).read_text())
    assert meta["format"] == "wide" and meta["tokens"] is False and meta["input"]["has_phenomenon"] is False


def test_malformed_uploads_give_a_message_and_no_file(app, tmp_path):
    results = app.tmpdir() / "results"
    before = {p for p in results.rglob("*")} if results.exists() else set()
    nocol = tmp_path / "p.csv"
    nocol.write_text("first,second\na,b\n")
    with pytest.raises(UserError, match="good-sentence column"):
        score_file.score_upload_all(str(nocol), MODEL, ["lp"], layout="long", tokens=True)
    binary = tmp_path / "p.jsonl"
    binary.write_bytes(b'{"good": "\xc3\x28", "bad": "x"}\n')
    with pytest.raises(gr.Error, match="not UTF-8"):
        list(score_file.run_score(str(binary), MODEL, ["lp"], "long", True))
    with pytest.raises(gr.Error, match="layout must be one of wide, long"):
        list(score_file.run_score(str(nocol), MODEL, ["lp"], "tall", False))
    after = {p for p in results.rglob("*")} if results.exists() else set()
    assert after == before


@pytest.mark.process
def test_api_endpoints_layouts_and_every_file(app_server, upload):
    """/score_file as before (three inputs: the wide CSV), with layout='long', and /score_file_all,
    on the session's shared server (tests/conftest.py)."""
    from gradio_client import handle_file

    from tests.ui_server import api_client

    client = api_client(app_server.url)
    assert {"/score_file", "/score_file_all"} <= set(client.view_api(print_info=False, return_format="dict")
                                                     ["named_endpoints"])
    wide = _read(client.predict(handle_file(str(upload)), MODEL, ["lp"], api_name="/score_file"))
    assert len(wide) == len(ROWS) and "lp: verdict" in wide.columns
    long = _read(client.predict(handle_file(str(upload)), MODEL, ["lp", "mean_lp"], "long",
                                api_name="/score_file"))
    assert len(long) == 2 * 6 + 1 and {"method", "score_good", "prediction"} <= set(long.columns)
    files = client.predict(handle_file(str(upload)), MODEL, ["lp"], "wide", True, api_name="/score_file_all")
    names = [Path(p).name for p in files]
    assert names[0].endswith(f"-scored-{MODEL}.csv") and any(n.endswith("-tokens.csv") for n in names)
    assert any(n.endswith("-phenomena.csv") for n in names) and any(n.endswith(".meta.json") for n in names)
    meta = json.loads(Path(next(p for p in files if p.endswith(".meta.json"))).read_text())
    assert meta["provenance"]["model_id"] == MODEL and meta["rows_failed"] == 1


@pytest.mark.process
@pytest.mark.browser
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs /usr/bin/chromium (scripts/setup-browser.sh)")
def test_the_tab_long_layout_tokens_and_phenomena_in_a_browser(app_server, browser, tmp_path_factory, upload):
    """In headless Chromium: the long layout and the tokens box, the downloads (result CSV first,
    then tokens, phenomena, sidecar) and the table by phenomenon."""
    from urllib.parse import unquote

    from tests.test_app_browser import table_rows
    from tests.test_app_browser import upload as attach
    from tests.ui_server import screenshot

    context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(240_000)
    page.goto(app_server.url)  # the session's shared server (tests/conftest.py)
    page.get_by_role("tab", name="Score a file").click()
    page.wait_for_selector("#file-run", state="visible")
    attach(page, "#file-upload", upload)
    for method in ("in_template_lp", "yes_no_prob_comp", "pen_lp"):  # LP and MeanLP: quick
        page.click(f"#file-methods input[name={method}]")
    page.wait_for_function("() => document.querySelectorAll('#file-methods input:checked').length === 2")
    page.click("#file-layout input[value=long]")
    page.click("#file-tokens input[type=checkbox]")
    page.click("#file-run")
    page.wait_for_function("() => document.querySelectorAll('#file-result a').length >= 4")
    page.wait_for_function("() => (document.querySelector('#file-summary')?.innerText || '').includes('Scored ')")
    assert "Scored 6 of 7 rows" in page.inner_text("#file-summary")
    hrefs = page.eval_on_selector_all("#file-result a", "as => as.map(a => a.getAttribute('href'))")
    names = [unquote(h).rsplit("/", 1)[-1] for h in hrefs]
    assert names[0].endswith("-long.csv") and names[1].endswith("-tokens.csv")
    assert names[2].endswith("-phenomena.csv") and names[3].endswith(".meta.json")
    page.wait_for_function("() => document.querySelectorAll('#file-phenomena [role=gridcell]').length > 0")
    rows = table_rows(page, "file-phenomena")
    assert [r[0] for r in rows] == ["agreement", "wh", "npi"] and [r[1] for r in rows] == ["2", "2", "1"]  # npi's identical one: left out
    out = tmp_path_factory.mktemp("downloads")
    with page.expect_download() as info:
        page.locator("#file-result a").nth(3).click()
    info.value.save_as(out / "meta.json")
    meta = json.loads((out / "meta.json").read_text())
    assert meta["format"] == "long" and meta["provenance"]["model_id"] == MODEL
    assert meta["input"]["sha256"] == hashlib.sha256(upload.read_bytes()).hexdigest()
    screenshot(page, "score-file-formats.png")
    context.close()
