"""The model list says which models can load here (issue 18, item 6)."""

from __future__ import annotations

from accapp.models import availability as av
from accapp.models import get_spec
from accapp.service.catalog import model_choices


def test_offline_and_unreachable_models_are_labelled(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # as on a machine without the hub
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))  # an empty cache
    av.hub_reachable.cache_clear()
    try:
        assert av.hub_reachable() is False
        assert av.availability(get_spec("smollm2-135m-instruct")) == (True, "offline")
        ok, why = av.availability(get_spec("gpt2"))
        assert not ok and "hub is unreachable" in why
        labels = dict((i, label) for label, i in model_choices())
        assert labels["gemma3-270m"].endswith("· offline") and labels["gpt2"].startswith("⛔ ")
    finally:
        av.hub_reachable.cache_clear()
