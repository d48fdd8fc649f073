"""The model host: what the app keeps between requests (loaded models, one engine per model, the
results store) and who gets the model when. It lives below the UI: the tabs, the
Python API's app paths and the benchmarks reach models through it, and it knows nothing of Gradio.

The pool holds the models and the engines made from them (:meth:`ModelPool.engine_of`, each made by
:func:`accapp.engine.engine_from`); tabs reach one through :meth:`AppState.with_engine`, which holds a
slot of the model while it scores (:meth:`AppState.model`). Benchmark pairs come from
:mod:`accapp.service.pairs`.

- Models load lazily, the first time a request needs one, and stay loaded within a memory
  budget (:class:`accapp.models.pool.ModelPool`, ``ACCAPP_MEMORY_BUDGET``): a model that
  cannot fit is refused before it loads, and to make room the least recently used model is
  unloaded once no request is using it.
- Requests for one model run one at a time (``ACCAPP_PER_MODEL_CONCURRENCY``, default 1):
  engines keep caches and a CPU has no spare cores anyway. Interactive work (probes, prompts)
  comes first: a waiting probe gets the model before any waiting file step
  (:class:`PrioritySlots`), and on the model thread before any queued file step
  (:class:`ModelThread`). File jobs reach the model through :meth:`AppState.background`, one
  short step at a time, giving it back between steps.
- The store (DuckDB over ``precomputed/``) is opened on first use and rebuilt when the set
  of result files changes, so results that appear while the app runs show up.
- Uploads and result files live in one private temporary folder, removed at exit.
- Model work runs on one dedicated thread (:meth:`AppState.compute`): torch's OpenMP
  workers belong to the thread that calls them, and Gradio's changing worker threads each
  kept a team of their own competing for the same two cores.

Every cache here is bounded: the pool's models by the memory budget and their engines by
accapp.models.pool.MAX_ENGINES_PER_MODEL, ``_slots`` by the registry's size (one entry per model id).
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import contextvars
import functools
import heapq
import itertools
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

from accapp import settings
from accapp.models import DEFAULT_MODEL
from accapp.service import gpu
from accapp.service.pairs import ANY, BENCHMARKS, find_pair, paradigms, phenomena, random_pair  # noqa: F401 - the tabs' lookups

log = logging.getLogger("accapp.host")
PER_MODEL = settings.integer("ACCAPP_PER_MODEL_CONCURRENCY")
INTERACTIVE, BACKGROUND = 0, 1  # priorities: probes and prompts; file steps
BACKGROUND_WAIT_S = 0.5  # a file step waits this long for the model, then yields (Stop works meanwhile)
# A file step that has waited this long goes in turn with the probes: a stream of probes slows a file, never stops it.
FILE_MAX_WAIT_S = settings.number("ACCAPP_FILE_MAX_WAIT_S")
QUIET_AFTER_S = 10.0  # no probe for this long: file steps may be longer (QUIET_STEP_S)
STEP_S = settings.number("ACCAPP_FILE_STEP_S")  # the model time a file job's step aims at
QUIET_STEP_S = settings.number("ACCAPP_FILE_QUIET_STEP_S")  # the same when no probe came for QUIET_AFTER_S


class ModelBusy(Exception):
    """A step could not have the model within its wait (interactive requests came first): yield, then retry."""
# A file step starts only once no probe has used a model for this long (and none is in progress): between
# two probes of a busy stream (a client's round trip) there is no room for a step to slip in.
INTERACTIVE_GRACE_S = 0.2
STOP_WAIT_S = 5.0  # at SIGTERM, how long the running model step may take to end (a Space kills 10-30 s after)
HANDLERS_WAIT_S = 5.0  # then how long the event handlers in flight may take (an Explore render: seconds)
EVICT_WAIT_S = 60.0  # how long a load waits for a model in use before trying the next to unload
# After work, once the model thread has had nothing to do for this long, the allocator gives its freed
# pages back (glibc keeps a probe's large temporaries for reuse; the growth it stops: docs/performance.md).
IDLE_TRIM_S = 1.0
# Probes waiting for the same model are scored together, at most this many pairs an engine call:
# ten visitors probing at once cost about two probes' time instead of ten (bench/load_test.py).
PROBE_BATCH = settings.integer("ACCAPP_PROBE_BATCH")
DEFAULT_OPTIONS = (None, "whole", None, None)  # AppState.engine's options by default: language, scope, batch size, convention


class PrioritySlots:
    """``n`` slots; a waiting interactive request is served before any waiting background one."""

    def __init__(self, n: int) -> None:
        self.n = n
        self._free = n
        self._waiting = [0, 0]
        self._cond = threading.Condition()

    def acquire(self, priority: int = INTERACTIVE, timeout: float | None = None, unless=None) -> bool:
        """Take a slot (False after timeout seconds without one, or as soon as unless() is true:
        a batched probe whose answer came from another caller's batch stops waiting; see wake)."""
        with self._cond:
            self._waiting[priority] += 1
            try:
                ok = self._cond.wait_for(lambda: (unless is not None and unless())
                                         or (self._free > 0 and not any(self._waiting[:priority])), timeout)
                if not ok or (unless is not None and unless()):
                    return False
                self._free -= 1
                return True
            finally:
                self._waiting[priority] -= 1
                self._cond.notify_all()

    def wake(self) -> None:
        """Let waiters look at their unless() again."""
        with self._cond:
            self._cond.notify_all()

    def release(self) -> None:
        with self._cond:
            self._free += 1
            self._cond.notify_all()

    @property
    def in_use(self) -> int:
        return self.n - self._free


class ModelThread:
    """One thread that runs all model work, interactive work first, each priority in arrival order.
    Each call runs in its caller's context (contextvars): on ZeroGPU, `spaces.GPU` reads the visitor's
    Gradio request from it, so the GPU time is counted against that visitor's quota."""

    def __init__(self) -> None:
        self._heap: list = []  # bounded by the requests in flight (each caller waits for its own)
        self._cond = threading.Condition()
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None
        self._busy = False  # a job is running on the thread
        self._stopping = False

    def is_current(self) -> bool:
        return threading.current_thread() is self._thread

    def run(self, priority: int, fn, *args, **kwargs):
        """fn(*args, **kwargs) on this thread, and wait for it (exceptions come back here); called from
        this thread itself (a job that needs the model again), a plain call."""
        if self.is_current():
            return fn(*args, **kwargs)
        return self.submit(priority, fn, *args, **kwargs).result()

    def submit(self, priority: int, fn, *args, **kwargs) -> concurrent.futures.Future:
        future: concurrent.futures.Future = concurrent.futures.Future()
        with self._cond:
            if self._stopping:
                future.set_exception(RuntimeError("The app is stopping: nothing more runs on the model."))
                return future
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="accapp-model", daemon=True)
                self._thread.start()
            context = contextvars.copy_context()
            heapq.heappush(self._heap, (priority, next(self._seq), future, context.run, (fn, *args), kwargs))
            self._cond.notify()
        return future

    def _run(self) -> None:
        from accapp.models.release import release_idle_memory

        worked = False  # a job ran since the freed memory was last given back
        while True:
            with self._cond:
                if not self._cond.wait_for(lambda: self._heap, IDLE_TRIM_S if worked else None):
                    future = None  # idle for IDLE_TRIM_S after work
                else:
                    _, _, future, fn, args, kwargs = heapq.heappop(self._heap)
                    if not future.set_running_or_notify_cancel():
                        continue
                    self._busy = worked = True
            if future is None:
                release_idle_memory()
                worked = False
                continue
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                future.set_exception(exc)
            with self._cond:
                self._busy = False
                self._cond.notify_all()
            # While this thread waits for the next job, its frame must not keep the last one's
            # engine alive: an unloaded model's weights would stay mapped.
            del future, fn, args, kwargs

    def stop(self, timeout: float) -> bool:
        """No new job; the queued ones cancelled; wait up to `timeout` s for the running one to end (True
        if none runs). The app stops so: a process that exits while this thread is inside torch aborts
        ("terminate called without an active exception", exit status -6)."""
        with self._cond:
            self._stopping = True
            for _, _, future, *_ in self._heap:
                future.cancel()
            self._heap.clear()
            return self._cond.wait_for(lambda: not self._busy, timeout)


