"""End to end in headless Chromium against the app started in a subprocess (one server for the module).

Screenshots of every tab go to test-artifacts/ (git-ignored). The explorer reads the toy results
fixture (so it has a run with wrong pairs to click) beside the shipped published numbers.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from tests.fixtures.results_small import write_results
from tests.ui_server import CHROMIUM, screenshot, start_server

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.process,
              pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs /usr/bin/chromium (scripts/setup-browser.sh)")]

GOOD, BAD = "These casseroles disgust Kayla.", "These casseroles disgusts Kayla."
TIMEOUT_MS = 240_000


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("browser-app")
    results = write_results(tmp / "results")
    srv = start_server(tmp, {"ACCAPP_RESULTS_DIR": str(results)})
    yield srv
    srv.stop()


@pytest.fixture()
def page(browser, server):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    pg = ctx.new_page()
    pg.set_default_timeout(TIMEOUT_MS)
    dialogs = []
    pg.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    pg.dialogs = dialogs
    pg.goto(server.url)
    pg.wait_for_selector("#probe-run")
    yield pg
    ctx.close()


def textbox(page, elem_id):
    return page.locator(f"#{elem_id} textarea, #{elem_id} input").first


ROWS_JS = ("trs => trs.map(tr => Array.from(tr.querySelectorAll('[role=gridcell], td')).map(td => td.innerText.trim()))"
           ".filter(r => r.length)")


def table_rows(page, elem_id, having: str | None = None):
    """Rendered rows of a Gradio Dataframe (it is virtualised: the rows in view) as lists of cell texts;
    with `having`, first waits for a row whose first cell reads so (a table drawn after a click)."""
    if having is not None:
        page.wait_for_function(f"([h]) => ({ROWS_JS})([...document.querySelectorAll('#{elem_id} [role=row]')])"
                               ".some(r => r[0] === h)", arg=[having])
    return page.eval_on_selector_all(f"#{elem_id} [role=row]", ROWS_JS)


def row_count(page, elem_id) -> int:
    return int(page.get_attribute(f"#{elem_id} [role=grid]", "aria-rowcount")) - 1


def compare(page, good, bad, quick=False):
    textbox(page, "probe-good").fill(good)
    textbox(page, "probe-bad").fill(bad)
    if quick:
        page.get_by_text("Choose the judgment methods").click()
        page.get_by_role("button", name="Only LP, MeanLP, PenLP (fast)").click()
        page.wait_for_function("() => document.querySelectorAll('#probe-methods input:checked').length === 3")
    before = page.inner_text("#probe-summary")
    page.click("#probe-run")
    wait_done(page, before)


def wait_done(page, before=""):
    """Until the probe has finished every stage: a new answer on top and nothing pending."""
    page.wait_for_function(
        "([before]) => { const e = document.querySelector('#probe-summary'); return e && e.querySelector('.acc-verdict') "
        "&& e.innerText !== before && !document.querySelector('#probe-status .acc-pending'); }", arg=[before])


def upload(page, elem, path, tries=3):
    """Attach a file to a gr.File. On a loaded machine the tab may still be settling when the file
    is set and Gradio drops it (seen once in CI: the name never showed); a person would simply
    attach it again, and so does this."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for attempt in range(tries):
        # Only while the drop zone is there: a file that took, however late, replaces it (and
        # waiting for an input that is gone timed out in CI once).
        if page.locator(f"{elem} input[type=file]").count():
            page.set_input_files(f"{elem} input[type=file]", str(path))
        try:
            # textContent, not innerText: Gradio shows the name as two spans (stem, extension), and in a
            # narrow column innerText breaks them onto two lines ("pairs\n.csv", CI of stop 43)
            page.wait_for_function(f"() => (document.querySelector('{elem}')?.textContent || '')"
                                   f".replace(/\\s+/g, '').includes('{path.name}'.replace(/\\s+/g, ''))", timeout=30_000)
            return
        except PlaywrightTimeout:
            if attempt == tries - 1:  # what the page showed, for the next time it happens (CI of stop 43, once)
                shown = page.evaluate(f"() => document.querySelector('{elem}')?.innerText ?? '(no element)'")
                inputs = page.locator(f"{elem} input[type=file]").count()
                raise AssertionError(f"{path.name} never showed in {elem} after {tries} tries; it shows {shown!r}, "
                                     f"{inputs} file input(s)") from None


