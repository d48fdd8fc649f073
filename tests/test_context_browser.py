"""The Probe tab's context, critical region, swap button and many-pairs box (issue 34, items 12, 13,
15) in headless Chromium against the session's shared app (the real SmolLM2): Swap exchanges the
two sentences; pasted pairs come back as a table, one row a line, with a CSV to download; a link
with a context and a [[region]] fills the page, runs, shows the region's table, and the page's URL
keeps both after the run. Screenshots in test-artifacts/."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from accapp.models import DEFAULT_MODEL
from accapp.ui import links
from tests.test_app_browser import table_rows, textbox, wait_done
from tests.ui_server import CHROMIUM, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.process,
              pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs /usr/bin/chromium (scripts/setup-browser.sh)")]

TIMEOUT_MS = 300_000
GOOD, BAD = "These casseroles disgust Kayla.", "These casseroles disgusts Kayla."
CONTEXT = "Kayla cooked all week for the party."


@pytest.fixture(scope="module")
def server(app_server):
    return app_server  # the session's shared server (tests/conftest.py)


def open_page(browser, url, width=1400, height=900):
    ctx = browser.new_context(viewport={"width": width, "height": height}, accept_downloads=True)
    pg = ctx.new_page()
    pg.set_default_timeout(TIMEOUT_MS)
    pg.goto(url)
    pg.wait_for_selector("#probe-run")
    return ctx, pg


def test_swap_and_many_pairs(browser, server):
    ctx, page = open_page(browser, server.url)
    try:
        textbox(page, "probe-good").fill("The cat sleeps.")
        textbox(page, "probe-bad").fill("The cat [[sleep]].")
        page.click("#probe-swap")
        page.wait_for_function("() => document.querySelector('#probe-good textarea').value === 'The cat [[sleep]].'")
        assert textbox(page, "probe-bad").input_value() == "The cat sleeps."
        # the fast methods, then two pairs and a line without a tab
        page.get_by_text("Choose the judgment methods").click()
        page.get_by_role("button", name="Only LP, MeanLP, PenLP (fast)").click()
        page.get_by_text("Probe many pairs").click()
        textbox(page, "probe-many").fill(f"{GOOD}\t{BAD}\nThe cat [[sleeps]].\tThe cat [[sleep]].\nno tab here")
        page.click("#probe-many-run")
        page.wait_for_selector("#probe-many-csv:visible", timeout=TIMEOUT_MS)
        status = page.inner_text("#probe-many-status")
        assert "Probed 3 pairs; 1 could not be probed" in status
        rows = table_rows(page, "probe-many-table", having="1")
        body = [r for r in rows if r and r[0] in ("1", "2", "3")]
        assert [r[0] for r in body] == ["1", "2", "3"]
        assert "LP prefers" in " ".join(body[0]) and "no tab" in " ".join(body[2])
        screenshot(page, "probe-many-pairs-1400.png")
        with page.expect_download() as dl:
            page.click("#probe-many-csv")
        text = Path(dl.value.path()).read_bytes()
        assert text.startswith(b"\xef\xbb\xbf") and b"margin_bits" in text and GOOD.encode() in text
    finally:
        ctx.close()


def test_a_link_keeps_context_and_region(browser, server):
    values = {"good": "These casseroles [[disgust]] Kayla.", "bad": BAD, "model": DEFAULT_MODEL, "model2": "",
              "methods": ["lp", "in_template_lp"], "unit": "bits", "view": "words", "context": CONTEXT}
    ctx, page = open_page(browser, server.url + "?" + links.probe_query(values))
    try:
        wait_done(page)
        page.wait_for_selector("#probe-region table.acc-region")
        assert textbox(page, "probe-discourse").input_value() == CONTEXT
        assert textbox(page, "probe-good").input_value() == values["good"]
        region = page.inner_text("#probe-region")
        assert "disgust" in region and "disgusts" in region and "Kayla" in region and "bits" in region
        assert "Scored after it: LP" in region and "Not applied to In-template LP" in region
        # the page's URL (kept up to date after the run) still holds the context and the brackets
        page.wait_for_function("() => location.search.includes('context=')")
        query = parse_qs(urlparse(page.url).query)
        assert query["context"] == [CONTEXT] and query["good"] == [values["good"]]
        screenshot(page, "probe-context-region-1400.png")
    finally:
        ctx.close()
