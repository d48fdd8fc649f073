"""Issue 33, part 7: what the host holds under abuse, without a server (fast tier). The same caps
at every entry point (the /probe service, the Python API, the CLI, file scoring), error messages
that name a few unknown ids and count the rest, wrong types refused at the service's boundary, and
a file over the app's row limit told that limit. The app on loopback: tests/test_limits.py."""

from __future__ import annotations

import pytest

import accapp
from accapp.errors import MAX_METHOD_IDS, MAX_NAMED, UserError
from accapp.methods import parse_ids, resolve
from accapp.service import probe as probe_svc
from accapp.service import score_file as file_svc

GOOD, BAD = "These casseroles disgust Kayla.", "These casseroles disgusts Kayla."
MODEL = "smollm2-135m-instruct"
TOO_MANY = ["lp"] * 150_000  # what was accepted before (the README says 64)
CAP = f"150,000 method ids were sent; at most {MAX_METHOD_IDS} are accepted"


def test_the_method_id_cap_holds_at_every_entry_point(capsys):
    from accapp.cli import main

    assert parse_ids(["lp"] * MAX_METHOD_IDS) == ["lp"]  # at the cap: repeats dropped, accepted
    with pytest.raises(UserError, match=CAP):
        resolve(TOO_MANY, "causal")
    with pytest.raises(UserError, match=CAP):  # the /probe API and the Probe tab
        probe_svc.check_probe("causal", GOOD, BAD, TOO_MANY)
    with pytest.raises(UserError, match=CAP):  # Score a file and /score_file
        file_svc.check_methods(MODEL, TOO_MANY)
    with pytest.raises(UserError, match=CAP):  # the Python API, before any model loads
        accapp.score_pairs([(GOOD, BAD)], MODEL, TOO_MANY, progress=False)
    assert main(["score", "--good", GOOD, "--bad", BAD, "--methods", ",".join(TOO_MANY)]) == 2
    assert CAP in capsys.readouterr().err


def test_an_error_names_a_few_unknown_ids_and_counts_the_rest():
    unknown = [f"nope{i}" for i in range(60)] + ["x" * 10_000]
    with pytest.raises(UserError) as err:
        probe_svc.check_probe("causal", GOOD, BAD, ["lp"] + unknown[:MAX_METHOD_IDS - 1])
    text = str(err.value)
    assert "Unknown method(s): nope0, nope1, nope2, nope3, nope4 and 56 more." in text
    assert "nope5" not in text and len(text) < 1_000
    with pytest.raises(UserError) as err:  # a huge id is cut short, not echoed
        resolve(["x" * 10_000], "causal")
    assert len(str(err.value)) < 1_000
    wrong = resolve(None, "causal")  # every causal method, asked of a masked LM: a few named
    with pytest.raises(UserError) as err:
        resolve([m.id for m in wrong], "masked")
    assert f"and {len(wrong) - MAX_NAMED} more need a causal LM" in str(err.value)


@pytest.mark.parametrize("good, bad, model, methods, message", [
    (GOOD, BAD, [MODEL], ["lp"], "The model must be a model id .* not a list"),
    (GOOD, BAD, {"id": MODEL}, ["lp"], "not a dict"),
    (["a"], BAD, MODEL, ["lp"], "The acceptable sentence must be text, not a list"),
    (GOOD, None, MODEL, ["lp"], "The unacceptable sentence is missing"),
    (GOOD, BAD, MODEL, 5, "Methods must be a list of method ids"),
    (GOOD, BAD, MODEL, {"lp": 1}, "Methods must be a list of method ids"),
], ids=["model-list", "model-dict", "good-list", "bad-none", "methods-int", "methods-dict"])
def test_wrong_types_are_a_user_error_at_the_service_boundary(good, bad, model, methods, message):
    with pytest.raises(UserError, match=message):
        spec = probe_svc.model_spec(model)
        probe_svc.check_probe(spec.kind, good, bad, methods)


def test_file_scoring_refuses_wrong_types_with_a_message():
    with pytest.raises(UserError, match="The model must be a model id"):
        file_svc.check_methods([MODEL], ["lp"])
    with pytest.raises(UserError, match="Methods must be a list"):
        file_svc.check_methods(MODEL, 5)


def test_a_file_over_the_apps_row_limit_is_told_that_limit(tmp_path):
    path = tmp_path / "big.csv"
    path.write_text("good,bad\n" + "The dog barks.,The dog bark.\n" * 262_000, encoding="utf-8")
    with pytest.raises(UserError) as err:
        file_svc.read_upload_info(path)
    limit = f"{file_svc.MAX_ROWS:,}"
    assert f"more than {limit} rows; the limit is {limit}" in str(err.value)
    assert "100,000" not in str(err.value)