def test_probe_casserole_pair(page):
    compare(page, GOOD, BAD)
    summary = page.inner_text("#probe-summary")
    assert GOOD in summary and BAD in summary
    assert ("LP prefers the acceptable sentence by 5.1 bits. Where the sentences differ, at “disgust / disgusts”, "
            "the unacceptable sentence is 6.19 bits more surprising; in the spill-over (the next word, “Kayla”), 1.58 "
            "bits less surprising.") in summary
    assert "The methods disagree. The unacceptable sentence has 1 token more (8 vs 7 tokens)" in summary
    assert "One vote per method" in summary
    page.get_by_text("Every judgment: each template and answer order").click()
    rows = table_rows(page, "probe-table", having="LP")  # drawn after the click (read at once, it was empty once)
    by = {(r[0], r[1], r[2]): r for r in rows}
    lp = by[("LP", "-", "")]
    assert float(lp[3]) > float(lp[4]) and lp[7].startswith("prefers good") and lp[6] == "bits"
    assert row_count(page, "probe-table") == 51  # 19 methods: every template, order and ensemble
    page.wait_for_selector("#probe-surprisal .js-plotly-plot")
    ticks = page.eval_on_selector_all("#probe-surprisal .xtick text, #probe-surprisal .x2tick text", "ts => ts.map(t => t.textContent)")
    assert "casseroles" in ticks and "disgusts" in ticks  # words, not SmolLM2's pieces "casser" + "oles"
    page.click("#probe-view input[value='tokens']")
    page.wait_for_function("() => Array.from(document.querySelectorAll('#probe-surprisal .xtick text'))"
                           ".some(t => t.textContent === 'casser')")
    assert "SmolLM2" in page.inner_text("#probe-context") or "BLiMP" in page.inner_text("#probe-context")
    page.get_by_text("Prompts exactly as the model saw them").click()
    page.get_by_role("button", name="Show prompts").click()
    page.wait_for_function("() => (document.querySelector('#probe-prompts textarea')?.value || '').includes('<|im_start|>')")
    prompts = textbox(page, "probe-prompts").input_value()
    assert prompts.count("<|endoftext|><|im_start|>system") == 10 and GOOD in prompts  # 5 templates x 2 sentences
    screenshot(page, "probe.png")


def test_random_blimp_pair(page):
    from accapp.benchmarks import load_benchmark

    page.click("#probe-random")
    page.wait_for_function("() => document.querySelector('#probe-pair-label')?.innerText.includes('BLiMP')")
    good, bad = textbox(page, "probe-good").input_value(), textbox(page, "probe-bad").input_value()
    blimp = load_benchmark("blimp")
    assert ((blimp.good == good) & (blimp.bad == bad)).any()
    compare(page, good, bad, quick=True)
    assert page.locator("#probe-votes table.acc-votes tbody tr").count() == 3
    assert good in page.inner_text("#probe-summary")


def test_user_text_shows_as_text(page):
    evil = "These <img src=x onerror=alert(1)> casseroles disgust Kayla."
    compare(page, evil, BAD, quick=True)
    assert evil in page.inner_text("#probe-summary")
    assert page.locator("img[src=x]").count() == 0 and not page.dialogs
    # the word '<' is drawn as a character, not parsed as a tag
    page.wait_for_function("() => Array.from(document.querySelectorAll('#probe-surprisal .xtick text'))"
                           ".some(t => t.textContent.includes('<'))")
    assert page.locator("#probe-surprisal img").count() == 0


def test_errors_show_as_messages(page):
    compare(page, GOOD, BAD, quick=True)
    textbox(page, "probe-good").fill("   ")
    page.click("#probe-run")
    page.wait_for_function("() => (document.querySelector('#probe-status')?.innerText || '')"
                           ".includes('The acceptable sentence is empty: type a sentence.')")
    assert "Nothing scored" in page.inner_text("#probe-status")
    assert page.inner_text("#probe-summary").strip() == ""  # the old answer is gone, not left to mislead
    assert page.locator("#probe-votes table").count() == 0
    assert "Traceback" not in page.inner_text("body")


