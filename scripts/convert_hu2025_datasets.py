"""Convert the datasets of Hu et al. 2025 (beside BLiMP, CLiMP and LI) into the files the app ships.

Run by hand (the app never does), each argument the git directory of a public release, as the
project's mirror keeps them (a bare repository is read with `git show`, no work tree needed):

  python scripts/convert_hu2025_datasets.py \
      --zhoblimp  /work/.mirror/sjtu-compling+ZhoBLiMP/repo \
      --sling     /work/.mirror/Yixiao-Song+SLING_Data_Code/repo \
      --syntaxgym /work/.mirror/jennhu+metalinguistic-prompting/repo \
      --cola      /work/.mirror/nyu-mll+CoLA-baselines/repo/.git \
      --scamp     /work/.mirror/tommccoy1+inductive-bias-distillation/repo

Writes assets/benchmarks/<id>.parquet (zstd): pairs as benchmark, paradigm, phenomenon, pair_id,
good, bad; CoLA's labelled sentences as benchmark, paradigm, phenomenon, sentence_id, sentence,
label. Prints each file's counts and the commit it was read from; docs/datasets.md records them.
Any argument left out skips that dataset.
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import tarfile
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "assets" / "benchmarks"
PAIR_COLUMNS = ["benchmark", "paradigm", "phenomenon", "pair_id", "good", "bad"]
SENTENCE_COLUMNS = ["benchmark", "paradigm", "phenomenon", "sentence_id", "sentence", "label"]


class Repo:
    """A git directory read at one commit (HEAD unless told)."""

    def __init__(self, git_dir: str, commit: str = "HEAD") -> None:
        self.git_dir = str(git_dir)
        self.commit = self._git("rev-parse", commit).decode().strip()

    def _git(self, *args: str) -> bytes:
        return subprocess.run(["git", "--git-dir", self.git_dir, *args], check=True, capture_output=True).stdout

    def files(self, under: str) -> list[str]:
        return sorted(self._git("ls-tree", "-r", "--name-only", self.commit, under).decode().splitlines())

    def read(self, path: str) -> bytes:
        return self._git("show", f"{self.commit}:{path}")


def zhoblimp(repo: Repo) -> pd.DataFrame:
    """ZhoBLiMP's release archive (data/ZhoBLiMP.tar.gz): one JSONL per paradigm, its own UID,
    phenomenon and pairID; the archive of excluded paradigms is left out, as the authors do."""
    rows = []
    with tarfile.open(fileobj=io.BytesIO(repo.read("data/ZhoBLiMP.tar.gz")), mode="r:gz") as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            if not member.name.endswith(".jsonl"):
                continue
            for line in tar.extractfile(member).read().decode("utf-8").splitlines():
                if line.strip():
                    d = json.loads(line)
                    rows.append(("zhoblimp", d["UID"], d["phenomenon"], str(d["pairID"]),
                                 d["sentence_good"], d["sentence_bad"]))
    return pd.DataFrame(rows, columns=PAIR_COLUMNS)


def _snake(name: str) -> str:
    out = "".join("_" + c.lower() if c.isupper() else c for c in name).replace("-", "_")
    return out.lstrip("_").replace("__", "_")


SLING_LATER = ("SLING_Data/Anaphor/reflexive_auto/", "SLING_Data/Anaphor/reflexive_natural/")


def sling(repo: Repo) -> pd.DataFrame:
    """SLING's JSONL paradigms as published with the paper (2022): the reflexive ziji sets added in
    2024 (Yang 2025) are left out, and so are the pairs whose two sentences are the same string
    (no contrast to score); what remains is the count of Hu et al.'s Table 1a. paradigm: the file's
    name (the twelve files under Anaphor/Plural all say "Plural" in their records)."""
    rows = []
    for path in repo.files("SLING_Data"):
        if not path.endswith(".jsonl") or path.startswith(SLING_LATER):
            continue
        for line in repo.read(path).decode("utf-8").splitlines():
            if line.strip():
                d = json.loads(line)
                if d["sentence_good"] != d["sentence_bad"]:
                    rows.append(("sling", Path(path).stem, _snake(d["phenomenon"]), str(d["pair_ID"]),
                                 d["sentence_good"], d["sentence_bad"]))
    return pd.DataFrame(rows, columns=PAIR_COLUMNS)


# Hu et al. 2020's circuits (their Table 2), which the suites of the sentence-scoring subset belong to.
SYNTAXGYM_CIRCUITS = {
    "number": "agreement", "reflexive": "licensing", "center_embed": "center_embedding",
    "subordination": "gross_syntactic_state", "cleft": "long_distance_dependencies",
    "fgd": "long_distance_dependencies",
}


def syntaxgym(repo: Repo) -> pd.DataFrame:
    """The sentence-scoring subset of SyntaxGym (Hu & Levy 2023's datasets/exp3/syntaxgym/full_corpus.csv):
    each suite's item and one ordering of two of its conditions, good the one predicted likelier."""
    df = pd.read_csv(io.BytesIO(repo.read("datasets/exp3/syntaxgym/full_corpus.csv")), dtype=str)

    def circuit(suite: str) -> str:
        return next(c for prefix, c in SYNTAXGYM_CIRCUITS.items() if suite.startswith(prefix))

    return pd.DataFrame({
        "benchmark": "syntaxgym", "paradigm": df["suite"], "phenomenon": df["suite"].map(circuit),
        "pair_id": df["item_id"], "good": df["good_sentence"], "bad": df["bad_sentence"],
    })[PAIR_COLUMNS]


def cola(repo: Repo) -> pd.DataFrame:
    """CoLA's in-domain training set (raw, 8,551 labelled sentences; the public release's other files
    are its dev sets). paradigm: the source publication's code; label 1 acceptable, 0 not."""
    raw = repo.read("acceptability_corpus/cola_public/raw/in_domain_train.tsv").decode("utf-8")
    rows = []
    for i, line in enumerate(raw.splitlines()):
        if line.strip():
            source, label, _mark, sentence = line.split("\t")
            rows.append(("cola", source, "in_domain", str(i), sentence, int(label)))
    out = pd.DataFrame(rows, columns=SENTENCE_COLUMNS)
    out["label"] = out["label"].astype("int8")
    return out


# SCaMP's paradigms carry no phenomenon; this is the project's grouping, BLiMP's names where one fits.
SCAMP_PHENOMENA = (
    ("anaphor_", "anaphor_agreement"), ("center_embedding", "center_embedding"),
    ("determiner_noun", "determiner_noun_agreement"), ("ellipsis", "ellipsis"),
    ("principle_A", "binding"), ("recursion_", "recursion"), ("subj_", "subject_verb_agreement"),
    ("wh_questions", "filler_gap_dependency"), ("wh_vs_that", "filler_gap_dependency"),
    ("wh_island", "island_effects"), ("adjunct_island", "island_effects"),
    ("complex_np_island", "island_effects"), ("left_branch", "island_effects"),
    ("coordinate_structure", "island_effects"), ("transitive", "argument_structure"),
    ("intransitive", "argument_structure"), ("swapped_ditransitive", "argument_structure"),
    ("svo_vos", "word_order"), ("green_ideas", "word_order"), ("adv_order", "word_order"),
    ("pp_order", "word_order"),
)


def scamp_phenomenon(paradigm: str) -> str:
    if "npi" in paradigm:
        return "npi_licensing"
    return next(p for prefix, p in SCAMP_PHENOMENA if paradigm.startswith(prefix))


def scamp(repo: Repo, subset: str) -> pd.DataFrame:
    """One SCaMP subset (scamp/scamp_plausible or scamp/scamp_implausible): a TSV per paradigm, good
    then bad, 1,000 lines each. Sentences as released: lower case, punctuation split off by spaces."""
    rows = []
    name = f"scamp_{subset}"
    for path in repo.files(f"scamp/{name}"):
        paradigm = Path(path).stem.removesuffix("_implausible")
        for i, line in enumerate(l for l in repo.read(path).decode("utf-8").splitlines() if l.strip()):
            good, bad = line.split("\t")
            rows.append((name, paradigm, scamp_phenomenon(paradigm), str(i), good, bad))
    return pd.DataFrame(rows, columns=PAIR_COLUMNS)


def write(name: str, df: pd.DataFrame, repo: Repo, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    df.to_parquet(out / f"{name}.parquet", index=False, compression="zstd")
    print(f"{name}: {len(df)} rows, {df.paradigm.nunique()} paradigms, {df.phenomenon.nunique()} phenomena"
          f" (commit {repo.commit})")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for flag in ("zhoblimp", "sling", "syntaxgym", "cola", "scamp"):
        ap.add_argument(f"--{flag}", help="git directory of its public release")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    jobs = {"zhoblimp": [("zhoblimp", zhoblimp)], "sling": [("sling", sling)],
            "syntaxgym": [("syntaxgym", syntaxgym)], "cola": [("cola", cola)],
            "scamp": [("scamp_plausible", lambda r: scamp(r, "plausible")),
                      ("scamp_implausible", lambda r: scamp(r, "implausible"))]}
    for flag, outputs in jobs.items():
        git_dir = getattr(args, flag)
        if git_dir:
            repo = Repo(git_dir)
            for name, convert in outputs:
                write(name, convert(repo), repo, args.out)


if __name__ == "__main__":
    main()
