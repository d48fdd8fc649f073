"""Links that reproduce what a tab shows: the tab's inputs in the page URL's query string.

Pure functions only: a raw query (string or mapping) -> checked values, and values -> query string.
The tabs wire them to the page: a ``js=`` snippet keeps the URL up to date (history.replaceState),
and a load handler reads ``gr.Request.query_params`` and fills the inputs.

Bound: a query longer than MAX_QUERY_CHARS characters is refused whole (with a message), and
each value is checked as the tab's own inputs are (a sentence against MAX_SENTENCE_CHARS, a
model against the registry, a method against the methods its model can run).
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import parse_qsl, quote, urlencode

from accapp.errors import UserError, name_some, validate_sentence
from accapp.methods import method_ids, parse_ids
from accapp.service.catalog import get_spec
from accapp.service.context import check_context

# Two sentences of MAX_SENTENCE_CHARS (400) Chinese characters are 2 x 400 x 9 = 7,200 characters
# percent-encoded; 8 KB is also what common servers and proxies accept in a request line.
MAX_QUERY_CHARS = 8192
MAX_KEYS = 32  # a query with more keys than any tab uses is garbage
PROBE_TAB = "probe"
UNITS = ("bits", "nats")
VIEWS = ("words", "words: sum of tokens", "characters", "tokens")
PROBE_KEYS = ("good", "bad", "model", "model2", "methods", "unit", "view", "context")


def parse_query(raw) -> dict[str, str]:
    """A query string (with or without '?') or a mapping -> {key: first value}, or UserError when
    it is over MAX_QUERY_CHARS or has more than MAX_KEYS keys. Values are strings, never lists."""
    if raw is None:
        return {}
    if isinstance(raw, Mapping):
        items = [(str(k), v if isinstance(v, str) else str(v)) for k, v in raw.items()]
    else:
        text = str(raw)
        if len(text) > MAX_QUERY_CHARS:
            raise UserError(f"The link is {len(text):,} characters long; links longer than {MAX_QUERY_CHARS:,} are not read.")
        items = parse_qsl(text.lstrip("?"), keep_blank_values=True)
    if sum(len(k) + len(v) for k, v in items) > MAX_QUERY_CHARS:
        raise UserError(f"The link is longer than the {MAX_QUERY_CHARS:,} characters this app reads.")
    out: dict[str, str] = {}
    for k, v in items:
        out.setdefault(k, v)  # a repeated key: the first value counts
    if len(out) > MAX_KEYS:
        raise UserError(f"The link has {len(out)} parameters; this app reads at most {MAX_KEYS}.")
    return out


def to_query(values: Mapping) -> str:
    """{key: value} -> 'key=value&...' (spaces as %20, empty and None values left out)."""
    return urlencode([(k, str(v)) for k, v in values.items() if v not in (None, "")], quote_via=quote)


# ------------------------------------------------------------------------------------------ probe
def is_probe_link(params: Mapping) -> bool:
    """Whether a parsed query names a probe (its tab, or a pair without a tab)."""
    tab = params.get("tab")
    return tab == PROBE_TAB or (tab in (None, "") and ("good" in params or "bad" in params))


def _model(value: str, label: str) -> str:
    if len(value) > 200:  # no model id is this long: say so without echoing it
        raise UserError(f"The link's {label} is not a model this app knows.")
    return get_spec(value).id  # UserError naming the known models


def probe_values(params: Mapping) -> dict:
    """A probe link's checked values: {good, bad, model, model2 ('' = none), methods (list, or None
    = every method of the model), unit, view, context ('' = none)}; UserError with a clear message for
    any bad value. Missing unit/view/model take the tab's defaults. A critical region travels in the
    sentences themselves ([[...]], service/region.py)."""
    from accapp.service.catalog import DEFAULT_MODEL

    good = validate_sentence(params.get("good"), "acceptable sentence in the link")
    bad = validate_sentence(params.get("bad"), "unacceptable sentence in the link")
    model = _model(params.get("model") or DEFAULT_MODEL, "model")
    model2 = params.get("model2") or ""
    if model2 in ("none", model):
        model2 = ""
    if model2:
        model2 = _model(model2, "second model")
    unit = params.get("unit") or "bits"
    if unit not in UNITS:
        raise UserError(f"The link's unit must be one of {', '.join(UNITS)}.")
    view = params.get("view") or "words"
    if view not in VIEWS:
        raise UserError(f"The link's view must be one of: {', '.join(VIEWS)}.")
    methods = _methods(params.get("methods"), get_spec(model).kind)
    context = check_context(params.get("context"), "context in the link")
    return {"good": good, "bad": bad, "model": model, "model2": model2, "methods": methods, "unit": unit, "view": view,
            "context": context}


def _methods(value, kind: str) -> list[str] | None:
    """The link's method ids, each one the (first) model can run: the tab's selection is the first
    model's; a second model of another kind runs all of its own."""
    if value in (None, "", "all"):
        return None
    ids = parse_ids(value) or []
    known = set(method_ids(kind))
    unknown = [m for m in ids if m not in known]
    if unknown:
        raise UserError(f"The link names methods this model cannot run: {name_some(unknown)}.")
    if not ids:
        raise UserError("The link names no method.")
    return ids


