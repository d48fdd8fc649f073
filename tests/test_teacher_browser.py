"""A class on one Space, in headless Chromium at 1400 and 390 px, on the session's shared server
(tests/conftest.py, the shipped results): the first screen (Compare above the fold, no empty figure, a model
picker that filters as one types and groups the models that cannot run here), the README pair's split verdict
said in a sentence, the teacher's overlay (each token coloured by rank or surprisal, a legend, a toggle), the
token table (a word before its pieces, pieces marked, no markup among the alternatives, no number broken over
two lines), and Score a file (rows in a language the model was not made for, the upload kept).
Screenshots in test-artifacts/ (teacher-*.png)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from tests.test_app_browser import table_rows, textbox, upload, wait_done
from tests.ui_server import CHROMIUM, quick_methods, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.process,
              pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs /usr/bin/chromium (scripts/setup-browser.sh)")]

TIMEOUT_MS = 300_000
README = ("These casseroles disgust Kayla.", "These casseroles disgusts Kayla.")
SIZES = {1400: 900, 390: 844}
GLTR = ["rgb(173, 255, 128)", "rgb(255, 234, 128)", "rgb(255, 146, 128)", "rgb(229, 176, 255)"]  # service/overlay.COLOURS
LOG2 = [math.log2(10), math.log2(100), math.log2(1000)]


def open_page(browser, server, width):
    ctx = browser.new_context(viewport={"width": width, "height": SIZES[width]})
    page = ctx.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(server.url)
    page.wait_for_selector("#probe-run")
    return ctx, page


def options(page) -> list[str]:
    return page.eval_on_selector_all("ul[role=listbox] li", "ls => ls.map(l => l.getAttribute('aria-label') || '')")


@pytest.mark.parametrize("width", [1400, 390])
def test_first_screen(browser, app_server, width):
    ctx, page = open_page(browser, app_server, width)
    try:
        page.wait_for_timeout(500)
        # before any result: no empty figure, and (on a desktop's 900 px) Compare in the first screen
        assert page.eval_on_selector("#probe-surprisal", "e => e.getBoundingClientRect().height") == 0
        run = page.eval_on_selector("#probe-run", "e => e.getBoundingClientRect().toJSON()")
        if width == 1400:
            assert run["bottom"] <= SIZES[width], run
        screenshot(page, f"teacher-first-{width}.png")
        # the model picker: the models that run here, then one heading over those that cannot
        page.click("#probe-model input")
        page.wait_for_selector("ul[role=listbox] li")
        labels = options(page)
        heading = [i for i, label in enumerate(labels) if "needs a GPU or a download" in label]
        assert len(heading) == 1 and 0 < heading[0] < len(labels) - 1, labels
        ready = " ".join(labels[: heading[0]])
        assert "SmolLM2-135M-Instruct" in ready and "Gemma 3 270M" in ready  # the offline models, first
        assert not any("⛔" in label for label in labels)  # no entry marked one by one
        assert page.eval_on_selector(f"ul[role=listbox] li:nth-child({heading[0] + 1})",
                                     "e => getComputedStyle(e).pointerEvents") == "none"  # a heading, not a choice
        # it filters as one types
        page.keyboard.press("Control+A")
        page.keyboard.type("gemma")
        page.wait_for_function("() => [...document.querySelectorAll('ul[role=listbox] li')].every("
                               "l => (l.getAttribute('aria-label') || '').toLowerCase().includes('gemma'))")
        assert any("Gemma 3 270M" in label for label in options(page))
        page.keyboard.press("Escape")
        assert "Traceback" not in page.inner_text("body")
    finally:
        ctx.close()


def _overlay_tokens(page, view: str) -> list[dict]:
    return page.eval_on_selector_all(f"#probe-overlay .acc-overlay-{view} .acc-tok",
                                     "ts => ts.map(t => ({text: t.textContent, bg: getComputedStyle(t).backgroundColor, "
                                     "title: t.title, shown: t.getBoundingClientRect().height > 0}))")


def _bucket_of_surprisal(bits: float) -> int:
    return next((i for i, limit in enumerate(LOG2) if bits <= limit + 1e-9), 3)


def _bucket_of_rank(rank: int) -> int:
    return next((i for i, limit in enumerate((10, 100, 1000)) if rank <= limit), 3)


SPLIT_NUMBERS_JS = """sel => {
  // every number (and every "N %") in the cells, as the page lays it out: the pieces of a line box it takes
  const broken = [];
  for (const cell of document.querySelectorAll(sel)) {
    const walk = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walk.nextNode(); node; node = walk.nextNode()) {
      for (const m of node.data.matchAll(/(?<![\\w.-])\\d[\\d.,]*(e[+-]?\\d+)?(\\u00a0%)?/g)) {  // not the 2 of "SmolLM2-135M"
        const r = document.createRange();
        r.setStart(node, m.index); r.setEnd(node, m.index + m[0].length);
        const tops = new Set([...r.getClientRects()].filter(x => x.width > 0).map(x => Math.round(x.top)));
        if (tops.size > 1) broken.push(m[0]);
      }
    }
  }
  return broken;
}"""


@pytest.mark.parametrize("width", [1400, 390])
def test_readme_pair_overlay_and_token_table(browser, app_server, width):
    ctx, page = open_page(browser, app_server, width)
    try:
        quick_methods(page)  # LP, MeanLP, PenLP: the split is LP against the per-token averages
        textbox(page, "probe-good").fill(README[0])
        textbox(page, "probe-bad").fill(README[1])
        before = page.inner_text("#probe-summary")
        page.click("#probe-run")
        wait_done(page, before)
        summary = page.inner_text("#probe-summary")
        assert "LP prefers the acceptable sentence" in summary and "The methods disagree" in summary  # items 1-5 still there
        # the overlay: by rank first, each token on one of GLTR's four colours, the legend, the toggle
        page.wait_for_selector("#probe-overlay .acc-overlay-rank .acc-tok")
        by_rank = _overlay_tokens(page, "rank")
        assert "".join(t["text"] for t in by_rank[:4]).startswith("Thesecasser")  # the sentence itself
        assert all(t["shown"] for t in by_rank) and not any(t["shown"] for t in _overlay_tokens(page, "surprisal"))
        for t in by_rank:  # the colour is the bucket of the rank the hover gives
            rank = int(re.search(r"rank ([\d,]+)", t["title"]).group(1).replace(",", ""))
            assert t["bg"] == GLTR[_bucket_of_rank(rank)], t
        legend = page.inner_text("#probe-overlay .acc-overlay-rank .acc-legend")
        assert "top 10" in legend and "top 1000" in legend and "beyond the top 1000" in legend
        page.locator("#probe-overlay").scroll_into_view_if_needed()
        page.locator("#probe-overlay").screenshot(path=str(screenshot_path(f"teacher-overlay-rank-{width}.png")))
        page.click("#probe-overlay input[value=surprisal]")
        page.wait_for_function("() => [...document.querySelectorAll('#probe-overlay .acc-overlay-rank .acc-tok')]"
                               ".every(t => t.getBoundingClientRect().height === 0)")
        by_surprisal = _overlay_tokens(page, "surprisal")
        assert all(t["shown"] for t in by_surprisal) and len(by_surprisal) == len(by_rank)
        assert "up to 3.3 bits" in page.inner_text("#probe-overlay .acc-overlay-surprisal .acc-legend")
        page.locator("#probe-overlay").screenshot(path=str(screenshot_path(f"teacher-overlay-surprisal-{width}.png")))
        # the token table: its surprisal, the overlay's colour; a word before its pieces; pieces marked
        page.get_by_text("Every token: surprisal, probability and what the model expected there").click()
        rows = table_rows(page, "probe-tokens", having="SmolLM2-135M-Instruct")
        acceptable = [r for r in rows if r[1] == "acceptable"]
        assert [r[4] for r in acceptable][:3] == ["These", "casser", "·oles"] and acceptable[2][2] == "casseroles"
        for r, t in zip(acceptable, by_surprisal):  # the overlay's colours are the table's surprisals, bucketed
            assert t["text"] == r[4].lstrip("·") and t["bg"] == GLTR[_bucket_of_surprisal(float(r[5]))], (r, t)
        assert not [r[7] for r in rows if re.search(r"<[^<>\s]+>", r[7])]  # no markup among what it expected
        assert "·like this" in page.inner_text("#probe-tokens-legend")
        # no number broken over two lines, in the table and in the overlay's hover-free text
        page.locator("#probe-tokens").scroll_into_view_if_needed()
        cells = page.eval_on_selector_all("#probe-tokens [role=gridcell]", "cs => cs.length")
        assert cells >= 8 and page.evaluate(SPLIT_NUMBERS_JS, "#probe-tokens [role=gridcell]") == []
        assert page.evaluate(SPLIT_NUMBERS_JS, "#probe-summary .acc-num, #probe-votes td") == []
        screenshot(page, f"teacher-{width}.png")
        assert "Traceback" not in page.inner_text("body")
    finally:
        ctx.close()


def screenshot_path(name: str) -> Path:
    from tests.ui_server import ARTIFACTS

    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS / name


def test_markup_left_out_at_the_sentence_start(browser, app_server):
    """Gemma 3 270M's first guesses after its start token include <h1> and <start_of_image>: left out and said."""
    ctx, page = open_page(browser, app_server, 1400)
    try:
        page.click("#probe-model input")
        page.keyboard.press("Control+A")
        page.keyboard.type("Gemma 3 270M")
        page.locator("ul[role=listbox] li", has_text="Gemma 3 270M").first.click()
        quick_methods(page)
        textbox(page, "probe-good").fill("The dogs bark.")
        textbox(page, "probe-bad").fill("The dogs barks.")
        before = page.inner_text("#probe-summary")
        page.click("#probe-run")
        wait_done(page, before)
        page.get_by_text("Every token: surprisal, probability and what the model expected there").click()
        rows = table_rows(page, "probe-tokens", having="Gemma 3 270M (base)")
        first = rows[0][7]
        assert not re.search(r"<[^<>\s]+>", first) and "left out" in first, first
        assert not [r[7] for r in rows if re.search(r"<[^<>\s]+>", r[7])]
    finally:
        ctx.close()


