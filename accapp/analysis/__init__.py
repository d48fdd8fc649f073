"""The papers' analyses over the results store, each a function returning a DataFrame ready to plot.

Accuracy (Ide et al. 2025 §5, Tables 3, 5, 11, 12) in :mod:`accapp.analysis.accuracy`; token-length
bias (§6, Fig. 2, Table 4) in :mod:`.length`; word-shuffling and attractor groupings (§6, Figs. 4-5)
in :mod:`.paradigms`; the paired bootstrap against LP (footnote 11) in :mod:`.bootstrap`; Hu et al.
2025's separation AUC and within-pair correlation in :mod:`.separation`; the papers' own numbers in
the same long format in :mod:`.published`. Every function takes a :class:`accapp.store.Store` first.
"""

from accapp.analysis.accuracy import (
    ab_prompting,
    accuracy_by_paradigm,
    accuracy_by_phenomenon,
    accuracy_overall,
    best_template,
    ensembles,
    method_summary,
    template_methods,
    template_stats,
)
from accapp.analysis.bootstrap import paired_bootstrap
from accapp.analysis.length import accuracy_by_length, length_bias
from accapp.analysis.paradigms import (
    SV_ATTRACTOR,
    WORD_PATTERN,
    accuracy_by_paradigm_type,
    human_by_paradigm_type,
    paradigm_type_summary,
    sv_agreement_by_attractor,
    word_shuffling,
    word_shuffling_paradigms,
)
from accapp.analysis.published import (
    LONG_COLUMNS,
    ours_long,
    published_accuracy,
    published_blimp_models,
    published_human,
    published_ide_ab_share,
    published_ide_accuracy,
    published_ide_ensembles,
    published_ide_findings,
    published_ide_length_bias,
    published_kauf,
)
from accapp.analysis.separation import SEPARATION_METRICS, pair_correlation, score_distributions, separation_auc

__all__ = [
    "LONG_COLUMNS", "SEPARATION_METRICS", "SV_ATTRACTOR", "WORD_PATTERN",
    "ab_prompting", "accuracy_by_length", "accuracy_by_paradigm", "accuracy_by_paradigm_type", "accuracy_by_phenomenon",
    "accuracy_overall", "best_template", "ensembles", "human_by_paradigm_type", "length_bias", "method_summary",
    "ours_long", "pair_correlation", "paired_bootstrap", "paradigm_type_summary", "published_accuracy",
    "published_blimp_models", "published_human", "published_ide_ab_share", "published_ide_accuracy",
    "published_ide_ensembles", "published_ide_findings", "published_ide_length_bias", "published_kauf",
    "score_distributions", "separation_auc", "sv_agreement_by_attractor", "template_methods", "template_stats",
    "word_shuffling", "word_shuffling_paradigms",
]
