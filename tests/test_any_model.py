"""Issue 30: any model a researcher brings (a hub id, a local folder, a .gguf file), with the
conventions found from the model itself, its memory estimated from its config, and the app's
safety where it was.

Fast tier: tiny random models saved with save_pretrained (tests/any_models.py). Slow tier: the
embedded models' real weights, by folder (the cached safetensors copy) and by GGUF file, against
the registry path."""

from __future__ import annotations

import functools
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from accapp.errors import UserError
from tests import any_models as am

GOOD, BAD = "These casseroles disgust Kayla.", "These casseroles disgusts Kayla."
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("any-models")
    return {"llama": am.llama_folder(root), "gpt2": am.gpt2_folder(root), "bert": am.bert_folder(root),
            "roberta": am.roberta_folder(root), "classifier": am.classifier_folder(root)}


@pytest.fixture(scope="module")
def engines(folders) -> dict:
    from accapp.engine import build_engine

    return {name: build_engine(str(folders[name])) for name in ("llama", "gpt2", "bert", "roberta")}


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`python -m accapp` in a process of its own: for an environment read at import (HF_HOME) and
    for what the program as a whole prints (one line of stderr, the exit code through SystemExit)."""
    return subprocess.run([sys.executable, "-m", "accapp", *args], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}, timeout=600)


def cli(*args: str) -> subprocess.CompletedProcess:
    """The command line in this process through accapp.cli.main(argv) (tests/cli_in_process.py)."""
    from tests.cli_in_process import run_cli as in_process

    return in_process(*args)


# --------------------------------------------------------------------------------- the four forms
def test_a_string_names_one_of_four_forms(folders, tmp_path):
    from accapp.models.resolve import model_form, split_revision

    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"")
    assert model_form("smollm2-135m-instruct") == "registry"
    assert model_form(str(folders["llama"])) == "folder"
    assert model_form(str(gguf)) == "gguf"
    assert model_form("allenai/OLMo-2-0425-1B@v1.0") == "hub"
    assert split_revision("Qwen/Qwen2-7B@abc123") == ("Qwen/Qwen2-7B", "abc123")
    assert model_form("./no/such/folder") == "missing"
    assert model_form("not a model") == "unknown"


FOUND = {  # what each tiny model's tokenizer says, found without the registry
    "llama": ("causal", "<|endoftext|>", "instruct"),  # SmolLM2's tokenizer: the BOS <|im_start|> opens every chat turn
    "gpt2": ("causal", "<|endoftext|>", "base"),  # BOS = EOS = <|endoftext|>
    "bert": ("masked", "", "base"),
    "roberta": ("masked", "", "base"),
}


@pytest.mark.parametrize("name", list(FOUND))
def test_each_tiny_model_loads_by_path_with_its_conventions_found_and_runs_every_method_it_supports(engines, folders, name):
    from accapp.methods import method_ids

    engine = engines[name]
    spec = engine.lm.spec
    kind, start, variant = FOUND[name]
    assert (spec.kind, spec.start_token, spec.variant) == (kind, start, variant)
    assert spec.id == spec.given == str(folders[name]) and not spec.in_registry and spec.languages == ()
    if kind == "causal":
        assert engine.lm.tokenizer.convert_ids_to_tokens(engine.lm.start_id) == start
    supported = [m for m in method_ids(kind) if m not in engine.unavailable]
    result = engine.score_pair(GOOD, BAD, "all")
    assert sorted({s.method for s in result.scores}) == sorted(supported)
    assert all(math.isfinite(s.score_good) and math.isfinite(s.score_bad) for s in result.scores)
    assert result.len_good > 0 and all(math.isfinite(t["logprob"]) for t in result.tokens["good"])


def test_a_tiny_llama_by_path_scores_as_the_same_weights_handed_over_loaded(engines):
    """Loading by path changes nothing: the same LoadedModel scored through the engine directly."""
    from accapp.engine import build_engine

    by_path = engines["llama"]
    direct = build_engine("-", lm=by_path.lm)
    assert by_path.score_pair(GOOD, BAD, ["lp", "yes_no_prob_comp"]).rows == direct.score_pair(GOOD, BAD, ["lp", "yes_no_prob_comp"]).rows


# --------------------------------------------------------------------------------- answers of two tokens
def test_an_answer_of_two_tokens_makes_its_methods_unavailable_with_the_reason(engines, folders):
    import accapp

    engine = engines["gpt2"]
    assert engine.lm.tokenizer.tokenize("Yes") == ["Y", "es"]  # the point of this model
    off = engine.unavailable
    assert set(off) == {"yes_no_prob_comp", "ens_p_only", "ens_mix_p3", "ens_mix_l3", "ens_l_only"}
    assert "'Yes' is 2 tokens ('Y' + 'es')" in off["yes_no_prob_comp"]
    assert "ab_prompting" not in off  # A and B are one token each

    df = accapp.score_pairs([(GOOD, BAD)], model=str(folders["gpt2"]), methods=["lp", "yes_no_prob_comp"], progress=False)
    yes_no = df[df.method == "yes_no_prob_comp"]
    assert len(yes_no) == 1 and yes_no.verdict.iloc[0] == "unavailable" and math.isnan(yes_no.score_good.iloc[0])
    assert "'Yes' is 2 tokens" in yes_no.prediction.iloc[0]
    assert df[df.method == "lp"].verdict.iloc[0] in ("good", "bad", "tie")
    alone = accapp.score_pairs([(GOOD, BAD)], model=str(folders["gpt2"]), methods=["yes_no_prob_comp"], progress=False)
    assert alone.verdict.tolist() == ["unavailable"] and "Yes/No prob comp is unavailable" in alone.prediction.iloc[0]
    result = engine.score_pair(GOOD, BAD, ["ens_l_only"])  # a stage of nothing the model can run scores nothing
    assert result.scores == [] and set(result.unavailable) == {"ens_l_only"}


def test_a_scored_file_gives_the_reason_in_a_column_and_its_sidecar(engines):
    import pandas as pd

    from accapp.service import score_file

    engine = engines["gpt2"]
    result = engine.score_pair(GOOD, BAD, ["lp", "yes_no_prob_comp"])
    columns = score_file.result_columns(result)
    assert "'Yes' is 2 tokens" in columns["yes_no_prob_comp: unavailable"]
    assert "lp: verdict" in columns and not any(c.startswith("yes_no_prob_comp [") for c in columns)
    scored = score_file.Scored(pd.DataFrame({"good": [GOOD], "bad": [BAD], "error": [""]}), {0: result}, "gpt2",
                               ["lp", "yes_no_prob_comp"], engine)
    upload = score_file.Upload(scored.base, "pairs.csv", "0" * 64, 10, False)
    meta = score_file.metadata(scored, upload, "wide", False, {})
    assert set(meta["methods_unavailable"]) == {"yes_no_prob_comp"}


def test_the_cli_prints_the_reason_in_place_of_the_scores(folders):
    out = cli("score", "--model", str(folders["gpt2"]), "--good", GOOD, "--bad", BAD,
              "--methods", "lp,yes_no_prob_comp")
    assert out.returncode == 0, out.stderr
    line = next(x for x in out.stdout.splitlines() if x.startswith("yes_no_prob_comp"))
    assert "unavailable" in line and "'Yes' is 2 tokens" in line
    js = cli("score", "--model", str(folders["gpt2"]), "--good", GOOD, "--bad", BAD, "--methods", "all", "--format", "json")
    data = json.loads(js.stdout)
    assert set(data["unavailable"]) == {"yes_no_prob_comp", "ens_p_only", "ens_mix_p3", "ens_mix_l3", "ens_l_only"}
    assert "ab_prompting" in {m["method"] for m in data["methods"]}


# --------------------------------------------------------------------------------- refused in one sentence
def test_what_is_not_a_language_model_is_refused_in_one_sentence_naming_what_was_found(folders, tmp_path):
    from accapp.models.resolve import kind_of, resolve_model

    with pytest.raises(UserError, match=r"is a classifier \(BertForSequenceClassification\)"):
        resolve_model(str(folders["classifier"]))
    with pytest.raises(UserError, match=r"is an encoder-decoder model \(T5ForConditionalGeneration\)"):
        kind_of({"architectures": ["T5ForConditionalGeneration"], "model_type": "t5", "is_encoder_decoder": True}, "t5-small")
    with pytest.raises(UserError, match=r"not a language model .*\(BertModel\)"):
        kind_of({"architectures": ["BertModel"], "model_type": "bert"}, "all-MiniLM")
    no_weights = tmp_path / "config-only"
    no_weights.mkdir()
    (no_weights / "config.json").write_text(json.dumps(am.LLAMA3_8B_CONFIG))
    with pytest.raises(UserError, match="holds a config.json but no weights"):
        resolve_model(str(no_weights))
    with pytest.raises(UserError, match="holds no config.json"):
        resolve_model(str(tmp_path))
    remote = tmp_path / "remote"
    remote.mkdir()
    (remote / "config.json").write_text(json.dumps({**am.LLAMA3_8B_CONFIG, "auto_map": {"AutoModelForCausalLM": "x.Y"}}))
    (remote / "model.safetensors").write_bytes(b"")
    with pytest.raises(UserError, match="--trust-remote-code"):
        resolve_model(str(remote))
    with pytest.raises(UserError, match="Unknown model 'nope'"):
        resolve_model("nope")
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"GGUF but not really")
    with pytest.raises(UserError, match="cannot be read as a GGUF model by transformers"):
        resolve_model(str(junk))
    with pytest.raises(UserError, match="No folder or file at"):
        resolve_model(str(tmp_path / "gone.gguf"))


def test_the_cli_refuses_a_classifier_with_exit_code_2_and_no_traceback(folders):
    out = cli("score", "--model", str(folders["classifier"]), "--good", GOOD, "--bad", BAD)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.strip().count("\n") == 0 and "is a classifier (BertForSequenceClassification)" in out.stderr


@pytest.mark.process  # runs python -m accapp
def test_a_hub_id_offline_with_nothing_cached_gets_a_clear_message_and_leaves_nothing(tmp_path):
    env = {"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    out = run_cli("score", "--model", "allenai/OLMo-2-0425-1B@main", "--good", GOOD, "--bad", BAD, env=env)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "'allenai/OLMo-2-0425-1B@main'" in out.stderr and "hub cannot be reached" in out.stderr
    assert not list((tmp_path / "hf").rglob("models--allenai--OLMo-2-0425-1B")), "a partial download was left behind"


# --------------------------------------------------------------------------------- memory
def test_an_8b_config_is_refused_on_16gb_in_fp32_and_accepted_in_4_bit():
    from accapp.models.budget import plan_load
    from accapp.models.memory import GiB, estimate_from_config, formula_counts
    from accapp.models.resolve import spec_from_config

    est = estimate_from_config(am.LLAMA3_8B_CONFIG)
    assert est["params"] == am.LLAMA3_8B_PARAMS and est["exact"]
    assert formula_counts(am.LLAMA3_8B_CONFIG)[0] == am.LLAMA3_8B_PARAMS  # the fallback formula agrees
    assert est["fp32"] == 4 * est["params"] and est["bf16"] == 2 * est["params"]
    assert 5.5e9 < est["nf4"] < 6.0e9  # Llama-3-8B in NF4: about 5.7 GB
    spec = spec_from_config(am.LLAMA3_8B_CONFIG, "my-llama-3-8b", {"type": "local", "path": "/nowhere"})
    with pytest.raises(UserError, match=r"needs about 3\d\.\d GB of memory even in fp32 .* 16\.0 GB \(--max-memory\)"):
        plan_load(spec, 16 * GiB, "fp32", budget_name="--max-memory")
    plan = plan_load(spec, 16 * GiB, "bf16", "nf4", device="cpu")
    assert plan.quantization == "nf4" and plan.bytes < 8 * GiB


@pytest.mark.process  # runs python -m accapp
def test_the_cli_refuses_a_cached_8b_config_over_max_memory_before_loading_and_inspects_it(tmp_path):
    repo = "test-org/llama-3-8b-config-only"
    am.hub_cache_with_config(tmp_path / "hf", repo, am.LLAMA3_8B_CONFIG)
    env = {"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    out = run_cli("score", "--model", repo, "--max-memory", "16GB", "--good", GOOD, "--bad", BAD, env=env)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "needs about 36.0 GB of memory even in fp32 (8.03 B parameters)" in out.stderr and "16.0 GB (--max-memory)" in out.stderr
    nf4 = run_cli("score", "--model", repo, "--max-memory", "16GB", "--quantization", "nf4", "--good", GOOD, "--bad", BAD, env=env)
    assert "--max-memory" not in nf4.stderr  # within the budget in 4-bit: it goes on to load (and finds no tokenizer here)
    assert nf4.returncode == 2 and "Traceback" not in nf4.stderr


@pytest.mark.process  # runs python -m accapp
def test_a_cached_hub_id_at_a_revision_resolves_offline_and_the_registry_overrides_what_is_found(folders, tmp_path):
    """SmolLM2's hub id with its config and tokenizer in the cache (no weights): --inspect finds the
    conventions, and the registry entry with that hub id overrides them (name, languages)."""
    commit = "1" * 40
    config = json.loads((folders["llama"] / "config.json").read_text())
    am.hub_cache_with_config(tmp_path / "hf", "HuggingFaceTB/SmolLM2-135M-Instruct", config, commit, files=folders["llama"])
    env = {"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    out = run_cli("models", "--inspect", f"HuggingFaceTB/SmolLM2-135M-Instruct@{commit}", "--format", "json", env=env)
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["revision"] == commit and info["hub_id"] == "HuggingFaceTB/SmolLM2-135M-Instruct" and not info["in_registry"]
    assert (info["found"]["start_token"], info["found"]["variant"]) == ("<|endoftext|>", "instruct")
    assert info["found"]["overridden_by_registry"] == "smollm2-135m-instruct" and info["used"]["languages"] == ["en"]


def test_memory_of_the_tiny_models_matches_their_parameters(engines):
    from accapp.models.memory import weight_bytes

    for engine in engines.values():
        real = sum(p.numel() * p.element_size() for p in engine.lm.model.parameters())
        assert weight_bytes(engine.lm.spec, "fp32") == real


# --------------------------------------------------------------------------------- provenance, bench, store
def test_provenance_records_the_path_as_given_the_weights_sha256_and_the_conventions_found(engines, folders):
    import hashlib

    from accapp.service.provenance import provenance

    record = provenance(engines["llama"])
    assert record["model_id"] == record["model_given"] == str(folders["llama"]) and record["model_source"] == "local"
    weights = folders["llama"] / "model.safetensors"
    assert record["weights"] == [{"file": "model.safetensors", "bytes": weights.stat().st_size,
                                  "sha256": hashlib.sha256(weights.read_bytes()).hexdigest()}]
    found = record["conventions_found"]
    assert found["start_token"] == "<|endoftext|>" and "opens every chat turn" in found["start_token_from"]
    assert found["variant"] == "instruct" and found["answers"]["yes_no"]["Yes"] is not None
    assert found["used"]["languages"] == "unknown"


def test_bench_results_of_a_folder_model_sit_in_the_store_under_that_name(folders, tmp_path):
    from accapp.store.store import Store

    pairs = tmp_path / "pairs.csv"
    pairs.write_text("good,bad\nThe dogs bark.,The dogs barks.\nShe has left.,She have left.\n", encoding="utf-8")
    model = str(folders["gpt2"])
    out = cli("bench", "--model", model, "--benchmark", str(pairs), "--methods", "lp,mean_lp", "--out", str(tmp_path / "runs"),
              "--consolidate-to", str(tmp_path / "results"))
    assert out.returncode == 0, out.stderr
    store = Store(tmp_path / "results")
    assert store.models() == [model]
    assert json.loads(next((tmp_path / "results").glob("*.json")).read_text())["model"] == model


# --------------------------------------------------------------------------------- the app's policy
def test_the_app_takes_the_registry_the_owners_allowlist_and_any_model_only_when_allowed(folders, tmp_path, monkeypatch):
    import shutil

    from accapp.models import get_spec
    from accapp.service.catalog import model_choices

    fresh = tmp_path / "fresh-copy"  # never resolved in this process
    shutil.copytree(folders["roberta"], fresh)
    monkeypatch.delenv("ACCAPP_ALLOW_ANY_MODEL", raising=False)
    monkeypatch.delenv("ACCAPP_EXTRA_MODELS", raising=False)
    with pytest.raises(UserError, match="Unknown model"):
        get_spec(str(fresh))
    assert get_spec("smollm2-135m-instruct").in_registry
    monkeypatch.setenv("ACCAPP_EXTRA_MODELS", f"{fresh}, org/other")
    assert (str(fresh) + " · added by this Space's owner", str(fresh)) in model_choices()
    spec = get_spec(str(fresh))
    assert spec.kind == "masked" and not spec.trust_remote_code  # never remote code in the app
    monkeypatch.delenv("ACCAPP_EXTRA_MODELS")
    other = tmp_path / "other-copy"
    shutil.copytree(folders["bert"], other)
    with pytest.raises(UserError, match="Unknown model"):
        get_spec(str(other))
    monkeypatch.setenv("ACCAPP_ALLOW_ANY_MODEL", "1")
    assert get_spec(str(other)).kind == "masked"


def test_the_apps_memory_budget_refuses_an_allowed_model_that_does_not_fit(folders, monkeypatch):
    from accapp.models.memory import MiB, estimate_bytes
    from accapp.models.pool import ModelPool
    from accapp.models.resolve import resolve_model

    monkeypatch.setenv("ACCAPP_ALLOW_ANY_MODEL", "1")
    model = str(folders["llama"])
    need = estimate_bytes(resolve_model(model))
    assert 128 * MiB < need < 160 * MiB  # 12 MB of fp32 weights x 1.2 + 128 MiB
    with pytest.raises(UserError, match=r"needs about 0\.1 GB .* \(ACCAPP_MEMORY_BUDGET\)"):
        ModelPool(budget=100 * MiB, device="cpu").get(model)


@pytest.mark.parametrize("allow", [False, True])
def test_the_probe_tabs_model_field_takes_typed_ids_only_when_any_model_is_allowed(monkeypatch, allow):
    import gradio as gr

    from accapp.ui import probe

    if allow:
        monkeypatch.setenv("ACCAPP_ALLOW_ANY_MODEL", "1")
    else:
        monkeypatch.delenv("ACCAPP_ALLOW_ANY_MODEL", raising=False)
    with gr.Blocks():
        tab = probe.build()
    assert tab.model.allow_custom_value is allow


def test_the_probe_api_scores_an_allowed_folder_model_with_the_unknown_language_warning(folders, monkeypatch):
    from accapp.ui.probe import probe_api

    monkeypatch.setenv("ACCAPP_ALLOW_ANY_MODEL", "1")
    out = probe_api(GOOD, BAD, str(folders["gpt2"]), ["lp", "ab_prompting", "yes_no_prob_comp"])
    assert out["model"] == str(folders["gpt2"]) and {v["method"] for v in out["verdicts"]} == {"lp", "ab_prompting"}
    assert any("languages this model was made for are unknown" in w for w in out["warnings"])
    assert any(w.startswith("Yes/No prob comp is unavailable for this model") for w in out["warnings"])


def test_readme_has_a_section_your_own_model_with_the_four_forms_and_inspect():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Your own model"):]
    section = section[: section.index("\n## ", 5)]
    for needle in ("org/name", "@", ".gguf", "config.json", "--inspect", "--trust-remote-code", "--max-memory",
                   "ACCAPP_EXTRA_MODELS", "ACCAPP_ALLOW_ANY_MODEL"):
        assert needle in section, needle


# --------------------------------------------------------------------------------- the embedded models, for real
SMOL, GEMMA = "smollm2-135m-instruct", "gemma3-270m"


@pytest.fixture(scope="module")
def registry_engines(smollm, gemma):
    from accapp.engine import build_engine

    return {SMOL: build_engine(SMOL, lm=smollm), GEMMA: build_engine(GEMMA, lm=gemma)}  # the session's models


@pytest.fixture(scope="module")
def smol_all_methods(registry_engines):
    """The registry SmolLM2's every-method result of a pair, scored once for the tests that compare with it."""
    return functools.cache(lambda good, bad: registry_engines[SMOL].score_pair(good, bad, "all"))


