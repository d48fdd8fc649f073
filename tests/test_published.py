"""The shipped published numbers (precomputed/published) against the papers, and the word-shuffling
definition against the full BLiMP data (tests may read the reference data in ../shared)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from accapp.analysis import (
    LONG_COLUMNS,
    human_by_paradigm_type,
    published_accuracy,
    published_human,
    published_ide_ab_share,
    published_ide_accuracy,
    published_ide_ensembles,
    published_ide_length_bias,
    published_kauf,
    published_models,
    word_shuffling,
)
from accapp.store import Store

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
BLIMP_DATA = SHARED / "blimp" / "data"
needs_shared = pytest.mark.skipif(not BLIMP_DATA.is_dir(), reason="reference data (../shared/data) not available")

WORD_SHUFFLING_12 = {
    "adjunct_island", "complex_NP_island", "coordinate_structure_constraint_complex_left_branch", "ellipsis_n_bar_1",
    "existential_there_quantifiers_2", "left_branch_island_echo_question", "left_branch_island_simple_question",
    "only_npi_scope", "principle_A_domain_3", "principle_A_reconstruction", "sentential_negation_npi_scope",
    "sentential_subject_island",
}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    with Store(tmp_path_factory.mktemp("no_results")) as s:
        yield s


@pytest.fixture(scope="module")
def blimp_pairs() -> pd.DataFrame:
    if not BLIMP_DATA.is_dir():
        pytest.skip("reference data (../shared/data) not available")
    rows = []
    for path in sorted(BLIMP_DATA.glob("*.jsonl")):
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                r = json.loads(line)
                rows.append((r["UID"], r["sentence_good"], r["sentence_bad"]))
    return pd.DataFrame(rows, columns=["paradigm", "good", "bad"])


def test_shipped_tables_and_sources(store):
    expected = {"ide2025_accuracy": 252, "ide2025_ensembles": 72, "ide2025_length_bias": 6, "ide2025_ab_share": 12,
                "ide2025_findings": 10, "kauf2023_blimp": 1072, "kauf2023_blimp_overall": 221,
                "blimp2020_models": 268, "blimp2020_human": 67, "blimp_paradigms": 67}
    for name, n in expected.items():
        df = store.published(name)
        assert len(df) == n, name
        assert df.source.notna().all() and (df.source.str.len() > 0).all(), name
    par = store.published("blimp_paradigms")
    assert par.phenomenon.nunique() == 12 and "s-selection" not in set(par.phenomenon)
    assert set(par[par.paradigm.str.startswith("animate_subject")].phenomenon) == {"argument_structure"}


def test_human_baseline_reproduces_blimp_and_kauf(store):
    overall = published_human(store, "blimp", "overall")
    # mean over the 67 paradigms = 88.555 -> BLiMP's 88.6 (the mean of the 12 phenomenon means would be 89.2)
    assert overall.accuracy[0] == pytest.approx(88.555, abs=5e-4)
    assert round(overall.accuracy[0], 1) == 88.6
    ours = published_human(store, "blimp", "phenomenon").set_index("phenomenon").accuracy
    kauf = store.query("SELECT phenomenon, value FROM published_kauf2023_blimp_overall "
                       "WHERE model = 'human' AND phenomenon <> 'overall'").set_index("phenomenon").value
    assert len(ours) == 12 and set(ours.index) == set(kauf.index)
    for ph in kauf.index:
        assert round(ours[ph], 1) == kauf[ph], ph
    assert round(ours.mean(), 1) == 89.2


def test_blimp_models_and_kauf_overall(store):
    got = published_models(store, "blimp", "overall").set_index("model").accuracy.round(1).to_dict()
    assert got == {"ngram": 61.2, "lstm": 69.8, "txl": 69.6, "gpt2_large": 83.0}
    # Kauf & Ivanova Table 3 overall = mean of the 67 per-paradigm values (within rounding)
    per = published_kauf(store, "blimp", "paradigm").groupby(["model", "method"]).accuracy.mean()
    table = published_kauf(store, "blimp", "overall").set_index(["model", "method"]).accuracy
    assert len(table) == 16
    for key, value in table.items():
        assert abs(per[key] - value) <= 0.05 + 1e-9, key
    assert (published_kauf(store, "blimp", "paradigm").phenomenon != "").all()


def test_long_format(store):
    for level in ("overall", "phenomenon", "paradigm"):
        df = published_accuracy(store, "blimp", level)
        assert list(df.columns) == LONG_COLUMNS
        assert df.source.notna().all() and df.accuracy.between(0, 100).all()
        assert {"human", "gpt2_large", "roberta-large"} <= set(df.model)
    ov = published_accuracy(store, "blimp", "overall")
    assert {"Llama-3", "Qwen2-Instruct"} <= set(ov.model)
    assert set(ov.phenomenon) == {"overall"}
    assert len(published_accuracy(store, "blimp", "paradigm").query("model == 'human'")) == 67
    climp = published_accuracy(store, "climp", "overall")
    assert {"Yi-1.5", "Yi-1.5-Chat"} <= set(climp.model) and set(climp.benchmark) == {"climp"}
    # CLiMP's human figure is published overall only (Xiang et al. 2021's label validation), as its descriptor says
    assert climp.query("model == 'human'").accuracy.tolist() == [95.8]
    assert published_accuracy(store, "climp", "phenomenon").query("model == 'human'").empty


def test_ide_tables(store):
    acc = published_ide_accuracy(store, "blimp")
    row = acc[(acc.model == "Qwen2") & (acc.method == "yes_no_prob_comp")].set_index("template")
    assert row.accuracy.to_dict() == {"mean": 89.0, "sd": 0.2, "max": 89.2}  # Tables 3a, 11a
    assert bool(row.loc["mean", "significant_vs_lp"]) is True
    lp = acc[(acc.model == "Llama-3") & (acc.method == "lp")]
    assert list(lp.template) == ["-"] and lp.accuracy.iloc[0] == 79.6
    ens = published_ide_ensembles(store, "blimp")
    q = ens[ens.model == "Qwen2"].set_index("setting").accuracy
    assert q["mix_p3"] == 90.2 and q["in_template_lp_oracle"] == 84.1  # Table 5
    assert set(ens.method) == {"ens_p_only", "ens_mix_p3", "ens_mix_l3", "ens_l_only", "in_template_lp", "yes_no_prob_comp"}
    assert len(published_ide_length_bias(store)) == 6 and len(published_ide_ab_share(store, "climp")) == 6


@needs_shared
def test_word_shuffling_on_full_blimp(store, blimp_pairs):
    flags = word_shuffling(blimp_pairs)
    assert len(flags) == 67 and (flags.pairs == 1000).all()
    assert set(flags[flags.word_shuffling].paradigm) == WORD_SHUFFLING_12
    human = human_by_paradigm_type(store, "blimp", flags).set_index("word_shuffling")
    # Ide et al. §6: humans 83.1 on word-shuffling paradigms vs 89.7 on the others
    assert human.loc[True, "paradigms"] == 12 and human.loc[False, "paradigms"] == 55
    assert round(human.loc[True, "human_accuracy"], 2) == 83.12
    assert round(human.loc[False, "human_accuracy"], 2) == 89.74
    # the flags shipped with the published data agree
    shipped = store.published("blimp_paradigms")
    assert set(shipped[shipped.word_shuffling].paradigm) == WORD_SHUFFLING_12


@needs_shared
def test_shipped_files_are_up_to_date(tmp_path):
    """scripts/convert_published.py run now gives the same tables as the shipped ones."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("convert_published", ROOT / "scripts" / "convert_published.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--shared", str(SHARED.parent), "--out", str(tmp_path)]) == 0
    shipped = ROOT / "precomputed" / "published"
    names = sorted(p.name for p in tmp_path.glob("*.parquet"))
    assert names == sorted(p.name for p in shipped.glob("*.parquet"))
    for name in names:
        pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / name), pd.read_parquet(shipped / name), check_dtype=True)


def test_blimp_attractor_paradigms_exist(store):
    from accapp.benchmarks import BUILTIN

    SV_ATTRACTOR = BUILTIN["blimp"].attractors

    par = store.published("blimp_paradigms").set_index("paradigm")
    assert set(SV_ATTRACTOR) <= set(par.index)
    assert set(par.loc[list(SV_ATTRACTOR), "phenomenon"]) == {"subject_verb_agreement"}
    assert par.loc[list(SV_ATTRACTOR), "sv_attractor"].to_dict() == SV_ATTRACTOR
    # the six are all of BLiMP's subject-verb agreement paradigms
    assert set(par[par.phenomenon == "subject_verb_agreement"].index) == set(SV_ATTRACTOR)