def test_score_a_file_warns_of_chinese_rows_and_keeps_the_upload(browser, app_server, tmp_path):
    path = tmp_path / "mixed-pairs.csv"
    path.write_text("good,bad\nThe dogs bark.,The dogs barks.\n他买了一本书。,他买了一张书。\n", encoding="utf-8")
    ctx, page = open_page(browser, app_server, 1400)
    try:
        page.get_by_role("tab", name="Score a file").click()
        upload(page, "#file-upload", path)
        page.click("#file-run")
        page.wait_for_function("() => (document.querySelector('#file-summary')?.innerText || '').includes('Scored')")
        summary = page.inner_text("#file-summary")
        assert "1 row (row 2) looks Chinese, a language this model was not made for" in summary, summary
        assert "mixed-pairs" in page.eval_on_selector("#file-upload", "e => e.textContent")  # the upload stays
        page.locator("#file-summary").screenshot(path=str(screenshot_path("teacher-score-file-1400.png")))
        assert "Scored 2 of 2 rows" in summary
        page.click("#file-tokens input")  # the same file again, as it is, now with its tokens
        page.click("#file-run")
        page.wait_for_function("() => (document.querySelector('#file-result')?.textContent || '').includes('tokens')")
        assert "not scored" not in page.inner_text("#file-summary")
    finally:
        ctx.close()


def test_server_log_has_no_traceback(app_server):
    assert "Traceback" not in app_server.log_tail(None)
