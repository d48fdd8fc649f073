"""The benchmark runner: fills a results folder with one file per unit of work.

A unit is (model, benchmark, paradigm, method, template): its rows live in
  OUT/<model>/<benchmark>/units/<paradigm>/<method>/<template>.parquet
Units are independent (so runs can be spread over machines and merged), a rerun skips
what is done (a unit is done when its file holds every sampled pair), and every file is
written to a temporary name and renamed, so a killed run never leaves half a file.
Methods of one paradigm are scored together so they share forward passes. Every pair goes
through the engine's check_pair, as in `score` and the app: a pair that fails it (an empty
cell, a sentence over the limits) is recorded with its error in errors.json beside the
manifest, and the run goes on.
"""

from __future__ import annotations

import datetime as dt
import json
import platform
import time
from pathlib import Path

import pandas as pd

from accapp.files import safe_name, write_json_atomic, write_parquet_atomic
from accapp.runner.datasets import CITATIONS, bench_name, language_of, load_benchmark, stratified_sample
from accapp.schema import ENSEMBLE_METHODS, ROW_COLUMNS

BLOCK = 100  # pairs scored between two writes: bounds the work a kill can lose


def unit_path(root: Path, model: str, benchmark: str, paradigm: str, method: str, template: str) -> Path:
    s = safe_name
    return root / s(model) / s(benchmark) / "units" / s(paradigm) / s(method) / f"{s(template)}.parquet"


def rows_for(result, meta: dict, model: str, benchmark: str) -> list[dict]:
    """Result rows (schema.RESULT_COLUMNS) of one scored pair."""
    out = []
    for r in result.scores:
        if r.method in ENSEMBLE_METHODS:
            correct = r.score_good  # share of the seeded ensemble draws that were right
        else:
            correct = 1.0 if r.score_good > r.score_bad else 0.0
        out.append({
            "model": model, "benchmark": benchmark, "paradigm": meta["paradigm"], "phenomenon": meta["phenomenon"],
            "pair_id": meta["pair_id"], "method": r.method, "template": r.template, "variant": r.variant,
            "score_good": r.score_good, "score_bad": r.score_bad, "correct": float(correct),
            "tie": bool(r.score_good == r.score_bad), "prediction": r.prediction, "len_good": result.len_good,
            "len_bad": result.len_bad, "len_diff": result.len_good - result.len_bad, "good": result.pair.good,
            "bad": result.pair.bad,
        })
    return out


def checked_pairs(engine, rows: pd.DataFrame, paradigm: str) -> tuple[list, list[dict]]:
    """(pairs that pass the engine's check_pair, {paradigm, pair_id, good, bad, error} of those that fail)."""
    checked, errors = engine.check_pairs(
        (i, r["good"], r["bad"], {"pair_id": i, "paradigm": paradigm, "phenomenon": r["phenomenon"]})
        for i, r in rows.iterrows())
    failed = [{"paradigm": paradigm, "pair_id": i, "good": rows.at[i, "good"], "bad": rows.at[i, "bad"], "error": e}
              for i, e in errors.items()]
    return [p for _, p in checked], failed


