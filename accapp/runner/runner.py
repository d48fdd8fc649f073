"""The benchmark runner: fills a results folder with one file per unit of work.

A unit is (model, benchmark, paradigm, method, template): its rows live in
  OUT/<model>/<benchmark>/units/<paradigm>/<method>/<template>.parquet
Units are independent (so runs can be spread over machines and merged), a rerun skips
what is done (a unit is done when its file holds every sampled pair), and every file is
written to a temporary name and renamed, so a killed run never leaves half a file (a rerun
removes the temporary files of runs that were killed, accapp.files.remove_stale_temps). A unit's
file is written once the unit is complete, and what the blocks gave since the last write every
WRITE_EVERY_S: a killed run loses at most that much of its work (or one block, where a block
takes longer).

A run is planned as blocks (plan_blocks): up to `block_size` pairs still to do, in paradigm
order and across paradigms, with the methods they still need; one engine call scores a block
(score_block; the serial runner streams its calls, score_stream), so methods share forward passes
and the passes are full even when a paradigm has a few pairs. The plan depends only on the
sample, the block size and what the folder already holds, and a block's scores only on the
block: the serial runner here and the Ray runner (ray_runner.py), which hands the same blocks to
its workers, write the same rows, score for score. One writer (BenchmarkRun, in the driver's
process) merges what blocks return into the unit files. Every pair goes through the engine's
check_pair, as in `score` and the app: a pair that fails it (an empty cell, a sentence over the
limits) is listed with its error in errors.json beside the manifest; a method that raises on a
block is listed, for each unit it leaves unfinished, in failed_units.json; the run goes on, and
a rerun tries both again.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import os
import platform
import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from accapp import languages, settings
from accapp.benchmarks import CITATIONS, PAIR_SHAPES, bench_name, label_of, language_of, load_benchmark, shape_of, stratified_sample
from accapp.benchmarks import describe as describe_benchmark
from accapp.errors import UserError
from accapp.files import remove_stale_temps, run_file, safe_name, write_json_atomic, write_parquet_atomic
from accapp.schema import ENSEMBLE_METHODS, ROW_COLUMNS, duplicate_pairs, pair_flag

# Pairs an engine call scores. Big enough that its forward passes are full (LP alone packs
# ~200 pairs into one 2048-token pass), small enough to bound what a kill loses and to spread a
# run over workers. Scores move with the block (float32 batching, under 1e-4 nats), so runs
# that should match score for score use the same block size; the manifest records it.
BLOCK = 256
# Methods with prompts run tens of passes a pair (5 templates, answer orders): 256 such pairs took 15 min on
# one CPU thread, a progress bar that stood still that long. Their blocks are smaller; batching stays full.
PROMPT_BLOCK = 32
# Seconds between writes of the unit files: a unit's file is written when the unit is complete, and what the
# blocks gave since the last write every WRITE_EVERY_S (a killed run loses at most that, or the block that
# took longer). Rewriting each unit a block touched after every block cost the most host time where blocks
# are fast (docs/performance.md).
WRITE_EVERY_S = 30.0


def default_block_size(methods) -> int:
    """BLOCK where every method reads the sentences' own passes (LP, MeanLP, PenLP, the Bayes factors,
    SLOR, the PLLs); PROMPT_BLOCK where any builds prompts or templates (in-template, A/B, Yes/No, Hu &
    Levy's, the ensembles), or for every method (None / "all")."""
    from accapp.methods import parse_ids
    from accapp.methods.descriptor import descriptors

    ids, table = parse_ids(methods), descriptors()
    if ids is None or any(table[m].stage != "sentence probability" for m in ids if m in table):
        return PROMPT_BLOCK
    return BLOCK


def unit_path(root: Path, model: str, benchmark: str, paradigm: str, method: str, template: str) -> Path:
    s = safe_name
    return root / s(model) / s(benchmark) / "units" / s(paradigm) / s(method) / f"{s(template)}.parquet"


def rows_for(results, model: str, benchmark: str) -> list[dict]:
    """Result rows (schema.RESULT_COLUMNS) of scored pairs (PairResults, each with its pair's meta)."""
    out = []
    for result in results:
        pair, meta = result.pair, result.pair.meta
        for r in result.scores:
            if r.method in ENSEMBLE_METHODS:
                correct = r.score_good  # share of the seeded ensemble draws that were right
            else:
                correct = 1.0 if r.verdict == "good" else 0.0  # the method's tie rule (methods/ties.py)
            out.append({
                "model": model, "benchmark": benchmark, "paradigm": meta["paradigm"], "phenomenon": meta["phenomenon"],
                "pair_id": meta["pair_id"], "method": r.method, "template": r.template, "variant": r.variant,
                "score_good": r.score_good, "score_bad": r.score_bad, "correct": float(correct),
                "tie": r.method not in ENSEMBLE_METHODS and r.verdict == "tie", "prediction": r.prediction,
                "len_good": result.len_good, "len_bad": result.len_bad, "len_diff": result.len_good - result.len_bad,
                "good": pair.good, "bad": pair.bad, "flag": pair_flag(pair.good, pair.bad),
            })
    return out


def _versions() -> dict:
    import torch
    import transformers

    from accapp.version import __version__

    return {"accapp": __version__, "torch": torch.__version__, "transformers": transformers.__version__,
            "python": platform.python_version(), "commit": _commit()}


def _commit() -> str | None:
    """The code's git commit: ACCAPP_COMMIT where the code travels without its .git (a GPU
    machine), else the checkout's HEAD; None when neither is known."""
    given = settings.text("ACCAPP_COMMIT")
    if given:
        return given
    import subprocess

    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def _where(engine) -> dict:
    """The device a run's engine scores on and the model's attention implementation (describe_device); {} for an
    engine without a loaded model."""
    from accapp.models.device import describe_device

    lm = getattr(engine, "lm", None)
    if lm is None or not hasattr(lm, "device"):
        return {}
    where = describe_device(lm)
    return {"device": where["device"], "gpu": where["gpu"], "attention": where["attention"]}


@dataclass(frozen=True)
class Block:
    """Pairs one engine call scores: items are (paradigm, pair_id, phenomenon, good, bad[, context])."""

    index: int
    methods: tuple[str, ...]
    items: tuple[tuple, ...]

    @property
    def paradigms(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(item[0] for item in self.items))


@dataclass
class BlockResult:
    """What scoring a block gives: rows (ROW_COLUMNS; a DataFrame, or a pyarrow Table from a Ray
    worker), the pairs that failed check_pair, and {method: error} for methods that raised."""

    index: int
    rows: object
    check_errors: list[dict] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    pid: int = 0  # the process that scored it


def check_scorable(benchmark: str) -> str:
    """A benchmark's shape, or UserError before any model loads for an unknown id (one sentence listing
    the known ones). Pairs run here (BenchmarkRun); single sentences in runner/sentences.py."""
    if bench_name(benchmark) == benchmark and not Path(benchmark).exists():
        load_benchmark(benchmark)
    return shape_of(benchmark)


def check_pairs_shape(benchmark: str) -> None:
    """UserError for a benchmark that is not pairs (BenchmarkRun, the Ray runner's too, scores pairs)."""
    if shape_of(benchmark) not in PAIR_SHAPES:
        raise UserError(f"{label_of(benchmark)} is {shape_of(benchmark)}, not pairs: this runner scores minimal pairs "
                        "only; single sentences are scored by the serial runner (accapp bench without --ray).")


def open_manifest(manifest: dict, path: Path) -> dict:
    """A run's manifest merged with the one an earlier run left at `path` (its start, its methods and
    templates, its compute time kept; another convention refused), written there."""
    if path.exists():
        old = json.loads(path.read_text(encoding="utf-8"))
        if old.get("convention", "project") != manifest["convention"]:  # one convention a results folder
            raise UserError(f"{path.parent} holds results of the {old.get('convention', 'project')!r} "
                            f"convention; run the {manifest['convention']!r} convention into another --out folder.")
        manifest["started"] = old.get("started", manifest["started"])
        # A run of other methods keeps the methods and templates earlier runs wrote units for.
        manifest["methods"] = list(dict.fromkeys(old.get("methods", []) + manifest["methods"]))
        manifest["templates"] = {**old.get("templates", {}), **manifest["templates"]}
        manifest["template_sources"] = {**old.get("template_sources", {}), **manifest["template_sources"]}
        if "compute_seconds" in old:
            manifest["compute_seconds"] = old["compute_seconds"]
    write_json_atomic(manifest, path)
    return manifest


def describe(engine, methods, language: str | None = None) -> dict:
    """What a run needs to know of its engine and methods, and its manifest says: the model,
    the method ids the model can run, their templates and sources, dtype, versions."""
    resolved = engine.resolve(methods)
    language = language or engine.language
    ctx = engine.context(language or languages.default())
    return {
        "model": engine.model_id, "language": language, "methods": [m.id for m in resolved],
        "templates": {m.id: m.templates(ctx) for m in resolved}, "template_sources": {m.id: m.source for m in resolved},
        "dtype": getattr(engine.lm, "dtype", None), "quantization": getattr(engine.lm, "quantization", None),
        "in_template_scope": getattr(engine, "in_template_scope", None), "versions": _versions(),
        "convention": engine.convention.id, **_where(engine),
    }


def rows_by_method(rows_of, methods) -> tuple[list[dict], dict[str, str]]:
    """rows_of(methods) for a block's methods at once; when that fails, method by method, so the
    method at fault is found and the others' rows still count: (rows, {method: its error})."""
    try:
        return rows_of(methods), {}
    except Exception:  # noqa: BLE001 - find the method at fault
        rows: list[dict] = []
        failed: dict[str, str] = {}
        for m in methods:
            try:
                rows += rows_of([m])
            except Exception as exc:  # noqa: BLE001 - recorded as the unit's failure, the run goes on
                failed[m] = f"{type(exc).__name__}: {exc}"
        return rows, failed


def check_block(engine, block: Block) -> tuple[list, list[dict]]:
    """(the block's pairs that pass the checks, {paradigm, pair_id, good, bad, error} of those that fail)."""
    items = block.items
    checked, errors = engine.check_pairs(
        (k, good, bad, {"pair_id": pid, "paradigm": paradigm, "phenomenon": phenomenon}, *context)
        for k, (paradigm, pid, phenomenon, good, bad, *context) in enumerate(items))
    check_errors = [{"paradigm": items[k][0], "pair_id": items[k][1], "good": items[k][3], "bad": items[k][4], "error": e}
                    for k, e in errors.items()]
    return [p for _, p in checked], check_errors


def score_block(engine, block: Block, benchmark: str, language: str | None, checked=None) -> BlockResult:
    """Check and score one block with one engine call (what a Ray worker does, and the serial runner with a
    block whose call in its stream raised); checked: check_block's answer where it was made beforehand."""
    t0 = time.perf_counter()
    pairs, check_errors = checked if checked is not None else check_block(engine, block)
    model = engine.model_id

    def rows_of(methods) -> list[dict]:
        return rows_for(engine.score_pairs(pairs, list(methods), language), model, benchmark)

    rows, failed = rows_by_method(rows_of, block.methods) if pairs else ([], {})
    return BlockResult(block.index, pd.DataFrame(rows, columns=ROW_COLUMNS), check_errors, failed,
                       time.perf_counter() - t0, os.getpid())


def score_stream(engine, blocks: list[Block], benchmark: str, language: str | None) -> Iterator[BlockResult]:
    """score_block's result for each block, in order, score for score, from one stream of engine calls: the
    blocks of the same methods go through Engine.score_blocks (with a staged scorer a second thread prepares
    the next block and finishes the last while this thread runs the passes), and a third thread checks the
    block after. A block whose call raises is scored again by score_block (method by method, so the method
    at fault is found), and the stream goes on from the block after it."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="accapp-check") as checking:
        checked = _checked_ahead(checking, engine, blocks)
        for methods, same in itertools.groupby(checked, key=lambda item: item[0].methods):
            yield from _same_methods(engine, same, list(methods), benchmark, language)


def _checked_ahead(pool: ThreadPoolExecutor, engine, blocks: list[Block]) -> Iterator[tuple[Block, tuple]]:
    """(block, check_block's answer) for each block, the next block checked on the pool meanwhile."""
    coming = pool.submit(check_block, engine, blocks[0]) if blocks else None
    for k, block in enumerate(blocks):
        checked = coming.result()
        coming = pool.submit(check_block, engine, blocks[k + 1]) if k + 1 < len(blocks) else None
        yield block, checked


def _same_methods(engine, items: Iterator[tuple[Block, tuple]], methods: list[str], benchmark: str,
                  language: str | None) -> Iterator[BlockResult]:
    """score_stream for blocks of the same methods: one Engine.score_blocks, begun again after a failing block."""
    model = engine.model_id
    items = iter(items)
    while True:
        read: deque = deque()  # blocks Engine.score_blocks has read and not yet answered, in order
        broken: list[BaseException] = []  # what reading the next block raised: not a block's own failure

        def feed():
            while True:
                try:
                    item = next(items)
                except StopIteration:
                    return
                except BaseException as exc:
                    broken.append(exc)
                    raise
                read.append(item)
                yield item[1][0]

        stream = engine.score_blocks(feed(), methods, language)
        t0 = time.perf_counter()
        while True:
            try:
                results = next(stream, None)
            except Exception:
                if broken:
                    raise
                if read:
                    block, checked = read.popleft()  # the first block not answered is the one whose call raised
                else:  # raised before reading a block (its methods): score_block says for the next what fails
                    item = next(items, None)
                    if item is None:
                        return
                    block, checked = item
                yield score_block(engine, block, benchmark, language, checked)
                items = itertools.chain(list(read), items)  # those read ahead of it are scored afresh
                break
            if results is None:
                return
            block, (_, check_errors) = read.popleft()
            rows = pd.DataFrame(rows_for(results, model, benchmark), columns=ROW_COLUMNS)
            yield BlockResult(block.index, rows, check_errors, {}, time.perf_counter() - t0, os.getpid())
            t0 = time.perf_counter()


def plan_blocks(sample: pd.DataFrame, out: Path, model: str, bench: str, templates: dict[str, list[str]],
                block_size: int = BLOCK) -> tuple[list[Block], int]:
    """(blocks still to score, units already complete). A paradigm's missing pairs are scored
    for every method with a unit that lacks one of them; paradigms that need the same methods
    share blocks, in paradigm order, cut into blocks of equal size (at most block_size pairs)."""
    groups: dict[tuple[str, ...], list[tuple]] = {}
    skipped = 0
    for paradigm, group in sample.groupby("paradigm", sort=True):
        wanted = set(group.pair_id)
        missing: dict[str, set] = {}
        for m, tpls in templates.items():
            for t in tpls:
                p = unit_path(out, model, bench, paradigm, m, t)
                done = set(pd.read_parquet(p, columns=["pair_id"]).pair_id) if p.exists() else set()
                if wanted - done:
                    missing.setdefault(m, set()).update(wanted - done)
        skipped += sum(len(tpls) for m, tpls in templates.items() if m not in missing)
        if not missing:
            continue
        todo = set().union(*missing.values())
        # a pairs file's `context` column (the text both sentences follow) rides along as a sixth item
        contexts = group.context if "context" in group else [""] * len(group)
        rows = {pid: (paradigm, pid, phen, good, bad) + ((ctx,) if ctx else ())
                for pid, phen, good, bad, ctx in zip(group.pair_id, group.phenomenon, group.good, group.bad, contexts)
                if pid in todo}
        groups.setdefault(tuple(m for m in templates if m in missing), []).extend(
            rows[pid] for pid in sorted(rows, key=lambda x: (len(str(x)), str(x))))
    blocks: list[Block] = []
    for methods, items in groups.items():
        n = -(-len(items) // block_size)  # blocks of equal size (at most block_size): no small last one
        bounds = [len(items) * k // n for k in range(n + 1)]
        blocks += [Block(len(blocks) + k, methods, tuple(items[a:b])) for k, (a, b) in enumerate(zip(bounds, bounds[1:]))]
    return blocks, skipped


class BenchmarkRun:
    """One model on one benchmark: the manifest, the plan, and the one writer of the unit files,
    errors.json and failed_units.json. The serial runner and the Ray runner drive one of these;
    blocks may come back in any order."""

    def __init__(self, out: Path, benchmark: str, info: dict, per_paradigm: int | None = None, seed: int = 0,
                 paradigms: list[str] | None = None, block_size: int = BLOCK, progress: bool = True, on_unit=None,
                 desc: str | None = None) -> None:
        from tqdm.auto import tqdm

        self.out = Path(out)
        self.model = info["model"]
        self.bench = bench_name(benchmark)
        self.language = info["language"]
        self.templates = {m: info["templates"][m] for m in info["methods"]}
        self.on_unit = on_unit
        check_scorable(benchmark)
        check_pairs_shape(benchmark)
        sample = stratified_sample(load_benchmark(benchmark), per_paradigm, seed)
        if paradigms:
            sample = sample[sample.paradigm.isin(paradigms)]
        # no pairs (identical sentences: flagged, left out of accuracy) and repeated pairs, counted
        self.pairs_identical = int(sum(pair_flag(g, b) != "" for g, b in zip(sample.good, sample.bad)))
        self.pairs_duplicated = duplicate_pairs(zip(sample.good, sample.bad))[0]
        self.manifest_path = self.out / safe_name(self.model) / safe_name(self.bench) / "manifest.json"
        self.errors_path = self.manifest_path.with_name("errors.json")
        self.failed_path = self.manifest_path.with_name("failed_units.json")
        if self.manifest_path.parent.is_dir():  # what a killed run (kill -9) left half-written
            remove_stale_temps(self.manifest_path.parent)
        manifest = {
            "model": self.model, "benchmark": self.bench, "benchmark_source": CITATIONS.get(self.bench, benchmark),
            "language": self.language, "methods": info["methods"], "templates": info["templates"],
            "template_sources": info["template_sources"], "per_paradigm": per_paradigm, "seed": seed,
            "block_size": block_size, "dtype": info["dtype"], "quantization": info["quantization"],
            "in_template_scope": info["in_template_scope"], "versions": info["versions"],
            "convention": info["convention"], "device": info.get("device"), "gpu": info.get("gpu"),
            "started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "pairs_identical": self.pairs_identical, "pairs_duplicated": self.pairs_duplicated,
        }
        self.manifest = manifest = open_manifest(manifest, self.manifest_path)
        self.earlier = manifest.get("compute_seconds", 0.0)

        self.blocks, self.units_skipped = plan_blocks(sample, self.out, self.model, self.bench, self.templates, block_size)
        self.pending: dict[tuple, int] = {}  # unit -> blocks of this run still to come back
        for b in self.blocks:
            for unit in self._units(b, b.methods):
                self.pending[unit] = self.pending.get(unit, 0) + 1
        self.units_total = self.units_skipped + len(self.pending)
        self.units_done = self.units_skipped
        self.pairs_total = len(sample)
        self.pairs_todo = sum(len(b.items) for b in self.blocks)
        self.pairs_done = 0  # of this run's
        self.written: set[tuple] = set()
        self.check_errors: list[dict] = []
        self.failed_units: list[dict] = []
        self.failed_keys: set[tuple] = set()
        self.unwritten: dict[tuple, list[pd.DataFrame]] = {}  # unit -> rows taken since the last write
        self.t0 = self.last_write = time.perf_counter()
        self.bar = tqdm(total=self.pairs_total, initial=self.pairs_total - self.pairs_todo, unit="pair",
                        desc=desc or f"{self.model} {self.bench}", disable=not progress)
        self.status = ""

    def _units(self, block: Block, methods) -> list[tuple]:
        return [(p, m, t) for p in block.paradigms for m in methods for t in self.templates[m]]

    def record(self, block: Block, result: BlockResult) -> None:
        """Take what a block gave: its rows, merged into their unit files at the next write, its failures listed."""
        rows = result.rows if isinstance(result.rows, pd.DataFrame) else result.rows.to_pandas()
        for unit, part in rows.groupby(["paradigm", "method", "template"], sort=False):
            self.unwritten.setdefault(unit, []).append(part)
        self.check_errors += result.check_errors
        if result.failed:
            self.fail(block, result.failed)
        self._settle(block)

    def fail(self, block: Block, errors: dict[str, str]) -> None:
        """List the units a block leaves unfinished because a method raised ({method: error})."""
        pairs = {}
        for paradigm, pid, *_ in block.items:
            pairs.setdefault(paradigm, []).append(pid)
        for paradigm, m, t in self._units(block, list(errors)):
            self.failed_units.append({"paradigm": paradigm, "method": m, "template": t, "pair_ids": pairs[paradigm],
                                      "error": errors[m]})
            self.failed_keys.add((paradigm, m, t))
        write_json_atomic(self.failed_units, self.failed_path)

    def lose(self, block: Block, error: str) -> None:
        """A block that could not be scored at all (its worker kept dying): its units are failed."""
        self.fail(block, {m: error for m in block.methods})
        self._settle(block)

    def _settle(self, block: Block) -> None:
        """Count a block that came back; write when it completes a unit, or WRITE_EVERY_S after the last write."""
        completed = False
        for unit in self._units(block, block.methods):
            self.pending[unit] -= 1
            if self.pending[unit] == 0:
                completed = True
                self.units_done += unit not in self.failed_keys
        self.pairs_done += len(block.items)
        if completed or time.perf_counter() - self.last_write >= WRITE_EVERY_S:
            self.write()
        self.bar.update(len(block.items))
        self.show()

    def write(self) -> None:
        """Merge the rows taken since the last write into their unit files, then note the time spent so far in
        the manifest (a killed run still counts it)."""
        self._write_units()
        self.manifest["compute_seconds"] = round(self.earlier + time.perf_counter() - self.t0, 1)
        write_json_atomic(self.manifest, self.manifest_path)

    def _write_units(self) -> None:
        unwritten, self.unwritten = self.unwritten, {}
        for unit, parts in unwritten.items():
            self._write_unit(unit, pd.concat(parts) if len(parts) > 1 else parts[0])
        self.last_write = time.perf_counter()

    def _write_unit(self, unit: tuple, part: pd.DataFrame) -> None:
        path = unit_path(self.out, self.model, self.bench, *unit)
        if path.exists():  # this run's earlier writes, or an earlier run's
            have = pd.read_parquet(path)
            part = pd.concat([have[~have.pair_id.isin(set(part.pair_id))], part])
        write_parquet_atomic(sort_rows(part), path)
        self.written.add(unit)
        if self.on_unit:
            self.on_unit()

    def show(self, extra: str = "") -> None:
        """The bar's text: units done, and whatever the caller adds (workers alive)."""
        self.status = extra or self.status
        failed = len(self.failed_keys)
        text = f"units {self.units_done}/{self.units_total}" + (f", {failed} failed" if failed else "")
        self.bar.set_postfix_str(text + (f", {self.status}" if self.status else ""), refresh=False)
        self.bar.refresh()

    def finish(self) -> dict:
        self._write_units()  # the manifest is written below, with the run's end
        self.bar.close()
        # Pairs that failed the check and units that failed, this run's (a rerun tries them again).
        if self.check_errors or self.errors_path.exists():
            write_json_atomic(self.check_errors, self.errors_path)
        if self.failed_units or self.failed_path.exists():
            write_json_atomic(self.failed_units, self.failed_path)
        seconds = time.perf_counter() - self.t0
        self.manifest["finished"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        self.manifest["last_run_seconds"] = round(seconds, 1)
        self.manifest["compute_seconds"] = round(self.earlier + seconds, 1)  # all runs of this model and benchmark
        write_json_atomic(self.manifest, self.manifest_path)
        failed = self.failed_keys
        return {"model": self.model, "benchmark": self.bench, "units_written": len(self.written),
                "units_skipped": self.units_skipped, "units_total": self.units_total, "units_failed": len(failed),
                "failed_units": self.failed_units, "failed_file": str(self.failed_path) if failed else None,
                "pairs_failed": len(self.check_errors), "errors": self.check_errors,
                "pairs_identical": self.pairs_identical, "pairs_duplicated": self.pairs_duplicated,
                "errors_file": str(self.errors_path) if self.check_errors else None, "pairs_scored": self.pairs_done,
                "blocks": len(self.blocks), "seconds": seconds}


def run_benchmark(
    engine,
    benchmark: str,
    methods,
    out: Path,
    per_paradigm: int | None = None,
    seed: int = 0,
    paradigms: list[str] | None = None,
    progress: bool = True,
    on_unit=None,
    block_size: int | None = None,
) -> dict:
    """Run (or resume) a benchmark with an engine (accapp.engine) in this process; returns a
    summary {units_written, units_skipped, units_failed, pairs_failed, pairs_scored, seconds, ...}.
    block_size: pairs an engine call (default: default_block_size of the methods)."""
    block_size = block_size or default_block_size(methods)
    info = describe(engine, methods, language_of(bench_name(benchmark)))
    run = BenchmarkRun(out, benchmark, info, per_paradigm, seed, paradigms, block_size, progress, on_unit)
    try:
        for result in score_stream(engine, run.blocks, run.bench, run.language):
            run.record(run.blocks[result.index], result)
    except BaseException:
        run.write()  # what was scored before the failure (or a Ctrl-C) is kept
        raise
    return run.finish()


def sort_rows(df: pd.DataFrame) -> pd.DataFrame:
    """A unit's rows in file order: by pair id (shorter first: "2" before "10"), then variant."""
    ids = df.pair_id.astype(str)
    order = np.lexsort((df.variant.to_numpy(dtype=object), ids.to_numpy(dtype=object), ids.str.len().to_numpy()))
    return df.iloc[order].reset_index(drop=True)


def consolidated_path(out: Path, model_id: str, benchmark: str) -> Path:
    return run_file(out, model_id, benchmark)


def manifest_beside(consolidated: Path) -> Path:
    """The manifest consolidate writes beside a consolidated file (<model>__<benchmark>.manifest.json)."""
    consolidated = Path(consolidated)
    return consolidated.with_name(consolidated.name.replace(".parquet", ".manifest.json"))


def restore_units(consolidated: Path, runs: Path, paradigms=None) -> int:
    """Split a consolidated results file back into unit files under `runs` (the inverse of
    consolidate), so a run resumes from the results the project ships: runs/ itself is not
    committed, but precomputed/results/ is. A unit file already there keeps its rows and gains
    the pairs only the consolidated file has; `paradigms` (a list) restores only theirs. Returns
    the number of unit files written."""
    consolidated, runs = Path(consolidated), Path(runs)
    if not consolidated.exists():
        return 0
    df = pd.read_parquet(consolidated)
    if paradigms is not None:
        df = df[df.paradigm.isin(list(paradigms))]
    written = 0
    unit_keys = ["model", "benchmark", "paradigm", "method", "template"]
    for (model, bench, paradigm, method, template), part in df.groupby(unit_keys, sort=False):
        path = unit_path(runs, model, bench, paradigm, method, template)
        if path.exists():
            have = pd.read_parquet(path)
            extra = part[~part.pair_id.isin(set(have.pair_id))]
            if extra.empty:
                continue
            part = pd.concat([have, extra])
        write_parquet_atomic(sort_rows(part)[ROW_COLUMNS], path)
        written += 1
    manifest_path = manifest_beside(consolidated)
    run_manifest = runs / safe_name(df.model.iloc[0]) / safe_name(df.benchmark.iloc[0]) / "manifest.json" if len(df) else None
    if run_manifest is not None and manifest_path.exists() and not run_manifest.exists():
        write_json_atomic(json.loads(manifest_path.read_text(encoding="utf-8")), run_manifest)
    return written


# A consolidated file (the store's input) keeps the two scores in float32: every verdict (correct, tie)
# is made in float64 before, at scoring time, and float32's rounding (about 6e-8 of a score) is far
# under the agreement of two fp32 runs on different devices (docs/gpu.md). They are laid out
# byte-split so that zstd finds their shared exponents; float64 scores did not compress.
STORED_FLOAT32 = ("score_good", "score_bad")
STORED_SCORES = "float32 (verdicts made in float64 before storing)"


def write_results_file(df: pd.DataFrame, path: Path, floats: tuple[str, ...] = STORED_FLOAT32) -> Path:
    """Write a consolidated results file atomically: zstd, the score columns `floats` as float32."""
    df = df.astype({c: "float32" for c in floats})
    return write_parquet_atomic(df, path, compression="zstd",
                                use_dictionary=[c for c in df.columns if c not in floats],
                                use_byte_stream_split=list(floats))


def _paradigm_sizes(benchmark: str) -> dict[str, int] | None:
    """Pairs per paradigm of a built-in benchmark (None for a file of one's own, which may be gone by now)."""
    if describe_benchmark(benchmark) is None:
        return None
    return load_benchmark(benchmark).groupby("paradigm").size().astype(int).to_dict()


def consolidate(runs: Path, out: Path, model_id: str | None = None, benchmark: str | None = None) -> list[Path]:
    """Merge unit files into one Parquet (plus manifest) per model and benchmark for the store."""
    import duckdb

    runs, out = Path(runs), Path(out)
    if out.is_dir():
        remove_stale_temps(out)  # a killed consolidation's half-written file, as in the run folder
    written = []
    for manifest_path in sorted(runs.glob("*/*/manifest.json")):
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        if (model_id and manifest["model"] != model_id) or (benchmark and manifest["benchmark"] != benchmark):
            continue
        if manifest.get("shape", "pairs") not in PAIR_SHAPES:  # single sentences: runner/sentences.py
            continue
        units = manifest_path.parent / "units"
        files = sorted(units.glob("*/*/*.parquet"))
        if not files:
            continue
        con = duckdb.connect()
        df = con.execute(
            "SELECT * FROM read_parquet(?, union_by_name = true) ORDER BY paradigm, method, template, length(pair_id), pair_id, variant",
            [[str(f) for f in files]],
        ).df()
        con.close()
        target = write_results_file(df, consolidated_path(out, manifest["model"], manifest["benchmark"]))
        # Pairs per method and paradigm (a pair is (paradigm, pair_id): BLiMP's ids restart in
        # every paradigm). Runs of different sizes (every method on N pairs, the top methods on
        # more) merge here: say per method how many pairs it has, and each paradigm at least.
        counts = df.groupby(["method", "paradigm"]).pair_id.nunique()
        manifest["pairs_by_method"] = counts.groupby("method").sum().astype(int).to_dict()
        per = counts.groupby("method").min()
        manifest["per_paradigm_by_method"] = per.astype(int).to_dict()
        # ... and in how many paradigms: a sample shipped before it reached every paradigm says so
        manifest["paradigms_by_method"] = counts.groupby("method").size().astype(int).to_dict()
        sizes = _paradigm_sizes(manifest["benchmark"])
        if sizes is not None:  # in how many of them every pair of the paradigm: whole, not a sample
            whole = counts >= counts.index.get_level_values("paradigm").map(sizes).fillna(np.inf).to_numpy()
            manifest["complete_paradigms_by_method"] = whole.groupby("method").sum().astype(int).to_dict()
        manifest["methods"] = sorted(set(manifest.get("methods", [])) | set(per.index))
        manifest["stored_scores"] = STORED_SCORES
        write_json_atomic(manifest, manifest_beside(target))
        written.append(target)
    return written
