"""The agreement tables of issue 32 (docs/gpu.md), from the files a GPU run brought back.

    python scripts/gpu/compare.py --reference .gpu/ref --got .gpu/back [--markdown]

For each <model>-<benchmark>-<setting>.parquet under --got (scripts/gpu/agree.py's output, in
any subfolder) and its CPU fp32 reference <model>-<benchmark>-cpu-fp32.parquet in --reference:
per method, the rows compared, the largest absolute difference of any score (nats for the LP
family, log-odds or probabilities where the method scores so) and the verdicts that differ; then
one line per setting. CUDA fp32 must agree with CPU fp32 within 1e-3.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import pandas as pd  # noqa: E402
from agreement import compare  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reference", default=".gpu/ref")
    ap.add_argument("--got", default=".gpu/back")
    ap.add_argument("--markdown", action="store_true", help="print the per-setting summary as a Markdown table")
    args = ap.parse_args()
    summary = []
    for path in sorted(Path(args.got).rglob("*-cuda-*.parquet")):
        stem = path.stem
        head, setting = stem.rsplit("-cuda-", 1)
        model, bench = head.rsplit("-", 1)
        ref_path = Path(args.reference) / f"{model}-{bench}-cpu-fp32.parquet"
        if not ref_path.exists():
            print(f"(no reference for {stem})")
            continue
        table = compare(pd.read_parquet(ref_path), pd.read_parquet(path))
        print(f"\n{model} {bench} cuda-{setting} vs cpu-fp32:")
        print(table.to_string(float_format=lambda v: f"{v:.2e}"))
        summary.append({"model": model, "benchmark": bench, "setting": f"cuda-{setting}", "rows": int(table.rows.sum()),
                        "max_abs_diff": float(table.max_abs_diff.max()), "verdicts_changed": int(table.verdicts_changed.sum()),
                        "lp_max_abs_diff": float(table.loc["lp", "max_abs_diff"]) if "lp" in table.index else None})
    df = pd.DataFrame(summary)
    print()
    if args.markdown:
        print("| " + " | ".join(df.columns) + " |\n|" + "---|" * len(df.columns))
        for row in df.itertuples(index=False):
            print("| " + " | ".join(f"{v:.2e}" if isinstance(v, float) else str(v) for v in row) + " |")
    else:
        print(df.to_string(index=False))
    fp32 = df[df.setting == "cuda-fp32"]
    if len(fp32):
        worst = fp32.max_abs_diff.max()
        print(f"\nCUDA fp32 vs CPU fp32, every method, every model: largest difference {worst:.2e} "
              f"({'within' if worst <= 1e-3 else 'NOT within'} 1e-3)")


if __name__ == "__main__":
    main()
