"""The benchmark runner on Ray: the serial runner's blocks (runner.plan_blocks), scored by a pool
of workers that each load the model once, written by the driver.

    run_benchmark_ray({"model": "smollm2-135m-instruct"}, "blimp", "all", "runs", per_paradigm=30)

Layout. One Ray actor (BlockWorker) per worker, holding one engine; its resources declared
(num_gpus, fractional where a small model shares a GPU, or num_cpus slots on a CPU machine; its
torch threads = its CPU slots). A model's blocks go only to that model's pool; models run one
after another. Each worker has up to two blocks in flight, so it never waits for the driver.

Results. A worker returns a block's rows as an Arrow table; the driver alone merges them into
the unit files, through the same atomic write as the serial run (BenchmarkRun). So `--out` needs
to be reachable by the driver only (no shared file system, no races between writers), the
resume logic is the serial runner's, and a block's rows are small beside its compute.

Failures. A worker that dies (killed, out of memory, its node gone) is restarted by Ray
(max_restarts) and the blocks it held are retried on it (max_task_retries); a block whose
worker died for good is given to another worker once, then listed as failed. A method that
raises on a block is listed in failed_units.json with its error (runner.score_block) and the run
goes on. A killed driver loses only the blocks in flight: finished blocks are on disk, and the
rerun plans what is missing.

Ray is an optional extra (requirements-ray.txt): it is imported here, lazily, and nowhere else.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections import deque
from pathlib import Path

from accapp import settings
from accapp.benchmarks import bench_name, language_of
from accapp.errors import UserError
from accapp.runner.runner import BenchmarkRun, Block, BlockResult, default_block_size, describe, score_block

log = logging.getLogger("accapp.runner")
RAY_MISSING = ("--ray needs Ray, an optional extra that is not installed: pip install -r requirements-ray.txt "
               "(or pip install -e '.[ray]'); the serial runner (no --ray) needs nothing more.")
IN_FLIGHT = 2  # blocks per worker: one being scored, the next already there
PING_EVERY_S = 1.0
PING_LATE_S = 5.0  # a worker that has not answered a ping for this long is not counted alive


def import_ray():
    """The ray module, or a UserError that says how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise UserError(RAY_MISSING) from exc
    return ray


def connect(address: str | None = None):
    """Connect to Ray unless this process already is: address None (RAY_ADDRESS, or a cluster
    started on this machine with `ray start`, else a new local Ray), "auto" (an existing cluster
    only), "local" (always a new one) or a cluster's address (HOST:6379, ray://HOST:10001).
    Returns (ray, whether this call connected). Joining a cluster, the driver ships its own
    accapp code to the workers (runtime_env py_modules): they run exactly the driver's version
    and need only the dependencies installed."""
    ray = import_ray()
    if ray.is_initialized():
        return ray, False
    kwargs = {"log_to_driver": False, "logging_level": logging.WARNING}
    if address != "local" and (address or settings.ray_address()):
        kwargs["runtime_env"] = {"py_modules": [str(Path(__file__).resolve().parents[1])]}  # the accapp folder
    ray.init(address=address or None, **kwargs)
    return ray, True


def model_billions(model_id: str) -> float | None:
    """Parameters in billions as a registry id spells them ("llama-3-8b" 8, "smollm2-135m-instruct" 0.135)."""
    found = re.findall(r"(?<![\d.])(\d+(?:\.\d+)?)([mb])(?![a-z])", model_id.lower())
    if not found:
        return None
    n, unit = found[-1]
    return float(n) / (1000 if unit == "m" else 1)


def default_gpus_per_worker(model_id: str, cluster_gpus: float) -> float:
    """A whole GPU for a model of 3B parameters or more, half for 1-3B, a quarter below (four
    small models share a GPU); none on a cluster without GPUs."""
    if not cluster_gpus:
        return 0.0
    b = model_billions(model_id)
    if b is None or b < 1:
        return 0.25
    return 0.5 if b < 3 else 1.0


