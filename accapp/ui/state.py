"""What the app keeps between requests: loaded models, one engine per model, the results store.

- Models load lazily, the first time a request needs one, and stay loaded (one per id,
  through :class:`accapp.models.loading.ModelPool`).
- Requests for one model run one at a time (``ACCAPP_PER_MODEL_CONCURRENCY``, default 1):
  engines keep caches and a CPU has no spare cores anyway; requests for different models
  run side by side (Gradio's queue decides how many events run at once).
- The store (DuckDB over ``precomputed/``) is opened on first use and rebuilt when the set
  of result files changes, so results that appear while the app runs show up.
- Uploads and result files live in one private temporary folder, removed at exit.
- Model work runs on one dedicated thread (:meth:`AppState.compute`): torch's OpenMP
  workers belong to the thread that calls them, and Gradio's changing worker threads each
  kept a team of their own competing for the same two cores.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import os
import random
import shutil
import tempfile
import threading
from functools import lru_cache
from pathlib import Path

import pandas as pd

from accapp.errors import UserError
from accapp.models import DEFAULT_MODEL, get_spec, registry

PER_MODEL = max(1, int(os.environ.get("ACCAPP_PER_MODEL_CONCURRENCY", "1") or 1))
BENCHMARKS = ("blimp", "climp")


def model_choices() -> list[tuple[str, str]]:
    """(label, id) of every registry model; embedded (offline) ones first."""
    specs = sorted(registry().values(), key=lambda s: (not s.embedded, s.kind != "causal", s.id))
    out = []
    for s in specs:
        where = "offline" if s.embedded else "downloads from the Hugging Face hub"
        out.append((f"{s.name} · {s.kind} LM · {where}", s.id))
    return out


class AppState:
    def __init__(self, results_dir: str | os.PathLike | None = None) -> None:
        from accapp.models.loading import ModelPool

        self.results_dir = results_dir
        self.pool = ModelPool()
        self._engines: dict[str, object] = {}
        self._lock = threading.Lock()
        self._loading: dict[str, threading.Lock] = {}
        self._slots: dict[str, threading.BoundedSemaphore] = {}
        self._store = None
        self._store_key = None
        self._store_lock = threading.Lock()
        self._tmp: Path | None = None
        self._compute = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="accapp-model")
        self._compute_thread: threading.Thread | None = None

    def compute(self, fn, *args, **kwargs):
        """Run model work on the model thread and wait for it (exceptions come back here)."""
        if threading.current_thread() is self._compute_thread:
            return fn(*args, **kwargs)

        def run():
            self._compute_thread = threading.current_thread()
            return fn(*args, **kwargs)

        return self._compute.submit(run).result()

    # ------------------------------------------------------------------ engines
    def register_engine(self, model_id: str, engine) -> None:
        """Use a ready engine for an id (tests: tiny masked LMs without a hub)."""
        with self._lock:
            self._engines[model_id] = engine

    def is_loaded(self, model_id: str) -> bool:
        return model_id in self._engines

    def engine(self, model_id: str):
        """The engine of a registry model, loading the model on first use."""
        with self._lock:
            if model_id in self._engines:
                return self._engines[model_id]
            load_lock = self._loading.setdefault(model_id, threading.Lock())
        with load_lock:  # one load per model, other models load meanwhile
            with self._lock:
                if model_id in self._engines:
                    return self._engines[model_id]
            engine = self._build(model_id)
            with self._lock:
                self._engines[model_id] = engine
            return engine

    def _build(self, model_id: str):
        spec = get_spec(model_id)
        try:
            import transformers

            transformers.logging.disable_progress_bar()
        except Exception:  # noqa: BLE001
            pass
        if spec.kind == "masked":
            from accapp.scoring.masked import MaskedScorer, load_masked_model
            from accapp.scoring.masked_engine import MaskedEngine

            lm = load_masked_model(model_id)
            return MaskedEngine(MaskedScorer.from_loaded(lm))
        from accapp.methods.engine import Engine
        from accapp.scoring.causal import CausalScorer

        lm = self.pool.get(model_id)
        return Engine(CausalScorer(lm))

    @contextlib.contextmanager
    def model_slot(self, model_id: str):
        """Hold one of the model's concurrency slots while scoring with it.

        A model that runs out of memory or hits a device (CUDA) error is unloaded before the
        error goes on to become a message: its caches may hold half a batch, and on a GPU the
        memory is only given back this way. The next request loads it afresh.
        """
        from accapp.ui.common import is_device_error, is_oom

        with self._lock:
            sem = self._slots.setdefault(model_id, threading.BoundedSemaphore(PER_MODEL))
        with sem:
            try:
                yield
            except Exception as exc:
                if is_oom(exc) or is_device_error(exc):
                    self.unload(model_id)
                raise

    def unload(self, model_id: str) -> None:
        """Forget a model's engine and weights (the next request reloads them)."""
        import gc

        with self._lock:
            self._engines.pop(model_id, None)
        self.pool.drop(model_id)
        gc.collect()
        try:
            import torch

            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        except Exception:  # noqa: BLE001 - freeing is best effort; the reload is what matters
            pass

    def preload(self, model_id: str = DEFAULT_MODEL) -> threading.Thread:
        """Load a model in the background (the app warms the default model at start)."""

        def run():
            try:
                with self.model_slot(model_id):
                    self.engine(model_id)
            except Exception as exc:  # noqa: BLE001 - a failed warm-up is retried by the first request
                print(f"[accapp] preloading {model_id} failed: {exc}", flush=True)

        t = threading.Thread(target=run, name=f"preload-{model_id}", daemon=True)
        t.start()
        return t

    # ------------------------------------------------------------------ store
    def _results_key(self):
        from accapp.store import DEFAULT_RESULTS_DIR

        folder = Path(self.results_dir or os.environ.get("ACCAPP_RESULTS_DIR") or DEFAULT_RESULTS_DIR)
        if not folder.is_dir():
            return (str(folder), ())
        files = []
        for p in sorted(folder.glob("*.parquet")):
            with contextlib.suppress(OSError):
                st = p.stat()
                files.append((p.name, st.st_mtime_ns, st.st_size))
        return (str(folder), tuple(files))

    def store(self):
        """The results store, rebuilt when the result files on disk changed."""
        from accapp.store import Store

        key = self._results_key()
        with self._store_lock:
            if self._store is None:
                self._store = Store(self.results_dir)
                self._store_key = key
            elif key != self._store_key:
                self._store.refresh()
                self._store_key = key
            return self._store

    # ------------------------------------------------------------------ temp files
    def tmpdir(self) -> Path:
        """A private temporary folder for this process (removed at exit)."""
        with self._lock:
            if self._tmp is None or not self._tmp.is_dir():
                # inside Gradio's (private) temp folder when there is one, so both go together
                parent = os.environ.get("GRADIO_TEMP_DIR")
                if parent:
                    Path(parent).mkdir(parents=True, exist_ok=True)
                self._tmp = Path(tempfile.mkdtemp(prefix="accapp-", dir=parent or None))
                atexit.register(shutil.rmtree, self._tmp, True)
            return self._tmp


