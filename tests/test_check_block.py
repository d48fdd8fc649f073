"""scripts/gpu/check_block.py: the block it rescores is the runner's block, and its comparison counts the
rows two scorings disagree on (fast: no model); its scoring writes where the runbook says (slow: the tiny model)."""

import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts" / "gpu"))
import check_block  # noqa: E402 - the GPU scripts are not a package

from accapp.benchmarks import load_benchmark  # noqa: E402
from accapp.runner.runner import plan_blocks  # noqa: E402


def test_the_block_is_the_runners(tmp_path):
    df = load_benchmark("climp")
    df = df[df.paradigm == "classifier_clause"]
    blocks, _ = plan_blocks(df, tmp_path, "gemma3-270m", "climp", {"lp": ["-"]}, 256)
    items = check_block.block_items("climp", "classifier_clause", 2, 256)
    assert [tuple(i[:5]) for i in blocks[2].items] == items
    assert len(items) == 250 and items[0][1] in ("500", 500) and items[-1][1] in ("749", 749)


def test_compare_counts_the_rows_apart(tmp_path):
    rows = pd.DataFrame({"paradigm": ["p"] * 3, "pair_id": ["1", "2", "3"], "method": ["lp", "ab_prompting", "lp"],
                         "template": ["-", "1", "-"], "variant": ["", "good=A", ""],
                         "score_good": [-1.0, -0.5, -2.0], "score_bad": [-2.0, -1.5, -3.0]})
    other = rows.copy()
    other.loc[1, "score_bad"] = -1.0  # 0.5 apart
    other.loc[2, "score_good"] = -2.0004  # within 1e-3
    rows.to_parquet(tmp_path / "a.parquet")
    other.to_parquet(tmp_path / "b.parquet")
    got = check_block.compare(tmp_path / "a.parquet", tmp_path / "b.parquet")
    assert got["rows"] == 3 and got["differ"] == 1 and got["by_method"] == {"ab_prompting/1": 1}
    assert abs(got["largest"] - 0.5) < 1e-12 and got["pairs"] == ["2"]


@pytest.mark.slow
def test_score_makes_its_output_folder_and_writes_the_blocks_rows(tmp_path, monkeypatch):
    """The runbook's reference command on a fresh machine: --out in a folder not yet made (.gpu/check/) is made
    before the scoring, not found missing after it. The tiny Llama (a folder), two pairs, LP and MeanLP."""
    from tests import any_models

    model = any_models.llama_folder(tmp_path)
    out = tmp_path / "not" / "yet" / "made.parquet"
    monkeypatch.setattr(sys, "argv", ["check_block.py", "score", "--model", str(model), "--benchmark", "climp",
                                      "--paradigm", "classifier_clause", "--block", "1", "--block-size", "2",
                                      "--methods", "lp,mean_lp", "--out", str(out)])
    check_block.main()
    rows = pd.read_parquet(out)
    assert len(rows) == 4 and set(rows.method) == {"lp", "mean_lp"} and set(rows.pair_id) == {"2", "3"}
