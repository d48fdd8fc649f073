"""Sharing a probe (issue 19, items 1-2), in headless Chromium against the real app on loopback:
a probe run by hand (two models side by side, nats) is reopened from its link in a FRESH browser
context and gives the same verdicts and the same figure; Copy link puts that link on the
clipboard and says so; a hostile link gets a message; the JSON export downloads with the loaded
model's provenance (SHA-256 equal to hashlib's of its weight file) and the CSV with it; the
figure's modebar offers a PNG named after the probe. Screenshots in test-artifacts/."""

from __future__ import annotations

import hashlib
import importlib.metadata
import io
import json
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlparse

import pytest

from tests.test_app_browser import textbox, wait_done
from tests.ui_server import CHROMIUM, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.process,
              pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs /usr/bin/chromium (scripts/setup-browser.sh)")]

TIMEOUT_MS = 300_000
PAIR = ("The key to the cabinets is on the table.", "The key to the cabinets are on the table.")
FIGURE_JS = """sel => { const p = document.querySelector(sel + ' .js-plotly-plot');
  if (!p) return null;
  const ticks = [...(p.layout.xaxis.ticktext || []), "|", ...((p.layout.xaxis2 || {}).ticktext || [])];
  return p && {ticks, traces: p.data.map(t => ({name: t.name, x: t.x, y: t.y})),
               png: (p._context.toImageButtonOptions || {}).filename}; }"""


@pytest.fixture(scope="module")
def server(app_server):
    return app_server  # the session's shared server (tests/conftest.py)


def fresh_page(browser, url):
    """A new browser context (no cookies, no storage, no Gradio session): what a colleague gets."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = ctx.new_page()
    pg.set_default_timeout(TIMEOUT_MS)
    pg.goto(url)
    pg.wait_for_selector("#probe-run")
    return ctx, pg


def pick(page, elem_id, label_part):
    page.click(f"#{elem_id} input")
    page.locator("ul[role=listbox] li", has_text=label_part).first.click()


def vote_rows(page, elem_id):
    return page.eval_on_selector_all(f"#{elem_id} table.acc-votes tbody tr",
                                     "trs => trs.map(tr => Array.from(tr.querySelectorAll('td')).map(td => td.innerText.trim()))")


def shown(page) -> dict:
    """What a reader compares: both models' verdict text and votes, and both surprisal figures."""
    page.wait_for_selector("#probe-surprisal-2 .js-plotly-plot")
    return {"summary": page.inner_text("#probe-summary"), "summary2": page.inner_text("#probe-summary-2"),
            "votes": vote_rows(page, "probe-votes"), "votes2": vote_rows(page, "probe-votes-2"),
            "figure": page.evaluate(FIGURE_JS, "#probe-surprisal"), "figure2": page.evaluate(FIGURE_JS, "#probe-surprisal-2")}


@pytest.fixture(scope="module")
def original(browser, server):
    """The probe run by hand: two models, the fast methods, surprisal in nats. Yields (page, link, shown)."""
    ctx, page = fresh_page(browser, server.url)
    ctx.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url.rstrip("/"))
    pick(page, "probe-model2", "Gemma 3 270M")
    page.get_by_text("Choose the judgment methods").click()
    page.get_by_role("button", name="Only LP, MeanLP, PenLP (fast)").click()
    page.wait_for_function("() => document.querySelectorAll('#probe-methods input:checked').length === 3")
    page.locator("#probe-unit label", has_text="nats").click()
    textbox(page, "probe-good").fill(PAIR[0])
    textbox(page, "probe-bad").fill(PAIR[1])
    page.click("#probe-run")
    wait_done(page)
    page.wait_for_function("() => !document.querySelector('#probe-status .acc-pending') && "
                           "document.querySelector('#probe-summary-2 .acc-verdict')")
    # the URL is rewritten at the click and again when the run has finished
    page.wait_for_function("() => location.search.includes('cabinets%20are') && location.search.includes('unit=nats')")
    yield page, page.evaluate("location.href"), shown(page)
    ctx.close()


def test_the_url_holds_the_probe(original):
    _, link, _ = original
    q = {k: v[0] for k, v in parse_qs(urlparse(link).query).items()}
    assert q == {"tab": "probe", "good": PAIR[0], "bad": PAIR[1], "model": "smollm2-135m-instruct", "model2": "gemma3-270m",
                 "methods": "lp,mean_lp,pen_lp", "unit": "nats", "view": "words"}