def _versions() -> dict:
    import torch
    import transformers

    import accapp

    return {"accapp": accapp.__version__, "torch": torch.__version__, "transformers": transformers.__version__,
            "python": platform.python_version()}


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
) -> dict:
    """Run (or resume) a benchmark with an engine (accapp.engine); returns a summary
    {units_written, units_skipped, pairs_failed, seconds}."""
    from tqdm.auto import tqdm

    out = Path(out)
    model_id = engine.model_id
    methods = engine.resolve(methods)
    data = load_benchmark(benchmark)
    bench = bench_name(benchmark)
    language = language_of(bench) or engine.language
    sample = stratified_sample(data, per_paradigm, seed)
    if paradigms:
        sample = sample[sample.paradigm.isin(paradigms)]
    ctx = engine.context(language or "en")
    templates = {m.id: m.templates(ctx) for m in methods}
    manifest_path = out / safe_name(model_id) / safe_name(bench) / "manifest.json"
    errors_path = manifest_path.with_name("errors.json")
    manifest = {
        "model": model_id, "benchmark": bench, "benchmark_source": CITATIONS.get(bench, benchmark),
        "language": language, "methods": [m.id for m in methods], "templates": templates,
        "template_sources": {m.id: m.source for m in methods}, "per_paradigm": per_paradigm, "seed": seed,
        "dtype": getattr(engine.lm, "dtype", None), "quantization": getattr(engine.lm, "quantization", None),
        "in_template_scope": getattr(engine, "in_template_scope", None),
        "versions": _versions(), "started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    }
    if manifest_path.exists():
        old = json.loads(manifest_path.read_text(encoding="utf-8"))
        manifest["started"] = old.get("started", manifest["started"])
        # A run of other methods keeps the methods and templates earlier runs wrote units for.
        manifest["methods"] = list(dict.fromkeys(old.get("methods", []) + manifest["methods"]))
        manifest["templates"] = {**old.get("templates", {}), **manifest["templates"]}
        manifest["template_sources"] = {**old.get("template_sources", {}), **manifest["template_sources"]}
        if "compute_seconds" in old:
            manifest["compute_seconds"] = old["compute_seconds"]
    write_json_atomic(manifest, manifest_path)
    earlier = manifest.get("compute_seconds", 0.0)

    t0 = time.perf_counter()
    written = skipped = 0
    failures: list[dict] = []
    groups = list(sample.groupby("paradigm", sort=True))
    bar = tqdm(total=len(sample), desc=f"{model_id} {bench}", unit="pair", disable=not progress)
    for paradigm, group in groups:
        wanted = set(group.pair_id)
        existing: dict[tuple, pd.DataFrame] = {}
        missing_by_method: dict[str, set] = {}
        for m in methods:
            for t in templates[m.id]:
                p = unit_path(out, model_id, bench, paradigm, m.id, t)
                have = pd.read_parquet(p) if p.exists() else None
                existing[(m.id, t)] = have
                done = set(have.pair_id) if have is not None else set()
                if wanted - done:
                    missing_by_method.setdefault(m.id, set()).update(wanted - done)
        todo_pairs = sorted(set().union(*missing_by_method.values()) if missing_by_method else set(), key=lambda x: (len(x), x))
        todo_methods = [m.id for m in methods if m.id in missing_by_method]
        skipped += sum(1 for m in methods for t in templates[m.id] if m.id not in missing_by_method)
        if not todo_pairs:
            bar.update(len(group))
            continue
        bar.update(len(group) - len(todo_pairs))
        by_id = group.set_index("pair_id")
        for start in range(0, len(todo_pairs), BLOCK):
            block = todo_pairs[start : start + BLOCK]
            pairs, failed = checked_pairs(engine, by_id.loc[block], paradigm)
            failures += failed
            results = engine.score_pairs(pairs, todo_methods, language) if pairs else []
            rows = [row for res in results for row in rows_for(res, res.pair.meta, model_id, bench)]
            new = pd.DataFrame(rows, columns=ROW_COLUMNS)
            for m_id in todo_methods:
                for t in templates[m_id]:
                    part = new[(new.method == m_id) & (new.template == t)]
                    if part.empty:  # every pair of the block failed its check: nothing new to write
                        continue
                    have = existing.get((m_id, t))
                    if have is not None:
                        part = pd.concat([have[~have.pair_id.isin(set(part.pair_id))], part])
                    part = part.sort_values(["pair_id", "variant"], key=_pair_key).reset_index(drop=True)
                    existing[(m_id, t)] = part
                    write_parquet_atomic(part, unit_path(out, model_id, bench, paradigm, m_id, t))
                    written += 1
                    if on_unit:
                        on_unit()
            bar.update(len(block))
        # Time spent on this run so far, kept per paradigm: a killed run still counts.
        manifest["compute_seconds"] = round(earlier + time.perf_counter() - t0, 1)
        write_json_atomic(manifest, manifest_path)
    bar.close()
    # Pairs that failed the check, this run's (a rerun tries them again: the file may be fixed).
    if failures or errors_path.exists():
        write_json_atomic(failures, errors_path)
    seconds = time.perf_counter() - t0
    manifest["finished"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    manifest["last_run_seconds"] = round(seconds, 1)
    manifest["compute_seconds"] = round(earlier + seconds, 1)  # all runs of this model and benchmark
    write_json_atomic(manifest, manifest_path)
    return {"units_written": written, "units_skipped": skipped, "pairs_failed": len(failures), "errors": failures,
            "errors_file": str(errors_path) if failures else None, "seconds": seconds}


def _pair_key(col: pd.Series):
    if col.name == "pair_id":
        return col.map(lambda x: (len(str(x)), str(x)))
    return col


def consolidated_path(out: Path, model_id: str, benchmark: str) -> Path:
    return Path(out) / f"{safe_name(model_id)}__{safe_name(benchmark)}.parquet"


def restore_units(consolidated: Path, runs: Path) -> int:
    """Split a consolidated results file back into unit files under `runs` (the inverse of
    consolidate), so a run resumes from the results the project ships: runs/ itself is not
    committed, but precomputed/results/ is. A unit file already there keeps its rows and gains
    the pairs only the consolidated file has. Returns the number of unit files written."""
    consolidated, runs = Path(consolidated), Path(runs)
    if not consolidated.exists():
        return 0
    df = pd.read_parquet(consolidated)
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
        part = part.sort_values(["pair_id", "variant"], key=_pair_key).reset_index(drop=True)
        write_parquet_atomic(part[ROW_COLUMNS], path)
        written += 1
    manifest_path = consolidated.with_name(consolidated.name.replace(".parquet", ".manifest.json"))
    run_manifest = runs / safe_name(df.model.iloc[0]) / safe_name(df.benchmark.iloc[0]) / "manifest.json" if len(df) else None
    if run_manifest is not None and manifest_path.exists() and not run_manifest.exists():
        write_json_atomic(json.loads(manifest_path.read_text(encoding="utf-8")), run_manifest)
    return written


def consolidate(runs: Path, out: Path, model_id: str | None = None, benchmark: str | None = None) -> list[Path]:
    """Merge unit files into one Parquet (plus manifest) per model and benchmark for the store."""
    import duckdb

    runs, out = Path(runs), Path(out)
    written = []
    for manifest_path in sorted(runs.glob("*/*/manifest.json")):
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        if (model_id and manifest["model"] != model_id) or (benchmark and manifest["benchmark"] != benchmark):
            continue
        units = manifest_path.parent / "units"
        files = sorted(units.glob("*/*/*.parquet"))
        if not files:
            continue
        con = duckdb.connect()
        df = con.execute(
            "SELECT * FROM read_parquet(?) ORDER BY paradigm, method, template, length(pair_id), pair_id, variant",
            [[str(f) for f in files]],
        ).df()
        con.close()
        name = f"{safe_name(manifest['model'])}__{safe_name(manifest['benchmark'])}"
        target = write_parquet_atomic(df, out / f"{name}.parquet", compression="zstd")
        # Pairs per method and paradigm (a pair is (paradigm, pair_id): BLiMP's ids restart in
        # every paradigm). Runs of different sizes (every method on N pairs, the top methods on
        # more) merge here: say per method how many pairs it has, and each paradigm at least.
        counts = df.groupby(["method", "paradigm"]).pair_id.nunique()
        manifest["pairs_by_method"] = counts.groupby("method").sum().astype(int).to_dict()
        per = counts.groupby("method").min()
        manifest["per_paradigm_by_method"] = per.astype(int).to_dict()
        manifest["methods"] = sorted(set(manifest.get("methods", [])) | set(per.index))
        write_json_atomic(manifest, out / f"{name}.manifest.json")
        written.append(target)
    return written