# ---------------------------------------------------------------------- benchmarks
@lru_cache(maxsize=4)
def benchmark(name: str) -> pd.DataFrame:
    from accapp.bench.datasets import BUILTIN, load_benchmark

    if name not in BUILTIN:
        raise UserError(f"Unknown benchmark {name!r}; choose one of {', '.join(BUILTIN)}.")
    return load_benchmark(name)


@lru_cache(maxsize=4)
def _pair_index(name: str) -> dict:
    df = benchmark(name)
    return {(g, b): i for i, (g, b) in enumerate(zip(df["good"], df["bad"]))}


def find_pair(good: str, bad: str) -> dict | None:
    """The benchmark pair with exactly these sentences (meta dict), or None."""
    good, bad = (good or "").strip(), (bad or "").strip()
    for name in BENCHMARKS:
        try:
            i = _pair_index(name).get((good, bad))
        except Exception:  # noqa: BLE001 - a missing asset only means no match
            continue
        if i is not None:
            return pair_meta(name, i)
    return None


def pair_meta(name: str, i: int) -> dict:
    row = benchmark(name).iloc[int(i)]
    return {k: str(row[k]) for k in ("benchmark", "paradigm", "phenomenon", "pair_id", "good", "bad")}


def phenomena(name: str) -> list[str]:
    return sorted(set(benchmark(name)["phenomenon"]))


def paradigms(name: str, phenomenon: str | None = None) -> list[str]:
    df = benchmark(name)
    if phenomenon and phenomenon != ANY:
        df = df[df["phenomenon"] == phenomenon]
    return sorted(set(df["paradigm"]))


ANY = "any"


def random_pair(name: str, phenomenon: str | None = None, paradigm: str | None = None, rng=None) -> dict:
    """A random pair of a benchmark, within a phenomenon and / or paradigm ('any' = no filter)."""
    df = benchmark(name)
    mask = pd.Series(True, index=df.index)
    if phenomenon and phenomenon != ANY:
        mask &= df["phenomenon"] == phenomenon
    if paradigm and paradigm != ANY:
        mask &= df["paradigm"] == paradigm
    # identical sentences (7 BLiMP pairs) make a pointless demo
    mask &= df["good"] != df["bad"]
    idx = df.index[mask]
    if len(idx) == 0:
        raise UserError("No pair matches this phenomenon and paradigm.")
    rng = rng or random.Random()
    return pair_meta(name, df.index.get_loc(idx[rng.randrange(len(idx))]))


_STATE: AppState | None = None


def get_state() -> AppState:
    global _STATE
    if _STATE is None:
        _STATE = AppState()
    return _STATE


def set_state(state: AppState) -> None:
    global _STATE
    _STATE = state
