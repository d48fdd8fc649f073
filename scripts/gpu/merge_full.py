"""Join the whole-benchmark runs a GPU lease brought back into one results file (issue 32, item 4).

    python scripts/gpu/merge_full.py --runs .gpu/back/runs --model smollm2-135m-instruct --benchmark blimp \
        --out .gpu/merged [--previous FILE] [--ship precomputed/results]
    python scripts/gpu/merge_full.py --ship-file .gpu/resume/gemma3-270m__climp.parquet   # what a lease brought back

The GPU machine ran one process per share of the paradigms (scripts/gpu/device.sh full-start),
each into its own folder RUNS/<model>-<benchmark>-K/<model>/<benchmark>/. This script
  1. copies every process's unit files into one runs folder OUT/runs/<model>/<benchmark>/units/,
     with one manifest: the first process's, its compute seconds the sum over processes and the
     processes listed; with --previous (a later lease: what the earlier ones brought back,
     consolidated, from which its processes resumed, scripts/gpu/resume_full.py), over that file's
     units, adding its compute seconds, processes and leases once;
  2. checks that every paradigm of the benchmark has every method and template on all its pairs,
     and prints what is missing;
  3. consolidates (accapp.runner.runner.consolidate) into OUT/<model>__<benchmark>.parquet;
  4. compares the rows it shares with the shipped sample (precomputed/results, scored on the
     CPU in fp32): the largest absolute score difference per method and the verdicts that differ;
  5. with --ship, and only when nothing is missing, replaces the shipped file and manifest, keeping
     the scores of the sample it replaces in docs/gpu-runs/replaced-samples/ (keep_replaced_sample).
The last line is one JSON object (the figures docs/gpu.md reports).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from accapp.benchmarks import bench_name, load_benchmark  # noqa: E402
from accapp.files import safe_name, write_atomic, write_json_atomic, write_parquet_atomic  # noqa: E402
from accapp.runner.runner import consolidate, consolidated_path, manifest_beside, restore_units  # noqa: E402
from accapp.schema import ENSEMBLE_METHODS  # noqa: E402

KEYS = ["paradigm", "pair_id", "method", "template", "variant"]


def join_runs(runs: Path, model: str, bench: str, dest: Path, previous: Path | None = None) -> dict:
    """Every process's units under dest/<model>/<bench>/units, over those of `previous` (what earlier
    leases brought back, consolidated: a process that resumed from it holds the same units or more);
    returns the joined manifest."""
    target = dest / safe_name(model) / safe_name(bench)
    if target.exists():
        shutil.rmtree(target)
    (target / "units").mkdir(parents=True)
    earlier: dict = {}
    if previous is not None:
        restore_units(previous, dest)
        earlier = json.loads(manifest_beside(previous).read_text(encoding="utf-8"))
    from_previous = {f.relative_to(target / "units") for f in (target / "units").glob("*/*/*.parquet")}
    manifests = []
    for part in sorted(runs.glob(f"{safe_name(model)}-{safe_name(bench)}-*")):
        src = part / safe_name(model) / safe_name(bench)
        if not (src / "manifest.json").exists():
            continue
        manifests.append((part.name, json.loads((src / "manifest.json").read_text(encoding="utf-8"))))
        for f in (src / "units").glob("*/*/*.parquet"):
            out = target / "units" / f.relative_to(src / "units")
            if out.exists() and f.relative_to(src / "units") not in from_previous:
                raise SystemExit(f"{f}: two processes wrote the same unit")
            from_previous.discard(f.relative_to(src / "units"))
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(f, out)
    if not manifests:
        raise SystemExit(f"no runs of {model} on {bench} under {runs}")
    manifest = dict(manifests[0][1])
    # this lease's processes' seconds, and once the earlier leases' (resume_full.py leaves them out of each process)
    manifest["compute_seconds"] = round(earlier.get("compute_seconds", 0)
                                        + sum(m.get("compute_seconds", 0) for _, m in manifests), 1)
    manifest["processes"] = earlier.get("processes", []) + [name for name, _ in manifests]
    manifest["leases"] = earlier.get("leases", 1 if earlier else 0) + 1
    manifest["process_runs"] = earlier.get("process_runs", []) + [
        process_run(name, m, manifest["leases"]) for name, m in manifests]
    manifest["started"] = earlier.get("started", manifest.get("started"))
    write_json_atomic(manifest, target / "manifest.json")
    return manifest


def process_run(name: str, manifest: dict, lease: int) -> dict:
    """One process's run in this lease: its start (its end less the seconds it ran: a resumed process's
    manifest keeps the first lease's start), end and seconds, for the record's wall time."""
    seconds, finished = manifest.get("last_run_seconds"), manifest.get("finished")
    started = None
    if seconds is not None and finished:
        started = (dt.datetime.fromisoformat(finished) - dt.timedelta(seconds=seconds)).isoformat(timespec="seconds")
    return {"name": name, "lease": lease, "started": started, "finished": finished, "seconds": seconds}


def missing_units(merged: pd.DataFrame, bench: str, templates: dict[str, list[str]]) -> list[str]:
    """'paradigm method/template: have N of M pairs' for every unit short of the benchmark's pairs."""
    want = load_benchmark(bench).groupby("paradigm").pair_id.nunique()
    have = merged.groupby(["paradigm", "method", "template"]).pair_id.nunique()
    out = []
    for paradigm, n in want.items():
        for m, tpls in templates.items():
            for t in tpls:
                got = int(have.get((paradigm, m, t), 0))
                if got < n:
                    out.append(f"{paradigm} {m}/{t}: {got} of {n} pairs")
    return out


