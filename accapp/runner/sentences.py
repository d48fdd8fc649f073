"""Single labelled sentences through the runner (a benchmark of shape "sentences": CoLA).

Each sentence is scored on its own by the per-string methods (the LP family: Method.per_string,
Engine.score_strings); a method that needs a pair is refused in one sentence. The folder is laid
out as for pairs (runner.py): one unit file per (paradigm, method) under
  OUT/<model>/<benchmark>/units/<paradigm>/<method>/-.parquet
with rows of schema.SENTENCE_ROW_COLUMNS, a manifest beside them (shape "sentences"), every file
written atomically, and a rerun scores only the sentences a unit lacks. Sentences that fail the
engine's check_sentence are listed in errors.json. consolidate() merges the units into
<model>__<benchmark>.parquet (scores as float32) and its manifest, as runner.consolidate does for
pairs; restore_units() splits such a file back into units.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

from accapp.benchmarks import CITATIONS, bench_name, language_of, load_benchmark, stratified_sample
from accapp.files import remove_stale_temps, safe_name, write_json_atomic, write_parquet_atomic
from accapp.runner.runner import (
    BLOCK,
    Block,
    BlockResult,
    check_scorable,
    consolidated_path,
    describe,
    manifest_beside,
    open_manifest,
    rows_by_method,
    unit_path,
    write_results_file,
)
from accapp.schema import SENTENCE_ROW_COLUMNS

SHAPE = "sentences"
TEMPLATE = "-"  # a per-string method has no template; its unit file's name
STORED = ("score",)


def check_sentences(benchmark: str) -> None:
    """UserError unless the benchmark is known and of single sentences."""
    from accapp.errors import UserError

    shape = check_scorable(benchmark)
    if shape != SHAPE:
        raise UserError(f"{benchmark} is {shape}, not single sentences.")


def sentence_order(ids: pd.Series) -> np.ndarray:
    """The order of sentence ids as files keep them: shorter first ("2" before "10"), then as text."""
    ids = ids.astype(str)
    return np.lexsort((ids.to_numpy(dtype=object), ids.str.len().to_numpy()))


def sort_sentences(df: pd.DataFrame) -> pd.DataFrame:
    return df.iloc[sentence_order(df.sentence_id)].reset_index(drop=True)


def rows_of(result, item: tuple, model: str, benchmark: str, units: dict) -> list[dict]:
    """Result rows (schema.SENTENCE_ROW_COLUMNS) of one scored sentence, one per method."""
    paradigm, sid, phenomenon, _, label = item
    return [{"model": model, "benchmark": benchmark, "paradigm": paradigm, "phenomenon": phenomenon,
             "sentence_id": sid, "label": int(label), "method": m, "score": score, "unit": units.get(m, ""),
             "len": result.n_tokens, "sentence": result.text} for m, score in result.scores.items()]


def method_units(methods) -> dict[str, str]:
    """{method id: the unit of its score} ("log", "log/token")."""
    from accapp.methods import plain

    return {m: plain(m)["unit"] for m in methods}


def score_sentence_block(engine, block: Block, benchmark: str, language: str | None) -> BlockResult:
    """Check and score one block of sentences, items (paradigm, sentence_id, phenomenon, sentence, label),
    with one engine call; a method that raises is retried alone and, if it fails again, recorded."""
    from accapp.errors import UserError

    t0 = time.perf_counter()
    checked, errors = [], []
    for item in block.items:
        try:
            checked.append((item, engine.check_sentence(item[3])))
        except UserError as exc:
            errors.append({"paradigm": item[0], "sentence_id": item[1], "sentence": item[3], "error": str(exc)})
    units = method_units(block.methods)

    def rows_for(methods) -> list[dict]:
        results = engine.score_strings([text for _, text in checked], list(methods), language)
        return [row for (item, _), res in zip(checked, results)
                for row in rows_of(res, item, engine.model_id, benchmark, units)]

    rows, failed = rows_by_method(rows_for, block.methods) if checked else ([], {})
    return BlockResult(block.index, pd.DataFrame(rows, columns=SENTENCE_ROW_COLUMNS), errors, failed,
                       time.perf_counter() - t0, os.getpid())


def done_ids(path: Path) -> set:
    return set(pd.read_parquet(path, columns=["sentence_id"]).sentence_id) if path.exists() else set()


def plan_sentence_blocks(sample: pd.DataFrame, out: Path, model: str, bench: str, methods: list[str],
                         block_size: int = BLOCK) -> tuple[list[Block], int]:
    """(blocks still to score, units already complete): each paradigm's sentences that a unit lacks, for
    the methods that lack them; paradigms that need the same methods share blocks of equal size."""
    groups: dict[tuple[str, ...], list[tuple]] = {}
    skipped = 0
    for paradigm, group in sample.groupby("paradigm", sort=True):
        wanted = set(group.sentence_id)
        missing = {m: wanted - done_ids(unit_path(out, model, bench, paradigm, m, TEMPLATE)) for m in methods}
        missing = {m: ids for m, ids in missing.items() if ids}
        skipped += len(methods) - len(missing)
        if not missing:
            continue
        todo = set().union(*missing.values())
        group = sort_sentences(group[group.sentence_id.isin(todo)])
        items = [(paradigm, sid, phen, text, int(label)) for sid, phen, text, label
                 in zip(group.sentence_id, group.phenomenon, group.sentence, group.label)]
        groups.setdefault(tuple(m for m in methods if m in missing), []).extend(items)
    blocks: list[Block] = []
    for ms, items in groups.items():
        n = -(-len(items) // block_size)
        bounds = [len(items) * k // n for k in range(n + 1)]
        blocks += [Block(len(blocks) + k, ms, tuple(items[a:b])) for k, (a, b) in enumerate(zip(bounds, bounds[1:]))]
    return blocks, skipped


class SentenceRun:
    """One model on one benchmark of single sentences: the manifest, the plan, the one writer of the unit
    files and errors.json."""

    def __init__(self, out: Path, benchmark: str, info: dict, per_paradigm: int | None = None, seed: int = 0,
                 paradigms: list[str] | None = None, block_size: int = BLOCK, progress: bool = True) -> None:
        from tqdm.auto import tqdm

        check_sentences(benchmark)
        self.out, self.model, self.bench = Path(out), info["model"], bench_name(benchmark)
        self.language, self.methods = info["language"], list(info["methods"])
        sample = stratified_sample(load_benchmark(benchmark), per_paradigm, seed)
        if paradigms:
            sample = sample[sample.paradigm.isin(paradigms)]
        folder = self.out / safe_name(self.model) / safe_name(self.bench)
        self.manifest_path, self.errors_path, self.failed_path = (folder / n for n in
                                                                  ("manifest.json", "errors.json", "failed_units.json"))
        if folder.is_dir():
            remove_stale_temps(folder)
        manifest = {
            "model": self.model, "benchmark": self.bench, "shape": SHAPE, "benchmark_source": CITATIONS.get(self.bench, benchmark),
            "language": self.language, "methods": self.methods, "templates": {m: [TEMPLATE] for m in self.methods},
            "template_sources": info["template_sources"], "units": method_units(self.methods),
            "per_paradigm": per_paradigm, "seed": seed, "block_size": block_size, "dtype": info["dtype"],
            "quantization": info["quantization"], "versions": info["versions"], "convention": info["convention"],
            "device": info.get("device"), "gpu": info.get("gpu"),
            "started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        }
        self.manifest = open_manifest(manifest, self.manifest_path)
        self.earlier = self.manifest.get("compute_seconds", 0.0)
        self.blocks, self.units_skipped = plan_sentence_blocks(sample, self.out, self.model, self.bench, self.methods,
                                                               block_size)
        self.units_total = len(self.methods) * sample.paradigm.nunique()
        self.sentences_total, self.sentences_done = len(sample), 0
        self.written: set[tuple] = set()
        self.check_errors: list[dict] = []
        self.failed_units: list[dict] = []
        self.t0 = time.perf_counter()
        todo = sum(len(b.items) for b in self.blocks)
        self.bar = tqdm(total=len(sample), initial=len(sample) - todo, unit="sentence",
                        desc=f"{self.model} {self.bench}", disable=not progress)

    def record(self, block: Block, result: BlockResult) -> None:
        """Merge a block's rows into their unit files; list its failures; count its time."""
        for (paradigm, m), part in result.rows.groupby(["paradigm", "method"], sort=False):
            self._write_unit(paradigm, m, part)
        self.check_errors += result.check_errors
        for m, error in result.failed.items():
            for paradigm in block.paradigms:
                ids = [item[1] for item in block.items if item[0] == paradigm]
                self.failed_units.append({"paradigm": paradigm, "method": m, "template": TEMPLATE,
                                          "sentence_ids": ids, "error": error})
        if result.failed:
            write_json_atomic(self.failed_units, self.failed_path)
        self.sentences_done += len(block.items)
        self.manifest["compute_seconds"] = round(self.earlier + time.perf_counter() - self.t0, 1)
        write_json_atomic(self.manifest, self.manifest_path)
        self.bar.update(len(block.items))

    def _write_unit(self, paradigm: str, method: str, part: pd.DataFrame) -> None:
        path = unit_path(self.out, self.model, self.bench, paradigm, method, TEMPLATE)
        if path.exists():
            have = pd.read_parquet(path)
            part = pd.concat([have[~have.sentence_id.isin(set(part.sentence_id))], part])
        write_parquet_atomic(sort_sentences(part), path)
        self.written.add((paradigm, method))

    def finish(self) -> dict:
        self.bar.close()
        for items, path in ((self.check_errors, self.errors_path), (self.failed_units, self.failed_path)):
            if items or path.exists():
                write_json_atomic(items, path)
        seconds = time.perf_counter() - self.t0
        self.manifest["finished"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        self.manifest["last_run_seconds"] = round(seconds, 1)
        self.manifest["compute_seconds"] = round(self.earlier + seconds, 1)
        write_json_atomic(self.manifest, self.manifest_path)
        failed = {(u["paradigm"], u["method"]) for u in self.failed_units}
        return {"model": self.model, "benchmark": self.bench, "shape": SHAPE, "units_written": len(self.written),
                "units_skipped": self.units_skipped, "units_total": self.units_total, "units_failed": len(failed),
                "failed_units": self.failed_units, "failed_file": str(self.failed_path) if failed else None,
                "sentences_failed": len(self.check_errors), "errors": self.check_errors,
                "errors_file": str(self.errors_path) if self.check_errors else None,
                "sentences_total": self.sentences_total, "sentences_scored": self.sentences_done,
                "blocks": len(self.blocks), "seconds": seconds}


def run_sentences(engine, benchmark: str, methods, out: Path, per_paradigm: int | None = None, seed: int = 0,
                  paradigms: list[str] | None = None, progress: bool = True, block_size: int | None = None) -> dict:
    """Run (or resume) a benchmark of single sentences with an engine in this process: every sentence
    under the per-string methods ('all': every one the model has). Returns a summary (SentenceRun.finish)."""
    from accapp.methods import resolve_strings

    ids = [m.id for m in resolve_strings(methods, engine.kind)]
    info = describe(engine, ids, language_of(bench_name(benchmark)))
    run = SentenceRun(out, benchmark, info, per_paradigm, seed, paradigms, block_size or BLOCK, progress)
    for block in run.blocks:
        run.record(block, score_sentence_block(engine, block, run.bench, run.language))
    return run.finish()


def consolidate(runs: Path, out: Path, model_id: str | None = None, benchmark: str | None = None) -> list[Path]:
    """Merge the unit files of sentence runs into one Parquet (scores float32) and its manifest per model
    and benchmark, beside the pairs' results (runner.consolidate)."""
    runs, out = Path(runs), Path(out)
    if out.is_dir():
        remove_stale_temps(out)
    written = []
    for manifest_path in sorted(runs.glob("*/*/manifest.json")):
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        if manifest.get("shape") != SHAPE or (model_id and manifest["model"] != model_id) or (
                benchmark and manifest["benchmark"] != benchmark):
            continue
        files = sorted((manifest_path.parent / "units").glob(f"*/*/{TEMPLATE}.parquet"))
        if not files:
            continue
        df = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
        df = df.iloc[np.lexsort((sentence_order(df.sentence_id).argsort(), df.method.to_numpy(dtype=object),
                                 df.paradigm.to_numpy(dtype=object)))].reset_index(drop=True)
        target = write_results_file(df[SENTENCE_ROW_COLUMNS].astype({"label": "int8", "len": "int32"}),
                                    consolidated_path(out, manifest["model"], manifest["benchmark"]), STORED)
        counts = df.groupby("method").sentence_id.nunique()
        manifest["sentences_by_method"] = counts.astype(int).to_dict()
        manifest["methods"] = sorted(set(manifest.get("methods", [])) | set(counts.index))
        manifest["stored_scores"] = "float32"
        write_json_atomic(manifest, manifest_beside(target))
        written.append(target)
    return written


def restore_units(consolidated: Path, runs: Path) -> int:
    """Split a consolidated file of sentences back into unit files under `runs` (the inverse of
    consolidate), so a run resumes from what the project ships. A unit file already there keeps its rows
    and gains the sentences only the consolidated file has. Returns the number of unit files written."""
    consolidated, runs = Path(consolidated), Path(runs)
    if not consolidated.exists():
        return 0
    df = pd.read_parquet(consolidated)
    written = 0
    for (model, bench, paradigm, method), part in df.groupby(["model", "benchmark", "paradigm", "method"], sort=False):
        path = unit_path(runs, model, bench, paradigm, method, TEMPLATE)
        if path.exists():
            have = pd.read_parquet(path)
            part = pd.concat([have, part[~part.sentence_id.isin(set(have.sentence_id))]])
            if len(part) == len(have):
                continue
        write_parquet_atomic(sort_sentences(part)[SENTENCE_ROW_COLUMNS], path)
        written += 1
    manifest = manifest_beside(consolidated)
    if len(df) and manifest.exists():
        run_manifest = runs / safe_name(df.model.iloc[0]) / safe_name(df.benchmark.iloc[0]) / "manifest.json"
        if not run_manifest.exists():
            write_json_atomic(json.loads(manifest.read_text(encoding="utf-8")), run_manifest)
    return written
