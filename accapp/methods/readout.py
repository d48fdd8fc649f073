"""Probability readout: LP, MeanLP, PenLP (Ide §3.1), in-template readout (Ide §3.2),
and Hu et al. 2025's normalisations (§6.1)."""

from __future__ import annotations

from accapp.methods import formulas as F
from accapp.methods.base import Context, Method, judged, remembered
from accapp.methods.unigram import unigram_logprobs
from accapp.prompts import fill_parts, template_set
from accapp.scoring.api import SeqRequest


class SentenceReadout(Method):
    """A score of the bare sentence's token log-probs (after the pair's context, if any:
    accapp/scoring/context.py; the context's own tokens are not scored)."""

    def __init__(self, id, fn, size=None):
        # size: the terms' size of the score, where the score does not show it (methods/ties.py)
        self.id, self._fn, self._size = id, fn, size

    per_string = True

    def string_requests(self, text, ctx, context=""):
        return [SeqRequest((text,), context)]

    def score_string(self, text, ctx, res, context=""):
        return self._fn(res(SeqRequest((text,), context)).logprobs, ctx)

    def requests(self, pair, ctx):
        return [SeqRequest((pair.good,), pair.context), SeqRequest((pair.bad,), pair.context)]

    def score(self, pair, ctx, res):
        g = res(SeqRequest((pair.good,), pair.context)).logprobs
        b = res(SeqRequest((pair.bad,), pair.context)).logprobs
        sizes = None if self._size is None else (self._size(g), self._size(b))
        return [judged(self.id, "-", self._fn(g, ctx), self._fn(b, ctx), sizes=sizes)]


def _unigram_of(ctx: Context, request: SeqRequest, res):
    table = ctx.cache.get(("unigram", ctx.language))
    if table is None:
        table = ctx.cache[("unigram", ctx.language)] = unigram_logprobs(ctx.lm, ctx.language)
    ids = res(request).ids
    return table[ids]


class UnigramReadout(SentenceReadout):
    """A score of the sentence's token log-probs and their unigram log-probs."""

    def score_string(self, text, ctx, res, context=""):
        req = SeqRequest((text,), context)
        return self._fn(res(req).logprobs, _unigram_of(ctx, req, res))

    def score(self, pair, ctx, res):
        vals, sizes = [], []
        for s in (pair.good, pair.bad):
            req = SeqRequest((s,), pair.context)
            lps, uni = res(req).logprobs, _unigram_of(ctx, req, res)
            vals.append(self._fn(lps, uni))
            sizes.append(self._size(lps, uni))
        return [judged(self.id, "-", *vals, sizes=tuple(sizes))]


class InTemplateSingle(Method):
    """A readout of the sentence inside each of the paper's five templates per language."""

    def __init__(self, id, fn):
        self.id, self._fn = id, fn

    def templates(self, ctx):
        return [t["id"] for t in template_set("ide2025")["in_template_single"][ctx.language]]

    def _req(self, ctx, tid, sentence):
        return remembered(ctx, ("in_template_single", tid, sentence), lambda: self._make(ctx, tid, sentence))

    def _make(self, ctx, tid, sentence):
        text = next(t["text"] for t in template_set("ide2025")["in_template_single"][ctx.language] if t["id"] == tid)
        return SeqRequest(fill_parts(text, sentence))

    def requests(self, pair, ctx):
        return [self._req(ctx, t, s) for t in self.templates(ctx) for s in (pair.good, pair.bad)]

    def _lps(self, ctx, req, res, sentence):
        out = res(req)
        if ctx.in_template_scope == "sentence":
            return out.part_logprobs(req.parts.index(sentence))
        return out.logprobs

    def score(self, pair, ctx, res):
        rows = []
        for t in self.templates(ctx):
            g = self._lps(ctx, self._req(ctx, t, pair.good), res, pair.good)
            b = self._lps(ctx, self._req(ctx, t, pair.bad), res, pair.bad)
            rows.append(judged(self.id, t, self._fn(g), self._fn(b)))
        return rows


class InTemplateComparative(Method):
    id = "in_template_comparative_lp"

    def templates(self, ctx):
        return [t["id"] for t in template_set("ide2025")["in_template_comparative"][ctx.language]]

    def _req(self, ctx, tid, first, second):
        return remembered(ctx, ("in_template_comparative", tid, first, second), lambda: self._make(ctx, tid, first, second))

    def _make(self, ctx, tid, first, second):
        text = next(t["text"] for t in template_set("ide2025")["in_template_comparative"][ctx.language] if t["id"] == tid)
        return SeqRequest(fill_parts(text, first, second))

    def requests(self, pair, ctx):
        return [r for t in self.templates(ctx) for r in (self._req(ctx, t, pair.good, pair.bad), self._req(ctx, t, pair.bad, pair.good))]

    def score(self, pair, ctx, res):
        return [
            judged(self.id, t, F.lp(res(self._req(ctx, t, pair.good, pair.bad)).logprobs),
                   F.lp(res(self._req(ctx, t, pair.bad, pair.good)).logprobs))
            for t in self.templates(ctx)
        ]


def readout_methods() -> list[Method]:
    vocab = lambda ctx: ctx.lm.vocab_size  # noqa: E731
    return [
        SentenceReadout("lp", lambda x, ctx: F.lp(x)),
        SentenceReadout("mean_lp", lambda x, ctx: F.mean_lp(x)),
        SentenceReadout("pen_lp", lambda x, ctx: F.pen_lp(x)),
        InTemplateSingle("in_template_lp", F.lp),
        InTemplateSingle("in_template_mean_lp", F.mean_lp),
        InTemplateSingle("in_template_pen_lp", F.pen_lp),
        InTemplateComparative(),
        SentenceReadout("bayes_factor_uniform", lambda x, ctx: F.bayes_factor_uniform(x, vocab(ctx)), lambda x: abs(F.lp(x))),
        UnigramReadout("bayes_factor_unigram", F.bayes_factor_unigram, lambda x, u: abs(F.lp(x)) + abs(F.lp(u))),
        UnigramReadout("slor", F.slor, lambda x, u: (abs(F.lp(x)) + abs(F.lp(u))) / len(x)),
    ]
