"""What the app keeps between requests: loaded models, one engine per model, the results store.

Engines are built by :func:`accapp.engine.build_engine` only; tabs reach one through
:meth:`AppState.with_engine`. Benchmark pairs come from :mod:`accapp.service.pairs`.

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
import shutil
import tempfile
import threading
from pathlib import Path

from accapp.models import DEFAULT_MODEL, registry
from accapp.service.pairs import ANY, BENCHMARKS, find_pair, paradigms, phenomena, random_pair  # noqa: F401 - the tabs' lookups

PER_MODEL = max(1, int(os.environ.get("ACCAPP_PER_MODEL_CONCURRENCY", "1") or 1))


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
        from accapp.engine import build_engine
        from accapp.models.loading import quiet_transformers

        quiet_transformers()
        # Through the pool for both kinds (load_model loads any), so unload() frees the weights.
        return build_engine(model_id, lm=self.pool.get(model_id))

    def with_engine(self, model_id: str, fn, *args, **kwargs):
        """fn(engine, *args, **kwargs) in one of the model's slots, on the model thread (the
        model loads on first use): how every tab and endpoint reaches a model."""
        with self.model_slot(model_id):
            engine = self.engine(model_id)
            return self.compute(fn, engine, *args, **kwargs)

    @contextlib.contextmanager
    def model_slot(self, model_id: str):
        """Hold one of the model's concurrency slots while scoring with it.

        A model that runs out of memory or hits a device (CUDA) error is unloaded before the
        error goes on to become a message: its caches may hold half a batch, and on a GPU the
        memory is only given back this way. The next request loads it afresh.
        """
        from accapp.service.messages import is_device_error, is_oom

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


_STATE: AppState | None = None


def get_state() -> AppState:
    global _STATE
    if _STATE is None:
        _STATE = AppState()
    return _STATE


def set_state(state: AppState) -> None:
    global _STATE
    _STATE = state
