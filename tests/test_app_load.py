"""Load on loopback: 20 gradio_client users x 10 probes each against the real app
(bench/load_test.py, which prints p50/p95): every request answered, none failed. The app is the
session's shared server (tests/conftest.py); the load test runs as a client process of its own."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.process]
ROOT = Path(__file__).resolve().parent.parent


def test_twenty_clients_ten_probes_each_all_answered(app_server):
    proc = subprocess.run(
        [sys.executable, "bench/load_test.py", "--clients", "20", "--probes", "10", "--methods", "lp,mean_lp,pen_lp",
         "--deadline", "600", "--url", app_server.url],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )
    print(proc.stdout[-2000:])
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    assert proc.returncode == 0, (res, proc.stderr[-3000:])
    assert res["answered"] == res["requests"] == 200 and res["errors"] == 0
    assert res["p95_s"] >= res["p50_s"] > 0
