"""On the GPU machine: take one carried chunk of the payload (scripts/gpu/payload.py) into
/tmp/stage, and take out each payload file that is now whole, checking the SHA-256 of the chunk
and of every file; install the wheels that are whole into /tmp/site (PYTHONPATH) once each.

    python3 scripts/gpu/stage.py .gpu/cK     # K = 1, 2, ... in order; a chunk staged already is skipped

Prints what is staged and what is still missing. Exit 3 when a chunk comes out of order (the
machine was given back and a fresh one started: begin again at c1). Exit 4, before anything is
staged, when a wheel of the payload was built for another Python than this machine's (its tags,
against sys.version_info): make the payload again for this Python (payload.py --python).
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


def wheel_pythons(name: str) -> list[tuple[str, str]]:
    """(python tag, abi tag) pairs of a wheel's file name: name-version[-build]-python-abi-platform.whl,
    each tag possibly compressed ('cp311.cp312')."""
    parts = Path(name).name[: -len(".whl")].split("-")
    if len(parts) < 5:
        return []
    python, abi = parts[-3], parts[-2]
    return [(p, a) for p in python.split(".") for a in abi.split(".")]


def runs_on(python: str, abi: str, version: tuple[int, int]) -> bool:
    """Whether one tag pair installs on CPython `version`: py3/py2.py3 anywhere, cpXY exactly, cpXY with
    abi3 on XY and later."""
    if python.startswith("py"):
        return python in (f"py{version[0]}", f"py{version[0]}{version[1]}")
    if not python.startswith("cp") or not python[2:].isdigit():
        return False
    want = (int(python[2]), int(python[3:]))
    return want <= version if abi == "abi3" else want == version


def python_mismatches(names: list[str], version: tuple[int, int]) -> list[str]:
    """The wheels (by file name) that no tag of theirs lets install on CPython `version`."""
    return [n for n in names if n.endswith(".whl") and not any(runs_on(p, a, version) for p, a in wheel_pythons(n))]


def check_python(manifest: dict, version: tuple[int, int] = tuple(sys.version_info[:2])) -> None:
    bad = python_mismatches([e["name"] for e in manifest["files"]], version)
    if bad:
        print(f"this machine runs Python {version[0]}.{version[1]}, but these wheels of the payload are for another: "
              + ", ".join(Path(n).name for n in bad)
              + f". Make the payload again here with payload.py --python {version[0]}.{version[1]}; nothing was staged.")
        raise SystemExit(4)


def main() -> None:
    chunk_dir = Path(sys.argv[1])
    manifest = json.loads((chunk_dir / "payload.json").read_text())
    check_python(manifest)
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