def default_workers(resources: dict, gpus: float, cpus: float) -> int:
    """As many workers as the cluster's GPUs (or CPUs) hold."""
    n = int(resources.get("CPU", 1) // cpus) if cpus else 10**6
    if gpus:
        n = min(n, int(resources.get("GPU", 0) // gpus + 1e-9))
    return max(1, n)


class BlockWorker:
    """One worker: loads the model once (the model host of its process, accapp.service.host), then scores blocks."""

    def __init__(self, config: dict, threads: int | None = None) -> None:
        if threads:
            import torch

            torch.set_num_threads(threads)
        from accapp.service.host import get_state

        self.engine = get_state().engine_for(**config)  # this worker process's host: one model, its budget
        self.pid = os.getpid()

    def ready(self) -> int:
        return self.pid

    def ping(self) -> int:  # answered from its own thread while a block is being scored
        return self.pid

    def describe(self, methods, language: str | None) -> dict:
        return describe(self.engine, methods, language)

    def score(self, block: Block, benchmark: str, language: str | None) -> BlockResult:
        import pyarrow as pa

        result = score_block(self.engine, block, benchmark, language)
        result.rows = pa.Table.from_pandas(result.rows, preserve_index=False)
        return result


def run_benchmark_ray(
    config: dict,
    benchmark: str,
    methods,
    out: Path,
    per_paradigm: int | None = None,
    seed: int = 0,
    paradigms: list[str] | None = None,
    *,
    address: str | None = None,
    workers: int | None = None,
    gpus_per_worker: float | None = None,
    cpus_per_worker: float = 1,
    block_size: int | None = None,
    max_restarts: int = 3,
    progress: bool = True,
    on_result=None,
) -> dict:
    """Run (or resume) one model on a benchmark with a pool of Ray workers; the same files and
    summary as runner.run_benchmark, plus workers, worker_restarts, blocks_retried and startup_seconds.

    config: build_engine's arguments (model, dtype, quantization, language, in_template_scope,
    batch_size). workers: default as many as the cluster holds. on_result(dict): called on the
    driver after each block is recorded ({block, pid, pairs, seconds}; tests use it)."""
    t_start = time.perf_counter()
    ray, connected = connect(address)
    model = config["model"]
    resources = ray.cluster_resources()
    gpus = default_gpus_per_worker(model, resources.get("GPU", 0)) if gpus_per_worker is None else gpus_per_worker
    n = workers or default_workers(resources, gpus, cpus_per_worker)
    if gpus > resources.get("GPU", 0) or cpus_per_worker > resources.get("CPU", 0):
        log.warning("a worker asks for %g GPU and %g CPU; the cluster has %g GPU and %g CPU now, so workers wait "
                    "until an autoscaler adds them (--gpus-per-worker 0 runs on CPUs)", gpus, cpus_per_worker,
                    resources.get("GPU", 0), resources.get("CPU", 0))
    actor_class = ray.remote(num_cpus=cpus_per_worker, num_gpus=gpus, max_restarts=max_restarts,
                             max_task_retries=max_restarts, concurrency_groups={"ping": 1})(BlockWorker)
    actors = [actor_class.remote(config, max(1, int(cpus_per_worker))) for _ in range(n)]
    try:
        first = _first_ready(ray, actors)
        info = ray.get(actors[first].describe.remote(methods, language_of(bench_name(benchmark))))
        run = BenchmarkRun(out, benchmark, info, per_paradigm, seed, paradigms, block_size or default_block_size(methods),
                           progress, desc=f"{info['model']} {bench_name(benchmark)} on Ray")
        startup = time.perf_counter() - t_start
        keep = max(1, min(len(actors), len(run.blocks)))  # no more workers than blocks
        actors = [actors[first]] + [a for i, a in enumerate(actors) if i != first]
        for a in actors[keep:]:
            ray.kill(a)
        summary = _drive(ray, actors[:keep], run, on_result)
        summary["startup_seconds"] = startup
        return summary
    finally:
        for a in actors:
            ray.kill(a)
        if connected:
            ray.shutdown()


def _first_ready(ray, actors: list) -> int:
    """Index of the first worker that has loaded its model; UserError when none can."""
    waiting = {a.ready.remote(): i for i, a in enumerate(actors)}
    last = None
    while waiting:
        done, _ = ray.wait(list(waiting), num_returns=1)
        i = waiting.pop(done[0])
        try:
            ray.get(done[0])
            return i
        except ray.exceptions.RayActorError as exc:
            last = exc
    raise UserError(f"no Ray worker could load the model: {last}")


def _drive(ray, actors: list, run: BenchmarkRun, on_result) -> dict:
    """Hand the run's blocks to the workers, write what comes back, keep the bar; the summary."""
    try:
        return _hand_out(ray, actors, run, on_result)
    except BaseException:
        run.write()  # what came back before the failure (or a Ctrl-C) is kept
        raise


def _hand_out(ray, actors: list, run: BenchmarkRun, on_result) -> dict:
    """_drive's loop: blocks to the workers, each answer recorded (run.record) or its block retried or lost."""
    errors = ray.exceptions
    queue = deque(run.blocks)
    inflight: dict = {}  # ObjectRef -> (block, worker index)
    load = [0] * len(actors)
    usable = set(range(len(actors)))  # not dead for good
    pids: list[set] = [set() for _ in actors]
    answered = [time.monotonic()] * len(actors)  # last ping answered
    pings: dict = {}  # ObjectRef -> worker index
    tries: dict[int, int] = {}
    retried = 0
    last_ping = 0.0

    def alive() -> int:
        now = time.monotonic()
        return sum(1 for i in usable if now - answered[i] < PING_LATE_S)

    while queue or inflight:
        for i in sorted(usable, key=lambda i: load[i]):
            while load[i] < IN_FLIGHT and queue:
                block = queue.popleft()
                inflight[actors[i].score.remote(block, run.bench, run.language)] = (block, i)
                load[i] += 1
        if not inflight:
            raise UserError("every Ray worker has died; rerun the same command to resume (finished units are kept)")
        done, _ = ray.wait(list(inflight), num_returns=1, timeout=PING_EVERY_S)
        for ref in done:
            block, i = inflight.pop(ref)
            load[i] -= 1
            try:
                result = ray.get(ref)
            except errors.RayActorError as exc:  # its worker died and Ray could not bring it back (or not yet)
                if isinstance(exc, errors.ActorDiedError):
                    usable.discard(i)
                tries[block.index] = tries.get(block.index, 0) + 1
                if tries[block.index] < 2:  # once more, on whichever worker is free
                    queue.appendleft(block)
                    retried += 1
                else:
                    run.lose(block, f"its worker died twice: {type(exc).__name__}: {exc}")
                continue
            except errors.RayTaskError as exc:  # raised outside score_block's own catch
                run.lose(block, f"{type(exc.cause).__name__}: {exc.cause}" if exc.cause else str(exc))
                continue
            except errors.RayError as exc:
                run.lose(block, f"{type(exc).__name__}: {exc}")
                continue
            run.record(block, result)
            pids[i].add(result.pid)
            answered[i] = time.monotonic()
            if on_result:
                on_result({"block": block.index, "pid": result.pid, "pairs": len(block.items), "seconds": result.seconds})
        now = time.monotonic()
        if now - last_ping >= PING_EVERY_S:  # who is alive, for the bar
            last_ping = now
            for ref in [r for r in pings if ray.wait([r], timeout=0)[0]]:
                i = pings.pop(ref)
                try:
                    pids[i].add(ray.get(ref))
                    answered[i] = now
                except errors.RayError:  # dead or restarting: not alive until it answers again
                    pass
            waiting = set(pings.values())
            for i in usable - waiting:
                pings[actors[i].ping.options(concurrency_group="ping", max_task_retries=0).remote()] = i
        run.show(f"workers {alive()}/{len(actors)}")
    summary = run.finish()
    summary.update({"workers": len(actors), "worker_restarts": sum(max(0, len(p) - 1) for p in pids), "blocks_retried": retried})
    return summary
