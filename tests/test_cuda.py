"""The CUDA path; skipped cleanly where there is no GPU (CI has none)."""

import pytest
import torch

pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def test_auto_device_is_cuda():
    from accapp.models.device import pick_device

    assert pick_device() == "cuda"


@pytest.mark.slow
def test_smollm_nf4_on_cuda_scores_casserole():
    from accapp.engine import Engine
    from accapp.models.loading import load_model
    from accapp.scoring.causal import CausalScorer

    lm = load_model("smollm2-135m-instruct", "fp32", "nf4")
    assert str(next(lm.model.parameters()).device).startswith("cuda")
    res = Engine(CausalScorer(lm)).score_pair("These casseroles disgust Kayla.", "These casseroles disgusts Kayla.", ["lp"])
    assert res.rows[0]["verdict"] == "good"


def test_cpu_pick_device_when_asked():
    from accapp.models.device import pick_device

    assert pick_device("cpu") == "cpu"
