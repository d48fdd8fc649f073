"""`python -m accapp bench` and `python -m accapp consolidate`."""

from __future__ import annotations

from pathlib import Path


def cmd_bench(args) -> int:
    from accapp.cli import engine_from_args  # the same model options as `score`
    from accapp.methods import resolve
    from accapp.models import get_spec
    from accapp.runner.datasets import bench_name
    from accapp.runner.runner import consolidate, consolidated_path, restore_units, run_benchmark

    resolve(args.methods, get_spec(args.model).kind)  # bad method ids fail before a model loads
    engine = engine_from_args(args)
    paradigms = [p for p in (args.paradigms or "").split(",") if p] or None
    if args.consolidate_to:
        restored = restore_units(consolidated_path(Path(args.consolidate_to), args.model, bench_name(args.benchmark)), Path(args.out))
        if restored:
            print(f"resumed from {args.consolidate_to}: {restored} unit files restored")
    summary = run_benchmark(engine, args.benchmark, args.methods, Path(args.out), args.per_paradigm, args.seed, paradigms)
    print(f"units written: {summary['units_written']}, skipped (already done): {summary['units_skipped']}, "
          f"{summary['seconds']:.1f} s")
    if summary["pairs_failed"]:
        first = summary["errors"][0]
        print(f"pairs not scored: {summary['pairs_failed']} (listed in {summary['errors_file']}); "
              f"first: pair {first['pair_id']}: {first['error']}")
    if args.consolidate_to:
        # Only this run's benchmark: another benchmark's run in the same folder may be unfinished.
        for path in consolidate(Path(args.out), Path(args.consolidate_to), args.model, bench_name(args.benchmark)):
            print(f"consolidated: {path}")
    return 0


def cmd_consolidate(args) -> int:
    from accapp.runner.runner import consolidate

    for path in consolidate(Path(args.runs), Path(args.out), args.model, args.benchmark):
        print(path)
    return 0


def register(sub, add_model_args) -> None:
    p = sub.add_parser("bench", help="run methods over a benchmark (resumable; one file per unit)")
    p.add_argument("--benchmark", required=True, help="blimp, climp, or a CSV/JSONL file with good/bad columns")
    p.add_argument("--per-paradigm", type=int, default=None, help="stratified sample of N pairs per paradigm (default: all)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="runs", help="results folder (units + manifest)")
    p.add_argument("--paradigms", default=None, help="comma-separated subset of paradigms")
    p.add_argument("--consolidate-to", default=None, help="also merge the units into DIR/<model>__<benchmark>.parquet")
    add_model_args(p)
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("consolidate", help="merge a runs folder into precomputed/results")
    p.add_argument("--runs", default="runs")
    p.add_argument("--out", default="precomputed/results")
    p.add_argument("--model", default=None)
    p.add_argument("--benchmark", default=None)
    p.set_defaults(func=cmd_consolidate)
