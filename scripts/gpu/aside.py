"""Set the shipped results aside for a GPU lease, and put them back, checked.

    python scripts/gpu/aside.py out     # precomputed/results/*.parquet -> .gpu/aside/ (ignored), with their SHA-256
    python scripts/gpu/aside.py back    # back in place, each file's SHA-256 checked against what was set aside

The device tool sends the session's own checkout (tracked and untracked files), 64 MiB a call with
the chunk it carries; the results files are most of the tree, so a lease's calls run without them.
Nothing may be committed while they are aside: check_results_present.py (CI's test and the pre-commit
hook) refuses it. `back` refuses a file whose SHA-256 changed.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from payload import sha256  # the GPU scripts' one file hash (scripts/gpu is on the path: run as a script)

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "precomputed" / "results"
ASIDE = ROOT / ".gpu" / "aside"  # .gpu/ is ignored by git
LEDGER = "aside.json"




def out(results: Path = RESULTS, aside: Path = ASIDE) -> dict[str, str]:
    aside.mkdir(parents=True, exist_ok=True)
    ledger = aside / LEDGER
    moved = json.loads(ledger.read_text(encoding="utf-8")) if ledger.exists() else {}
    for f in sorted(results.glob("*.parquet")):
        moved[f.name] = sha256(f)
        ledger.write_text(json.dumps(moved, indent=1), encoding="utf-8")
        shutil.move(f, aside / f.name)
    return moved


def back(results: Path = RESULTS, aside: Path = ASIDE) -> list[str]:
    ledger = aside / LEDGER
    moved = json.loads(ledger.read_text(encoding="utf-8")) if ledger.exists() else {}
    for name, digest in moved.items():
        if sha256(aside / name) != digest:
            raise SystemExit(f"{aside / name}: SHA-256 changed while aside; not put back")
    for name in moved:
        shutil.move(aside / name, results / name)
    ledger.unlink(missing_ok=True)
    return sorted(moved)


def main() -> int:
    if sys.argv[1:] == ["out"]:
        print(f"aside: {len(out())} files in {ASIDE}; put them back with: python scripts/gpu/aside.py back")
    elif sys.argv[1:] == ["back"]:
        print(f"back: {', '.join(back()) or 'nothing was aside'}")
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
