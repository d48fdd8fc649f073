"""Human ratings beside the model, end to end in headless Chromium (issue 36): a 20-pair file with
ratings is scored in the app; the summary shows r with its interval, the scatter is drawn, and a pair
of the ratings' table opens in the probe."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from tests.test_app_browser import TIMEOUT_MS, table_rows, upload
from tests.ui_server import CHROMIUM, launch_browser, screenshot, start_server

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.process,
              pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs /usr/bin/chromium (scripts/setup-browser.sh)")]


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    from playwright.sync_api import sync_playwright

    srv = start_server(tmp_path_factory.mktemp("ratings-app"), {})
    try:
        with sync_playwright() as p:
            b = launch_browser(p)
            pg = b.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            pg.set_default_timeout(TIMEOUT_MS)
            pg.goto(srv.url)
            pg.wait_for_selector("#probe-run")
            yield pg
            b.close()
    finally:
        srv.stop()


def test_a_rated_file_shows_r_scatter_and_opens_a_pair(page, tmp_path):
    li = pd.read_parquet(Path(__file__).resolve().parents[1] / "assets" / "ratings" / "li.parquet")
    rows = li.head(20)[["good", "bad", "rating_good", "rating_bad"]]
    path = tmp_path / "rated.csv"
    rows.to_csv(path, index=False)
    page.get_by_role("tab", name="Score a file").click()
    page.wait_for_selector("#file-run", state="visible")
    upload(page, "#file-upload", path)
    for method in ("in_template_lp", "yes_no_prob_comp"):  # keep LP, MeanLP, PenLP: quick
        page.click(f"#file-methods input[name={method}]")
    page.wait_for_function("() => document.querySelectorAll('#file-methods input:checked').length === 3")
    page.click("#file-run")
    page.wait_for_function("() => (document.querySelector('#file-summary')?.innerText || '').includes('Pearson r')")
    summary = page.inner_text("#file-summary")
    assert "Scored 20 of 20 rows" in summary and "Beside the human ratings" in summary
    lp = next(line for line in summary.splitlines() if line.startswith("LP\t") or line.startswith("LP "))
    assert re.search(r"\t20\t-?\d\.\d\d \[-?\d\.\d\d, -?\d\.\d\d\]", lp), lp  # 20 pairs, r [low, high]
    page.wait_for_selector("#file-ratings-scatter canvas, #file-ratings-scatter svg", state="visible")
    page.wait_for_function("() => document.querySelectorAll('#file-ratings-pairs [role=gridcell]').length > 0")
    first = table_rows(page, "file-ratings-pairs")[0]
    assert first[1] in set(rows["good"])
    screenshot(page, "score-file-ratings.png")
    page.locator("#file-ratings-pairs [role=gridcell]").nth(1).click()
    page.wait_for_function("([g]) => (document.querySelector('#probe-good textarea')?.value || '') === g", arg=[first[1]])
    assert page.get_by_role("tab", name="Probe a pair").get_attribute("aria-selected") == "true"
