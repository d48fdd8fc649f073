"""Every input answered, none with a traceback, no log line forged.

Fast tests: the one escaping rule (errors.shown / escape_controls), the log's one-line formatter,
the bounds on echoed values and model ids, the file and many-pairs refusals. The app on loopback
(the session's shared server): the inputs found by trying the app from outside (a forged model id,
method ids with NUL and ANSI escapes, a 500,000-character model id, a 10,000-character one, a
5,000-character revision, a lone surrogate in the paste-many box and in Explore's filter, the
word-click event through the API, a bogus fn_index), then None, wrong types and a lone surrogate
sent to every event of the page: the log gains no traceback and no line a visitor wrote.
"""

from __future__ import annotations

import io
import json
import logging
import re
import time
import urllib.error
import urllib.request
import uuid

import pytest

from accapp import logs
from accapp.benchmarks import parse_pairs
from accapp.errors import MAX_ECHO_CHARS, MAX_MODEL_CHARS, UserError, escape_controls, name_some, shown

FORGED = "x\n[accapp] FORGED LINE\r\nERROR: all is lost\x00\x1b[31m"
GOOD, BAD = "These casseroles disgust Kayla.", "These casseroles disgusts Kayla."
MODEL = "smollm2-135m-instruct"


# ------------------------------------------------------------------------------------------ fast tier
def test_control_characters_are_written_as_escapes():
    assert escape_controls(FORGED) == "x\\n[accapp] FORGED LINE\\r\\nERROR: all is lost\\x00\\x1b[31m"
    assert escape_controls("a\ud800b\u202ec\u2028") == "a\\ud800b\\u202ec\\u2028"
    assert escape_controls("Ça va? 这本书。") == "Ça va? 这本书。"  # text stays text


def test_every_echo_is_cut_the_same_way():
    assert shown("m" * 500_000) == "m" * MAX_ECHO_CHARS + "… (500,000 characters)"
    assert shown("x" * MAX_ECHO_CHARS) == "x" * MAX_ECHO_CHARS
    assert name_some(["n" * 10_000] * 9).count("(10,000 characters)") == 5  # method ids: the same cut


def _formatted(message: str, *args, exc: BaseException | None = None, debug: bool = False) -> str:
    record = logging.LogRecord("accapp.ui", logging.WARNING, __file__, 1, message, args,
                               (type(exc), exc, exc.__traceback__) if exc else None)
    return logs.OneLineFormatter(debug=debug).format(record)


def test_a_log_record_is_one_line_whatever_a_visitor_sent():
    line = _formatted("refused: Unknown model '%s'", FORGED)
    assert "\n" not in line and "\r" not in line and "\x00" not in line and "\x1b" not in line
    assert line.startswith("[accapp] refused: Unknown model 'x\\n[accapp] FORGED LINE")
    try:
        {}["key\nFORGED"]
    except KeyError as exc:
        error = exc
    line = _formatted("probe failed", exc=error)
    assert "\n" not in line and "KeyError" in line and "test_hostile_inputs.py" in line
    lines = _formatted("probe failed", exc=error, debug=True).split("\n")  # ACCAPP_DEBUG=1: the whole traceback
    assert len(lines) > 2 and all(ln.startswith("[accapp] |") for ln in lines[1:])


def test_the_app_loggers_write_through_the_formatter():
    stream = io.StringIO()
    root = logging.getLogger("accapp")
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logs.OneLineFormatter())
    root.addHandler(handler)
    try:
        logs.refused(logging.getLogger("accapp.service"), "/probe", f"Unknown model '{FORGED}'")
    finally:
        root.removeHandler(handler)
    assert stream.getvalue().count("\n") == 1 and "FORGED LINE" in stream.getvalue()


