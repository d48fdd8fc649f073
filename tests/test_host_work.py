"""The host's work around the model, made cheaper without changing a number (fast tier but one process):
the collector kept off a loaded model's objects (and everything thawed at exit), an ensemble's members
scored once a pair, the rows a projection needs gathered without a copy of the whole pass (straight into
memory the next projection and call reuse), a sentence's sum taken as np.sum takes it."""

from __future__ import annotations

import gc
import subprocess
import sys
import weakref
from pathlib import Path

import numpy as np
import pytest
import torch

from accapp.engine import Engine
from accapp.methods import formulas as F
from accapp.methods import method_ids
from accapp.methods.base import CallResults, score_of
from accapp.methods.ensembles import Ensemble
from accapp.methods.prompting import YesNoProbComp
from accapp.models import heap
from accapp.scoring import causal
from accapp.scoring.api import Pair
from accapp.scoring.causal import CausalScorer, _Waiting, one_context, rows_among


class _Node:
    def __init__(self) -> None:
        self.other = None


def _cycle() -> weakref.ref:
    """Two objects that hold each other and nothing else: only the cyclic collector frees them."""
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    return weakref.ref(a)


def test_settled_objects_are_skipped_by_the_collector_until_released():
    try:
        alive = _cycle()
        heap.settle()  # as after a model's load: the cycle is garbage, and collected first
        assert alive() is None and gc.get_freeze_count() > 0
        kept = _cycle()
        gc.freeze()  # as a cycle a load left reachable, then dropped while frozen
        gc.collect()
        assert kept() is not None  # a full collection no longer walks it
        heap.release()  # a model forgotten: back under the collector, collected
        assert kept() is None and gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


EXIT_WITH_A_FROZEN_CONNECTION = """
import duckdb
from accapp.models import heap
class Holder: pass
h = Holder(); h.me = h; h.con = duckdb.connect(); h.rel = h.con.sql("select 42 as x"); h.rel.fetchall()
heap.settle()  # as after a model's load: the connection's cycle frozen with the rest
del h
"""


@pytest.mark.process
def test_a_connection_frozen_with_a_load_is_freed_at_exit():
    """DuckDB's objects in a cycle frozen by a load are finalised when the interpreter exits (without the
    thaw at exit, nanobind reports 29 leaked instances: the shared app's check in tests/conftest.py)."""
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, "-c", EXIT_WITH_A_FROZEN_CONNECTION], cwd=root, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "leaked" not in proc.stderr, proc.stderr[:500]


def test_an_ensemble_reuses_its_members_scores(tiny_llama):
    """Each ensemble votes with the pair's own Yes/No prob comp and in-template LP rows: the four ensembles
    and the methods themselves make those scores once a pair, not five times, and the votes are the rows'."""
    made = []
    inner = YesNoProbComp.score

    def counted(self, pair, ctx, res):
        made.append(pair)
        return inner(self, pair, ctx, res)

    pairs = [Pair("The cat sleeps.", "The cat sleep."), Pair("Some dogs were barking.", "Some dogs was barking.")]
    YesNoProbComp.score = counted
    try:
        out = Engine(CausalScorer(tiny_llama)).score_pairs(pairs, method_ids("causal"), "en")
    finally:
        YesNoProbComp.score = inner
    assert sorted(map(id, made)) == sorted(map(id, pairs))  # once a pair, every ensemble included
    ensembles = [m for m in method_ids("causal") if m.startswith("ens_")]
    assert len(ensembles) == 4
    for result in out:
        rows = {(s.method, s.template): s for s in result.scores}
        p_votes = sum(s.strict_verdict == "good" for (m, _), s in rows.items() if m == "yes_no_prob_comp")
        l_votes = sum(s.strict_verdict == "good" for (m, _), s in rows.items() if m == "in_template_lp")
        for e in ensembles:
            assert (rows[(e, "-")].answers.p_votes, rows[(e, "-")].answers.l_votes) == (p_votes, l_votes)


def test_an_ensemble_given_plain_results_makes_its_members_itself(tiny_llama):
    """With a plain results function (no record of what was scored), as score_strings and older callers
    give, an ensemble scores its members itself, and says what it says with the record."""
    engine = Engine(CausalScorer(tiny_llama))
    pair, ctx, ens = Pair("The cat sleeps.", "The cat sleep."), engine.context("en"), Ensemble("ens_mix_l3")
    results = engine.scorer.execute(list(dict.fromkeys(ens.requests(pair, ctx))))
    plain = ens.score(pair, ctx, results.__getitem__)
    recorded = CallResults(results)
    assert ens.score(pair, ctx, recorded) == plain and recorded.scored  # the members were recorded
    assert score_of(ens, pair, ctx, recorded) is score_of(ens, pair, ctx, recorded)


