"""Shared fixtures: the real offline models, loaded once per test session."""

from __future__ import annotations

import pytest


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
    from accapp.runner.datasets import load_benchmark

    return load_benchmark("blimp")


@pytest.fixture(scope="session")
def climp():
    from accapp.runner.datasets import load_benchmark

    return load_benchmark("climp")


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