def test_model_ids_are_bounded_before_the_file_system_sees_them():
    from accapp.models.resolve import resolve_model

    for given in ("a/" + "m" * 10_000, "HuggingFaceTB/SmolLM2-135M@" + "r" * 5_000, "/" + "x" * 5_000):
        with pytest.raises(UserError) as err:
            resolve_model(given)
        assert len(str(err.value)) < 1_000
    with pytest.raises(UserError, match=f"at most {MAX_MODEL_CHARS:,}"):
        resolve_model("m" * (MAX_MODEL_CHARS + 1))
    with pytest.raises(UserError, match="Unknown model|No folder"):  # a path component too long to exist
        resolve_model("./" + "d" * 300)


def test_a_file_is_refused_for_what_it_is():
    with pytest.raises(UserError, match="one line and no header"):
        parse_pairs(f"{GOOD},{BAD}\n".encode(), "pairs.csv")
    with pytest.raises(UserError, match=r"names the column 'good' 2 times \(columns 1, 3\)"):
        parse_pairs(f"good,bad,good\n{GOOD},{BAD},x\n".encode(), "pairs.csv")
    with pytest.raises(UserError, match="has no rows"):  # a header alone is a header
        parse_pairs(b"good,bad\n", "pairs.csv")


def test_the_paste_many_box_refuses_an_empty_method_list():
    from accapp.service import many_pairs

    for methods in ([], None, ""):
        with pytest.raises(UserError, match="Tick at least one method"):
            many_pairs.check_methods(methods)
    assert many_pairs.check_methods(["lp", "lp", "mean_lp"]) == ["lp", "mean_lp"]


def test_a_failed_row_leaves_counts_whole(tiny_llama):
    from accapp.engine import build_engine
    from accapp.service import score_file

    pairs = parse_pairs(f"good,bad\n{GOOD},{BAD}\n,{BAD}\n".encode(), "pairs.csv", bad_lines="row")
    engine = build_engine(tiny_llama.spec.id, lm=tiny_llama)
    scored = score_file.scored_steps(pairs, tiny_llama.spec.id, ["lp"], run=score_file.direct(engine))
    try:
        while True:
            next(scored)
    except StopIteration as done:
        wide = done.value.wide()
    assert wide.loc[1, "error"]  # the empty sentence
    assert str(wide["tokens_good"].dtype) == "Int64" and str(wide.loc[0, "tokens_good"]).isdigit()
    assert "." not in wide.to_csv(index=False).splitlines()[1].split(",")[wide.columns.get_loc("tokens_good")]


# ------------------------------------------------------------------------------------- the app itself
def _join(url: str, data: list, fn_index=None, api_name=None, timeout: float = 60) -> dict:
    """One event through Gradio's queue, as a page or a hand-written client sends it: its last message."""
    session = uuid.uuid4().hex[:10]
    body = json.dumps({"data": data, "fn_index": fn_index, "session_hash": session, "event_data": None,
                       "trigger_id": None}).encode("utf-8", "surrogatepass")
    req = urllib.request.Request(url + "gradio_api/queue/join", data=body, headers={"Content-Type": "application/json"})
    try:
        urllib.request.urlopen(req, timeout=timeout).read()
    except urllib.error.HTTPError as exc:
        return {"http": exc.code, "body": exc.read().decode("utf-8", "replace")}
    last: dict = {}
    with urllib.request.urlopen(url + f"gradio_api/queue/data?session_hash={session}", timeout=timeout) as r:
        for raw in r:
            line = raw.decode("utf-8", "replace").strip()
            if line.startswith("data:"):
                last = json.loads(line[5:])
                if last.get("msg") in ("process_completed", "close_stream"):
                    break
    return last


def _events(url: str) -> list[dict]:
    """The page's events with a backend function, one per handler (an event repeated for several
    triggers, render_figures_1 ..., is sent once)."""
    config = json.load(urllib.request.urlopen(url + "config", timeout=30))
    seen, out = set(), []
    for dep in config["dependencies"]:
        base = re.sub(r"_\d+$", "", dep.get("api_name") or "")
        if dep.get("backend_fn") and base not in seen:
            seen.add(base)
            out.append(dep)
    return out


