"""The GPU leases' record (docs/gpu-record.md): its tables, made from the JSON records in docs/gpu-runs/.

    python scripts/gpu/record.py                    # rewrite the tables of docs/gpu-record.md in place
    python scripts/gpu/record.py --check            # exit 1 when a table differs from what the records make now
    python scripts/gpu/record.py agreement --reference DIR --got DIR --out DIR
        # agree.py's parquet files against their CPU reference -> DIR/agreement-MODEL-BENCH.json
    python scripts/gpu/record.py whole --logs LOGS --manifest MANIFEST --out FILE
        # a whole-benchmark run's record from device.sh's logs.txt and the consolidated manifest

The records (every *.json under docs/gpu-runs/, by the first folder under it: the lease):
  machine.json                  scripts/gpu/machine.py's report of the machine;
  {"settings": [...]}           agree.py's speed and memory per setting, with "agreement" per setting
                                where it had a reference; agreement-*.json: this script's, for a lease
                                whose agreement was computed after it (the same shape);
  {"kind": "whole-benchmark"}   a whole benchmark's processes (pairs, seconds, start where known) and
                                the GPU's use. Its wall time runs from the first process's start to the
                                last one's end;
  app-probe-*.json              scripts/gpu/app_probe.py: the app on a device, /probe with every method
                                (app-compare.json beside it: app_compare.py's GPU against CPU);
  host-*.json                   bench/host_cost.py's last line: milliseconds a pair in the decoder, the
                                projection and the host.
Each table of the record sits between `<!-- table NAME -->` and `<!-- /table -->`; the text around
them is written by hand.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "docs" / "gpu-runs"
RECORD = ROOT / "docs" / "gpu-record.md"
SETTING_ORDER = ["cuda-fp32", "cuda-bf16", "cuda-fp16", "cuda-nf4", "cpu-fp32"]
BENCH_LABEL = {"blimp": "BLiMP", "climp": "CLiMP"}
# The quiet CPU measurement and the GPU lease it stands beside (same script, model and pairs).
BESIDE = [("cpu-2026-11-28", "2026-11-26b")]


# ---- reading the records

def lease_of(path: Path, runs: Path = RUNS) -> str:
    return path.relative_to(runs).parts[0]


def records(runs: Path = RUNS) -> list[tuple[str, Path, dict]]:
    """(lease, path, record) for every JSON record, in path order."""
    return [(lease_of(p, runs), p, json.loads(p.read_text(encoding="utf-8"))) for p in sorted(runs.rglob("*.json"))]


def setting_key(setting: str) -> int:
    return SETTING_ORDER.index(setting) if setting in SETTING_ORDER else len(SETTING_ORDER)


def speed_rows(recs) -> list[dict]:
    """One row per agree.py setting run on a device (cuda or cpu)."""
    rows = []
    for lease, _, rec in recs:
        for s in rec.get("settings", []):
            rows.append({"lease": lease, "model": rec["model"], "benchmark": rec["benchmark"], **s})
    return sorted(rows, key=lambda r: (r["lease"], r["model"], r["benchmark"], setting_key(r["setting"])))


def agreement_rows(recs) -> list[dict]:
    """One row per GPU setting compared with its CPU fp32 reference."""
    rows = []
    for lease, _, rec in recs:
        for setting, a in (rec.get("agreement") or {}).items():
            if not setting.startswith("cuda"):
                continue
            lp = [m["max_abs_diff"] for m in a.get("per_method", []) if m["method"] == "lp"]
            pairs = rec.get("pairs") or next((s["pairs"] for s in rec.get("settings", []) if s["setting"] == setting), None)
            rows.append({"lease": lease, "model": rec["model"], "benchmark": rec["benchmark"], "pairs": pairs,
                         "setting": setting, "rows": a["rows"], "max_abs_diff": a["max_abs_diff"],
                         "lp_max_abs_diff": lp[0] if lp else None, "verdicts_changed": a["verdicts_changed"],
                         "nan_share": a.get("nan_share")})
    return sorted(rows, key=lambda r: (r["lease"], r["model"], r["benchmark"], setting_key(r["setting"])))


def machines(recs) -> list[tuple[str, dict]]:
    return [(lease, rec) for lease, path, rec in recs if path.name == "machine.json"]


def whole_runs(recs) -> list[tuple[str, dict]]:
    return [(lease, rec) for lease, _, rec in recs if rec.get("kind") == "whole-benchmark"]


# ---- a whole run's figures

def when(stamp: str) -> dt.datetime:
    return dt.datetime.fromisoformat(stamp)


def spans(run: dict) -> list[tuple[dt.datetime, dt.datetime]]:
    """Each process's (start, end): its own start where the record has one, else the run's launch."""
    out = []
    for p in run["processes"]:
        start = when(p.get("started") or run["launched"])
        out.append((start, start + dt.timedelta(seconds=p["seconds"])))
    return out


def wall_seconds(run: dict) -> float:
    """From the first process's start to the last one's end."""
    s = spans(run)
    return round((max(e for _, e in s) - min(b for b, _ in s)).total_seconds(), 1)


def per_process_mib(run: dict) -> float:
    """The GPU memory a process of the run held at the peak: the card's peak use shared by the processes."""
    return run["gpu_use"]["peak_used_mib"] / len(run["processes"])


