"""Acceptability Explorer: what a language model knows about grammar, method by method.

    import accapp
    df = accapp.score_pairs([("These casseroles disgust Kayla.", "These casseroles disgusts Kayla.")], methods=["lp"])
"""

from accapp.version import __version__


def score_pairs(*args, **kwargs):
    """Score minimal pairs into a DataFrame; see accapp.public.score_pairs."""
    from accapp.public import score_pairs as run  # imported on use: `import accapp` stays light

    return run(*args, **kwargs)


def token_scores(*args, **kwargs):
    """Per-token log-probabilities of sentences as a DataFrame; see accapp.public.token_scores."""
    from accapp.public import token_scores as run

    return run(*args, **kwargs)


def next_tokens(*args, **kwargs):
    """What a causal LM expected instead at each token and word (its top-k next tokens); see accapp.public.next_tokens."""
    from accapp.public import next_tokens as run

    return run(*args, **kwargs)


def ratings_summary(results, pairs, n_resamples: int = 1000):
    """The model's differences beside human ratings, one row per method (and template, answer order):
    Pearson and Spearman r with 95 % bootstrap intervals, accuracy against the labels and against the
    human majority. ``results``: score_pairs' frame; ``pairs``: a DataFrame with good, bad and
    rating_good/rating_bad (with participant: z-scored within participants), human_delta or fc_good.
    See accapp.analysis.ratings."""
    from accapp.analysis import ratings

    return ratings.summary(ratings.results_points(results, pairs), n_resamples=n_resamples)


__all__ = ["__version__", "score_pairs", "token_scores", "next_tokens", "ratings_summary"]
