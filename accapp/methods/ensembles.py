"""Voting ensembles of in-template LP and Yes/No prob comp (Ide §6, Table 5)."""

from __future__ import annotations

from accapp.methods import formulas as F
from accapp.methods.base import Answers, Method, judged, score_of
from accapp.methods.prompting import YesNoProbComp
from accapp.methods.readout import InTemplateSingle
from accapp.schema import ENSEMBLE_METHODS


class Ensemble(Method):
    """A vote of n_p Yes/No prob comp and n_l in-template LP judgments (F.ENSEMBLE_SETTINGS)."""

    def __init__(self, id):
        self.id = id
        self.n_p, self.n_l = F.ENSEMBLE_SETTINGS[id]
        self._p = YesNoProbComp()
        self._l = InTemplateSingle("in_template_lp", F.lp)

    def requests(self, pair, ctx):
        return self._p.requests(pair, ctx) + self._l.requests(pair, ctx)

    def score(self, pair, ctx, res):
        # each vote a prediction as Ide et al. count it: right when score(good) > score(bad); the
        # members' scores are those the pair's own Yes/No prob comp and in-template LP rows show
        p_votes = [r.strict_verdict == "good" for r in score_of(self._p, pair, ctx, res)]
        l_votes = [r.strict_verdict == "good" for r in score_of(self._l, pair, ctx, res)]
        won = F.ensemble_correct(p_votes, l_votes, self.n_p, self.n_l)
        return [judged(self.id, "-", won, 1.0 - won, answers=Answers(p_votes=sum(p_votes), l_votes=sum(l_votes)))]


def ensemble_methods() -> list[Method]:
    return [Ensemble(i) for i in ENSEMBLE_METHODS]