# ---- making a whole run's record

PROCESS_LOG = re.compile(r"^== /tmp/full-(?P<name>.+)\.log$")
PROCESS_END = re.compile(r"units written: (?P<units>\d+), skipped \(already done\): \d+; (?P<pairs>\d+) pairs in "
                         r"(?P<seconds>[\d.]+) s")
GPU_SAMPLE = re.compile(r"^(?P<stamp>\d{4}/\d\d/\d\d [\d:.]+), (?P<util>\d+) %, (?P<mib>\d+) MiB$")


def parse_logs(text: str) -> tuple[list[dict], list[dict]]:
    """device.sh's logs.txt: each process's last line (name, units, pairs, seconds) and the GPU samples."""
    processes, samples, name = [], [], None
    for line in text.splitlines():
        if m := PROCESS_LOG.match(line):
            name = m["name"]
        elif (m := PROCESS_END.search(line)) and name:
            processes.append({"name": name, "units": int(m["units"]), "pairs": int(m["pairs"]),
                              "seconds": float(m["seconds"])})
            name = None
        elif m := GPU_SAMPLE.match(line):
            samples.append({"stamp": m["stamp"], "util": int(m["util"]), "mib": int(m["mib"])})
    return processes, samples


def gpu_use(samples: list[dict]) -> dict:
    stamps = [dt.datetime.strptime(s["stamp"], "%Y/%m/%d %H:%M:%S.%f") for s in samples]
    interval = round((stamps[-1] - stamps[0]).total_seconds() / max(1, len(stamps) - 1))
    return {"samples": len(samples), "busy_samples": sum(s["util"] > 0 for s in samples), "interval_s": interval,
            "peak_used_mib": max(s["mib"] for s in samples)}


def whole_record(logs: str, manifest: dict, lease_note: str = "") -> dict:
    """A whole-benchmark run's record: the processes from the logs, with each one's start from the manifest's
    process_runs where merge_full.py kept them, else the run's start (every process launched in one loop)."""
    processes, samples = parse_logs(logs)
    starts = {r["name"]: r["started"] for r in manifest.get("process_runs", [])
              if r.get("lease") == manifest.get("leases") and r.get("started")}
    for p in processes:
        if p["name"] in starts:
            p["started"] = starts[p["name"]]
    return {"kind": "whole-benchmark", "model": manifest["model"], "benchmark": manifest["benchmark"],
            "gpu": manifest.get("gpu"), "dtype": manifest.get("dtype"), "commit": manifest.get("versions", {}).get("commit"),
            "launched": manifest["started"], "note": lease_note, "processes": processes, "gpu_use": gpu_use(samples)}


# ---- the record's agreement files

def agreement_record(reference: Path, got: Path, model: str, bench: str) -> dict:
    import pandas as pd

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from agreement import summarize

    ref = pd.read_parquet(reference / f"{model}-{bench}-cpu-fp32.parquet")
    out = {"model": model, "benchmark": bench, "pairs": int(ref.pair.nunique()),
           "reference": f"{reference.name}/{model}-{bench}-cpu-fp32.parquet", "agreement": {}}
    for path in sorted(got.glob(f"{model}-{bench}-cuda-*.parquet"), key=lambda p: setting_key("cuda-" + p.stem.split("-cuda-")[1])):
        out["agreement"]["cuda-" + path.stem.split("-cuda-")[1]] = summarize(ref, pd.read_parquet(path))
    return out


def agreement_records(reference: Path, got: Path) -> dict[str, dict]:
    """file name -> record, one per model and benchmark with a reference."""
    out = {}
    for path in sorted(reference.glob("*-cpu-fp32.parquet")):
        model, bench = path.name[: -len("-cpu-fp32.parquet")].rsplit("-", 1)
        out[f"agreement-{model}-{bench}.json"] = agreement_record(reference, got, model, bench)
    return out


def dumps(record: dict) -> str:
    return json.dumps(record, indent=1) + "\n"


# ---- the tables