class AppState:
    def __init__(self, results_dir: str | os.PathLike | None = None, budget: int | None = None) -> None:
        from accapp.models.pool import ModelPool

        self.results_dir = results_dir
        self.pool = ModelPool(budget, evict=self._evict)  # the models, and the engines made from them
        self._lock = threading.Lock()
        self._slots: dict[str, PrioritySlots] = {}  # one per model id (the registry's size)
        self._store = None
        self._store_key = None
        self._store_lock = threading.Lock()
        self._tmp: Path | None = None
        self._thread = ModelThread()
        self._last_interactive = 0.0  # when a probe or prompt last used a model (time.monotonic)
        self._interactive = 0  # probes and prompts in with_engine now
        self._waiting_probes: dict[str, list] = {}  # per model, probe stages not yet taken (each caller waits for its own)

    def stop(self, timeout: float = STOP_WAIT_S) -> bool:
        """The app is stopping: no new model work, and the running step ends before the process exits."""
        return self._thread.stop(timeout)

    def compute(self, fn, engine, *args, **kwargs):
        """fn(engine, *args, **kwargs) on the model thread, ahead of file steps, and wait for it (exceptions
        come back here); a call that runs the model goes through service.gpu (ZeroGPU's spaces.GPU)."""
        return self._thread.run(INTERACTIVE, gpu.run, fn, engine, *args, **kwargs)

    # ------------------------------------------------------------------ engines
    def register_engine(self, model_id: str, engine) -> None:
        """Use a ready engine for an id (tests: tiny masked LMs without a hub)."""
        self.pool.register(model_id, engine, DEFAULT_OPTIONS)

    def is_loaded(self, model_id: str) -> bool:
        return self.pool.holds(model_id)

    def engine(self, model_id: str, dtype: str | None = None, quantization: str | None = None, *,
               language: str | None = None, in_template_scope: str = "whole", batch_size: int | None = None,
               convention: str | None = None):
        """The one way to an engine: the pool's, made from its model (loaded on first use, within the
        budget; dtype None: the pool picks the precision) once per set of options."""
        from accapp.engine import engine_from

        options = (language, in_template_scope, batch_size, convention)
        make = functools.partial(engine_from, language=language, in_template_scope=in_template_scope,
                                 batch_size=batch_size, convention=convention)
        return self.pool.engine_of(model_id, make, options, dtype, quantization)  # refused before loading if it cannot fit

    def engine_for(self, model: str, dtype: str = "fp32", quantization: str | None = None, *,
                   trust_remote_code: bool = False, max_memory: int | str | None = None, **options):
        """An engine for any form of model (a registry id, a hub id, a folder, a .gguf file) and
        explicit options: the Python API's and the runner's, held within the same budget as the app's.
        max_memory (bytes or '16GB') refuses a model whose estimate exceeds it, before it loads."""
        from accapp.engine import check_options
        from accapp.models.budget import parse_bytes, plan_load
        from accapp.models.loading import quiet_transformers
        from accapp.models.resolve import resolve_model

        check_options(options.get("in_template_scope", "whole"), options.get("convention"))  # before a model loads
        quiet_transformers()
        spec = resolve_model(model, trust_remote_code)  # remembered: the pool finds it by its id
        if max_memory is not None:
            budget = parse_bytes(max_memory) if isinstance(max_memory, str) else int(max_memory)
            plan_load(spec, budget, dtype, quantization, budget_name="max_memory")
        return self.engine(spec.id, dtype, quantization, **options)

    def with_engine(self, model_id: str, fn, *args, unless=None, **kwargs):
        """fn(engine, *args, **kwargs) in one of the model's slots, on the model thread (the
        model loads on first use): how probes and prompts reach a model, ahead of file steps.
        unless: stop waiting for a slot, and return None, once unless() is true."""
        with self._lock:
            self._interactive += 1
            self._last_interactive = time.monotonic()
        try:
            with self.model(model_id, unless=unless) as engine:
                return None if engine is None else self.compute(fn, engine, *args, **kwargs)
        finally:
            with self._lock:
                self._interactive -= 1
                self._last_interactive = time.monotonic()

    def batched(self, model_id: str, fn, item):
        """fn(engine, items) -> one answer per item (or the exception of that item), batched: the item
        joins those waiting for the same model, and whichever caller gets the model first answers up to
        PROBE_BATCH of them in one call. Returns (*its answer, where it ran: provenance.ran_on).
        The probe's stages come this way (service.probe.batched_stage)."""
        from accapp.service.provenance import ran_on

        mine = concurrent.futures.Future()
        with self._lock:
            self._waiting_probes.setdefault(model_id, []).append((item, mine))

        def drain(engine):
            with self._lock:
                queue = self._waiting_probes.get(model_id, [])
                taken, queue[:] = queue[:PROBE_BATCH], queue[PROBE_BATCH:]
            if not taken:
                return
            try:
                answers = gpu.run(fn, engine, [queued for queued, _ in taken])
            except BaseException as exc:  # noqa: BLE001 - every caller of the batch gets it
                for _, future in taken:
                    future.set_exception(exc)
                raise  # on through AppState.model, which unloads a model that ran out of memory
            where = ran_on(engine)
            for (_, future), answer in zip(taken, answers):
                if isinstance(answer, BaseException):
                    future.set_exception(answer)
                else:
                    future.set_result((*answer, where))
            slots.wake()  # the callers answered here stop waiting for the model and send their next probe

        # A caller answered by another's batch must not wait for the model in turn: it would hold
        # back its visitor's next probe, and the batches shrink to one probe each.
        slots = self._slot(model_id)
        try:
            while not mine.done():
                self.with_engine(model_id, drain, unless=mine.done)
        except BaseException:  # the model could not be had (not loadable, out of memory): take the stage back
            with self._lock:
                queue = self._waiting_probes.get(model_id, [])
                queue[:] = [entry for entry in queue if entry[1] is not mine]
            if not mine.done():
                raise
        return mine.result()

    def step_target(self) -> float:
        """The model seconds a file step aims at now: short while probes come, longer when none
        came for QUIET_AFTER_S (fewer, larger steps lose less to splitting a pair's methods)."""
        return STEP_S if time.monotonic() - self._last_interactive < QUIET_AFTER_S else QUIET_STEP_S

    def background(self, model_id: str, fn, *args, wait: float = BACKGROUND_WAIT_S, waited: float = 0.0):
        """fn(engine, *args) as a file job's step: the model is taken only when no interactive
        request waits for it, and given back when the step ends. Raises ModelBusy when the model
        stays taken for ``wait`` seconds, so the job can yield (and be stopped) before it tries again.
        A step starts only when no probe is in progress and none ended in the last INTERACTIVE_GRACE_S
        (any model: they share the model thread); one that has already ``waited`` FILE_MAX_WAIT_S
        seconds goes in turn with the probes."""
        priority = INTERACTIVE if waited >= FILE_MAX_WAIT_S else BACKGROUND
        deadline = time.monotonic() + wait
        while priority == BACKGROUND and (self._interactive or time.monotonic() - self._last_interactive < INTERACTIVE_GRACE_S):
            if time.monotonic() >= deadline:
                raise ModelBusy(model_id)
            time.sleep(0.02)
        with self.model(model_id, priority, max(0.05, deadline - time.monotonic())) as engine:
            return self._thread.run(priority, gpu.run, fn, engine, *args)

    def _slot(self, model_id: str) -> PrioritySlots:
        with self._lock:
            return self._slots.setdefault(model_id, PrioritySlots(PER_MODEL))

    @contextlib.contextmanager
    def model_slot(self, model_id: str, priority: int = INTERACTIVE, timeout: float | None = None, unless=None):
        """Hold one of the model's concurrency slots (ModelBusy after ``timeout`` seconds without
        one); yields True, or False without a slot once unless() is true."""
        slots = self._slot(model_id)
        if not slots.acquire(priority, timeout, unless):
            if unless is not None and unless():
                yield False
                return
            raise ModelBusy(model_id)
        try:
            yield True
        finally:
            slots.release()

    @contextlib.contextmanager
    def model(self, model_id: str, priority: int = INTERACTIVE, timeout: float | None = None, unless=None):
        """The model's engine (AppState.engine), in one of its slots for as long as it scores (see
        model_slot); yields None without one once unless() is true.

        A model that runs out of memory or hits a device (CUDA) error is unloaded before the
        error goes on to become a message: its caches may hold half a batch, and on a GPU the
        memory is only given back this way. The next request loads it afresh.
        """
        from accapp.service.messages import is_device_error, is_oom

        with self.model_slot(model_id, priority, timeout, unless) as held:
            if not held:
                yield None
                return
            try:
                yield self.engine(model_id)
            except Exception as exc:
                if is_oom(exc) or is_device_error(exc):
                    self.pool.unload(model_id)
                raise

    def _evict(self, model_id: str, wait: float = EVICT_WAIT_S) -> bool:
        """Unload a model to make room for another, once no request is using it (the pool's
        callback; False when it stays in use for ``wait`` seconds)."""
        slots = self._slot(model_id)
        taken = 0
        try:
            deadline = time.monotonic() + wait
            while taken < slots.n:  # every slot: nobody scores with it while it goes
                if not slots.acquire(INTERACTIVE, max(0.0, deadline - time.monotonic())):
                    return False
                taken += 1
            log.info("unloading %s to make room (memory budget)", model_id)
            self.pool.unload(model_id)
            return True
        finally:
            for _ in range(taken):
                slots.release()

    def ran_on(self, model_id: str) -> dict | None:
        """Where a model's results are computed (service.provenance.ran_on), or None when not loaded."""
        from accapp.service.provenance import ran_on

        engine = next(iter(self.pool.held_engines(model_id)), None)
        return ran_on(engine) if engine is not None else None

    def loaded_models(self) -> list[dict]:
        """The models loaded now, least recently used first (id, dtype, quantization, bytes, idle_s)."""
        return self.pool.loaded()

    def allocator(self) -> str:
        """The allocators the process runs on, in words (accapp.models.release)."""
        from accapp.models.release import allocator_in_use

        return allocator_in_use()

    def preload(self, model_id: str = DEFAULT_MODEL) -> threading.Thread:
        """Load a model in the background (the app warms the default model at start)."""

        def run():
            try:
                with self.model(model_id):
                    pass  # loaded, and its engine made
            except Exception as exc:  # noqa: BLE001 - a failed warm-up is retried by the first request
                log.warning("preloading %s failed: %s", model_id, exc)

        t = threading.Thread(target=run, name=f"preload-{model_id}", daemon=True)
        t.start()
        return t

    # ------------------------------------------------------------------ store
    def _results_key(self):
        from accapp.store import DEFAULT_RESULTS_DIR

        folder = Path(self.results_dir or settings.text("ACCAPP_RESULTS_DIR") or DEFAULT_RESULTS_DIR)
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
                atexit.register(self.close_store)  # DuckDB's connection closed before the interpreter goes
            elif key != self._store_key:
                self._store.refresh()
                self._store_key = key
            return self._store

    def close_store(self) -> None:
        """Close the results store's DuckDB connection (at exit: left open, DuckDB's bindings report
        the objects they leaked)."""
        with self._store_lock:
            if self._store is not None:
                with contextlib.suppress(Exception):
                    self._store.close()
                self._store = None

    # ------------------------------------------------------------------ temp files
    def tmpdir(self) -> Path:
        """A private temporary folder for this process (removed at exit)."""
        with self._lock:
            if self._tmp is None or not self._tmp.is_dir():
                # inside Gradio's (private) temp folder when there is one, so both go together
                parent = settings.gradio_temp_dir()
                if parent:
                    Path(parent).mkdir(parents=True, exist_ok=True)
                self._tmp = Path(tempfile.mkdtemp(prefix="accapp-", dir=parent or None))
                atexit.register(shutil.rmtree, self._tmp, True)
            return self._tmp


