"""Human ratings beside the model, end to end in headless Chromium (issue 36): a 20-pair file with
ratings is scored in the app; the summary shows r with its interval, the scatter is drawn, a click on
one of its points opens that pair in the probe, and so does a pair of the ratings' table. In Explore's
"Human ratings" view a click on a point of the built-in LI set opens its pair with the humans' z-scores."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from tests.test_app_browser import TIMEOUT_MS, table_rows, upload
from tests.ui_server import CHROMIUM, app_page, quick_methods, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.process,
              pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs /usr/bin/chromium (scripts/setup-browser.sh)")]


@pytest.fixture(scope="module")
def page(app_server, browser):  # the session's shared server and Chromium (tests/conftest.py)
    with app_page(browser, app_server.url, timeout_ms=TIMEOUT_MS) as pg:
        quick_methods(pg)  # the probe the pairs it opens starts: LP, MeanLP, PenLP (a second, not every method's ten)
        yield pg


# The most isolated point of a plotly scatter (so the click can hit no other), its pair and its place on
# the page: plotly's own axes (l2p) turn the point's data into pixels inside the plot area.
ISOLATED_POINT = """(id) => {
  const gd = document.querySelector('#' + id + ' .js-plotly-plot');
  if (!gd || !gd._fullLayout || !gd.calcdata || !gd.calcdata[0] || gd.getAttribute('data-click-hook') !== '1') return null;
  const cd = gd.calcdata[0], t = gd._fullData[0], L = gd._fullLayout, box = gd.getBoundingClientRect();
  const xs = cd.map((p) => box.left + L._size.l + L.xaxis.l2p(p.x));
  const ys = cd.map((p) => box.top + L._size.t + L.yaxis.l2p(p.y));
  let best = -1, far = -1;
  for (let i = 0; i < xs.length; i++) {
    let near = Infinity;
    for (let j = 0; j < xs.length; j++) if (j !== i) near = Math.min(near, Math.hypot(xs[i] - xs[j], ys[i] - ys[j]));
    if (near > far) { far = near; best = i; }
  }
  const d = t.customdata[cd[best].i === undefined ? best : cd[best].i];
  return {x: xs[best], y: ys[best], human: cd[best].x, pair: String(d[0]), good: String(d[1]), bad: String(d[2]), gap: far};
}"""


def open_subtab(page, scope: str, name: str) -> None:
    """Click the tab `name` inside `scope`, through the tabs' overflow menu ("•••") when it is there."""
    tab = page.locator(f"{scope} button[role=tab]", has_text=name)
    if tab.count() and tab.first.is_visible():
        tab.first.click()
        return
    page.locator(f"{scope} .overflow-menu button").first.click()
    page.locator(f"{scope} .overflow-dropdown button", has_text=name).first.click()


def wait_probe_done(page) -> None:
    """The probe's headline is drawn and no stage is still computing (so no probe is left running when the
    shared server stops)."""
    page.wait_for_function("() => (document.querySelector('#probe-summary')?.innerText || '').includes('One vote per method')"
                           " && !(document.querySelector('#probe-status')?.innerText || '').includes('Still computing')"
                           " && !document.querySelector('#probe-status .acc-pending')")


