"""Property tests: arbitrary Unicode into the scorer, the PLL scorer and the file loader.

Each returns a result or raises the documented UserError, never another exception.
"""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accapp.benchmarks import parse_pairs
from accapp.errors import UserError

TEXT = st.text(alphabet=st.characters(codec="utf-8"), min_size=0, max_size=60)
ANY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@ANY
@given(data=st.binary(max_size=400), name=st.sampled_from(["pairs.csv", "pairs.jsonl", "pairs.tsv", "x.txt", "x.xlsx", "noext"]))
def test_file_loader_arbitrary_bytes(data, name):
    try:
        df = parse_pairs(data, name)
    except UserError:
        return
    assert list(df.columns) == ["benchmark", "paradigm", "phenomenon", "pair_id", "good", "bad"]
    assert len(df) >= 1


@ANY
@given(good=TEXT, bad=TEXT, extra=TEXT)
def test_file_loader_arbitrary_cells(good, bad, extra):
    import csv
    import io
    import json

    buf = io.StringIO()
    csv.writer(buf).writerows([["good", "bad", "note"], [good, bad, extra]])
    for data, name in ((buf.getvalue().encode(), "p.csv"), (json.dumps({"good": good, "bad": bad}).encode(), "p.jsonl")):
        try:
            df = parse_pairs(data, name)
        except UserError:
            continue
        assert len(df) >= 1 and df.good.map(type).eq(str).all()


@pytest.fixture(scope="module")
def causal_engine(smollm):
    from accapp.engine import Engine
    from accapp.scoring.causal import CausalScorer

    return Engine(CausalScorer(smollm))


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(good=TEXT, bad=TEXT)
def test_causal_scorer_arbitrary_unicode(causal_engine, good, bad):
    try:
        res = causal_engine.score_pair(good, bad, ["lp", "yes_no_prob_comp"])
    except UserError:
        return
    assert len(res.rows) == 6
    assert all(r["verdict"] in ("good", "bad", "tie") for r in res.rows)


@pytest.fixture(scope="module")
def masked_engine_tiny():
    from masked_fixtures import tiny_bert, wordpiece_tokenizer

    from accapp.engine import Engine
    from accapp.scoring.masked import MaskedScorer

    tok = wordpiece_tokenizer()
    return Engine(MaskedScorer(tiny_bert(tok), tok, batch_size=16))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(good=TEXT, bad=TEXT)
def test_pll_scorer_arbitrary_unicode(masked_engine_tiny, good, bad):
    try:
        res = masked_engine_tiny.score_pair(good, bad)
    except UserError:
        return
    assert {r["method"] for r in res.rows} == {"pll_original", "pll_word_l2r", "pll_whole_word", "pll_sentence_l2r"}
