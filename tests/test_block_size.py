"""A benchmark run's block (pairs an engine call, and what the progress bar moves by): 256 pairs for the
methods that read the sentences' own passes, 32 where a method builds prompts (tens of passes a pair: 256
of them kept the bar still for 15 minutes on one CPU thread). Fast tier: no model."""

from __future__ import annotations

from accapp.runner.runner import BLOCK, PROMPT_BLOCK, default_block_size


def test_prompts_get_small_blocks_and_the_readouts_full_ones():
    assert (BLOCK, PROMPT_BLOCK) == (256, 32)
    assert default_block_size(["lp", "mean_lp", "pen_lp", "slor", "bayes_factor_unigram"]) == BLOCK
    assert default_block_size("lp,pll_original") == BLOCK
    for prompting in ("in_template_lp", "ab_prompting", "yes_no_prob_comp", "meta_question_simple", "ens_p_only"):
        assert default_block_size(["lp", prompting]) == PROMPT_BLOCK, prompting
    assert default_block_size(None) == default_block_size("all") == PROMPT_BLOCK
