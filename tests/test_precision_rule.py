"""The precision a model loads in by default (accapp.models.budget.default_precisions): a pure function of
its parameter count and the device, checked on the CPU. On CUDA a model under 1B parameters loads in
fp32 (bf16 stays a choice), from 1B in 4-bit NF4; the CPU's rule is unchanged."""

from __future__ import annotations

import pytest

from accapp.models import get_spec
from accapp.models.budget import default_precisions, gpu_budget, plan_load
from accapp.models.memory import GiB

B = 1_000_000_000


@pytest.mark.parametrize("params", [135_000_000, 270_000_000, B - 1])
def test_under_1b_on_cuda_loads_in_fp32_with_or_without_bf16(params):
    for half in ("bf16", "fp16"):
        for nf4 in (True, False):
            assert default_precisions(params, "cuda", B, half, nf4) == [("fp32", None)]


@pytest.mark.parametrize("params", [B, 1_500_000_000, 8_000_000_000])
def test_from_1b_on_cuda_loads_in_4_bit_else_half_precision(params):
    assert default_precisions(params, "cuda", B, "bf16", True) == [("bf16", "nf4")]
    assert default_precisions(params, "cuda", B, "bf16", False) == [("bf16", None)]
    assert default_precisions(params, "cuda", B, "fp16", False) == [("fp32", None)]  # fp16 overflows (docs/gpu.md)


def test_the_cpu_rule_is_unchanged():
    assert default_precisions(135_000_000, "cpu", B) == [("fp32", None)]
    assert default_precisions(B, "cpu", B) == [("fp32", None)]
    assert default_precisions(8 * B, "cpu", B, "bf16", True) == [("bf16", None), ("bf16", "nf4")]
    assert default_precisions(8 * B, "cpu", B, "bf16", False) == [("bf16", None)]


def test_the_threshold_is_the_setting_passed():
    assert default_precisions(600_000_000, "cuda", 500_000_000, "bf16", True) == [("bf16", "nf4")]
    assert default_precisions(600_000_000, "cuda", 700_000_000, "bf16", True) == [("fp32", None)]


def test_plan_load_follows_the_rule_and_keeps_an_explicit_bf16(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    small = get_spec("smollm2-135m-instruct")
    plan = plan_load(small, gpu_budget(24 * GiB), device="cuda")
    assert (plan.dtype, plan.quantization) == ("fp32", None)
    plan = plan_load(small, gpu_budget(24 * GiB), "bf16", device="cuda")
    assert (plan.dtype, plan.quantization) == ("bf16", None)
