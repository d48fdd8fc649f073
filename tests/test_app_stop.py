"""SIGTERM (a Space or a container stopping) while a probe is scoring: the app exits with status 0 and
removes its temporary folder. Before, interpreter shutdown with the model thread inside torch aborted
("terminate called without an active exception", status -6) and left the folder behind."""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.ui_server import start_server

pytestmark = [pytest.mark.slow, pytest.mark.process]
GOOD, BAD = "The key to the cabinets is on the table.", "The key to the cabinets are on the table."


def test_sigterm_mid_probe_exits_cleanly(tmp_path):
    from tests.ui_server import api_client

    srv = start_server(tmp_path, {"ACCAPP_SPACES": "0", "ACCAPP_PRELOAD": "0"})  # Gemma only: no SmolLM2 warmed for nothing
    try:
        url = srv.url.rstrip("/")

        def probe():  # every method on Gemma: its stages run for tens of seconds on two cores
            try:
                r = httpx.post(url + "/gradio_api/call/probe", json={"data": [GOOD, BAD, "gemma3-270m", None]}, timeout=60)
                httpx.get(url + "/gradio_api/call/probe/" + json.loads(r.text)["event_id"], timeout=300)
            except httpx.HTTPError:
                pass  # the app went away mid-answer: what is tested is how it went

        threading.Thread(target=probe, daemon=True).start()
        client, deadline = api_client(srv.url), time.monotonic() + 180
        while "gemma3-270m" not in [m["id"] for m in client.predict(api_name="/status")["models"]]:
            assert time.monotonic() < deadline, srv.log_tail()
            time.sleep(0.2)
        time.sleep(1.0)  # scoring now
    finally:
        srv.stop()
    log = srv.log_tail(None)
    assert srv.proc.returncode == 0, log
    assert "stopping (SIGTERM): the model thread" in log, log
    folder = re.search(r"\[accapp\] uploads and result files go to (\S+)", log).group(1)
    assert not Path(folder).exists(), log