def num(v, digits: int = 0) -> str:
    if v is None:
        return "-"
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    return f"{v:,.{digits}f}"


def sci(v) -> str:
    if v is None:
        return "-"
    return "NaN" if isinstance(v, float) and math.isnan(v) else f"{v:.2g}" if v >= 0.1 else f"{v:.1e}"


def pct(v) -> str:
    return "-" if v is None else f"{100 * v:.0f} %"


def what(r: dict) -> str:
    return f"{r['model']}, {r['pairs']} {BENCH_LABEL.get(r['benchmark'], r['benchmark'])}"


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def machine_table(recs) -> str:
    rows = [[lease, m.get("gpu", "-"), num(m.get("gpu_memory_gib"), 1), m.get("capability", "-"), m.get("driver") or "-",
             m["python"], m["torch"], m.get("cuda") or "-", m.get("transformers") or "-", str(m.get("cpu_count"))]
            for lease, m in machines(recs)]
    return table(["lease", "GPU", "GiB", "capability", "driver", "Python", "torch", "CUDA", "transformers", "CPU cores"], rows)


def agreement_table(recs) -> str:
    rows = [[r["lease"], what(r), r["setting"], num(r["rows"]), sci(r["max_abs_diff"]), sci(r["lp_max_abs_diff"]),
             num(r["verdicts_changed"]), pct(r["nan_share"])] for r in agreement_rows(recs)]
    return table(["lease", "model, pairs", "setting", "rows", "largest difference", "LP's largest (nats)",
                  "verdicts changed", "scores not a number"], rows)


def speed_table(recs) -> str:
    rows = [[r["lease"], what(r), r["setting"] + (" (" + r["gpu"] + ")" if r.get("gpu") else ""),
             num(r["lp_pairs_per_s"]), num(r["full_pairs_per_s"], 1),
             f"{r['probe_cold_s']:.2f} / {r['probe_warm_median_s']:.3f} / {r['probe_warm_p90_s']:.3f}",
             num(r["peak_gpu_mb"]), f"{r['batch_size']:,} / {r['head_rows']:,}", num(r["load_s"], 1)]
            for r in speed_rows(recs) if r["device"] == "cuda"]
    return table(["lease", "model, pairs", "setting", "LP pairs/s", "every method, pairs/s",
                  "probe cold / warm median / p90, s", "peak GPU MB", "pass strings / projection rows", "load s"], rows)


def beside_table(recs) -> str:
    speeds = speed_rows(recs)
    rows = []
    for cpu_lease, gpu_lease in BESIDE:
        for c in [r for r in speeds if r["lease"] == cpu_lease and r["setting"] == "cpu-fp32"]:
            same = [r for r in speeds if r["lease"] == gpu_lease and r["setting"] == "cuda-fp32"
                    and (r["model"], r["benchmark"], r["pairs"]) == (c["model"], c["benchmark"], c["pairs"])]
            for g in same:
                for label, key, digits in (("LP alone, pairs/s", "lp_pairs_per_s", 1),
                                           ("every method, pairs/s", "full_pairs_per_s", 2)):
                    rows.append([what(c), label, num(c[key], digits), num(g[key], digits), f"{g[key] / c[key]:.0f}x"])
                for label, key in (("probe cold, s", "probe_cold_s"), ("probe warm median, s", "probe_warm_median_s"),
                                   ("probe warm p90, s", "probe_warm_p90_s")):
                    rows.append([what(c), label, f"{c[key]:.3g}", f"{g[key]:.3g}", f"{c[key] / g[key]:.1f}x"])
                rows.append([what(c), "pass strings / projection rows", f"{c['batch_size']:,} / {c['head_rows']:,}",
                             f"{g['batch_size']:,} / {g['head_rows']:,}", ""])
    return table(["model, pairs (fp32)", "what", "CPU (" + ", ".join(c for c, _ in BESIDE) + ")",
                  "GPU (" + ", ".join(g for _, g in BESIDE) + ")", "GPU / CPU"], rows)


def app_table(recs) -> str:
    """The app on each device: app_probe.py's records, with app_compare.py's agreement where a lease has one."""
    compares = {lease: rec for lease, path, rec in recs if path.name == "app-compare.json"}
    rows = []
    for lease, path, r in recs:
        if not path.name.startswith("app-probe-"):
            continue
        on, gpu, cmp = r["ran_on"], r.get("gpu_memory"), compares.get(lease)
        against = cmp if cmp and on["device"] != "cpu" else None
        rows.append([lease, r["model"], on["text"], num(on.get("batch_size")), str(r["methods_answered"]),
                     num(r["app_up_s"], 1), f"{r['probe_cold_s']:.2f}", f"{r['probe_warm_median_s']:.3f}",
                     num(gpu["app_peak_mib"]) if gpu else "-",
                     sci(against["largest_difference"]) if against else "-",
                     num(len(against["verdicts_changed"])) if against else "-"])
    return table(["lease", "model", "ran on", "pass strings", "scores", "app up, s", "probe cold, s",
                  "probe warm median, s", "GPU MiB at the peak", "largest difference from the CPU", "verdicts changed"], rows)


