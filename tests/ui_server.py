"""Start the app in a subprocess on a free loopback port, for the browser and API tests.

Most tests share one server for the whole session (the ``app_server`` fixture in
tests/conftest.py); a module whose server needs other settings starts its own with
:func:`start_server` and stops it, its temporary folders removed, when the module is done.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
# The tree whose app.py the servers run: this one, or ACCAPP_TEST_APP_ROOT (an older commit's worktree, to
# show that a browser test fails there: issue 34 asks each defect's test to fail on ffc7035 first).
APP_ROOT = Path(os.environ.get("ACCAPP_TEST_APP_ROOT") or ROOT)
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, proc: subprocess.Popen, url: str, log: Path) -> None:
        self.proc, self.url, self.log = proc, url, log

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # what a Space sends; the app then removes its temp files
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self._log_stacks("did not exit within 20 s of SIGTERM")
                self.proc.kill()
                self.proc.wait(timeout=10)

    def _log_stacks(self, why: str) -> None:
        """Append every thread's stack (py-spy, where installed) to the log, so a hang says where it hangs."""
        try:
            dump = subprocess.run(["py-spy", "dump", "--pid", str(self.proc.pid)], capture_output=True, text=True, timeout=30)
            text = dump.stdout or dump.stderr
        except (OSError, subprocess.TimeoutExpired) as e:
            text = f"(no stacks: {e})"
        with open(self.log, "a", encoding="utf-8") as out:
            out.write(f"\n[tests] the app {why}; its threads:\n{text}\n")

    def log_tail(self, n: int | None = 4000) -> str:
        """The log's last n characters; n=None: all of it (a shared server's log holds every test's lines)."""
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace")
            return text[-n:] if n else text
        except OSError:
            return ""


def start_server(tmp: Path, env: dict | None = None, timeout: float = 180.0) -> Server:
    """Run ``python app.py`` with PORT set to a free port; return once the page answers."""
    port = free_port()
    tmp.mkdir(parents=True, exist_ok=True)
    log = tmp / "server.log"
    full_env = dict(os.environ)
    full_env.pop("GRADIO_TEMP_DIR", None)  # the app makes its own private one (set here by other tests)
    full_env.update({
        "PORT": str(port), "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_ANALYTICS_ENABLED": "False",
        "OMP_NUM_THREADS": full_env.get("OMP_NUM_THREADS", "1"), "PYTHONUNBUFFERED": "1",
        "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
    })
    full_env.update(env or {})
    with open(log, "w", encoding="utf-8") as out:
        proc = subprocess.Popen([sys.executable, "app.py"], cwd=APP_ROOT, env=full_env, stdout=out, stderr=subprocess.STDOUT)
    server = Server(proc, f"http://127.0.0.1:{port}/", log)
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the app exited with code {proc.returncode}:\n{server.log_tail()}")
        try:
            with urllib.request.urlopen(server.url + "config", timeout=5) as r:
                if r.status == 200:
                    return server
        except OSError:
            pass
        time.sleep(0.5)
    server.stop()
    raise RuntimeError(f"the app did not answer within {timeout:.0f} s:\n{server.log_tail()}")


API_TIMEOUT_S = 120.0  # gradio_client's requests otherwise give up after httpx's 5 s: too soon on two busy cores


def api_client(url: str):
    """A gradio_client Client on the app at `url` whose requests wait for a busy server."""
    import httpx
    from gradio_client import Client

    return Client(url, verbose=False, httpx_kwargs={"timeout": httpx.Timeout(API_TIMEOUT_S)})


def launch_browser(playwright):
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


def quick_methods(page):
    """LP, MeanLP and PenLP only (the Probe tab's own "fast" button): a probe of a second, where a test
    is about something other than the methods (a click, a label, a link); the default is every method."""
    page.get_by_text("Choose the judgment methods").click()
    page.get_by_role("button", name="Only LP, MeanLP, PenLP (fast)").click()
    page.wait_for_function("() => document.querySelectorAll('#probe-methods input:checked').length === 3")


@contextlib.contextmanager
def app_page(browser, url: str, width: int = 1400, height: int = 1000, timeout_ms: int = 90_000):
    """A page of its own (a fresh browser context) on the app at `url`, its Probe tab drawn; closed after."""
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_default_timeout(timeout_ms)
    page.goto(url)
    page.wait_for_selector("#probe-run")
    try:
        yield page
    finally:
        context.close()


def screenshot(page, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / name
    page.screenshot(path=str(path), full_page=True)
    return path
