"""The CPU speed-ups (accapp/models/cpu_speedups.py) change no number: with and without them,
every method's every score for a pair is bitwise the same, on both embedded models (slow
tier) and on tiny random-weight models of both architectures (tests/tiny_models.py)."""

import importlib
import inspect

import pytest

from accapp.engine import Engine
from accapp.methods import method_ids
from accapp.models.cpu_speedups import GATED_MLPS, gated_mlps, is_silu, without_cpu_speedups
from accapp.scoring.causal import CausalScorer

MODULES = {"LlamaMLP": "llama", "Gemma3MLP": "gemma3", "Qwen2MLP": "qwen2"}


def test_every_listed_mlp_is_the_gated_form_the_in_place_forward_computes():
    assert set(MODULES) == GATED_MLPS
    for cls, module in MODULES.items():
        mlp = getattr(importlib.import_module(f"transformers.models.{module}.modeling_{module}"), cls)
        body = "".join(inspect.getsource(mlp.forward).split())
        assert "self.down_proj(self.act_fn(self.gate_proj(x))*self.up_proj(x))" in body, cls


@pytest.mark.slow
def test_smollm_activation_is_computed_in_place(smollm, gemma):
    """SmolLM2's "silu" is transformers' own SiLUActivation, not torch.nn.SiLU: the in-place
    activation must recognise it (Gemma 3's tanh GELU keeps its own, only the product is in place)."""
    assert all(is_silu(m.act_fn) for m in gated_mlps(smollm.model))
    assert not any(is_silu(m.act_fn) for m in gated_mlps(gemma.model))


def _scores(lm, pair):
    result = Engine(CausalScorer(lm)).score_pair(*pair, method_ids("causal"))
    return [(r["method"], r["template"], r["variant"], r["score_good"], r["score_bad"]) for r in result.rows]


def test_tiny_models_activation_is_computed_in_place(tiny_llama, tiny_gemma):
    """As on the real models: Llama's "silu" runs in place, Gemma 3's tanh GELU keeps its own."""
    assert all(is_silu(m.act_fn) for m in gated_mlps(tiny_llama.model))
    assert not any(is_silu(m.act_fn) for m in gated_mlps(tiny_gemma.model))


@pytest.mark.parametrize("name", ["tiny_llama", "tiny_gemma", pytest.param("smollm", marks=pytest.mark.slow),
                                  pytest.param("gemma", marks=pytest.mark.slow)])
def test_speedups_leave_every_score_bitwise_equal(name, request):
    """Every method's every score, with and without the speed-ups, on both architectures
    (tiny random models in the fast tier, the real ones in the slow tier)."""
    lm = request.getfixturevalue(name)
    pair = ("The cats that the dog chased sleep.", "The cats that the dog chased sleeps.")
    fast = _scores(lm, pair)
    with without_cpu_speedups(lm.model) as undone:
        assert undone == lm.model.config.num_hidden_layers  # every layer's MLP ran in place
        plain = _scores(lm, pair)
    assert fast == plain
    with without_cpu_speedups(lm.model) as again:
        assert again == undone  # back on after the block