def test_rows_among_equals_cat_then_index():
    gen = torch.Generator().manual_seed(0)
    flat = torch.randn(50, 8, generator=gen)
    extra = [torch.randn(1, 8, generator=gen) for _ in range(3)]
    for rows in ([0, 3, 49, 50, 52], [1, 2, 3], [50, 51, 52], [49]):
        rows = torch.tensor(rows)
        assert torch.equal(rows_among(flat, extra, rows), torch.cat([flat, *extra])[rows])
    assert torch.equal(rows_among(flat, [], torch.tensor([4, 7])), flat[[4, 7]])
    out = torch.full((5, 8), float("nan"))
    got = rows_among(flat, extra, torch.tensor([0, 3, 49, 50, 52]), out=out)
    assert got.data_ptr() == out.data_ptr() and torch.equal(out, torch.cat([flat, *extra])[[0, 3, 49, 50, 52]])


def test_waiting_rows_grow_without_losing_a_row():
    """Rows gathered pass after pass into one memory: when a pass's rows do not fit, the memory grows and keeps
    the rows before; joined() gives exactly the rows added, in order, with each target's row among them."""
    gen = torch.Generator().manual_seed(1)
    waiting = _Waiting(torch.zeros(3, 4))  # smaller than the first pass: grows at once
    passes = [torch.randn(k, 4, generator=gen) for k in (5, 1, 2000, 7)]
    for rows in passes:
        waiting.room(rows, len(rows)).copy_(rows)
        waiting.add(len(rows), torch.arange(len(rows)), torch.arange(len(rows)), None)
    hidden, targets, rows_of = waiting.joined()
    assert torch.equal(hidden, torch.cat(passes)) and hidden.data_ptr() == waiting.memory.data_ptr()
    assert torch.equal(hidden[rows_of], torch.cat(passes))  # each target's row, numbered across passes
    waiting.clear()  # after a projection: the memory stays for the next rows
    assert waiting.rows == 0 and waiting.memory.shape[0] >= 2013
    assert waiting.room(passes[0], 5).data_ptr() == waiting.memory.data_ptr()
    bf16 = waiting.room(passes[0].bfloat16(), 2)  # other rows (another dtype): memory of their own
    assert bf16.dtype == torch.bfloat16 and bf16.shape == (2, 4)


def test_a_cpu_scorer_keeps_its_memory_for_the_next_call_within_its_bound(tiny_llama, monkeypatch):
    """Every method on a pair twice: the second call reuses the first call's past (Scratch) and waiting rows'
    memory instead of faulting in fresh memory, with the same scores; over KEPT_BYTES nothing is kept."""
    engine = Engine(CausalScorer(tiny_llama))
    pair = Pair("The cat sleeps.", "The cat sleep.")
    first = engine.score_pairs([pair], method_ids("causal"), "en")[0]
    kept = dict(engine.scorer._kept)
    assert set(kept) == {"scratch", "waiting"} and sum(m.nbytes for m in kept.values()) <= causal.KEPT_BYTES
    second = engine.score_pairs([pair], method_ids("causal"), "en")[0]
    assert engine.scorer._kept["scratch"] is kept["scratch"]  # taken, used, kept again
    assert engine.scorer._kept["waiting"].data_ptr() == kept["waiting"].data_ptr()
    assert second.rows == first.rows
    monkeypatch.setattr(causal, "KEPT_BYTES", kept["scratch"].nbytes - 1)  # the past alone is over the bound
    engine.score_pairs([pair], method_ids("causal"), "en")
    assert "scratch" not in engine.scorer._kept


def test_one_context():
    a = (1, 2, 3)
    assert one_context([(a, (5,)), (a, (6,))])
    assert one_context([(a, (5,)), ((1, 2, 3), (6,))])
    assert not one_context([(a, (5,)), ((1, 2), (6,))])
    assert not one_context([])


def test_lp_sums_exactly_as_np_sum():
    rng = np.random.default_rng(0)
    for n in (0, 1, 7, 8, 9, 100, 1000):
        x = (rng.standard_normal(n) * 10).astype(np.float32)
        assert F.lp(x) == float(np.sum(x, dtype=np.float64))
        assert F.lp(list(map(float, x))) == float(np.sum(list(map(float, x)), dtype=np.float64))
