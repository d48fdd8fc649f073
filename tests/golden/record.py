"""Record the golden scores: every method's scores and every token's log-prob on the golden
pairs, for both embedded models and two tiny masked LMs (run from the project root:
`python tests/golden/record.py [KEY ...]`). The numbers in scores.json were recorded on main
at dd0bdfd, before the one-engine redesign, with this script as it was then (git log shows
it); tests/test_golden.py checks that they never change. Re-record only on purpose.
Reads ../shared/data/blimp (through tests/masked_fixtures.py) to train the tiny tokenizers.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE.parent))

import pandas as pd  # noqa: E402

PAIRS_FILE = HERE / "pairs.json"
SCORES_FILE = HERE / "scores.json"
# (benchmark, paradigm, pair_id): a spread of phenomena, lengths and languages.
CHOSEN = [
    ("blimp", "regular_plural_subject_verb_agreement_1", "0"),
    ("blimp", "adjunct_island", "0"),
    ("blimp", "principle_A_c_command", "231"),
    ("blimp", "npi_present_1", "3"),
    ("blimp", "determiner_noun_agreement_with_adj_irregular_1", "5"),
    ("blimp", "wh_questions_subject_gap_long_distance", "7"),
    ("blimp", "existential_there_quantifiers_1", "11"),
    ("blimp", "causative", "2"),
    ("climp", "anaphor_agreement_gender", "0"),
    ("climp", "classifier", "4"),
    ("climp", "ba_construction", "1"),
]
EXTRA = [{"benchmark": "constructed", "paradigm": "-", "pair_id": "casseroles",
          "good": "These casseroles disgust Kayla.", "bad": "These casseroles disgusts Kayla."}]


def golden_pairs() -> list[dict]:
    if PAIRS_FILE.exists():
        return json.loads(PAIRS_FILE.read_text(encoding="utf-8"))
    out = list(EXTRA)
    for bench, paradigm, pid in CHOSEN:
        df = pd.read_parquet(HERE.parents[1] / "assets" / "benchmarks" / f"{bench}.parquet")
        row = df[(df.paradigm == paradigm) & (df.pair_id == pid)].iloc[0]
        out.append({"benchmark": bench, "paradigm": paradigm, "pair_id": pid, "good": row.good, "bad": row.bad})
    PAIRS_FILE.write_text(json.dumps(out, ensure_ascii=False, indent=1), encoding="utf-8")
    return out


def tiny_masked(name: str):
    """(model, tokenizer) of a tiny masked LM; the tokenizer is kept in tests/golden/ because
    WordPiece training is not the same in every process (Python's hash seed)."""
    import masked_fixtures as mf
    from transformers import PreTrainedTokenizerFast

    folder = HERE / f"{name}-tokenizer"
    if folder.exists():
        tok = PreTrainedTokenizerFast.from_pretrained(folder)
    else:
        tok = mf.wordpiece_tokenizer() if name == "tiny-bert" else mf.bytelevel_tokenizer()
        tok.save_pretrained(folder)
    model = mf.tiny_bert(tok) if name == "tiny-bert" else mf.tiny_roberta(tok)
    return model, tok


def runs():
    """(name, language, which pairs): one score_pairs call each."""
    return [
        ("smollm2-135m-instruct", "en"),
        ("gemma3-270m", "en"),
        ("gemma3-270m", "zh"),
        ("tiny-bert", "en"),
        ("tiny-roberta", "en"),
    ]


def pairs_of(language: str) -> list[dict]:
    return [p for p in golden_pairs() if (p["benchmark"] == "climp") == (language == "zh")]


def record() -> dict:
    from accapp.engine import Engine, make_scorer
    from accapp.models.loading import load_model
    from accapp.scoring.api import Pair
    from accapp.scoring.masked import MaskedScorer

    only = sys.argv[1:]  # keys to (re)record; the others are kept
    out = json.loads(SCORES_FILE.read_text(encoding="utf-8")) if SCORES_FILE.exists() else {}
    for name, lang in runs():
        if only and f"{name}|{lang}" not in only:
            continue
        if name.startswith("tiny-"):
            engine = Engine(MaskedScorer(*tiny_masked(name)))
        else:
            engine = Engine(make_scorer(load_model(name)))
        methods = None
        pairs = [Pair(p["good"], p["bad"]) for p in pairs_of(lang)]
        results = engine.score_pairs(pairs, methods, lang)
        out[f"{name}|{lang}"] = [
            {"good": r.pair.good, "bad": r.pair.bad,
             "rows": [{k: row[k] for k in ("method", "template", "variant", "score_good", "score_bad", "verdict", "prediction")}
                      for row in r.rows],
             "tokens": r.tokens}
            for r in results
        ]
    return out


if __name__ == "__main__":
    golden_pairs()
    SCORES_FILE.write_text(json.dumps(record(), ensure_ascii=False, indent=0), encoding="utf-8")
    print(f"wrote {SCORES_FILE}")
