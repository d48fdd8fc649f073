"""Markdown tables of the shipped results beside the papers' (for notes and the README).

    python scripts/results_table.py [--results precomputed/results]

1. Overall accuracy (mean over paradigms) per method, for every (model, benchmark) run in the
   store, beside Ide et al. 2025's eight LLMs (median and range; their Table 3 / 11: "mean" over
   the five templates for template methods, as ours).
2. Per phenomenon (BLiMP): our runs' LP and in-template LP (mean over templates) beside BLiMP's
   GPT-2-large and humans (Warstadt et al. 2020).
3. Per phenomenon (CLiMP): our runs.
Reads only the store (DuckDB over precomputed/); prints, writes nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pandas as pd  # noqa: E402

from accapp.analysis.accuracy import method_summary  # noqa: E402
from accapp.analysis.published import published_accuracy  # noqa: E402
from accapp.benchmarks import BUILTIN, NAMES, label_of  # noqa: E402
from accapp.store import Store  # noqa: E402

ORDER = ["lp", "mean_lp", "pen_lp", "in_template_lp", "in_template_mean_lp", "in_template_pen_lp",
         "in_template_comparative_lp", "ab_prompting", "yes_no_prob_comp",
         "ens_l_only", "ens_mix_l3", "ens_mix_p3", "ens_p_only"]


def _fmt(x) -> str:
    return "" if x is None or pd.isna(x) else f"{x:.1f}"


def ours(store: Store) -> dict[tuple[str, str], pd.DataFrame]:
    runs = store.query("SELECT DISTINCT model, benchmark FROM results ORDER BY benchmark, model")
    return {(r.model, r.benchmark): method_summary(store, r.model, r.benchmark) for r in runs.itertuples()}


def headline(df: pd.DataFrame) -> pd.DataFrame:
    """One row per method: the template mean for template methods, else the single template."""
    df = df[df.template.isin(["mean", "-"]) | ~df.method.isin(df[df.template == "mean"].method)]
    return df[~df.template.isin(["sd", "max"])]


def benchmarks_run(runs: dict) -> list[str]:
    """The built-in benchmarks the store has runs of, in the descriptor file's order."""
    return [b for b in NAMES if any(bench == b for _, bench in runs)]


def overall_table(store: Store, runs: dict) -> str:
    cols = list(runs)
    pub = {}
    for b in benchmarks_run(runs):
        p = published_accuracy(store, b, "overall")
        p = p[p.source.str.startswith("Ide") & p.template.isin(["mean", "-"])]
        if len(p):
            pub[b] = p
    lines = ["| method | " + " | ".join(f"{m} {b} (pairs)" for m, b in cols)
             + "".join(f" | Ide et al. {label_of(b)} median [range]" for b in pub) + " |",
             "|---" * (len(cols) + len(pub) + 1) + "|"]
    methods = sorted({m for df in runs.values() for m in df.method}, key=lambda m: (m not in ORDER, ORDER.index(m) if m in ORDER else 0, m))
    for method in methods:
        cells = []
        for key in cols:
            h = headline(runs[key])
            row = h[(h.method == method) & (h.phenomenon == "overall")]
            cells.append(f"{_fmt(row.accuracy.iloc[0])} ({int(row.pairs.iloc[0])})" if len(row) else "")
        for b in pub:
            p = pub[b]
            p = p[p.method == method]
            cells.append(f"{p.accuracy.median():.1f} [{p.accuracy.min():.1f}-{p.accuracy.max():.1f}]" if len(p) else "")
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def phenomenon_table(store: Store, runs: dict, benchmark: str, methods=("lp", "in_template_lp", "yes_no_prob_comp")) -> str:
    rows = []
    for (model, bench), df in runs.items():
        if bench != benchmark:
            continue
        h = headline(df)
        for method in methods:
            sel = h[h.method == method]
            if len(sel):
                rows.append((f"{model} {method}", dict(zip(sel.phenomenon, sel.accuracy))))
    if BUILTIN[benchmark].published.get("models"):  # the benchmark's own paper's models and humans
        pub = pd.concat([published_accuracy(store, benchmark, level) for level in ("overall", "phenomenon")])
        for who in (*BUILTIN[benchmark].published.get("model_ids", [])[-1:], "human"):  # its largest model
            sel = pub[pub.model == who]
            if len(sel):
                rows.append((f"{who} (Warstadt et al. 2020)", dict(zip(sel.phenomenon, sel.accuracy))))
    if not rows:
        return ""
    phens = ["overall"] + sorted({p for _, d in rows for p in d if p != "overall"})
    lines = ["| | " + " | ".join(p.replace("_", " ") for p in phens) + " |", "|---" * (len(phens) + 1) + "|"]
    for name, d in rows:
        lines.append(f"| {name} | " + " | ".join(_fmt(d.get(p)) for p in phens) + " |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default=None)
    args = ap.parse_args()
    store = Store(args.results)
    runs = ours(store)
    print("## Overall accuracy (%), mean over paradigms\n")
    print(overall_table(store, runs))
    for bench in benchmarks_run(runs):
        t = phenomenon_table(store, runs, bench)
        if t:
            print(f"\n## {label_of(bench)} by phenomenon (%)\n")
            print(t)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
