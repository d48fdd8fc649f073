"""The Probe tab as a linguist meets it (issue 18), in headless Chromium against the app with the
shipped precomputed results (so the reliability flags are the real ones): the casserole answer,
an attractor pair on two models side by side, identical sentences, a CLiMP pair with Gemma, the
character counter and refusal, Stop, and the 390-px phone layout. Screenshots in test-artifacts/."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_app_browser import textbox, wait_done
from tests.ui_server import CHROMIUM, quick_methods, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.process,
              pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs /usr/bin/chromium (scripts/setup-browser.sh)")]

TIMEOUT_MS = 300_000
ATTRACTOR = ("The key to the cabinets is on the table.", "The key to the cabinets are on the table.")
BA = ("有个学生的最好的朋友把坡卖了。", "有个学生的最好的朋友被坡卖了。")  # CLiMP ba_construction, pair 0


@pytest.fixture(scope="module")
def server(app_server):
    return app_server  # the session's shared server (tests/conftest.py): the shipped results in precomputed/


def open_page(browser, server, width=1400):
    ctx = browser.new_context(viewport={"width": width, "height": 1000})
    pg = ctx.new_page()
    pg.set_default_timeout(TIMEOUT_MS)
    pg.goto(server.url)
    pg.wait_for_selector("#probe-run")
    return ctx, pg


@pytest.fixture()
def page(browser, server):
    ctx, pg = open_page(browser, server)
    yield pg
    ctx.close()


def pick(page, elem_id, label_part):
    """Choose the option of a Gradio dropdown whose label contains label_part."""
    page.click(f"#{elem_id} input")
    page.locator("ul[role=listbox] li", has_text=label_part).first.click()


def run(page, good, bad):
    before = page.inner_text("#probe-summary")
    textbox(page, "probe-good").fill(good)
    textbox(page, "probe-bad").fill(bad)
    page.click("#probe-run")
    wait_done(page, before)
    page.wait_for_selector("#probe-surprisal .xtick text")


def vote_rows(page, elem_id="probe-votes"):
    return page.eval_on_selector_all(f"#{elem_id} table.acc-votes tbody tr",
                                     "trs => trs.map(tr => Array.from(tr.querySelectorAll('td')).map(td => td.innerText.trim()))")


def test_attractor_pair_on_two_models_side_by_side(page):
    pick(page, "probe-model2", "Gemma 3 270M")
    run(page, *ATTRACTOR)
    page.wait_for_selector("#probe-second", state="visible")
    for sid, name in (("probe-summary", "SMOLLM2"), ("probe-summary-2", "GEMMA")):
        text = page.inner_text(f"#{sid}")
        assert name in text.upper() and "LP prefers the" in text and "One vote per method" in text
    for plot in ("probe-surprisal", "probe-surprisal-2"):
        page.wait_for_selector(f"#{plot} .js-plotly-plot")
    ticks = page.eval_on_selector_all("#probe-surprisal .xtick text", "ts => ts.map(t => t.textContent)")
    assert "cabinets" in ticks
    # A/B prompting is flagged and gets no vote on both models, each for its own measured reason:
    # SmolLM2 answers "A" to nearly every BLiMP prompt; Gemma (the authors' answer reading, 67 % "A")
    # is right on 50.6 % of BLiMP pairs, an interval that includes chance
    why = {"probe-votes": "unreliable: answers A to 99.", "probe-votes-2": "includes chance, 50 %"}
    for votes in ("probe-votes", "probe-votes-2"):
        ab = next(r for r in vote_rows(page, votes) if r[0].startswith("A/B prompting"))
        assert "not counted" in ab[1] and "unreliable" in ab[5] and why[votes] in ab[5], ab
        lp = next(r for r in vote_rows(page, votes) if r[0].startswith("LP"))
        assert lp[5].endswith("%") and "unreliable" not in lp[5]
    diff = page.inner_text("#probe-diff")
    assert "where they differ" in diff
    screenshot(page, "probe-two-models.png")


def test_identical_sentences_warn(page):
    quick_methods(page)  # LP's words are what is tested
    run(page, "The dogs bark.", "The dogs bark.")
    summary = page.inner_text("#probe-summary")
    assert "LP cannot tell the two sentences apart" in summary and "The two sentences are identical" in summary
    screenshot(page, "probe-identical.png")


def test_chinese_pair_with_gemma_in_words(page):
    pick(page, "probe-model", "Gemma 3 270M")
    quick_methods(page)
    run(page, *BA)
    summary = page.inner_text("#probe-summary")
    assert "LP prefers the" in summary and "looks Chinese" not in summary
    ticks = page.eval_on_selector_all("#probe-surprisal .xtick text", "ts => ts.map(t => t.textContent)")
    # Chinese words by jieba: words of several characters, every character in one; a Gemma token that
    # crosses two of jieba's words joins them into one unit (学生的: segment.merge_crossing)
    assert "把" in "".join(ticks) and any(len(t) > 1 for t in ticks) and any("学生" in t for t in ticks)
    lp = next(r for r in vote_rows(page) if r[0].startswith("LP"))
    assert "%" in lp[5]  # Gemma's CLiMP run
    screenshot(page, "probe-climp-gemma.png")
    pick(page, "probe-model", "SmolLM2")  # an English-only model on a Chinese pair
    run(page, *BA)
    assert "This pair looks Chinese, a language this model was not made for" in page.inner_text("#probe-summary")


def test_counter_refusal_and_stop(page):
    textbox(page, "probe-good").fill("a" * 401)
    page.wait_for_selector("#probe-counter .acc-over")
    assert "401 / 400 characters (too long" in page.inner_text("#probe-counter")
    assert len(textbox(page, "probe-good").input_value()) == 401  # nothing cut silently
    page.click("#probe-run")
    page.wait_for_function("() => (document.querySelector('#probe-status')?.innerText || '').includes('the limit is 400')")
    # Stop after the first stage: its answer stays, the rest is not computed, and the page says so
    # a pair no other test probes: a repeat answers whole from the app's cache, with no stage to stop
    textbox(page, "probe-good").fill("These casseroles disgust Kayla every day.")
    textbox(page, "probe-bad").fill("These casseroles disgusts Kayla every day.")
    page.click("#probe-run")
    page.wait_for_function("() => document.querySelector('#probe-summary .acc-verdict') && "
                           "(document.querySelector('#probe-status')?.innerText || '').includes('Still computing')")
    page.click("#probe-stop")
    page.wait_for_function("() => (document.querySelector('#probe-status')?.innerText || '').includes('Stopped')")
    assert "LP prefers the" in page.inner_text("#probe-summary")


def test_phone_layout(browser, server):
    ctx, page = open_page(browser, server, width=390)
    try:
        quick_methods(page)  # three cards are enough to see the layout
        run(page, "These casseroles disgust Kayla.", "These casseroles disgusts Kayla.")
        assert page.eval_on_selector("#probe-votes table.acc-votes thead", "e => getComputedStyle(e).display") == "none"
        widths = page.eval_on_selector_all("#probe-votes table.acc-votes td", "tds => tds.map(td => td.getBoundingClientRect().width)")
        assert min(widths) > 200  # cards: each field the card's width, not a one-character column
        tabs = page.eval_on_selector_all("[role=tab]", "ts => ts.map(t => t.getBoundingClientRect().right)")
        assert tabs and max(tabs) <= 390 + 1  # every tab visible
        label = page.eval_on_selector("#probe-votes .acc-method", "e => parseFloat(getComputedStyle(e).fontSize)")
        assert label >= 14
        screenshot(page, "probe-phone.png")
    finally:
        ctx.close()


def test_server_log_has_no_traceback(server):
    assert "Traceback" not in server.log_tail(None)
