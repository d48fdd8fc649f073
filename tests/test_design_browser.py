"""The Design tab and Explore's SyntaxGym test suites in headless Chromium, against the session's shared
server: Explore lists the 34 shipped suites and a click on one lists its items; the Design tab runs a
2x2 filler-gap item (the tab's own example: "I know what/that the lion devoured (the gazelle) at
sunrise.") and shows the region x condition table in bits, the figure, the prediction's verdict and the
interaction in words. Screenshot in test-artifacts/."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ui_server import CHROMIUM, app_page, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.process,
              pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs /usr/bin/chromium (scripts/setup-browser.sh)")]

TIMEOUT_MS = 120_000
ROWS = "(id) => Number(document.querySelector('#' + id + ' [role=grid]')?.getAttribute('aria-rowcount') || 0) - 1"


def test_explore_lists_the_suites_and_design_runs_a_filler_gap_item(browser, app_server):
    with app_page(browser, app_server.url, timeout_ms=TIMEOUT_MS) as page:
        # Explore: the suites section lists 34 suites, a click on one lists its items
        page.get_by_role("tab", name="Explore results").click()
        page.get_by_role("tab", name="SyntaxGym test suites").click()
        page.wait_for_function(f"() => ({ROWS})('explore-suites-table') === 34")  # virtualised: the grid's row count
        assert "Hu et al. 2020" in page.inner_text("#explore-suites-table")
        assert "Hu et al. 2020" in page.inner_text("#explore-suites-circuits")
        page.locator("#explore-suites-table [role=row]", has_text="npi_orc_any").first.get_by_text("npi_orc_any").click()
        page.wait_for_function("() => (document.querySelector('#explore-suite-items-note')?.innerText || '')"
                               ".includes('npi_orc_any')")
        page.wait_for_function(f"() => ({ROWS})('explore-suite-items') === 38 * 4")  # items x conditions

        # Design: the tab's example, a 2x2 filler-gap item, typed with | regions
        page.get_by_role("tab", name="Design (2-4 conditions)").click()
        conditions = page.locator("#design-conditions textarea").input_value()
        assert "what_gap: I know | what | the lion devoured | at sunrise." in conditions
        page.click("#design-run")
        page.wait_for_selector("#design-table table[data-testid='design-table']")
        table = page.inner_text("#design-table")
        for name in ("what_gap", "that_gap", "what_nogap", "that_nogap", "prefix", "continuation"):
            assert name in table
        assert table.count("bits") >= 16  # every cell's number with its unit
        page.wait_for_selector("#design-plot .js-plotly-plot")
        assert page.eval_on_selector_all("#design-plot .scatterlayer .trace", "ts => ts.length") == 4
        verdict = page.inner_text("#design-predictions")
        assert "Prediction 1" in verdict and ("passes" in verdict or "fails" in verdict)
        assert "(4;%what_gap%) =" in verdict and "bits" in verdict
        interaction = page.inner_text("[data-testid='design-interaction']")
        assert interaction.startswith("The 2x2 interaction at region 4 ('continuation'): "
                                      "(what_gap − that_gap) − (what_nogap − that_nogap) = ")
        assert "as predicted" in interaction
        assert "tab=design" in page.url and "conditions=" in page.url  # the link follows the run
        screenshot(page, "design-filler-gap.png")