def _copy_of(model_id: str) -> Path:
    from accapp.models.loading import cache_root

    return cache_root() / "models" / model_id  # the cached safetensors copy (built by the registry engine)


@pytest.mark.slow
def test_a_folder_holding_smollm2s_cached_weights_scores_bit_for_bit_as_the_registry_on_every_method(smol_all_methods):
    from accapp.engine import build_engine

    pairs = [(GOOD, BAD), ("Who should Derek hug after shocking Richard?", "Who should Derek hug Richard after shocking?")]
    folder = build_engine(str(_copy_of(SMOL)))
    assert folder.lm.spec.given and (folder.lm.spec.start_token, folder.lm.spec.variant) == ("<|endoftext|>", "instruct")
    for good, bad in pairs:
        a, b = smol_all_methods(good, bad), folder.score_pair(good, bad, "all")
        assert len(a.rows) == 51 and a.rows == b.rows and a.tokens == b.tokens


@pytest.mark.slow
def test_the_smollm2_gguf_file_scores_within_1e_4_nats_of_the_registry(smol_all_methods):
    from accapp.engine import build_engine
    from accapp.models import get_spec
    from accapp.models.loading import _gguf_path

    gguf = build_engine(str(_gguf_path(get_spec(SMOL))))
    assert gguf.lm.spec.source["type"] == "gguf-file" and gguf.lm.spec.start_token == "<|endoftext|>"
    import gguf as gguf_package

    assert gguf_package.get_tensor_name_map.cache_info().hits > 300  # one name map for SmolLM2's 397 modules
    assert gguf_package.GGUFReader.__name__ == "PlainViewGGUFReader"  # accapp/models/gguf_reading.py
    a, b = smol_all_methods(GOOD, BAD), gguf.score_pair(GOOD, BAD, "all")
    assert [(r["method"], r["template"], r["variant"]) for r in a.rows] == [(r["method"], r["template"], r["variant"]) for r in b.rows]
    worst = max(max(abs(x["score_good"] - y["score_good"]), abs(x["score_bad"] - y["score_bad"])) for x, y in zip(a.rows, b.rows))
    assert worst <= 1e-4, worst


