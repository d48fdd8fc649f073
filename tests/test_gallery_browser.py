"""The Teaching gallery in headless Chromium (issue 19, item 4): the cards, the projection view,
and "Try it" filling the Probe tab and running the probe. Screenshots in test-artifacts/."""

from __future__ import annotations

from pathlib import Path

import pytest

from accapp.service import gallery as data
from tests.test_app_browser import textbox, wait_done
from tests.ui_server import CHROMIUM, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.process,
              pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs /usr/bin/chromium (scripts/setup-browser.sh)")]


@pytest.fixture(scope="module")
def page(app_server, browser):  # the session's shared server and Chromium (tests/conftest.py)
    pg = browser.new_page(viewport={"width": 1400, "height": 1000})
    pg.set_default_timeout(300_000)
    pg.goto(app_server.url)
    pg.wait_for_selector("#probe-run")
    yield pg
    pg.close()


def test_gallery_cards_projection_and_try_it(page):
    first = data.load()[0]
    page.click("button[role=tab]:has-text('Teaching gallery')")
    page.wait_for_selector("#gallery-cards", state="visible")
    assert first["explanation"] in page.inner_text("#gallery-cards")
    screenshot(page, "gallery_cards.png")

    page.click("#gallery-projection-toggle input")
    page.wait_for_selector("#gallery-big", state="visible")
    big = page.inner_text("#gallery-big")
    assert first["good"] in big and first["bad"] in big
    screenshot(page, "gallery_projection.png")

    page.click("#gallery-try")  # fills the Probe tab, switches to it and runs the probe
    page.wait_for_selector("#probe-run", state="visible")
    wait_done(page)
    assert textbox(page, "probe-good").input_value() == first["good"]
    assert textbox(page, "probe-bad").input_value() == first["bad"]
    assert "prefers the acceptable sentence" in page.inner_text("#probe-summary")  # LP's verdict on the casserole pair
    screenshot(page, "gallery_try_it.png")
