"""The /probe and /score_file API endpoints through gradio_client, against the app in a subprocess,
run both ways: without the `spaces` package (ACCAPP_SPACES=0: not imported; a server of its own,
the setting is read at start) and with it imported off ZeroGPU (the session's shared server,
tests/conftest.py), where its GPU wrapper must be a no-op (issue 31): the answers are compared, equal."""

from __future__ import annotations

import importlib.util
import re
import threading
from pathlib import Path

import pandas as pd
import pytest

from tests.ui_server import start_server

pytestmark = [pytest.mark.slow, pytest.mark.process]

GOOD, BAD = "These casseroles disgust Kayla.", "These casseroles disgusts Kayla."


SPACES = importlib.util.find_spec("spaces") is not None
ANSWERS: dict[str, dict] = {}  # way -> what the same requests answered, compared between the two ways
# The two servers' histories differ (the shared one has scored other tests' sentences in other passes), and an
# AVX-512 CPU's MKL rounds a sentence in a pass of another shape differently: 4.6e-5 nats on "The dogs bark."
# (CI, stop 46's machine). Numbers agree to this; every word, verdict and count must be the same.
ROUNDING = {"abs": 1e-4, "rel": 1e-5}


@pytest.fixture(scope="module", params=["without spaces", "with spaces"])
def server(request, tmp_path_factory):
    if request.param == "with spaces" and not SPACES:
        pytest.skip("the spaces package is not installed (pip install -r requirements-dev.txt)")
    if request.param == "with spaces":  # the shared server: ACCAPP_SPACES=1, checked clean at the session's end
        srv = request.getfixturevalue("app_server")
        srv.way = request.param
        yield srv
        return
    srv = start_server(tmp_path_factory.mktemp("api-app"), env={"ACCAPP_SPACES": "0"})
    srv.way = request.param
    yield srv
    srv.stop()
    # uploads and result files lived in a private temporary folder, removed when the app stopped
    m = re.search(r"\[accapp\] uploads and result files go to (\S+)", srv.log_tail(None))
    assert m and srv.proc.returncode == 0
    assert not Path(m.group(1)).exists()


@pytest.fixture(scope="module")
def client(server):
    from tests.ui_server import api_client

    return api_client(server.url)


def test_the_spaces_package_is_imported_only_the_second_way(client, server):
    gpu = client.predict(api_name="/status")["gpu"]
    assert gpu == {"spaces": server.way == "with spaces", "zero_gpu": False}


def _equal_but_rounding(a, b, where: str = "answer") -> None:
    """a and b hold the same keys, lengths, strings and verdicts; their floats agree to ROUNDING."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), where
        for k in a:
            _equal_but_rounding(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _equal_but_rounding(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and isinstance(b, float):
        assert b == pytest.approx(a, **ROUNDING, nan_ok=True), where
    else:
        assert a == b, where


def _same_both_ways(name: str, way: str, answer) -> None:
    """Store this way's answer; once both ways have answered, they must be equal but for float rounding."""
    ANSWERS.setdefault(name, {})[way] = answer
    if len(ANSWERS[name]) == 2:
        _equal_but_rounding(ANSWERS[name]["without spaces"], ANSWERS[name]["with spaces"], name)


def test_equal_but_rounding_tells_rounding_from_a_change():
    """The comparison itself: rounding passes; a unit slip, a flipped verdict or a lost row does not."""
    a = {"rows": [{"verdict": "good", "lp": -28.18403911590576, "n": 4}]}
    _equal_but_rounding(a, {"rows": [{"verdict": "good", "lp": -28.184082984924316, "n": 4}]})
    for changed in ({"rows": [{"verdict": "good", "lp": -28.18403911590576 / 0.6931, "n": 4}]},
                    {"rows": [{"verdict": "bad", "lp": -28.18403911590576, "n": 4}]},
                    {"rows": [{"verdict": "good", "lp": -28.18403911590576, "n": 5}]}, {"rows": []}):
        with pytest.raises(AssertionError):
            _equal_but_rounding(a, changed)