def _log_since(server, start: int) -> str:
    time.sleep(0.5)  # the server's last lines reach its log
    return server.log.read_text(encoding="utf-8", errors="replace")[start:]


@pytest.mark.slow
@pytest.mark.process
def test_hostile_inputs_get_messages_and_the_log_neither_tracebacks_nor_forged_lines(app_server):
    from tests.ui_server import api_client

    url = app_server.url
    client = api_client(url)
    start = len(app_server.log.read_text(encoding="utf-8", errors="replace"))

    def probe_error(model, methods=None) -> str:
        with pytest.raises(Exception) as err:  # gradio_client's AppError carries the app's message
            client.predict(GOOD, BAD, model, methods, None, api_name="/probe")
        return str(err.value)

    assert "FORGED LINE" in probe_error(FORGED) and len(probe_error(FORGED)) < 1_000
    forged_methods = probe_error(MODEL, ["lp\n[accapp] FORGED\x1b[2J", "\x00nul"])
    assert "Unknown method(s): lp\\n[accapp] FORGED\\x1b[2J, \\x00nul" in forged_methods
    for model in ("m" * 500_000, "a/" + "m" * 10_000, "HuggingFaceTB/SmolLM2-135M@" + "r" * 5_000):
        message = probe_error(model)
        assert len(message) < 1_000 and "characters)" in message

    events = {dep["api_name"]: dep for dep in _events(url)}
    many = events["run_many"]
    surrogate = _join(url, [f"{GOOD}\t{BAD[:-1]}\ud800.", MODEL, ["lp"], "bits", ""], many["id"])
    assert "lone surrogate" in (surrogate.get("output") or {}).get("error", "")
    for methods in ([], ["nope"]):  # unknown ids are left out by the list, and none left is refused
        out = _join(url, [f"{GOOD}\t{BAD}", MODEL, methods, "bits", ""], many["id"])
        assert "Tick at least one method" in json.dumps(out.get("output"))
    click = _join(url, ["a", "b"], events["on_word_click"]["id"])
    assert click.get("success") is True and click["output"]["data"] == ["a", "b"]  # no click data: nothing changes
    assert _join(url, [], 99_999) == {"http": 404, "body": "This app has no such event; reload the page."}
    info = client.view_api(return_format="dict", print_info=False)
    assert set(info["named_endpoints"]) == {"/probe", "/score_file", "/score_file_all"}  # the page's events are not

    for values in (lambda n: [None] * n, lambda n: [12_345] * n, lambda n: ["\ud800 and text"] * n):
        for dep in events.values():
            out = _join(url, values(len(dep["inputs"])), dep["id"])
            assert out.get("http", 200) < 500, (dep["api_name"], out)  # a 400 (a validator's refusal) says why

    log = _log_since(app_server, start)
    assert "Traceback" not in log
    assert not [ln for ln in log.splitlines() if "FORGED" in ln and not ln.startswith("[accapp] ")]
    assert "\x1b" not in log and "\x00" not in log
    assert max(len(ln) for ln in log.splitlines()) < 2_000


def test_every_environment_variable_is_read_in_settings():
    """One home for each fact: no module but accapp/settings.py reads the environment."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "accapp"
    found = [f"{p.relative_to(root)}:{n}" for p in sorted(root.rglob("*.py")) if p.name != "settings.py"
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(r"os\.environ|os\.getenv|getenv\(", line)]
    assert not found, found


def test_consolidating_removes_a_killed_runs_temporary_file(tmp_path):
    from accapp.files import temp_path
    from accapp.runner.runner import consolidate

    out = tmp_path / "results"
    out.mkdir()
    stale = temp_path(out / "m__blimp.parquet", pid=2**22 + 12345)  # no process has this pid
    stale.write_bytes(b"half a file")
    consolidate(tmp_path / "runs", out)
    assert not stale.exists()
