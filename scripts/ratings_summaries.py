"""Ship the built-in rated sets' summaries (precomputed/ratings/<model>__<set>_summary.parquet), so that
the Human ratings view opens without bootstrapping 47 judgments x 725 pairs (7 to 12 s a summary on this
2-core machine) for its first visitor.

Each row carries the digest of the points it was computed from (accapp.service.ratings.points_digest:
the precomputed results, the ratings and the bootstrap's settings); the app uses a row only while its
points still have that digest, and computes the summary itself otherwise. Run it after
scripts/ratings_merge.py or any change to precomputed/ratings/ or assets/ratings/:

  python scripts/ratings_summaries.py            # every model with precomputed results on every set
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from accapp.files import write_parquet_atomic  # noqa: E402 - the project's own package, from this checkout
from accapp.service import ratings as svc  # noqa: E402


def write(model: str, name: str) -> Path:
    """Compute and write one model's summaries of a set, atomically (a temporary file, then a rename)."""
    return write_parquet_atomic(svc.shipped_summaries(model, name), svc.summary_path(model, name))


def main() -> None:
    for name in svc.SETS:
        for model in svc.rated_models(name):
            print(f"{model} on {name}: {write(model, name).relative_to(ROOT)}", flush=True)


if __name__ == "__main__":
    main()
