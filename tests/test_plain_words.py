"""No internal words in the page: the texts the page shows (Explore's status line over every shipped
run, its notes, the probe's split and spill-over texts) carry no tracker numbers ("issue 35",
"stop 43"), no "2^-12" and no file paths; the records' shorthand is said in words."""

from __future__ import annotations

import pytest

from accapp.service import explore, plain, region, verdicts
from accapp.service.host import get_state


def test_for_reader_says_the_records_shorthand_in_words():
    assert plain.for_reader("issue 35: tie constants from the 500-pair run (stop 43)") == (
        "each method's rounding measured on a sample of pairs")
    out = plain.for_reader("issue 23: tie tolerance 2^-12 (the largest batching drift measured on a CI machine, "
                           "1.2e-4, exceeded 2^-14)")
    assert out.startswith("ties: scores within the rounding measured") and not plain.internal_words(out)
    assert plain.for_reader("scored in fp32 on an H200 (docs/gpu.md, issue 32)") == "scored in fp32 on an H200"
    assert plain.for_reader("a margin of 2^-10 stop 7") == "a margin of 0.00098"
    assert plain.internal_words("see issue 4 and 2^-3 in docs/x.md") == ["issue 4", "2^-3", "docs/"]


def _shown_by_explore() -> list[str]:
    store = get_state().store()
    texts = [explore.RULE_NOTE, explore.CI_NOTE, explore.OURS]
    for bench in explore.BENCHMARKS:
        texts.append(explore.human_note(bench))
        for model in store.models(bench):
            facts = explore.run_facts(explore.select(bench, model, None))
            texts += [str(v) for v in facts.values()] if facts else []
    return texts


@pytest.mark.parametrize("where", ["explore", "probe"])
def test_no_internal_words_in_the_page(where):
    if where == "explore":
        texts = _shown_by_explore()
    else:
        texts = [region.SPILLOVER_DEFINITION, verdicts.ADVICE_EQUAL, verdicts.ADVICE_LENGTH, verdicts.ADVICE_MASKED]
    left = {t: plain.internal_words(t) for t in texts if plain.internal_words(t)}
    assert not left, left
