"""A probe's export (issue 19, item 2): its numbers are the engine's own (scores equal to
engine.score_pair's, surprisal bits = nats / ln 2), its prompts are Engine.prompts_for's, its
provenance names the loaded weights (SHA-256 equal to hashlib's), and its files are written
atomically into a bounded folder."""

from __future__ import annotations

import hashlib
import io
import json
import math

import pandas as pd
import pytest

from accapp.service import export

GOOD, BAD = "These casseroles disgust Kayla.", "These casseroles disgusts Kayla."
METHODS = ["lp", "mean_lp", "in_template_lp", "yes_no_prob_comp"]
MODEL = "smollm2-135m-instruct"


@pytest.fixture(scope="module")
def engine(smollm):
    from accapp.engine import build_engine

    return build_engine(MODEL, lm=smollm)


@pytest.fixture(scope="module")
def record(engine):
    from accapp.models import get_spec
    from accapp.service import probe as svc

    res, words, rule = svc.probe_stage(engine, GOOD, BAD, METHODS, True)
    report = svc.probe_json_full(MODEL, get_spec(MODEL), res, words, {}, [], rule, "bits")
    extras = export.engine_extras(engine, report["good"], report["bad"], export.report_methods(report))
    return export.export_record([report], [extras], "tab=probe&good=x")


@pytest.mark.slow
def test_scores_are_the_engines(engine, record):
    (m,) = record["models"]
    direct = engine.score_pair(GOOD, BAD, METHODS)
    assert [(j["method"], j["template"], j["variant"]) for j in m["judgments"]] == [
        (s.method, s.template, s.variant) for s in direct.scores]
    for j, s in zip(m["judgments"], direct.scores, strict=True):
        assert j["score_good"] == pytest.approx(float(s.score_good), abs=1e-4)  # float32 noise across pass shapes
        assert j["score_bad"] == pytest.approx(float(s.score_bad), abs=1e-4)
        assert j["verdict"] == s.verdict


@pytest.mark.slow
def test_surprisal_in_bits_is_nats_over_ln2(engine, record):
    (m,) = record["models"]
    (toks, _), = engine.token_scores([GOOD])
    assert [t["token"] for t in m["tokens"]["good"]] == [t["token"] for t in toks]
    for mine, theirs in zip(m["tokens"]["good"], toks, strict=True):
        # a pass of its own (one sentence, where the probe packed two): float32 noise, 4e-5 nats on a
        # 10-nat token measured on an AVX-512 CPU; a unit slip (bits for nats) is 44 %
        assert mine["surprisal_nats"] == pytest.approx(-theirs["logprob"], abs=1e-4)
    for side in ("good", "bad"):
        for rec in m["tokens"][side] + m["words"][side]:
            assert rec["surprisal_bits"] == pytest.approx(rec["surprisal_nats"] / math.log(2), rel=1e-12)
            assert rec["surprisal_nats"] == pytest.approx(-rec["logprob_nats"], rel=1e-12)
    assert "".join(w["word"] for w in m["words"]["good"]) == GOOD.replace(" ", "")  # every character in a word


@pytest.mark.slow
def test_prompts_and_provenance(engine, record):
    from accapp.models.loading import weight_files

    (m,) = record["models"]
    pair = engine.check_pair(GOOD, BAD)
    assert set(m["prompts"]) == set(METHODS)
    assert m["prompts"]["yes_no_prob_comp"] == engine.prompts_for(pair, "yes_no_prob_comp")
    assert any(GOOD in p["text"] and "Yes" in p["text"] for p in m["prompts"]["yes_no_prob_comp"])
    prov = m["provenance"]
    assert prov["model_id"] == MODEL
    files = weight_files(engine.lm)
    assert [w["sha256"] for w in prov["weights"]] == [hashlib.sha256(p.read_bytes()).hexdigest() for p in files]
    for key in ("app_version", "torch_version", "transformers_version", "dtype", "quantization", "date_utc"):
        assert key in prov


@pytest.mark.slow
def test_csv_is_one_long_table_pandas_reads(record):
    df = pd.read_csv(io.StringIO(export.csv_text(record)))
    assert list(df.columns) == export.CSV_COLUMNS
    (m,) = record["models"]
    words = df[df.record == "word"]
    assert len(words) == len(m["words"]["good"]) + len(m["words"]["bad"])
    assert len(df[df.record == "token"]) == len(m["tokens"]["good"]) + len(m["tokens"]["bad"])
    judged = df[df.record == "judgment"]
    assert len(judged) == len(m["judgments"])
    assert list(judged.score_good) == pytest.approx([j["score_good"] for j in m["judgments"]])
    assert (words.surprisal_bits - words.surprisal_nats / math.log(2)).abs().max() < 1e-9
    prov = df[df.record == "provenance"].set_index("field")["value"]
    assert prov["model_id"] == MODEL and prov["weights.0.sha256"] == m["provenance"]["weights"][0]["sha256"]
    assert (df[df.record == "prompt"].method.unique().tolist()) == METHODS


# ------------------------------------------------------------------------------------------ without a model
def _tiny_record(good="=HYPERLINK(\"http://x\")", bad="b c."):
    tokens = [{"token": "b", "start": 0, "end": 1, "logprob": -2.0}]
    words = [{"index": 0, "word": "b", "start": 0, "end": 1, "tokens": [0], "logprob": -2.0, "logprob_sum": -2.5}]
    report = {"model": "m", "good": good, "bad": bad, "tokens": {"good": tokens, "bad": tokens},
              "words": {"good": words, "bad": words},
              "verdicts": [{"method": "lp", "name": "LP", "family": "f", "template": "-", "variant": "", "score_good": -1.0,
                            "score_bad": -2.0, "difference": 1.0, "verdict": "good"}]}
    extras = {"prompts": {"lp": [{"kind": "scored string", "text": "-1 line\nbreak"}]},
              "provenance": {"model_id": "m", "weights": [{"file": "w", "sha256": "ab"}]}}
    return export.export_record([report], [extras])


def test_units_and_spreadsheet_safety_without_a_model():
    rec = _tiny_record()
    (m,) = rec["models"]
    w = m["words"]["good"][0]
    assert w["surprisal_bits"] == pytest.approx(2.0 / math.log(2))
    assert w["sum_of_tokens_surprisal_nats"] == pytest.approx(2.5)
    df = pd.read_csv(io.StringIO(export.csv_text(rec)))
    assert df[df.record == "word"].sentence_text.iloc[0].startswith("'=HYPERLINK")  # a formula made text
    assert df[df.record == "prompt"].prompt_text.iloc[0] == "'-1 line\nbreak"  # a line break kept, quoted
    assert json.loads(export.json_text(rec))["good"] == rec["good"]


def test_files_are_atomic_and_the_folder_is_bounded(tmp_path):
    rec = _tiny_record()
    paths = [p for _ in range(4) for p in export.write_exports(rec, tmp_path, keep=3)]
    left = sorted(tmp_path.iterdir())
    assert len(left) == 3 and all(p.name.startswith("probe-m-") for p in left)
    assert set(left) <= set(paths) and paths[-1] in left and paths[-2] in left
    assert not list(tmp_path.glob(".*"))  # no temporary file left behind
    assert json.loads(paths[-2].read_text(encoding="utf-8"))["format"] == export.FORMAT
    assert list(pd.read_csv(paths[-1]).columns) == export.CSV_COLUMNS  # the BOM (for Excel) is no column name
