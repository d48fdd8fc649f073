"""Issue 34, items 11 and 14 in headless Chromium: after Compare, the page says what the model
expected where the two sentences differ, and the per-token table is in the page with a copy
button that puts the table on the clipboard. Screenshots in test-artifacts/."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_app_browser import row_count, table_rows
from tests.test_probe_browser import TIMEOUT_MS, run
from tests.ui_server import CHROMIUM, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.process,
              pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs /usr/bin/chromium (scripts/setup-browser.sh)")]

GOOD, BAD = "These casseroles disgust Kayla.", "These casseroles disgusts Kayla."


@pytest.mark.parametrize("width,height", [(1400, 900), (390, 844)])
def test_expected_instead_and_the_token_table(app_server, browser, width, height):
    ctx = browser.new_context(viewport={"width": width, "height": height})
    ctx.grant_permissions(["clipboard-read", "clipboard-write"], origin=app_server.url.rstrip("/"))
    page = ctx.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    try:
        page.goto(app_server.url)
        page.wait_for_selector("#probe-run")
        run(page, GOOD, BAD)
        page.wait_for_function("() => (document.querySelector('#probe-expected')?.innerText || '').includes('expected:')")
        text = page.inner_text("#probe-expected")
        assert "What SmolLM2-135M-Instruct expected instead" in text
        assert "After “These casseroles”, the model expected: are 33 %, can 13 %" in text  # the differing word first
        assert "acceptable “disgust”" in text and "unacceptable “disgusts”" in text
        page.get_by_text("Every token: surprisal, probability and what the model expected there").click()
        rows = table_rows(page, "probe-tokens", having="SmolLM2-135M-Instruct")
        assert row_count(page, "probe-tokens") == 15  # 7 tokens of the acceptable sentence, 8 of the unacceptable
        by = {(r[1], r[4]): r for r in rows}
        casser = by[("acceptable", "casser")]
        assert casser[2] == "casseroles" and casser[7].startswith("are ")  # after "These", the model expected "are"
        assert by[("acceptable", "·oles")][2] == "casseroles"  # a piece that continues its word, marked
        page.locator("#probe-tokens button[title*='opy'], #probe-tokens button[aria-label*='opy']").first.click()
        page.wait_for_function("() => navigator.clipboard.readText().then(t => t.includes('casser'))")
        copied = page.evaluate("navigator.clipboard.readText()")
        assert "disgusts" in copied and "“-” 40\u00a0%" in copied  # every row (Gradio copies the cells, not the headers)
        screenshot(page, f"probe-expected-{width}.png")
    finally:
        ctx.close()