def test_endpoints_are_named(client):
    info = client.view_api(print_info=False, return_format="dict")
    names = set(info["named_endpoints"])
    assert {"/probe", "/score_file"} <= names
    params = [p["parameter_name"] for p in info["named_endpoints"]["/probe"]["parameters"]]
    assert params == ["good", "bad", "model", "methods", "context"]


def test_probe_every_method(client, server):
    out = client.predict(GOOD, BAD, api_name="/probe")
    assert out["ran_on"] == {"device": "cpu", "gpu": None, "dtype": "fp32", "quantization": None, "batch_size": 64,
                             "text": "CPU · fp32"}
    _same_both_ways("probe", server.way, out)
    assert out["model"] == "smollm2-135m-instruct" and out["good"] == GOOD
    assert len(out["verdicts"]) == 51
    lp = next(r for r in out["verdicts"] if r["method"] == "lp")
    assert lp["verdict"] == "good" and lp["score_good"] > lp["score_bad"]
    assert lp["difference"] == pytest.approx(lp["score_good"] - lp["score_bad"])
    maj = out["majority"]
    assert maj["good"] + maj["bad"] + maj["tie"] == maj["judgments"] == 47
    assert "".join(t["token"] for t in out["tokens"]["bad"]) == BAD
    ens = [r for r in out["verdicts"] if r["family"] == "ensemble"]
    assert len(ens) == 4 and all(r["agrees_with_majority"] is None for r in ens)