def probe_query(values: Mapping) -> str:
    """A probe's values -> the query string of its link ('tab=probe&good=...'); methods None = all."""
    methods = values.get("methods")
    return to_query({"tab": PROBE_TAB, **{k: values.get(k) for k in ("good", "bad", "model", "model2")},
                     "methods": ",".join(methods) if methods else None,
                     "unit": values.get("unit"), "view": values.get("view"), "context": values.get("context")})


# The same query built in the page from the Probe tab's inputs (probe_query's keys), as a JS
# expression over (good, bad, model, model2, methods, unit, view, context).
_PROBE_QUERY_JS = """(() => {
  const q = new URLSearchParams();
  q.set("tab", "probe");
  const put = (k, v) => { if (v) q.set(k, v); };
  put("good", (good || "").trim()); put("bad", (bad || "").trim()); put("model", model);
  if (model2 && model2 !== model) put("model2", model2);
  put("methods", (methods || []).join(",")); put("unit", unit); put("view", view);
  put("context", (context || "").trim());
  return q.toString().replace(/\\+/g, "%20");
})()"""
_ARGS = "(good, bad, model, model2, methods, unit, view, context)"
# Written into the URL without a reload (history.replaceState), when it is within the bound.
PROBE_URL_JS = f"""{_ARGS} => {{
  const s = {_PROBE_QUERY_JS};
  if (s.length <= {MAX_QUERY_CHARS}) history.replaceState(history.state, "", location.pathname + "?" + s + location.hash);
}}"""
# "Copy link": the page's URL when it holds a probe (kept up to date on each run), else one built from
# the inputs; the clipboard when the browser allows it, else the link shown to copy by hand.
def copy_link_js(args: str, url_lines: str) -> str:
    """A "Copy link" button's js: `url_lines` (JS statements) set `url` from the inputs `args`; the link
    goes to the clipboard when the browser allows it, else it is shown to copy by hand."""
    return f"""async {args} => {{
{url_lines}
  const esc = (t) => t.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
  try {{
    await navigator.clipboard.writeText(url);
    const shown = esc(url.length > 90 ? url.slice(0, 90) + "…" : url);
    return `<span class="acc-copied" role="status">Link copied ✓ <small>${{shown}}</small></span>`;
  }} catch (e) {{
    return `<span role="status">Copy this link: <input class="acc-link-box" readonly size="60"
      value="${{esc(url)}}" onclick="this.select()"></span>`;
  }}
}}"""


PROBE_COPY_JS = copy_link_js(_ARGS, f"""  const here = new URLSearchParams(location.search).get("tab") === "probe";
  const url = here ? location.href : location.origin + location.pathname + "?" + {_PROBE_QUERY_JS};""")


# ------------------------------------------------------------------------------------------ explore
EXPLORE_TAB = "explore"
EXPLORE_KEYS = ("bench", "model", "methods", "template", "phenomenon")


def is_explore_link(params: Mapping) -> bool:
    """Whether a parsed query names an Explore selection (tab=explore)."""
    return params.get("tab") == EXPLORE_TAB


def explore_values(params: Mapping) -> dict:
    """An Explore link's raw selection: {bench, model, methods (list), template, phenomenon}, strings
    cut to 200 characters (no id is longer); the tab checks each against the results it holds."""
    def get(key: str) -> str:
        return str(params.get(key) or "")[:200]

    return {"bench": get("bench"), "model": get("model") or None,
            "methods": [m for m in (parse_ids(get("methods")) or []) if m][:40],
            "template": get("template"), "phenomenon": get("phenomenon") or "all"}


def explore_query(values: Mapping) -> str:
    """An Explore selection -> the query string of its link ('tab=explore&bench=...')."""
    methods = values.get("methods")
    return to_query({"tab": EXPLORE_TAB, "bench": values.get("bench"), "model": values.get("model"),
                     "methods": ",".join(methods) if methods else None, "template": values.get("template"),
                     "phenomenon": None if values.get("phenomenon") in (None, "", "all") else values.get("phenomenon")})


# explore_query's keys built in the page from (bench, model, methods, template, phenomenon, link) and written
# into the URL (history.replaceState) only while the Explore tab is shown; returns the link for its box.
EXPLORE_URL_JS = """(bench, model, methods, template, phenomenon, link) => {
  const tab = document.getElementById("tab-explore");
  if (!tab || tab.offsetParent === null) return link;
  const q = new URLSearchParams();
  q.set("tab", "explore");
  const put = (k, v) => { if (v) q.set(k, v); };
  put("bench", bench); put("model", model); put("methods", (methods || []).join(","));
  put("template", template); if (phenomenon && phenomenon !== "all") put("phenomenon", phenomenon);
  const s = q.toString().replace(/\\+/g, "%20");
  history.replaceState(history.state, "", location.pathname + "?" + s + location.hash);
  return location.origin + location.pathname + "?" + s;
}"""
# "Copy link" (Explore): the link box's link (else the page's URL) to the clipboard.
COPY_LINK_JS = """async (link) => {
  const url = link || location.href;
  try { await navigator.clipboard.writeText(url); } catch (e) { /* the link box shows it to copy by hand */ }
  return [];
}"""