@pytest.mark.slow  # reads the real GGUF file twice (7 s)
def test_the_plain_view_reader_reads_every_field_and_tensor_of_smollm2s_gguf_as_gguf_does():
    """accapp/models/gguf_reading.py reads the mapped bytes through a plain ndarray, not a memmap: the
    same fields (names, types, every part) and the same tensors (names, types, shapes, bytes)."""
    import numpy as np
    from gguf.gguf_reader import GGUFReader

    from accapp.models import get_spec
    from accapp.models.gguf_reading import plain_view_reader
    from accapp.models.loading import _gguf_path

    path = _gguf_path(get_spec(SMOL))
    theirs, ours = GGUFReader(path), plain_view_reader()(path)
    assert type(theirs.data) is np.memmap and type(ours.data) is np.ndarray
    assert list(ours.fields) == list(theirs.fields) and len(theirs.fields) > 30
    for name, field in theirs.fields.items():
        mine = ours.fields[name]
        assert (mine.offset, mine.types, mine.data) == (field.offset, field.types, field.data), name
        assert len(mine.parts) == len(field.parts) and all(np.array_equal(a, b) for a, b in zip(mine.parts, field.parts)), name
    assert [(t.name, t.tensor_type, list(t.shape)) for t in ours.tensors] == \
        [(t.name, t.tensor_type, list(t.shape)) for t in theirs.tensors] and len(theirs.tensors) == 272
    assert all(np.array_equal(a.data, b.data) for a, b in zip(ours.tensors, theirs.tensors))


