"""On the GPU machine: take one carried chunk of the payload (scripts/gpu/payload.py) into
/tmp/stage, and take out each payload file that is now whole, checking the SHA-256 of the chunk
and of every file; install the wheels that are whole into /tmp/site (PYTHONPATH) once each.

    python3 scripts/gpu/stage.py .gpu/cK     # K = 1, 2, ... in order; a chunk staged already is skipped

Prints what is staged and what is still missing. Exit 3 when a chunk comes out of order (the
machine was given back and a fresh one started: begin again at c1).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

STAGE = Path(os.environ.get("GPU_STAGE", "/tmp/stage"))  # the env: a dry run on the CPU machine
SITE = Path(os.environ.get("GPU_SITE", "/tmp/site"))


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def main() -> None:
    chunk_dir = Path(sys.argv[1])
    manifest = json.loads((chunk_dir / "payload.json").read_text())
    index = int(chunk_dir.name[1:])
    STAGE.mkdir(parents=True, exist_ok=True)
    done_file = STAGE / "chunks.json"
    done = json.loads(done_file.read_text()) if done_file.exists() else []
    blob = STAGE / "payload.bin"
    if index in done:
        print(f"c{index} staged already")
    elif index != len(done) + 1:
        print(f"c{index} out of order: staged so far {done} (a fresh machine? start again at c1)")
        raise SystemExit(3)
    else:
        data = (chunk_dir / "part").read_bytes()
        want = manifest["chunks"][index - 1]["sha256"]
        got = sha256_bytes(data)
        if got != want:
            raise SystemExit(f"c{index}: SHA-256 {got} != {want}")
        with open(blob, "ab") as f:
            f.write(data)
        done.append(index)
        done_file.write_text(json.dumps(done))
        print(f"c{index}: {len(data) / 1e6:.1f} MB, SHA-256 ok")
    have = blob.stat().st_size if blob.exists() else 0
    wheels = []
    with open(blob, "rb") as f:
        for e in manifest["files"]:
            target = STAGE / e["name"]
            if e["offset"] + e["size"] > have:
                print(f"  missing  {e['name']}")
                continue
            if not target.exists():
                f.seek(e["offset"])
                data = f.read(e["size"])
                if sha256_bytes(data) != e["sha256"]:
                    raise SystemExit(f"{e['name']}: SHA-256 mismatch")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
                print(f"  whole    {e['name']} ({e['size'] / 1e6:.1f} MB, SHA-256 ok)")
            if target.suffix == ".whl":
                wheels.append(target)
    installed_file = STAGE / "installed.json"
    installed = set(json.loads(installed_file.read_text())) if installed_file.exists() else set()
    new = [w for w in wheels if w.name not in installed]
    if new:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                        "--no-cache-dir", "--upgrade", "--target", str(SITE), *map(str, new)], check=True)
        installed |= {w.name for w in new}
        installed_file.write_text(json.dumps(sorted(installed)))
        print("  installed", ", ".join(w.name for w in new))
    print(f"staged {have / 1e6:.1f} of {manifest['total'] / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
