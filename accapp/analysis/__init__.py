"""The papers' analyses over the results store, each a function returning a DataFrame ready to plot.

Accuracy (Ide et al. 2025 §5, Tables 3, 5, 11, 12) in :mod:`accapp.analysis.accuracy`; token-length
bias (§6, Fig. 2, Table 4) in :mod:`.length`; word-shuffling and attractor groupings (§6, Figs. 4-5)
in :mod:`.paradigms`; the paired bootstrap against LP (footnote 11) in :mod:`.bootstrap`; Hu et al.
2025's separation AUC and within-pair correlation in :mod:`.separation`; the papers' own numbers in
the same long format in :mod:`.published`. Every function takes a :class:`accapp.store.Store` first.
"""

# Exports are loaded on first use (PEP 562), so that importing one module (say accuracy, for the
# report command) does not pull in scipy and scikit-learn.
_EXPORTS = {
    "LONG_COLUMNS": "accapp.analysis.published",
    "IDE_SETTING_METHOD": "accapp.analysis.published",
    "SEPARATION_METRICS": "accapp.analysis.separation",
    "WORD_PATTERN": "accapp.analysis.paradigms",
    "AB_METHOD": "accapp.analysis.accuracy",
    "RULES": "accapp.analysis.accuracy",
    "STRICT": "accapp.analysis.accuracy",
    "TIES": "accapp.analysis.accuracy",
    "left_out": "accapp.analysis.accuracy",
    "ab_prompting": "accapp.analysis.accuracy",
    "accuracy_by_length": "accapp.analysis.length",
    "attractors": "accapp.analysis.paradigms",
    "accuracy_by_paradigm": "accapp.analysis.accuracy",
    "accuracy_by_paradigm_type": "accapp.analysis.paradigms",
    "accuracy_by_phenomenon": "accapp.analysis.accuracy",
    "accuracy_overall": "accapp.analysis.accuracy",
    "best_template": "accapp.analysis.accuracy",
    "ensembles": "accapp.analysis.accuracy",
    "human_by_paradigm_type": "accapp.analysis.paradigms",
    "length_bias": "accapp.analysis.length",
    "method_summary": "accapp.analysis.accuracy",
    "ours_long": "accapp.analysis.published",
    "pair_correlation": "accapp.analysis.separation",
    "paired_bootstrap": "accapp.analysis.bootstrap",
    "paradigm_type_summary": "accapp.analysis.paradigms",
    "published_accuracy": "accapp.analysis.published",
    "published_models": "accapp.analysis.published",
    "published_human": "accapp.analysis.published",
    "published_ide_ab_share": "accapp.analysis.published",
    "published_ide_accuracy": "accapp.analysis.published",
    "published_ide_ensembles": "accapp.analysis.published",
    "published_ide_findings": "accapp.analysis.published",
    "published_ide_length_bias": "accapp.analysis.published",
    "published_kauf": "accapp.analysis.published",
    "score_distributions": "accapp.analysis.separation",
    "separation_auc": "accapp.analysis.separation",
    "sv_agreement_by_attractor": "accapp.analysis.paradigms",
    "template_methods": "accapp.analysis.accuracy",
    "template_stats": "accapp.analysis.accuracy",
    "word_shuffling": "accapp.analysis.paradigms",
    "word_shuffling_paradigms": "accapp.analysis.paradigms",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        import importlib

        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'accapp.analysis' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