@pytest.mark.slow
@pytest.mark.parametrize("model_id", [SMOL, GEMMA])
def test_conventions_found_for_the_embedded_models_equal_their_registry_facts(registry_engines, model_id):
    from accapp.methods import resolve
    from accapp.models import get_spec
    from accapp.models.inspect import findings
    from accapp.scoring.api import NextRequest

    spec, engine = get_spec(model_id), registry_engines[model_id]
    found = findings(engine.lm.tokenizer, "causal")
    assert (found["start_token"], found["variant"]) == (spec.start_token, spec.variant)
    # The answer tokens: the ids found are those the scorer reads after each method's real prompt.
    pair = engine.check_pair(GOOD, BAD)
    ctx = engine.context("en")
    for method_id, answer_set in (("yes_no_prob_comp", "yes_no"), ("ab_prompting", "ab")):
        (method,) = resolve([method_id])
        request = next(r for r in method.requests(pair, ctx) if isinstance(r, NextRequest))
        read = [ids[0] for _, ids in engine.scorer.answer_plan(request)]
        assert read == [found["answers"][answer_set][a]["id"] for a in request.answers]
    assert engine.unavailable == {}


@pytest.mark.slow
@pytest.mark.parametrize("model_id", [SMOL, GEMMA])
def test_the_memory_estimate_from_config_is_within_5_percent_of_the_real_parameter_bytes(registry_engines, model_id):
    from accapp.models.memory import estimate_from_config

    real = sum(p.numel() * p.element_size() for p in registry_engines[model_id].lm.model.parameters())
    estimate = estimate_from_config(_copy_of(model_id))["fp32"]
    assert abs(estimate - real) <= 0.05 * real, (estimate, real)


@pytest.mark.slow
def test_inspect_prints_the_findings_parameters_and_memory_without_loading_weights():
    out = cli("models", "--inspect", str(_copy_of(SMOL)))
    assert out.returncode == 0, out.stderr
    assert "start token:  <|endoftext|>" in out.stdout and "variant:      instruct" in out.stdout
    assert "parameters:   134,515,008" in out.stdout and "4-bit NF4" in out.stdout and "fp32 513 MiB" in out.stdout
    js = json.loads(cli("models", "--inspect", GEMMA, "--format", "json").stdout)
    assert js["found"]["start_token"] == js["used"]["start_token"] == "<bos>" and js["used"]["variant"] == "base"