def against_shipped(merged: pd.DataFrame, shipped: Path) -> pd.DataFrame:
    """Per method: rows shared with the shipped file, largest |score difference|, verdicts differing."""
    ship = pd.read_parquet(shipped)
    both = merged.merge(ship, on=KEYS, suffixes=("", "_cpu"))
    diff = pd.concat([(both.score_good - both.score_good_cpu).abs(), (both.score_bad - both.score_bad_cpu).abs()], axis=1).max(axis=1)
    both = both.assign(diff=diff, changed=(both.correct != both.correct_cpu) | (both.tie != both.tie_cpu))
    return both.groupby("method").agg(rows=("diff", "size"), max_abs_diff=("diff", "max"), verdicts_changed=("changed", "sum"))


SAMPLES = ROOT / "docs" / "gpu-runs" / "replaced-samples"
SAMPLE_COLUMNS = KEYS + ["score_good", "score_bad"]


def keep_replaced_sample(shipped: Path, dest: Path = SAMPLES) -> Path | None:
    """Before a whole benchmark replaces a shipped sample: the sample's scores of every method that is
    not an ensemble (an ensemble's share follows from its members), as they were shipped, kept for
    tests/test_gpu_runs.py (the whole results agree with the sample on the pairs they share)."""
    man = json.loads(manifest_beside(shipped).read_text(encoding="utf-8"))
    if man.get("whole_benchmark"):
        return None
    rows = pd.read_parquet(shipped, columns=SAMPLE_COLUMNS)
    rows = rows[~rows.method.isin(list(ENSEMBLE_METHODS))]
    dest.mkdir(parents=True, exist_ok=True)
    out = dest / shipped.name
    write_parquet_atomic(rows, out, compression="zstd", use_dictionary=KEYS,
                         use_byte_stream_split=["score_good", "score_bad"])
    return out


def ship(path: Path, dest: Path, samples: Path = SAMPLES) -> None:
    """Put a whole benchmark's consolidated file and manifest in place of the shipped ones (each written
    beside, then renamed), keeping the sample it replaces."""
    man_path = manifest_beside(path)
    if not json.loads(man_path.read_text(encoding="utf-8")).get("whole_benchmark"):
        raise SystemExit(f"{path}: its manifest does not say whole_benchmark; not shipped")
    if (dest / path.name).exists():
        kept = keep_replaced_sample(dest / path.name, samples)
        if kept:
            print(f"the sample it replaces, kept: {kept}")
    for f in (path, man_path):
        write_atomic(dest / f.name, lambda tmp, f=f: shutil.copyfile(f, tmp))
    print(f"shipped: {dest / path.name}")
    from accapp.analysis.separation import write_summary  # here: merging runs on the GPU machine, whose image need not have scikit-learn

    print(f"separation summary: {write_summary(dest / path.name)}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ship-file", default=None,
                    help="only ship this consolidated file (what `device.sh finish` brought back, whole) into --ship")
    ap.add_argument("--samples", default=str(SAMPLES), help="where the replaced sample's scores are kept")
    ap.add_argument("--runs", help="the folder holding <model>-<benchmark>-K/ (the GPU's /tmp/runs)")
    ap.add_argument("--model")
    ap.add_argument("--benchmark")
    ap.add_argument("--out", default=".gpu/merged")
    ap.add_argument("--shipped", default=str(ROOT / "precomputed" / "results"))
    ap.add_argument("--ship", default=None, help="replace the results file here when nothing is missing")
    ap.add_argument("--previous", default=None,
                    help="the consolidated file of what earlier leases did (resume_full.py --from): joined under this lease's")
    args = ap.parse_args()
    if args.ship_file:
        ship(Path(args.ship_file), Path(args.ship or args.shipped), Path(args.samples))
        return
    if not (args.runs and args.model and args.benchmark):
        ap.error("--runs, --model and --benchmark (or --ship-file)")
    out, name = Path(args.out), bench_name(args.benchmark)
    previous = Path(args.previous) if args.previous else None
    manifest = join_runs(Path(args.runs), args.model, name, out / "runs", previous)
    (path,) = consolidate(out / "runs", out, args.model, name)
    merged = pd.read_parquet(path)
    missing = missing_units(merged, args.benchmark, manifest["templates"])
    for line in missing[:40]:
        print("missing:", line)
    shipped = consolidated_path(Path(args.shipped), args.model, name)
    table = against_shipped(merged, shipped) if shipped.exists() else pd.DataFrame()
    if not table.empty:
        print(table.to_string())
    report = {
        "model": args.model, "benchmark": name, "rows": len(merged),
        "pairs": int(merged.groupby("paradigm").pair_id.nunique().sum()), "paradigms": int(merged.paradigm.nunique()),
        "units_missing": len(missing), "compute_seconds": manifest["compute_seconds"], "processes": len(manifest["processes"]),
        "file_mb": round(path.stat().st_size / 1e6, 1),
        "vs_shipped_rows": int(table.rows.sum()) if not table.empty else 0,
        # Ensembles score a vote share, not nats: their differences are votes, counted as verdicts.
        "vs_shipped_max_abs_diff": (float(table.max_abs_diff.drop(list(ENSEMBLE_METHODS), errors="ignore").max())
                                    if not table.empty else None),
        "vs_shipped_verdicts_changed": int(table.verdicts_changed.sum()) if not table.empty else 0,
    }
    if not missing:  # Explore says "every pair of the benchmark", not "a sample", from this
        man_path = manifest_beside(path)
        man = json.loads(man_path.read_text(encoding="utf-8"))
        man["whole_benchmark"] = True
        write_json_atomic(man, man_path)
    if args.ship:
        if missing:
            print(f"not shipped: {len(missing)} units are short of pairs")
        else:
            ship(path, Path(args.ship), Path(args.samples))
            report["shipped_to"] = args.ship
    print(json.dumps(report))


if __name__ == "__main__":
    main()
