"""DuckDB store over the precomputed per-pair results and the papers' published numbers."""

from accapp.schema import ENSEMBLE_METHODS, RESULT_COLUMNS
from accapp.store.store import DEFAULT_PUBLISHED_DIR, DEFAULT_RESULTS_DIR, Store, is_template_id, template_sort_key

__all__ = [
    "DEFAULT_PUBLISHED_DIR", "DEFAULT_RESULTS_DIR", "ENSEMBLE_METHODS", "RESULT_COLUMNS", "Store",
    "is_template_id", "template_sort_key",
]