def host_table(recs) -> str:
    """bench/host_cost.py's figures: milliseconds a pair, LP alone and every method."""
    rows = []
    for lease, path, r in recs:
        if not (path.name.startswith("host-") and "lp_host_ms" in r):
            continue
        for kind, label in (("lp", "LP alone"), ("all", "every method")):
            if f"{kind}_wall_ms" in r:
                rows.append([lease, f"{r['model']}, {r['pairs']} BLiMP", f"{r['device']} {r['dtype']}", label,
                             num(1000 / r[f"{kind}_wall_ms"], 1), f"{r[f'{kind}_wall_ms']:.2f}",
                             f"{r[f'{kind}_forward_ms']:.2f}", f"{r[f'{kind}_projection_ms']:.2f}",
                             f"{r[f'{kind}_host_ms']:.2f}", r["commit"]])
    return table(["lease", "model, pairs", "device, dtype", "methods", "pairs/s", "wall ms a pair", "decoder ms",
                  "projection ms", "host ms", "commit"], rows)


def whole_table(recs) -> str:
    rows = []
    for lease, run in whole_runs(recs):
        s = spans(run)
        secs = [p["seconds"] for p in run["processes"]]
        rates = [p["pairs"] / p["seconds"] for p in run["processes"]]
        pairs = sum(p["pairs"] for p in run["processes"])
        use = run["gpu_use"]
        rows.append([lease, f"{run['model']}, {BENCH_LABEL.get(run['benchmark'], run['benchmark'])}", run.get("gpu") or "-",
                     str(len(run["processes"])), num(pairs), num(wall_seconds(run), 1),
                     f"{min(b for b, _ in s):%H:%M:%S} to {max(e for _, e in s):%H:%M:%S} UTC",
                     f"{min(secs):.1f}-{max(secs):.1f}", num(sum(secs)), f"{min(rates):.1f}-{max(rates):.1f}",
                     num(pairs / wall_seconds(run), 1), f"{use['busy_samples']} of {use['samples']} ({use['interval_s']} s)",
                     num(use["peak_used_mib"]), num(per_process_mib(run))])
    return table(["lease", "model, benchmark", "GPU", "processes", "pairs", "wall s (first start to last end)", "span",
                  "process s", "process s, sum", "pairs/s a process", "pairs/s together", "GPU busy samples",
                  "peak GPU MiB", "MiB a process at the peak"], rows)


TABLES = {"machines": machine_table, "agreement": agreement_table, "speed": speed_table, "beside": beside_table,
          "whole": whole_table, "app": app_table, "host": host_table}
BLOCK = re.compile(r"(<!-- table (?P<name>\w+) -->\n)(?:.*?\n)??(<!-- /table -->)", re.S)


def render(text: str, recs) -> str:
    """The record's text with every table block made anew from the records."""
    return BLOCK.sub(lambda m: m.group(1) + TABLES[m["name"]](recs) + "\n" + m.group(3), text)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", nargs="?", default="tables", choices=["tables", "agreement", "whole"])
    ap.add_argument("--check", action="store_true", help="tables: exit 1 if the record's tables are not what the records make")
    ap.add_argument("--record", default=str(RECORD))
    ap.add_argument("--reference")
    ap.add_argument("--got")
    ap.add_argument("--logs")
    ap.add_argument("--manifest")
    ap.add_argument("--note", default="")
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.what == "agreement":
        for name, rec in agreement_records(Path(args.reference), Path(args.got)).items():
            (Path(args.out) / name).write_text(dumps(rec), encoding="utf-8")
            print("wrote", Path(args.out) / name)
        return 0
    if args.what == "whole":
        manifest = json.loads(Path(args.manifest).read_text(encoding="utf-8"))
        rec = whole_record(Path(args.logs).read_text(encoding="utf-8"), manifest, args.note)
        Path(args.out).write_text(dumps(rec), encoding="utf-8")
        print(f"wrote {args.out}: wall {wall_seconds(rec)} s")
        return 0
    path = Path(args.record)
    text = path.read_text(encoding="utf-8")
    new = render(text, records())
    if args.check:
        if new != text:
            print(f"{path}: its tables are not what the records make now; run python scripts/gpu/record.py")
            return 1
        return 0
    path.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
