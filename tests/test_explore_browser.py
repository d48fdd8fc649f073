"""Explore links in headless Chromium (issue 19, items 1 and 5): a link with a query string, opened in a
fresh page, restores the selection and shows the bootstrap intervals; the URL follows the selection;
a CSV downloads. The app runs in a subprocess on loopback over the shipped results (the session's
shared server, tests/conftest.py).

The screenshot of the Explore tab with its intervals goes to test-artifacts/explore-intervals.png.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from tests.ui_server import ARTIFACTS, CHROMIUM, ROOT, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.process,
              pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs /usr/bin/chromium (scripts/setup-browser.sh)"),
              pytest.mark.skipif(not (ROOT / "precomputed/results/smollm2-135m-instruct__blimp.parquet").exists(),
                                 reason="needs the shipped SmolLM2 BLiMP results")]

MODEL = "smollm2-135m-instruct"
LINK = f"?tab=explore&bench=blimp&model={MODEL}&methods=lp,in_template_lp&template=best&phenomenon=island_effects"
TIMEOUT_MS = 240_000


@pytest.fixture(scope="module")
def server(app_server):
    return app_server


def fresh_page(browser):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    page = ctx.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    return ctx, page


def test_explore_link_restores_selection_with_intervals(browser, server):
    ctx, page = fresh_page(browser)
    try:
        page.goto(server.url + LINK)
        # the Explore tab is opened and its views drawn for the link's selection
        page.wait_for_selector("#explore-phenomenon .js-plotly-plot")
        page.wait_for_function("() => document.querySelector('#explore-status')?.innerText.includes('67,000 pairs')")
        assert page.get_by_role("tab", name="Explore results").get_attribute("aria-selected") == "true"
        assert page.is_checked("#explore-template input[value='best']")
        assert MODEL in page.input_value("#explore-model input")
        methods = page.inner_text("#explore-methods")
        assert "In-template LP" in methods and "LP" in methods and "Yes/No" not in methods
        # intervals: error bars on the bars, an interval column in the table, the note saying how
        page.wait_for_function("() => document.querySelectorAll('#explore-phenomenon .errorbar').length >= 20")
        overall = page.inner_text("#explore-overall")
        assert "95 % CI (%)" in overall and "upper bound" in overall
        assert "percentile bootstrap over pairs" in page.inner_text("#explore-ci-note")
        title = page.text_content("#explore-phenomenon .gtitle")
        assert title.startswith("Accuracy by phenomenon")
        screenshot(page, "explore-intervals.png")
        # the URL carries the restored selection (written back with history.replaceState)
        page.wait_for_function("() => location.search.includes('tab=explore')")
        q = parse_qs(urlparse(page.url).query)
        assert q["model"] == [MODEL] and q["template"] == ["best"] and q["methods"] == ["lp,in_template_lp"]
        assert q["phenomenon"] == ["island_effects"]
        link = page.input_value("#explore-link input, #explore-link textarea")
        assert link.endswith(page.url.split("?", 1)[1])
        # Copy link puts that link on the clipboard
        ctx.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url.rstrip("/"))
        page.click("#explore-copy-link")
        for _ in range(50):  # the copy is asynchronous: up to 5 s
            if page.evaluate("() => navigator.clipboard.readText()") == link:
                break
            page.wait_for_timeout(100)
        assert page.evaluate("() => navigator.clipboard.readText()") == link
        # a figure's data as CSV
        with page.expect_download() as dl:
            page.click("#explore-csv-accuracy-by-phenomenon")
        raw = Path(dl.value.path()).read_bytes()
        assert raw.startswith(b"\xef\xbb\xbf")  # the BOM: a spreadsheet reads it as UTF-8 (accapp.files.csv_bytes)
        text = raw.decode("utf-8-sig")
        assert text.startswith("model,benchmark,method,template,phenomenon") and "ci_low" in text.splitlines()[0]
        # the paradigm view follows the link's phenomenon
        page.get_by_role("tab", name="By paradigm").click()
        page.wait_for_function("() => document.querySelectorAll('#explore-paradigm .errorbar').length > 0")
        assert "adjunct_island" in page.text_content("#explore-paradigm")
        screenshot(page, "explore-intervals-paradigm.png")
        page.get_by_role("tab", name="Token length").click()
        page.wait_for_function("() => document.querySelectorAll('#explore-length .errorbar').length > 0")
        screenshot(page, "explore-intervals-length.png")
        page.get_by_role("tab", name="Word order & attractors").click()
        page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot .errorbar').length > 0")
        screenshot(page, "explore-intervals-word-order.png")
        # a new selection is written to the URL
        page.get_by_text("mean over templates", exact=True).click()
        page.wait_for_function("() => location.search.includes('template=mean')")
        # the wrong pairs, filtered by phenomenon and sorted by margin
        page.get_by_role("tab", name="Pairs it gets wrong").click()
        page.wait_for_function("() => document.querySelectorAll('#explore-wrong [role=gridcell]').length > 0")
        page.locator("#explore-wrong-sort input").click()
        page.get_by_role("option", name="most wrong first (margin ascending)").click()
        page.wait_for_function("() => document.querySelector('#explore-wrong')?.innerText.includes('Margin')")
        page.locator("#explore-wrong-text input, #explore-wrong-text textarea").fill("island")
        page.locator("#explore-wrong-text input, #explore-wrong-text textarea").press("Enter")
        page.wait_for_function("() => / of [0-9,]+ pair judgments/.test(document.body.innerText)")
        # the figures for "mean over templates" may still be drawing: once they are, the list is still the
        # filtered one (it is redrawn after them, with the filter as it is then, not as it was at the click)
        page.wait_for_function("() => !document.querySelector('.pending, .generating')")
        assert re.search(r" of [0-9,]+ pair judgments", page.inner_text("body"))
        rows = page.evaluate("() => [...document.querySelectorAll('#explore-wrong [role=row][data-index]')].map("
                             "r => [...r.querySelectorAll('[role=gridcell]')].map(c => c.innerText.trim()))")
        assert rows and all("island" in " ".join(r[:6]).lower() for r in rows), rows[:3]
        margins = [float(r[8]) for r in rows]
        assert margins == sorted(margins), margins[:10]  # most wrong first, as chosen
        screenshot(page, "explore-wrong-filtered.png")
        assert "Traceback" not in page.inner_text("body")
    finally:
        ctx.close()


def test_across_datasets_view_draws_every_run_beside_the_papers_numbers(browser, server):
    """Explore -> Across datasets for the model of a link's selection (Gemma, on SLING): every dataset it has a run
    on, within-pair accuracy beside separation AUC, the paper's stated numbers named with their sources; the
    screenshot goes to test-artifacts/cross-dataset.png."""
    from tests.test_ratings_browser import open_subtab

    ctx, page = fresh_page(browser)
    try:
        page.goto(server.url + "?tab=explore&bench=sling")
        page.wait_for_function("() => document.querySelector('#explore-status')?.innerText.includes('SLING')")
        assert "gemma3-270m" in page.input_value("#explore-model input")
        open_subtab(page, "#explore-views", "Across datasets")
        page.wait_for_selector("#explore-cross .js-plotly-plot")
        page.wait_for_function("() => document.querySelectorAll('#explore-cross .errorbar').length > 0")
        text = page.text_content("#explore-cross")
        assert "Within-pair accuracy (Prediction 1)" in text and "Separation AUC (Prediction 3)" in text
        assert "Hu et al. 2025, §6.4, Fig. 4b" in text and "Hu et al. 2025, §6.4, Fig. 8" in text
        for name in ("BLiMP", "SLING", "ZhoBLiMP", "SyntaxGym", "LI"):
            assert name in text, name
        assert "do not exceed 0.75" in page.inner_text("#explore-cross-note")
        ARTIFACTS.mkdir(exist_ok=True)
        page.locator("#explore-cross-tab").screenshot(path=str(ARTIFACTS / "cross-dataset.png"))
        assert "Traceback" not in page.inner_text("body")
    finally:
        ctx.close()