def test_explorer_and_one_click_to_the_probe(page):
    page.get_by_role("tab", name="Explore results").click()
    page.wait_for_selector("#explore-phenomenon .js-plotly-plot")
    page.wait_for_function("() => document.querySelector('#explore-phenomenon')?.textContent.includes('Humans (published')")
    # each legend entry's lines (a long one wraps between words to fit a phone, issue 34 item 6)
    legend = " ".join(page.eval_on_selector_all("#explore-phenomenon .legend .legendtext",
                                                "ts => ts.map(t => [...t.querySelectorAll('tspan.line')].map(s => s.textContent)"
                                                ".join(' ') || t.textContent)"))
    assert "Humans (published: Warstadt et al. 2020)" in legend and "LP" in legend
    assert page.locator("#explore-phenomenon .scatterlayer .point").count() >= 12  # the human baseline, 12 phenomena
    assert page.locator("#explore-phenomenon .barlayer .point").count() >= 2  # this run's bars
    assert "toy-model" in page.inner_text("#explore-status")
    rows = table_rows(page, "explore-overall")
    assert any(r[0] == "humans" and "Warstadt et al. 2020" in r[-1] for r in rows)
    screenshot(page, "explore.png")

    page.get_by_role("tab", name="Pairs it gets wrong").click()
    page.wait_for_function("() => document.querySelectorAll('#explore-wrong [role=gridcell]').length > 0")
    first = table_rows(page, "explore-wrong")[0]
    assert first[0] == "adjunct_island" and first[4] == "What had Theresa walked through?"
    screenshot(page, "explore-wrong-pairs.png")
    page.locator("#explore-wrong [role=gridcell]").nth(4).click()
    page.wait_for_function("() => (document.querySelector('#probe-good textarea')?.value || '') === "
                           "'What had Theresa walked through?'")
    assert page.get_by_role("tab", name="Probe a pair").get_attribute("aria-selected") == "true"
    page.wait_for_function("() => document.querySelector('#probe-summary')?.innerText.includes('What had walked Theresa')")
    assert "adjunct_island" in page.inner_text("#probe-pair-label")


def test_score_a_file(page, tmp_path):
    rows = [(f"The dog{'s' if i % 2 else ''} near the house bark{'' if i % 2 else 's'}.",
             f"The dog{'s' if i % 2 else ''} near the house bark{'s' if i % 2 else ''}.") for i in range(20)]
    rows[0] = ("The dog <img src=x onerror=alert(1)> near the house barks.", rows[0][1])
    rows[4] = ("", "The dogs bark.")
    rows[11] = ("The dogs bark.", "x" * 450)
    path = tmp_path / "pairs.csv"
    pd.DataFrame(rows, columns=["good", "bad"]).to_csv(path, index=False)
    page.get_by_role("tab", name="Score a file").click()
    page.wait_for_selector("#file-run", state="visible")  # the tab has rendered
    upload(page, "#file-upload", path)
    for method in ("in_template_lp", "yes_no_prob_comp"):  # keep LP, MeanLP, PenLP: quick
        page.click(f"#file-methods input[name={method}]")
    page.wait_for_function("() => document.querySelectorAll('#file-methods input:checked').length === 3")
    page.click("#file-run")
    page.wait_for_selector("#file-result a", state="visible")
    # the summary shows "Scoring… n of 20 rows done" while it runs: wait for the final one
    page.wait_for_function("() => (document.querySelector('#file-summary')?.innerText || '').includes('Scored ')")
    summary = page.inner_text("#file-summary")
    assert "Scored 18 of 20 rows" in summary and "2 rows could not be scored" in summary
    page.wait_for_function("() => document.querySelectorAll('#file-preview [role=gridcell]').length > 0")
    assert table_rows(page, "file-preview")[0][1] == rows[0][0]  # shown as text
    assert page.locator("img[src=x]").count() == 0 and not page.dialogs
    with page.expect_download() as info:
        page.locator("#file-result a").first.click()
    saved = tmp_path / "result.csv"
    info.value.save_as(saved)
    out = pd.read_csv(saved, keep_default_na=False)
    assert len(out) == 20 and (out["error"] != "").sum() == 2
    assert out.loc[4, "error"].startswith("The acceptable sentence is empty") and "450 characters" in out.loc[11, "error"]
    assert {"lp: verdict", "mean_lp: verdict", "pen_lp: verdict"} <= set(out.columns)
    assert "in_template_lp [1]: verdict" not in out.columns
    screenshot(page, "score-file.png")


def test_about(page):
    page.get_by_role("tab", name="About").click()
    page.wait_for_selector("#about-methods table")
    text = page.inner_text("body")
    for needle in ("Kauf & Ivanova 2023", "Hu & Levy 2023", "Gemma Terms of Use", "SLOR", "Warstadt et al. 2020"):
        assert needle in text
    screenshot(page, "about.png")


def test_server_log_has_no_traceback(server):
    assert "Traceback" not in server.log_tail(200_000)
