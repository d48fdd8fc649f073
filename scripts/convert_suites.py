"""Build assets/suites/ from Hu et al. (2020)'s repository, cpllab/syntactic-generalization.

Run by hand, never by the app (the app reads only assets/suites/):

    python scripts/convert_suites.py /path/to/syntactic-generalization [--out assets/suites]

The path is a checkout or a bare git directory (read at HEAD with `git show`). Writes:

- json/<suite>.json.gz: the 34 suites of test_suites/json, the published bytes gzipped
  (mtime 0, so the files are the same on every run);
- circuits.json: suite -> circuit, from the paper's own mapping (notebooks/main.py: a suite's
  tag, its name up to the first '-', '_' or digit, maps to one of six circuits), and whether the
  paper's figures include the suite (the notebook drops fgd-embed3, fgd-embed4 and nn-nv-rpl);
- published.json: per model (model name, training corpus, seed) and suite, the items the model
  got right and the items, from data/raw/sg_results/*.csv (one outcome per item, the suite's
  predictions already combined); the n-gram models' seeds, which differ only in tie-breaking,
  are merged by majority vote as the notebook does (an item is right when more than half of the
  seeds got it right). A file the git object store lacks (the repository's random baseline is
  stored as a pointer) is listed under "missing".

Every suite is read with accapp.suites.suite.read_suite, so a suite that does not load fails here.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script from anywhere: import accapp from this checkout

REPO = "cpllab/syntactic-generalization"
# notebooks/main.py: "Map from test suite tag to high-level circuit", in the paper's order
CIRCUITS = {
    "Licensing": ["npi", "reflexive"],
    "Long-Distance Dependencies": ["fgd", "cleft"],
    "Agreement": ["number"],
    "Garden-Path Effects": ["npz", "mvrr"],
    "Gross Syntactic State": ["subordination"],
    "Center Embedding": ["center"],
}
EXCLUDED = re.compile(r"^fgd-embed[34]|^gardenpath|^nn-nv")  # notebooks/main.py's exclude_suite_re
NGRAM_MODELS = {"1gram", "ngram", "ngram-single"}  # notebooks/main.py's ngram_models: seeds merged by vote
PRETTY = {  # notebooks/main.py's PRETTY_COLUMN_MAPS; "*" marks the off-the-shelf (pretrained) models
    "vanilla": "LSTM", "ordered-neurons": "ON-LSTM", "rnng": "RNNG", "ngram": "n-gram", "random": "Random",
    "gpt-2-pretrained": "GPT-2*", "gpt-2-xl-pretrained": "GPT-2-XL*", "gpt-2": "GPT-2",
    "transformer-xl": "Transformer-XL*", "grnn": "GRNN*", "jrnn": "JRNN*",
}


class Source:
    """A checkout or a bare git directory, read at HEAD."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.worktree = (path / "test_suites").is_dir()
        git = ["git", "-C", str(path)] if self.worktree else ["git", f"--git-dir={path}"]
        self.git = git
        self.commit = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()

    def ls(self, folder: str) -> list[str]:
        out = subprocess.run(self.git + ["ls-tree", "--name-only", "HEAD", folder + "/"], capture_output=True,
                             text=True, check=True).stdout.split()
        return sorted(out)

    def read(self, name: str) -> bytes | None:
        if self.worktree:
            return (self.path / name).read_bytes()
        done = subprocess.run(self.git + ["show", f"HEAD:{name}"], capture_output=True)
        return done.stdout if done.returncode == 0 else None


def tag_of(suite: str) -> str:
    return re.split(r"[-_0-9]", suite)[0]  # notebooks/main.py's tag rule


def circuit_of(suite: str) -> str | None:
    tag = tag_of(suite)
    return next((c for c, tags in CIRCUITS.items() if tag in tags), None)


