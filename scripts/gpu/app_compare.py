"""The same /probe answered on two devices: every method's scores side by side (scripts/gpu/app_probe.py).

    python3 scripts/gpu/app_compare.py GPU/app-probe.json CPU/app-probe.json [--out compare.json]

Pairs the answers' `verdicts` by (method, template, variant) and prints, as JSON: where each ran, the
rows compared, the largest absolute difference of a score (nats for LP and its kin, probabilities for
Yes/No) and of LP's, the verdicts that differ, and each row's scores.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path


def rows(answer: dict) -> dict:
    return {(v["method"], v.get("template"), v.get("variant")): v for v in answer["verdicts"]}


def compare(a: dict, b: dict) -> dict:
    ra, rb = rows(a["answer"]), rows(b["answer"])
    shared = sorted(set(ra) & set(rb), key=str)
    diffs, lp, changed, table = [], [], [], []
    for key in shared:
        x, y = ra[key], rb[key]
        d = [abs(x[s] - y[s]) for s in ("score_good", "score_bad")
             if isinstance(x.get(s), (int, float)) and isinstance(y.get(s), (int, float))
             and math.isfinite(x[s]) and math.isfinite(y[s])]
        if d:
            diffs.append(max(d))
            if key[0] == "lp":
                lp.append(max(d))
        if x.get("verdict") != y.get("verdict"):
            changed.append({"method": key[0], "template": key[1], "variant": key[2], "a": x.get("verdict"),
                            "b": y.get("verdict"), "difference_a": x.get("difference"), "difference_b": y.get("difference")})
        table.append({"method": key[0], "template": key[1], "variant": key[2],
                      "a": [x.get("score_good"), x.get("score_bad")], "b": [y.get("score_good"), y.get("score_bad")]})
    return {"a_ran_on": a["ran_on"], "b_ran_on": b["ran_on"], "rows": len(shared),
            "only_in_one": len(set(ra) ^ set(rb)), "largest_difference": max(diffs, default=None),
            "lp_largest_difference": max(lp, default=None), "verdicts_changed": changed, "scores": table}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--out")
    args = ap.parse_args()
    result = compare(json.loads(Path(args.a).read_text()), json.loads(Path(args.b).read_text()))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "scores"}, indent=1))


if __name__ == "__main__":
    main()
