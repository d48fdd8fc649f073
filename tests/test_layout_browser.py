"""Issue 34, items 6, 7 and 9 in headless Chromium, on the session's shared server (tests/conftest.py):
Explore and the gallery's projection view usable on a phone (390x844), the projection view's pair
within a projector's 720 px at 1400x900, Explore's words and units, and a malformed file's message
kept on the page. Screenshots in test-artifacts/ (layout-*.png)."""

from __future__ import annotations

from pathlib import Path

import pytest

from accapp.service import gallery as data
from tests.ui_server import CHROMIUM, ROOT, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.process,
              pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs /usr/bin/chromium (scripts/setup-browser.sh)"),
              pytest.mark.skipif(not (ROOT / "precomputed/results/smollm2-135m-instruct__blimp.parquet").exists(),
                                 reason="needs the shipped SmolLM2 BLiMP results")]

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1400, "height": 900}
PROJECTOR_PX = 720
LINK = ("?tab=explore&bench=blimp&model=smollm2-135m-instruct&methods=lp,in_template_lp&template=best")
TIMEOUT_MS = 240_000


def new_page(browser, viewport):
    page = browser.new_page(viewport=viewport)
    page.set_default_timeout(TIMEOUT_MS)
    return page


def shot(page, selector: str, name: str) -> None:
    """A screenshot of one element (the whole page of a phone is too tall to look at)."""
    loc = page.locator(selector)
    loc.scroll_into_view_if_needed()
    (ROOT / "test-artifacts").mkdir(exist_ok=True)
    loc.screenshot(path=str(ROOT / "test-artifacts" / name))


def visible_tabs(page, container: str) -> list[str]:
    """The labels of a Tabs' own tab buttons that show (not those of Tabs nested in its panels)."""
    return page.eval_on_selector(container, """root => [...root.querySelectorAll('[role=tab]')].filter(t => {
        const panel = t.closest('[role=tabpanel]');
        if (panel && root.contains(panel)) return false;
        const r = t.getBoundingClientRect();
        return r.width > 0 && r.height > 0 && getComputedStyle(t).visibility !== 'hidden'; }).map(t => t.innerText.trim())""")


def test_explore_on_a_phone(browser, app_server):
    page = new_page(browser, PHONE)
    try:
        page.goto(app_server.url + LINK)
        page.wait_for_function("() => document.querySelector('#explore-status')?.innerText.includes('67,000 pairs')")
        page.wait_for_function("() => document.querySelectorAll('#explore-overall [role=gridcell]').length > 0")
        page.wait_for_function("() => document.querySelectorAll('#explore-phenomenon .ytick').length >= 12")
        page.wait_for_timeout(500)
        # the six tabs and Explore's views: every label in view, none behind an unlabelled "•••"
        assert visible_tabs(page, "#main-tabs") == ["Probe a pair", "Design (2-4 conditions)", "Explore results",
                                                     "Score a file", "Teaching gallery", "About"]
        assert len(visible_tabs(page, "#explore-views")) == 11
        # the phenomenon plot: its labels take at most 40 % of the figure's width (60 % before)
        fig_w = page.eval_on_selector("#explore-phenomenon .main-svg", "e => e.getBoundingClientRect().width")
        label_w = page.eval_on_selector_all("#explore-phenomenon .ytick text",
                                            "ts => Math.max(...ts.map(t => t.getBoundingClientRect().width))")
        assert label_w / fig_w <= 0.40, (label_w, fig_w)
        # every phenomenon in the descriptor's words
        ticks = page.eval_on_selector_all("#explore-phenomenon .ytick text", "ts => ts.map(t => t.textContent)")
        assert not [t for t in ticks if "_" in t] and any("agreement" in t for t in ticks)
        shot(page, "#explore-phenomenon", "layout-phone-explore-phenomenon.png")
        # the overall table: no header wraps one letter a line, and the table says it scrolls sideways
        heights = page.eval_on_selector_all("#explore-overall thead th", "ths => ths.map(t => t.getBoundingClientRect().height)")
        assert heights and max(heights) < 100, heights
        scrolls = page.eval_on_selector("#explore-overall .table-container", "e => e.scrollWidth > e.clientWidth + 1")
        hint = page.eval_on_selector("#explore-overall", "e => getComputedStyle(e, '::after').content")
        assert not scrolls or "Swipe" in hint, hint  # cut off at the right: a visible hint
        assert page.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"]  # the page itself fits
        shot(page, "#explore-overall", "layout-phone-explore-overall.png")
        # the wrong pairs: margins in bits with the unit in the header, phenomena in words
        page.get_by_role("tab", name="Pairs it gets wrong").click()
        page.wait_for_function("() => document.querySelectorAll('#explore-wrong [role=gridcell]').length > 0")
        heads = page.inner_text("#explore-wrong thead")
        widths = page.eval_on_selector_all("#explore-wrong thead th", "ths => ths.map(t => t.getBoundingClientRect().width)")
        assert min(widths) >= 60, widths  # "Pair", "Order": whole words, not a letter or two a line
        assert "Margin: good − bad (bits)" in heads and "Score: good (bits)" in heads
        assert "island effects" in page.inner_text("#explore-wrong") or "agreement" in page.inner_text("#explore-wrong")
        shot(page, "#explore-wrong", "layout-phone-explore-wrong.png")
        assert "Traceback" not in page.inner_text("body")
    finally:
        page.close()