def test_a_shared_link_reproduces_the_probe_in_a_fresh_page(browser, original):
    page, link, before = original
    screenshot(page, "share-original.png")
    ctx, fresh = fresh_page(browser, link)
    try:
        wait_done(fresh)
        fresh.wait_for_function("() => !document.querySelector('#probe-status .acc-pending') && "
                                "document.querySelector('#probe-summary-2 .acc-verdict')")
        assert textbox(fresh, "probe-good").input_value() == PAIR[0]
        after = shown(fresh)
        screenshot(fresh, "share-opened-link.png")
        assert after["summary"] == before["summary"] and after["summary2"] == before["summary2"]
        assert after["votes"] == before["votes"] and after["votes2"] == before["votes2"]
        assert len(after["votes"]) == 3 and "nats" in after["summary"]
        for key in ("figure", "figure2"):
            assert after[key]["ticks"] == before[key]["ticks"] and "cabinets" in "".join(after[key]["ticks"])
            assert [t["name"] for t in after[key]["traces"]] == [t["name"] for t in before[key]["traces"]]
            for a, b in zip(after[key]["traces"], before[key]["traces"], strict=True):
                assert a["y"] == pytest.approx(b["y"], abs=1e-6)
        assert fresh.evaluate("location.href") == link  # the URL of the opened link is the link again
    finally:
        ctx.close()


def test_copy_link_puts_the_link_on_the_clipboard(original):
    page, link, _ = original
    page.click("#probe-copy-link")
    page.wait_for_function("() => (document.querySelector('#probe-copy-note')?.innerText || '').includes('Link copied')")
    assert page.evaluate("navigator.clipboard.readText()") == link
    screenshot(page, "share-link-copied.png")


def test_the_figure_offers_a_named_png(original):
    page, _, before = original
    assert before["figure"]["png"].startswith("surprisal_smollm2-135m-instruct_The-key-to_nats_words")
    assert before["figure2"]["png"].startswith("surprisal_gemma3-270m_")
    page.hover("#probe-surprisal .js-plotly-plot")
    page.wait_for_selector("#probe-surprisal .modebar-btn[data-title='Download plot as a PNG']")


def test_export_downloads_json_with_the_models_provenance_and_csv(original):
    import pandas as pd

    from accapp.models.loading import load_model, weight_files

    page, _, before = original
    page.click("#probe-export")
    page.wait_for_selector("#probe-download-json", state="visible")
    with page.expect_download() as dl:
        page.click("#probe-download-json")
    data = json.loads(Path(dl.value.path()).read_text(encoding="utf-8"))
    with page.expect_download() as dl_csv:
        page.click("#probe-download-csv")
    assert dl.value.suggested_filename.endswith(".json") and dl_csv.value.suggested_filename.endswith(".csv")
    screenshot(page, "share-export.png")
    assert (data["good"], data["bad"]) == PAIR
    assert [m["model_id"] for m in data["models"]] == ["smollm2-135m-instruct", "gemma3-270m"]
    for m in data["models"]:
        prov = m["provenance"]
        files = weight_files(load_model(m["model_id"]))
        assert prov["model_id"] == m["model_id"]
        assert [w["sha256"] for w in prov["weights"]] == [hashlib.sha256(p.read_bytes()).hexdigest() for p in files]
        assert prov["torch_version"] == importlib.metadata.version("torch")
        assert prov["transformers_version"] == importlib.metadata.version("transformers")
        assert prov["app_version"] and prov["date_utc"].endswith("+00:00")
        assert {j["method"] for j in m["judgments"]} == {"lp", "mean_lp", "pen_lp"}
        assert set(m["prompts"]) == {"lp", "mean_lp", "pen_lp"}
    # the export's word surprisal is the figure's (nats, the unit shown)
    xs = [w["surprisal_nats"] for w in data["models"][0]["words"]["good"]]
    good_trace = before["figure"]["traces"][0]  # the top row: the acceptable sentence
    assert good_trace["y"] == pytest.approx(xs, abs=1e-4)
    df = pd.read_csv(io.BytesIO(Path(dl_csv.value.path()).read_bytes()))
    # what the model expected instead (issue 34, item 11) comes with its own records
    assert set(df.record) == {"provenance", "word", "token", "judgment", "prompt", "expected_word", "expected_token"}
    assert len(df[df.record == "judgment"]) == sum(len(m["judgments"]) for m in data["models"])


def test_a_probe_started_from_the_gallery_gets_its_link(browser, server):
    ctx, page = fresh_page(browser, server.url)
    try:
        page.click("button[role=tab]:has-text('Teaching gallery')")
        page.click("#gallery-try")
        wait_done(page)
        good = textbox(page, "probe-good").input_value()
        page.wait_for_function("() => new URLSearchParams(location.search).get('tab') === 'probe'")
        assert parse_qs(urlparse(page.evaluate("location.href")).query)["good"] == [good]
    finally:
        ctx.close()


def test_a_hostile_link_gets_a_message(browser, server):
    link = server.url + "?" + urlencode({"tab": "probe", "good": "A b.", "bad": "A c.", "model": "<b>nope</b>",
                                         "methods": "lp"})
    ctx, page = fresh_page(browser, link)
    try:
        page.wait_for_function("() => (document.querySelector('#probe-status')?.innerText || '').includes('cannot be opened')")
        status = page.inner_text("#probe-status")
        assert "Unknown model '<b>nope</b>'" in status and "Traceback" not in status
        screenshot(page, "share-hostile-link.png")
    finally:
        ctx.close()


def test_server_log_has_no_traceback(server):
    assert "Traceback" not in server.log_tail(None)
