"""scripts/gpu/check_block.py: the block it rescores is the runner's block, and its comparison counts the
rows two scorings disagree on. Fast: no model."""

import sys
from pathlib import Path

import pandas as pd

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
