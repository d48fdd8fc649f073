"""Voting ensembles of in-template LP and Yes/No prob comp (Ide §6, Table 5)."""

from __future__ import annotations

from accapp.methods import formulas as F
from accapp.methods.base import Answers, Method, judged
from accapp.methods.prompting import YesNoProbComp
from accapp.methods.readout import InTemplateSingle
from accapp.schema import ENSEMBLE_METHODS

NAMES = {"ens_p_only": "Ensemble P-only", "ens_mix_p3": "Ensemble Mix-P3", "ens_mix_l3": "Ensemble Mix-L3", "ens_l_only": "Ensemble L-only"}


class Ensemble(Method):
    family = "ensemble"
    source = "Ide et al. 2025, §6"

    def __init__(self, id):
        self.id, self.name = id, NAMES[id]
        self.n_p, self.n_l = F.ENSEMBLE_SETTINGS[id]
        self.formula = (
            f"majority of {self.n_p} Yes/No prob comp + {self.n_l} in-template LP predictions drawn without "
            f"replacement from the 5 templates each; score(good) = share of {F.ENSEMBLE_TRIALS} seeded draws won"
        )
        self._p = YesNoProbComp()
        self._l = InTemplateSingle("in_template_lp", "In-template LP", "", F.lp)

    def requests(self, pair, ctx):
        return self._p.requests(pair, ctx) + self._l.requests(pair, ctx)

    def score(self, pair, ctx, res):
        p_votes = [r.verdict == "good" for r in self._p.score(pair, ctx, res)]
        l_votes = [r.verdict == "good" for r in self._l.score(pair, ctx, res)]
        won = F.ensemble_correct(p_votes, l_votes, self.n_p, self.n_l)
        return [judged(self.id, "-", won, 1.0 - won, answers=Answers(p_votes=sum(p_votes), l_votes=sum(l_votes)))]


def ensemble_methods() -> list[Method]:
    return [Ensemble(i) for i in ENSEMBLE_METHODS]