def click_a_point(page, scatter_id: str) -> dict:
    """Click the most isolated point of the scatter; returns its pair (customdata). The view may be drawn
    again meanwhile (Explore's own render ends and the ratings view follows its model): while it is, Gradio's
    progress overlay covers the plot and the click would reach nothing, so the point is found again until
    plotly shows its hover label under the mouse (it answers a click on the point it hovers)."""
    page.locator(f"#{scatter_id}").scroll_into_view_if_needed()
    for _ in range(20):
        page.wait_for_function(f"() => ({ISOLATED_POINT})('{scatter_id}') !== null")
        point = page.evaluate(ISOLATED_POINT, scatter_id)
        assert point["gap"] > 6, point  # no other point within 6 px
        page.mouse.move(point["x"], point["y"])
        try:
            page.wait_for_selector(f"#{scatter_id} .hoverlayer .hovertext", state="attached", timeout=5_000)
        except Exception:  # noqa: BLE001 - covered while drawn again: find the point anew
            page.mouse.move(0, 0)
            continue
        page.mouse.click(point["x"], point["y"])
        return point
    raise AssertionError(f"no hover label on {scatter_id}'s point after 20 tries")


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
    page.wait_for_selector("#file-ratings-scatter .js-plotly-plot .main-svg", state="visible")  # the plotly scatter
    page.wait_for_function("() => document.querySelectorAll('#file-ratings-pairs [role=gridcell]').length > 0")
    first = table_rows(page, "file-ratings-pairs")[0]
    assert first[1] in set(rows["good"])
    screenshot(page, "score-file-ratings.png")
    # a click on a point of the scatter: that pair in the probe, the probe's tab shown
    point = click_a_point(page, "file-ratings-scatter")
    hit = rows[(rows["good"] == point["good"]) & (rows["bad"] == point["bad"])]
    assert len(hit) == 1, point  # the point is one of the file's pairs, at its human difference
    pair = hit.iloc[0]
    assert point["human"] == pytest.approx(pair["rating_good"] - pair["rating_bad"], abs=1e-9)
    page.wait_for_function("([g, b]) => (document.querySelector('#probe-good textarea')?.value || '') === g && "
                           "(document.querySelector('#probe-bad textarea')?.value || '') === b", arg=[pair["good"], pair["bad"]])
    assert page.get_by_role("tab", name="Probe a pair").get_attribute("aria-selected") == "true"
    # the pair's line names the file's pair and stays once the probe has run (it was cleared by the probe's
    # first stage, and a wait that polled too seldom missed it: CI of stop 42)
    wait_probe_done(page)
    line = page.inner_text("#probe-pair-label")
    assert f"your file · pair {point['pair']} · humans: difference" in line, line
    screenshot(page, "score-file-ratings-point-opened.png")
    # and a row of the pairs' table
    page.get_by_role("tab", name="Score a file").click()
    page.locator("#file-ratings-pairs [role=gridcell]").nth(1).click()
    page.wait_for_function("([g]) => (document.querySelector('#probe-good textarea')?.value || '') === g", arg=[first[1]])
    assert page.get_by_role("tab", name="Probe a pair").get_attribute("aria-selected") == "true"
    wait_probe_done(page)


def test_a_point_of_the_builtin_set_opens_with_the_humans(page):
    """Explore -> Human ratings (LI): a click on a point opens the pair in the probe with the humans'
    z-scores beside it (from assets/ratings/li.parquet), in the pair's line and beside the verdict, with
    the model's precomputed LP difference for the pair (precomputed/ratings/)."""
    root = Path(__file__).resolve().parents[1]
    li = pd.read_parquet(root / "assets" / "ratings" / "li.parquet").set_index("pair_id")
    page.get_by_role("tab", name="Explore results").click()
    open_subtab(page, "#tab-explore", "Human ratings")
    page.wait_for_function("() => (document.querySelector('#ratings-summary')?.innerText || '').includes('Pearson r')")
    model = "smollm2-135m-instruct"  # the smaller embedded model: the probe the click starts is quick
    page.click("#ratings-model input")
    page.locator("[role=option]", has_text=model).first.click()
    page.wait_for_function("([m]) => (document.querySelector('#ratings-summary')?.innerText || '').includes(m)", arg=[model])
    point = click_a_point(page, "ratings-scatter")
    row = li.loc[point["pair"]]
    page.wait_for_function("([g]) => (document.querySelector('#probe-good textarea')?.value || '') === g", arg=[row["good"]])
    assert page.input_value("#probe-bad textarea") == row["bad"]
    page.wait_for_function("([w]) => (document.querySelector('#probe-pair-label')?.innerText || '').includes(w)",
                           arg=[f"acceptable z = {row['rating_good']:+.2f}"])  # drawn after the boxes (as above)
    label = page.inner_text("#probe-pair-label")
    assert f"acceptable z = {row['rating_good']:+.2f}" in label and f"unacceptable z = {row['rating_bad']:+.2f}" in label
    # the page still shows the last test's probe (a rated file's pair) until this one's headline is drawn
    page.wait_for_function("([p]) => (document.querySelector('#probe-summary')?.innerText || '').includes(p)",
                           arg=[f"Humans (LI pair {point['pair']})"])
    wait_probe_done(page)
    head = page.inner_text("#probe-summary")
    run = pd.read_parquet(root / "precomputed" / "ratings" / f"{model}__li.parquet")
    lp = run[(run["pair_id"] == point["pair"]) & (run["method"] == "lp")].iloc[0]
    assert f"Humans (LI pair {point['pair']})" in head and f"acceptable z = {row['rating_good']:+.2f}" in head
    assert f"LP difference {lp['score_good'] - lp['score_bad']:+.2f} nats" in head
    screenshot(page, "probe-rated-pair-humans.png")