def test_probe_chosen_methods_and_concurrent_requests(client):
    results = {}

    def call(i):
        results[i] = client.predict(f"The dog{'s' if i else ''} bark{'' if i else 's'}.",
                                    f"The dog{'s' if i else ''} bark{'s' if i else ''}.",
                                    "smollm2-135m-instruct", ["lp", "slor"], api_name="/probe")

    threads = [threading.Thread(target=call, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all([r["method"] for r in results[i]["verdicts"]] == ["lp", "slor"] for i in range(2))


def test_probe_with_a_context_and_a_region(client):
    """/probe's context (issue 34, item 12) and [[region]] (item 13): the brackets are not scored, the
    answer says which methods read the context, and the region's sum is the word view's."""
    out = client.predict("These casseroles [[disgust]] Kayla.", BAD, "smollm2-135m-instruct", ["lp", "in_template_lp"],
                         "Kayla cooked all week.", api_name="/probe")
    assert out["good"] == GOOD and out["context"]["conditioned"] == ["lp"]
    assert out["context"]["not_applied"] == ["in_template_lp"]
    region = out["region"]["bad"]["region"]
    assert region["words"] == ["disgusts"]
    assert region["surprisal_bits"] == pytest.approx(out["words"]["bad"][2]["surprisal_bits"])
    plain = client.predict(GOOD, BAD, "smollm2-135m-instruct", ["lp"], api_name="/probe")
    assert plain["context"] is None and plain["region"] is None
    assert plain["verdicts"][0]["score_good"] != pytest.approx(out["verdicts"][0]["score_good"], abs=1e-3)


def test_probe_errors_are_messages(client):
    from gradio_client.exceptions import AppError

    with pytest.raises(AppError, match="unacceptable sentence is empty"):
        client.predict(GOOD, "  ", api_name="/probe")
    with pytest.raises(AppError, match="Unknown method"):
        client.predict(GOOD, BAD, "smollm2-135m-instruct", ["lp", "nope"], api_name="/probe")
    with pytest.raises(AppError, match="Unknown model"):
        client.predict(GOOD, BAD, "gpt-17", None, api_name="/probe")
    # a GPU model on this CPU server: refused with its estimate, before anything loads
    with pytest.raises(AppError, match=r"Gemma 2 9B IT needs a GPU: about .* GB of memory in bf16 and .* in 4-bit NF4"):
        client.predict(GOOD, BAD, "gemma-2-9b-it", ["lp"], api_name="/probe")


def test_score_file(client, server, tmp_path):
    from gradio_client import handle_file

    rows = [(GOOD, BAD), ("The dogs bark.", "The dogs barks."), ("", "Empty good."), ("Who left?", "Who left left?")]
    path = tmp_path / "pairs.jsonl"
    pd.DataFrame(rows, columns=["good", "bad"]).to_json(path, orient="records", lines=True)
    out = client.predict(handle_file(str(path)), "smollm2-135m-instruct", ["lp", "mean_lp"], api_name="/score_file")
    df = pd.read_csv(out, keep_default_na=False)
    assert len(df) == 4 and list(df["row"]) == [1, 2, 3, 4]
    assert df["error"].tolist()[2].startswith("The acceptable sentence is empty") and (df["error"] != "").sum() == 1
    assert df.loc[0, "lp: verdict"] == "good"
    assert {"lp: score_good (nats)", "lp: score_bad (nats)", "mean_lp: verdict", "majority_verdict"} <= set(df.columns)
    raw = Path(out).read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")  # a byte-order mark: Excel reads the file as UTF-8
    _same_both_ways("score_file", server.way, pd.read_csv(out).to_dict(orient="list"))  # numbers as floats


def test_score_file_refuses_bad_files(client, tmp_path):
    from gradio_client import handle_file
    from gradio_client.exceptions import AppError

    path = tmp_path / "pairs.csv"
    path.write_text("sentence,other\na,b\n", encoding="utf-8")
    with pytest.raises(AppError, match="no good-sentence column"):
        client.predict(handle_file(str(path)), "smollm2-135m-instruct", ["lp"], api_name="/score_file")


def test_cancelled_file_scoring_stops_midway_and_keeps_delivered_results(client, server, tmp_path):
    """Score a small file (delivered), then start a long one and cancel it midway: the scoring
    loop stops (the next probe is answered at once, not after the minutes the rest would take),
    no result file is added or half-written, and the delivered result is intact."""
    import time

    from gradio_client import handle_file

    m = re.search(r"\[accapp\] uploads and result files go to (\S+)", server.log_tail(None))
    temp = Path(m.group(1))  # the app's private temp folder: uploads, results, Gradio's copies

    def results():  # every result file (and any half-written one) the app holds
        return {p: p.read_bytes() for p in temp.rglob("*") if p.is_file() and ("-scored-" in p.name or p.suffix == ".tmp")}

    small = tmp_path / "small.csv"
    pd.DataFrame([(GOOD, BAD), ("The dogs bark.", "The dogs barks.")], columns=["good", "bad"]).to_csv(small, index=False)
    first = client.predict(handle_file(str(small)), "smollm2-135m-instruct", ["lp"], api_name="/score_file")
    delivered = Path(first).read_bytes()
    before = results()
    assert any(p.suffix == ".csv" for p in before)

    big = tmp_path / "big.csv"
    rows = [(f"The {n} dogs bark.", f"The {n} dogs barks.") for n in range(2, 402)]
    pd.DataFrame(rows, columns=["good", "bad"]).to_csv(big, index=False)
    methods = ["lp", "mean_lp", "in_template_lp"]  # slow enough that 400 rows take many steps to cancel in
    job = client.submit(handle_file(str(big)), "smollm2-135m-instruct", methods, api_name="/score_file")
    deadline, done = time.time() + 120, 0
    while time.time() < deadline and done < 16:
        progress = job.status().progress_data or []
        done = max([int(p.index or 0) for p in progress if p.length] or [0])
        time.sleep(0.3)
    assert 16 <= done < 400, done  # midway
    assert job.cancel()

    t = time.time()
    out = client.predict(GOOD, BAD, "smollm2-135m-instruct", ["lp"], api_name="/probe")
    assert out["verdicts"][0]["verdict"] == "good"
    assert time.time() - t < 60  # the cancelled loop let go of the model within a batch or two
    after = results()
    assert after == before  # nothing new, nothing half-written, the first result unchanged
    assert Path(first).read_bytes() == delivered