def _projection(page, url):
    page.goto(url)
    page.wait_for_selector("#probe-run")
    page.get_by_role("tab", name="Teaching gallery").click()
    page.click("#gallery-projection-toggle input")
    page.wait_for_selector("#gallery-big", state="visible")
    page.wait_for_timeout(500)
    page.evaluate("() => window.scrollTo(0, 0)")
    first = data.load()[0]
    # each sentence's own element in the projection view (whatever holds its text)
    return page.evaluate("""([good, bad]) => {
        const big = document.querySelector('#gallery-big');
        const els = [...big.querySelectorAll('*')].filter(e => e.children.length === 0 &&
            [good, '*' + bad].includes(e.textContent.trim()));
        return {big: big.getBoundingClientRect().toJSON(), scroll: [big.scrollWidth, big.clientWidth],
                page: document.documentElement.scrollWidth,
                sentences: els.map(e => ({rect: e.getBoundingClientRect().toJSON(),
                                          lines: Math.round(e.getBoundingClientRect().height /
                                                            parseFloat(getComputedStyle(e).lineHeight))}))};
    }""", [first["good"], first["bad"]])


def test_gallery_projection_on_a_phone_and_a_projector(browser, app_server):
    page = new_page(browser, PHONE)
    try:
        got = _projection(page, app_server.url)
        assert len(got["sentences"]) == 2
        assert got["page"] <= PHONE["width"] and got["scroll"][0] <= got["scroll"][1] + 1  # nothing off the edge
        for s in got["sentences"]:
            r = s["rect"]
            assert r["right"] <= PHONE["width"] and r["width"] >= 0.6 * got["big"]["width"], r  # not one word a line
            assert s["lines"] <= 3, s
        shot(page, "#gallery-big", "layout-phone-gallery-projection.png")
    finally:
        page.close()
    page = new_page(browser, DESKTOP)
    try:
        got = _projection(page, app_server.url)
        # the whole pair within a projector's 720 px, the page scrolled to its top
        assert len(got["sentences"]) == 2
        assert max(s["rect"]["bottom"] for s in got["sentences"]) <= PROJECTOR_PX, got["sentences"]
        screenshot(page, "layout-desktop-gallery-projection.png")
    finally:
        page.close()


def test_a_malformed_file_s_message_stays(browser, app_server, tmp_path):
    from tests.test_app_browser import upload

    bad = tmp_path / "no-good-column.csv"
    bad.write_text("first,second\na,b\n", encoding="utf-8")
    page = new_page(browser, DESKTOP)
    try:
        page.goto(app_server.url)
        page.wait_for_selector("#probe-run")
        page.get_by_role("tab", name="Score a file").click()
        upload(page, "#file-upload", bad)
        page.click("#file-run")
        page.wait_for_function("() => document.querySelector('#file-summary')?.innerText.includes('not scored')")
        page.wait_for_timeout(12_000)  # longer than a toast stays
        text = page.inner_text("#file-summary")
        assert "The file was not scored." in text and "good-sentence column" in text
        shot(page, "#file-summary", "layout-file-malformed.png")
    finally:
        page.close()