_STATE: AppState | None = None


class InFlight:
    """How many event handlers run now (ui.common.friendly counts each): at SIGTERM the app waits for them,
    as interpreter shutdown with a thread inside C++ (DuckDB, torch) aborts ("terminate called", status -6)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._running = 0

    @contextlib.contextmanager
    def running(self):
        with self._cond:
            self._running += 1
        try:
            yield
        finally:
            with self._cond:
                self._running -= 1
                self._cond.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        """Wait up to `timeout` s for every handler to end; True if none runs."""
        with self._cond:
            return self._cond.wait_for(lambda: self._running == 0, timeout)


HANDLERS = InFlight()


def stop_and_exit(*_) -> None:
    """SIGTERM's handler (ui/app.py): the model step in flight ends first (up to STOP_WAIT_S), then the event
    handlers still running (up to HANDLERS_WAIT_S: an Explore render, a CSV being written), then the app exits
    with status 0. Whatever still runs then is left behind. The exit handlers run (the temporary folders go)
    and the process ends at once, without the interpreter's own shutdown: with a thread inside torch or DuckDB
    that shutdown aborts (exit status -6), and with the models' objects in memory its last garbage collection
    can run for longer than a Space waits before it kills the app."""
    idle = get_state().stop()
    log.info("stopping (SIGTERM): the model thread %s", "is idle" if idle else "is still running a step: it is left")
    if not HANDLERS.wait_idle(HANDLERS_WAIT_S):
        log.info("stopping: event handlers still run after %.0f s: they are left", HANDLERS_WAIT_S)
    atexit._run_exitfuncs()  # what sys.exit would run (the stdlib's own hook: no public name)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def get_state() -> AppState:
    global _STATE
    if _STATE is None:
        _STATE = AppState()
    return _STATE


def set_state(state: AppState) -> None:
    global _STATE
    _STATE = state
