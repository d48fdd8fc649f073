"""The attention a CUDA model with one key-value head gets (accapp/models/attention.py): SDPA with the shared
key-value head copied for each query head, never a stride-0 view (pytorch/pytorch#191937 made the
memory-efficient CUDA kernel wrong on such views with a mask). What a CPU can show: the same outputs as
transformers' SDPA attention, on the attention alone and through a tiny Gemma 3 with one key-value head (the
real 270M's arrangement) scoring every method, whose packed passes give masks; the heads it hands SDPA have
their own memory; and which models get it (not on a CPU unless forced, not with several key-value heads)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from transformers.integrations.sdpa_attention import sdpa_attention_forward

from accapp.models import attention
from accapp.models.attention import NAME, own_kv_sdpa, shares_kv_memory, use_own_kv_heads


def _qkv_mask(groups: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(2, 4, 7, 16, generator=g)
    k, v = (torch.randn(2, 4 // groups, 12, 16, generator=g) for _ in range(2))
    mask = torch.rand(2, 1, 7, 12, generator=g) < 0.6
    mask[..., 0] = True  # every query sees one key at least
    return q, k, v, mask


@pytest.mark.parametrize("groups", [4, 2])
def test_the_same_outputs_as_transformers_sdpa_and_keys_of_their_own(groups, monkeypatch):
    module = SimpleNamespace(num_key_value_groups=groups, is_causal=True, training=False)
    q, k, v, mask = _qkv_mask(groups)
    expected, _ = sdpa_attention_forward(module, q, k, v, mask, scaling=0.25)
    seen = []
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def recording(query, key, value, **kwargs):
        seen.append((key.stride(), value.stride()))
        return sdpa(query, key, value, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", recording)
    got, _ = own_kv_sdpa(module, q, k, v, mask, scaling=0.25)
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-6)
    assert all(0 not in stride for pair in seen for stride in pair)  # every head's keys and values in their own memory
    if groups == 4:  # transformers' own repeat hands SDPA a stride-0 view here (as on CUDA): the case mended
        from accapp.models.cpu_speedups import GQA_SWITCH

        monkeypatch.delenv(GQA_SWITCH, raising=False)  # a CPU model's speed-up makes SDPA take the heads as they are
        seen.clear()
        sdpa_attention_forward(module, q, k, v, mask, scaling=0.25)
        assert 0 in seen[0][0]


def test_which_models_get_it():
    from transformers import LlamaConfig

    from accapp.models import get_spec
    from accapp.models.loading import _gguf_path
    from accapp.models.resolve import gguf_auto_config

    gemma = gguf_auto_config(str(_gguf_path(get_spec("gemma3-270m"))), False)  # the real 270M's config
    assert (gemma.num_attention_heads, gemma.num_key_value_heads) == (4, 1) and shares_kv_memory(gemma)
    assert not shares_kv_memory(LlamaConfig(hidden_size=576, num_attention_heads=9, num_key_value_heads=3))  # as SmolLM2-135M
    assert not shares_kv_memory(LlamaConfig(num_attention_heads=4, num_key_value_heads=4))


def test_a_gemma_with_one_kv_head_scores_every_method_the_same_with_it(monkeypatch):
    """Through the model: a tiny Gemma 3 with one key-value head, every method on two pairs (prompts packed
    several to a row, under a 4-D mask), plain SDPA, then this attention: the same scores within float32's
    rounding, with the attention called on masked passes. On a CPU it is given only when forced."""
    from accapp.engine import Engine
    from accapp.methods import method_ids
    from accapp.runner.runner import describe
    from accapp.scoring.api import Pair
    from accapp.scoring.causal import CausalScorer
    from tests import tiny_models

    loaded = tiny_models._build(tiny_models.GEMMA_ID, "gemma3", {**tiny_models.GEMMA_CONFIG, "num_key_value_heads": 1},
                                seed=3)
    pairs = [Pair("The cat sleeps on the mat.", "The cat sleep on the mat."),
             Pair("Who did you say left?", "Who did you say that left?")]
    methods = method_ids("causal")

    def scores() -> list:
        results = Engine(CausalScorer(loaded)).score_pairs(pairs, methods, "en")
        return [(row["method"], row["template"], row["variant"], row["score_good"], row["score_bad"])
                for r in results for row in r.rows]

    plain = scores()
    assert len(plain) > 20
    assert not use_own_kv_heads(loaded.model)  # a CPU keeps plain SDPA
    assert describe(Engine(CausalScorer(loaded)), ["lp"], "en")["attention"] == "sdpa"
    assert loaded.model.config._attn_implementation == "sdpa"
    calls = []

    def counted(module, query, key, value, attention_mask, **kwargs):
        calls.append(attention_mask is not None)
        return own_kv_sdpa(module, query, key, value, attention_mask, **kwargs)

    from transformers import AttentionInterface

    monkeypatch.setitem(AttentionInterface._global_mapping, NAME, counted)
    assert use_own_kv_heads(loaded.model, force=True)
    assert loaded.model.config._attn_implementation == attention.NAME
    own = scores()
    assert any(calls)  # masked passes went through it
    assert describe(Engine(CausalScorer(loaded)), ["lp"], "en")["attention"] == NAME  # a run's manifest says so
    assert [s[:3] for s in own] == [s[:3] for s in plain]
    for a, b in zip(own, plain):
        assert a[3] == pytest.approx(b[3], abs=1e-4) and a[4] == pytest.approx(b[4], abs=1e-4), a[:3]


def test_a_model_with_several_kv_heads_keeps_plain_sdpa(tiny_llama):
    assert not use_own_kv_heads(tiny_llama.model, force=True)
    assert tiny_llama.model.config._attn_implementation == "sdpa"
