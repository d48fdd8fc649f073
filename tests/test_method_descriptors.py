"""One home for what is said of a method (issue 33, part 3): accapp/methods/data/methods.json, read by
accapp.methods.descriptor. Every method has a complete descriptor; the probe's stages, the file
job's pass groups, the About table, the UI's family titles and presets are derived from it (a method
added to the data shows up in them); no other module names a method id. Fast: no model."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from accapp import methods
from accapp.methods import descriptor as D

ROOT = Path(__file__).resolve().parents[1]
CACHED = (D._data, D.families, D.descriptors, D.headline_methods, D.presets, D.stage_texts, methods.all_methods)

# Modules that still name method ids, and which: each must say why, and the list must stay exact.
# schema.py: the ensembles' ids for the store and the runner, a leaf below accapp.methods (test_formulas holds
# them equal to the descriptors'). analysis/ may not import accapp.methods (tests/test_import_direction.py): its
# queries are about particular methods of the papers (Explore's first selection is the "explore" preset).
NAMED_ELSEWHERE = {
    "accapp/schema.py": {"ens_p_only", "ens_mix_p3", "ens_mix_l3", "ens_l_only"},
    "accapp/analysis/__init__.py": {"ab_prompting"},
    "accapp/analysis/accuracy.py": {"ab_prompting", "ens_p_only", "ens_mix_p3", "ens_mix_l3", "ens_l_only", "in_template_lp",
                                    "yes_no_prob_comp"},
    "accapp/analysis/bootstrap.py": {"lp"},
    "accapp/analysis/hu_levy.py": {"meta_question_simple", "meta_instruct", "meta_question_complex"},
    "accapp/analysis/published.py": {"ens_p_only", "ens_mix_p3", "ens_mix_l3", "ens_l_only", "in_template_lp",
                                     "yes_no_prob_comp"},
    "accapp/analysis/separation.py": {"lp", "mean_lp", "pen_lp", "bayes_factor_uniform", "bayes_factor_unigram", "slor"},
}


def _clear():
    for f in CACHED:
        f.cache_clear()


@pytest.fixture
def one_more_method(tmp_path, monkeypatch):
    """methods.json with one more method, 'toy_lp' (a sentence-probability method in the 'sentence'
    pass group), and one more family, 'toy family' (its own stage is 'in-template')."""
    data = json.loads(D.DATA_FILE.read_text(encoding="utf-8"))
    data["families"]["toy family"] = {"title": "Toy family (nobody 2099)", "kind": "causal", "stage": "in-template"}
    data["methods"]["toy_lp"] = dict(data["methods"]["lp"], name="Toy LP", formula="toy(s)")
    data["methods"]["toy_templated"] = dict(data["methods"]["lp"], name="Toy templated", family="toy family",
                                            pass_group="toy_templated")
    path = tmp_path / "methods.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.setattr(D, "DATA_FILE", path)
    _clear()
    yield
    monkeypatch.undo()
    _clear()


# ------------------------------------------------------------------------------------------ complete
def test_every_method_has_a_complete_descriptor():
    table, described = methods.all_methods(), D.descriptors()
    assert list(table) == list(described)  # the same methods, in the descriptors' (display) order
    fields = set(D.Descriptor.__dataclass_fields__)
    for mid, d in described.items():
        assert set(d.as_dict()) == fields and all(str(v).strip() for v in d.as_dict().values()), mid
        assert d.unit in D.UNITS and d.kind in ("causal", "masked") and d.stage in D.stage_texts(), mid
        assert "{" + "n_p}" not in d.formula + d.plain and "{trials}" not in d.formula + d.plain, mid  # filled in
        m = table[mid]  # the class reads what is said of it from here
        assert (m.name, m.family, m.kind, m.formula, m.source) == (d.name, d.family, d.kind, d.formula, d.source)
        assert m.describe() == {"id": mid, "family": d.family, "kind": d.kind, "name": d.name, "formula": d.formula,
                                "source": d.source}
        assert methods.plain(mid) == {"plain": d.plain, "unit": d.unit, "rule": d.rule}
        assert methods.display_name(mid) == d.name
    for kind, mid in D.headline_methods().items():
        assert described[mid].kind == kind
    assert set(D.presets()) == {"quick", "file", "prompt", "explore", "length_robust"}
    for name, ids in D.presets().items():
        assert ids and set(ids) <= set(described), name
    assert set(D.pass_group_order()) <= {d.pass_group for d in described.values()}
    assert methods.method_ids("masked") == [i for i in described if i.startswith("pll_")]


def test_ensemble_numbers_come_from_formulas():
    from accapp.methods import formulas as F

    d = methods.describe("ens_mix_p3")
    n_p, n_l = F.ENSEMBLE_SETTINGS["ens_mix_p3"]
    assert f"majority of {n_p} Yes/No prob comp + {n_l} in-template LP" in d.formula
    assert f"{F.ENSEMBLE_TRIALS} seeded draws" in d.formula and f"{F.ENSEMBLE_TRIALS} seeded draws" in d.plain


def test_a_broken_descriptor_is_refused(tmp_path, monkeypatch):
    data = json.loads(D.DATA_FILE.read_text(encoding="utf-8"))
    del data["methods"]["slor"]["rule"]
    path = tmp_path / "methods.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.setattr(D, "DATA_FILE", path)
    _clear()
    try:
        with pytest.raises(ValueError, match="method 'slor' lacks rule"):
            D.descriptors()
    finally:
        monkeypatch.undo()
        _clear()


# ------------------------------------------------------------------------------------------ derived
def test_stages_groups_and_pages_are_the_descriptors():
    from accapp.service import probe as svc_probe
    from accapp.service import score_file as svc_file
    from accapp.ui import about, probe_view
    from accapp.ui import score_file as ui_file

    described = D.descriptors()
    for kind in ("causal", "masked"):
        ids = methods.method_ids(kind)
        stages = svc_probe.stages(ids)
        assert sorted(m for _, group in stages for m in group) == sorted(ids)  # every method in one stage
        assert all(group == [m for m in ids if described[m].stage == stage] for stage, group in stages)  # in order
        assert [s for s, _ in stages] == [s for s in D.stage_texts() if any(described[m].stage == s for m in ids)]
        groups = svc_file.method_groups(kind, ids)
        assert sorted(m for g in groups for m in g) == sorted(ids)
        assert all(len({described[m].pass_group for m in g}) == 1 for g in groups)  # one pass group a step
        assert len(groups) == len({described[m].pass_group for m in ids})
        shared = [o for o in D.pass_group_order() if any(described[m].pass_group == o for m in ids)]
        assert [described[g[0]].pass_group for g in groups][:len(shared)] == shared  # the shared groups first, in order
    assert [s for s, _ in svc_probe.STAGES] == list(D.stage_texts())
    assert svc_probe.DEFAULT_BENCH_METHOD == D.headline_methods()
    assert svc_probe.method_choices("masked") == [(f"{described[i].name}  ({described[i].family})", i)
                                                  for i in methods.method_ids("masked")]
    assert ui_file.DEFAULT_METHODS == [i for i in described if i in D.presets()["file"]]
    from accapp.service import explore as view_model

    assert tuple(view_model.PREFERRED) == tuple(D.presets()["explore"])  # Explore's first selection
    table = about.methods_md()
    assert all(f"| {about.md(d.name)} | {about.md(d.plain)} | `{d.id}` |" in table for d in described.values())
    assert f"is {described['lp'].name}'s verdict ({described['pll_word_l2r'].name} for a masked LM)" in about.probe_rules_md()
    report = {"model": "m", "good": "a", "bad": "b", "agreement": {"verdict": "good", "good": 1, "bad": 0, "none": 0,
              "not_voting": 0}, "families": [{"family": f, "good": 1, "bad": 0, "none": 0, "not_voting": 0}
                                              for f in D.families()]}
    shown = probe_view.headline_html(report)
    assert all(probe_view.esc(d["title"]) in shown for d in D.families().values())
    assert probe_view.pending_html(list(D.stage_texts())) == probe_view.busy_html(
        "Still computing " + ", then ".join(D.stage_texts().values()) + "…")


def test_a_method_added_to_the_data_shows_up_everywhere(one_more_method):
    from accapp.service import probe as svc_probe
    from accapp.service import verdicts
    from accapp.ui import about, probe_view

    assert methods.method_ids("causal")[-1] == "toy_templated" and "toy_lp" in methods.method_ids("causal")
    assert methods.describe("toy_templated").stage == "in-template"
    stages = dict(svc_probe.stages(["lp", "toy_lp", "in_template_lp", "toy_templated"]))
    assert stages == {"sentence probability": ["lp", "toy_lp"], "in-template": ["in_template_lp", "toy_templated"]}
    assert ("in-template", ("in-template", "toy family")) in D.stage_families()
    assert "| Toy LP |" in about.methods_md() and "`toy_templated`" in about.methods_md()
    assert "Toy family (nobody 2099)" in probe_view.family_title("toy family")
    assert methods.display_name("toy_lp") == "Toy LP" and verdicts.descriptors()["toy_lp"].formula == "toy(s)"
    # ... and the registry refuses to run with a descriptor whose method has no code (or the reverse)
    with pytest.raises(RuntimeError, match="descriptors without a method: \\['toy_lp', 'toy_templated'\\]"):
        methods.all_methods()


# ------------------------------------------------------------------------------------------ one home
def _named_ids(path: Path, ids: set[str]) -> set[str]:
    """The method ids a module writes as string constants (docstrings aside)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value in ids and id(n) not in docs}


def test_no_module_outside_methods_names_a_method_id():
    ids = set(D.descriptors())
    found = {}
    for path in sorted((ROOT / "accapp").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("accapp/methods/"):
            continue
        named = _named_ids(path, ids)
        if named:
            found[rel] = named
    assert found == NAMED_ELSEWHERE
    assert _named_ids(ROOT / "app.py", ids) == set()
