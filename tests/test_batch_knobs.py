"""The pass size has one name, ``batch_size`` (issue 33, part 3: accapp/settings.py says what each
size means): the CLI's ``--batch-size`` and ``build_engine(batch_size=...)`` reach the causal and the
masked scorer alike, where it sets the sequences one forward pass takes; unset, both take
``pass_size.DEFAULT_BATCH`` on the CPU. Fast: tiny random-weight models, no real one."""

from __future__ import annotations

import argparse
from types import SimpleNamespace

import pytest
from masked_fixtures import tiny_bert, wordpiece_tokenizer
from tiny_models import tiny_llama

from accapp.engine import build_engine, make_scorer
from accapp.models import get_spec
from accapp.scoring.pass_size import DEFAULT_BATCH, DEFAULT_HEAD_ROWS


@pytest.fixture(scope="module")
def llama():
    return tiny_llama()


@pytest.fixture(scope="module")
def bert_lm():
    tok = wordpiece_tokenizer()
    return SimpleNamespace(spec=get_spec("bert-base-cased"), model=tiny_bert(tok), tokenizer=tok, device="cpu", dtype="fp32",
                           quantization=None)


def test_batch_size_reaches_both_scorers(llama, bert_lm):
    causal, masked = build_engine(llama.spec.id, lm=llama, batch_size=8).scorer, make_scorer(bert_lm, batch_size=5)
    assert (causal.batch_size, masked.batch_size) == (8, 5)
    assert (make_scorer(llama).batch_size, make_scorer(llama).head_chunk_rows) == (DEFAULT_BATCH, DEFAULT_HEAD_ROWS)
    assert make_scorer(bert_lm).batch_size == DEFAULT_BATCH == 64  # the measured CPU figure (docs/performance.md)
    one = make_scorer(bert_lm, batch_size=1)
    one.score_sentences(["the cat sat on the mat"])
    assert one.forward_passes == one.copies_scored > 1  # one masked copy a pass: the size is what the passes take


def test_the_cli_batch_size_reaches_the_scorer(llama, monkeypatch):
    """--batch-size through the CLI's engine_from_args (the model's weights handed over, not loaded)."""
    import accapp.models.loading as loading
    from accapp.cli import engine_from_args

    monkeypatch.setattr(loading, "load_model", lambda spec, *args, **kwargs: llama)
    args = argparse.Namespace(model=llama.spec.id, dtype="fp32", quantization=None, language=None, in_template_scope="whole",
                              batch_size=3, convention=None, trust_remote_code=False, max_memory="64GB")
    assert engine_from_args(args).scorer.batch_size == 3