def convert_suites(src: Source, out: Path) -> list[str]:
    from accapp.suites.suite import read_suite

    folder = out / "json"
    folder.mkdir(parents=True, exist_ok=True)
    ids = []
    for name in src.ls("test_suites/json"):
        raw = src.read(name)
        suite_id = Path(name).name[: -len(".json")]
        read_suite(raw.decode("utf-8"), name=suite_id)  # every shipped suite must load
        buf = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as f:
            f.write(raw)
        (folder / f"{suite_id}.json.gz").write_bytes(buf.getvalue())
        ids.append(suite_id)
    return ids


def write_circuits(src: Source, ids: list[str], out: Path) -> None:
    data = {
        "source": f"Hu et al. 2020, {REPO} notebooks/main.py (circuits, exclude_suite_re) at commit {src.commit}",
        "circuits": list(CIRCUITS),
        "suites": {s: {"circuit": circuit_of(s), "tag": tag_of(s), "in_paper_figures": not EXCLUDED.search(s)}
                   for s in ids},
    }
    (out / "circuits.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def split_model(model: str) -> tuple[str, str, str]:
    """'gpt-2_bllip-lg-gptbpe_1581807512' -> (model name, corpus, seed), as the notebook splits it."""
    parts = model.split("_")
    name, corpus = parts[0], parts[1] if len(parts) > 1 else ""
    seed = parts[2] if len(parts) > 2 and parts[2] else "0"
    return name, corpus, seed


def published(src: Source, ids: list[str]) -> dict:
    # (name, corpus, seed) -> suite -> item -> correct
    outcomes: dict = defaultdict(lambda: defaultdict(dict))
    files, missing = [], []
    for name in src.ls("data/raw/sg_results"):
        raw = src.read(name)
        if raw is None or not raw.startswith(b"model,"):
            missing.append(name)
            continue
        files.append(name)
        for row in csv.DictReader(io.StringIO(raw.decode("utf-8"))):
            key = split_model(row["model"])
            outcomes[key][row["suite"]][int(row["item"])] = row["correct"] == "True"
    merged: dict = {}
    votes: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for (name, corpus, seed), suites in outcomes.items():
        if name in NGRAM_MODELS:
            for suite, items in suites.items():
                for item, ok in items.items():
                    votes[(name, corpus)][suite][item].append(ok)
        else:
            merged[(name, corpus, seed)] = suites
    for (name, corpus), suites in votes.items():
        merged[(name, corpus, "vote")] = {s: {i: sum(v) / len(v) > 0.5 for i, v in items.items()}
                                          for s, items in suites.items()}
    models, accuracy = {}, {}
    for name, corpus, seed in sorted(merged):
        key = f"{name}_{corpus}_{seed}"
        label = PRETTY.get(name, name) + (f" ({corpus.upper()})" if corpus else "")
        models[key] = {"model": name, "corpus": corpus, "seed": seed, "label": label,
                       "pretrained": name.endswith("-pretrained") or name in ("transformer-xl", "grnn", "jrnn")}
        accuracy[key] = {s: [sum(items.values()), len(items)] for s, items in sorted(merged[(name, corpus, seed)].items())
                         if s in ids}
    return {
        "source": f"Hu et al. 2020, {REPO} data/raw/sg_results/*.csv at commit {src.commit}",
        "rule": "per suite: items right / items (each item's outcome as published, the suite's predictions "
                "combined); n-gram seeds merged by majority vote (seed 'vote'), as notebooks/main.py does",
        "files": files,
        "missing": missing,
        "models": models,
        "accuracy": accuracy,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("repo", type=Path, help="cpllab/syntactic-generalization: a checkout or a bare git directory")
    ap.add_argument("--out", type=Path, default=ROOT / "assets" / "suites")
    args = ap.parse_args(argv)
    src = Source(args.repo)
    args.out.mkdir(parents=True, exist_ok=True)
    ids = convert_suites(src, args.out)
    write_circuits(src, ids, args.out)
    pub = published(src, ids)
    (args.out / "published.json").write_text(json.dumps(pub, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"{len(ids)} suites, {len(pub['models'])} published models ({len(pub['missing'])} files missing) "
          f"from {REPO}@{src.commit[:12]} -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
