"""Prompt-based methods: A/B prompting and Yes/No prob comp (Ide §3.3), and Hu & Levy 2023's
metalinguistic prompts (Table 4) for sentence judgment and sentence comparison."""

from __future__ import annotations

import numpy as np

from accapp import languages
from accapp.methods import formulas as F
from accapp.methods.base import Answers, Context, Method, judged, remembered
from accapp.prompts import render_prompt, template_set
from accapp.scoring.api import NextRequest
from accapp.scoring.tokens import vocabulary_id


def _ide_prompts(kind: str, ctx: Context) -> list[dict]:
    style = "chat" if ctx.chat else "base"
    return template_set("ide2025")[kind][ctx.language][style]


def _raw(ctx: Context) -> bool:
    """The authors' raw-logit ratio (a labelled option of accapp/scoring/convention.py)."""
    return getattr(ctx.convention, "two_way", "softmax") == "raw_logit"


# Prompts rendered and kept per context: a method asks for each prompt twice (its requests,
# then its scores), and a chat template's Jinja render costs more than the rest of building a
# request (docs/gpu.md). Bounded: cleared when full (~300 characters a prompt, ~6 MB).
RENDERED_MAX = 20_000


def _rendered(ctx: Context, chat: bool, system: str | None, user: str, joiner: str = " ") -> str:
    """render_prompt, kept in ctx.cache (exactly the same string: nothing but the inputs decide it)."""
    memo = ctx.cache.setdefault("rendered", {})
    key = (chat, system, user, joiner)
    text = memo.get(key)
    if text is None:
        if len(memo) >= RENDERED_MAX:
            memo.clear()
        text = memo[key] = _framed(ctx, system, user, joiner) if chat else render_prompt(ctx.tokenizer, chat, system, user, joiner)
    return text


FRAME_CHECKS = 8  # renders of a chat frame compared with the chat template's own before it is trusted alone


def _framed(ctx: Context, system: str | None, user: str, joiner: str) -> str:
    """A chat prompt: the chat template rendered once per system message around a placeholder (its
    frame), the user's message put in its place. The placeholder keeps the message's own whitespace at
    either end, so a template that trims the message trims the same. The first FRAME_CHECKS prompts of a
    frame are also rendered by the template and compared; a frame that ever differs (a template that
    rewrites the message) is dropped, and every later prompt of it rendered by the template."""
    core = user.strip()
    if not core or HOLE in user:
        return render_prompt(ctx.tokenizer, True, system, user, joiner)
    start = user.index(core)
    lead, trail = user[:start], user[start + len(core):]
    frames = ctx.cache.setdefault("chat_frames", {})
    key = (system, joiner, lead, trail)
    frame = frames.get(key)
    if frame is None:
        text = render_prompt(ctx.tokenizer, True, system, lead + HOLE + trail, joiner)
        frame = frames[key] = [text if text.count(HOLE) == 1 else None, 0]
    if frame[0] is None:
        return render_prompt(ctx.tokenizer, True, system, user, joiner)
    text = frame[0].replace(HOLE, core)
    if frame[1] < FRAME_CHECKS:
        frame[1] += 1
        full = render_prompt(ctx.tokenizer, True, system, user, joiner)
        if full != text:
            frame[0] = None
            return full
    return text


def _render(ctx: Context, system: str | None, user: str) -> str:
    joiner = template_set("ide2025")["joiner"].get(ctx.language, " ")
    return _rendered(ctx, ctx.chat, system, user, joiner)


HOLE = "\ue000"  # a private-use character no sentence or template contains


def template_prefix(ctx: Context, key: str, render) -> str:
    """The part of a method's prompt that comes before any sentence: the same for every
    pair, so its KV cache is computed once and found again (render(hole) builds the prompt)."""
    cache_key = ("prefix", key)
    if cache_key not in ctx.cache:
        text = render(HOLE)
        ctx.cache[cache_key] = text[: text.index(HOLE)]
    return ctx.cache[cache_key]


class ABPrompting(Method):
    id = "ab_prompting"

    def templates(self, ctx):
        return [t["id"] for t in _ide_prompts("ab", ctx)]

    def _req(self, ctx, t, a, b):
        return remembered(ctx, ("ab", t, a, b), lambda: self._make(ctx, t, a, b))

    def _make(self, ctx, t, a, b):
        tpl = next(x for x in _ide_prompts("ab", ctx) if x["id"] == t)
        user = tpl["user"].replace("{sentence_a}", a).replace("{sentence_b}", b)
        prefix = template_prefix(
            ctx, f"ab:{t}", lambda h: _render(ctx, tpl["system"], tpl["user"].replace("{sentence_a}", h).replace("{sentence_b}", h)))
        # read="vocabulary": the prompt as written ("...Answer: "), then the token "A" (Ide et al.'s code)
        return NextRequest(_render(ctx, tpl["system"], user), tuple(template_set("ide2025")["answers"]["ab"]), prefix=prefix,
                           read="vocabulary")

    def requests(self, pair, ctx):
        return [r for t in self.templates(ctx) for r in (self._req(ctx, t, pair.good, pair.bad), self._req(ctx, t, pair.bad, pair.good))]

    def score(self, pair, ctx, res):
        rows = []
        for t in self.templates(ctx):
            for variant, (a, b), good_letter in (("good=A", (pair.good, pair.bad), 0), ("good=B", (pair.bad, pair.good), 1)):
                lps = res(self._req(ctx, t, a, b))
                la, lb = float(lps[0]), float(lps[1])
                # the answer as Ide et al. read it: the likelier letter (strictly; equal: no answer)
                pred = {"good": "A", "bad": "B"}.get(F.strict_verdict(la, lb), "tie")
                g = F.two_way_logprob(lps[good_letter], lps[1 - good_letter])
                bad = F.two_way_logprob(lps[1 - good_letter], lps[good_letter])
                rows.append(judged(self.id, t, g, bad, variant, Answers(letter=pred)))
        return rows


class YesNoProbComp(Method):
    id = "yes_no_prob_comp"

    def _set(self, ctx) -> tuple[list[dict], tuple[str, str]]:
        """The prompts and their answer words: the language's own Yes/No words (the language table), or,
        where those are not one token each and the prompts have a '<code>_answer_yes_no' set, that set
        and its answers (Chinese: 是/否, else Yes/No after the Chinese prompts; Ide §3.3)."""
        key = ("yes_no_set",)
        if key not in ctx.cache:
            ide = template_set("ide2025")
            style = "chat" if ctx.chat else "base"
            own = languages.get(ctx.language).answers.get("yes_no") or ide["answers"]["yes_no"][ctx.language]
            fallback = f"{ctx.language}_answer_yes_no"
            if fallback in ide["yes_no"] and not all(vocabulary_id(ctx.tokenizer, a) is not None for a in own):
                ctx.cache[key] = (ide["yes_no"][fallback][style], tuple(ide["answers"]["yes_no"][fallback]))
            else:
                ctx.cache[key] = (ide["yes_no"][ctx.language][style], tuple(own))
        return ctx.cache[key]

    def templates(self, ctx):
        return [t["id"] for t in self._set(ctx)[0]]

    def _req(self, ctx, t, sentence):
        return remembered(ctx, ("yes_no", t, sentence), lambda: self._make(ctx, t, sentence))

    def _make(self, ctx, t, sentence):
        prompts, answers = self._set(ctx)
        tpl = next(x for x in prompts if x["id"] == t)
        prefix = template_prefix(ctx, f"yes_no:{t}", lambda h: _render(ctx, tpl["system"], tpl["user"].replace("{sentence}", h)))
        return NextRequest(_render(ctx, tpl["system"], tpl["user"].replace("{sentence}", sentence)), answers, prefix=prefix,
                           read="vocabulary", raw=_raw(ctx))

    def requests(self, pair, ctx):
        return [self._req(ctx, t, s) for t in self.templates(ctx) for s in (pair.good, pair.bad)]

    def score(self, pair, ctx, res):
        rows = []
        for t in self.templates(ctx):
            g = res(self._req(ctx, t, pair.good))
            b = res(self._req(ctx, t, pair.bad))
            ratio = F.raw_logit_ratio if _raw(ctx) else F.yes_probability
            rows.append(judged(self.id, t, ratio(g[0], g[1]), ratio(b[0], b[1])))
        return rows


class MetaPrompt(Method):
    """Hu & Levy 2023: one prompt type, for sentence judgment and sentence comparison."""

    def __init__(self, id):
        self.id = id

    def templates(self, ctx):
        return ["judgment", "comparison"]

    def _prompt(self, ctx, task, **fill):
        spec = template_set("hu_levy2023")[task][ctx.language][self.id]
        user = spec["user"]
        for k, v in fill.items():
            user = user.replace("{" + k + "}", v)
        if ctx.chat:
            return _rendered(ctx, True, None, user)
        return user + spec["base_suffix"]

    def _judge(self, ctx, s):
        return remembered(ctx, (self.id, "judgment", s), lambda: self._make_judge(ctx, s))

    def _compare(self, ctx, s1, s2):
        return remembered(ctx, (self.id, "comparison", s1, s2), lambda: self._make_compare(ctx, s1, s2))

    def _make_judge(self, ctx, s):
        answers = template_set("hu_levy2023")["answers"]["judgment"][ctx.language]
        prefix = template_prefix(ctx, f"{self.id}:judgment", lambda h: self._prompt(ctx, "judgment", sentence=h))
        return NextRequest(self._prompt(ctx, "judgment", sentence=s), tuple(answers), prefix=prefix)

    def _make_compare(self, ctx, s1, s2):
        prefix = template_prefix(ctx, f"{self.id}:comparison", lambda h: self._prompt(ctx, "comparison", sentence1=h, sentence2=h))
        return NextRequest(
            self._prompt(ctx, "comparison", sentence1=s1, sentence2=s2),
            tuple(template_set("hu_levy2023")["answers"]["comparison"]), prefix=prefix,
        )

    def requests(self, pair, ctx):
        return [
            self._judge(ctx, pair.good), self._judge(ctx, pair.bad),
            self._compare(ctx, pair.good, pair.bad), self._compare(ctx, pair.bad, pair.good),
        ]

    def score(self, pair, ctx, res):
        g, b = res(self._judge(ctx, pair.good)), res(self._judge(ctx, pair.bad))
        # the answers as Hu & Levy 2023 read them: the likelier answer, strictly (equal: no answer)
        said = lambda x: {"good": "Yes", "bad": "No"}.get(F.strict_verdict(x[0], x[1]), "tie")  # noqa: E731
        judgment = judged(self.id, "judgment", g[0], b[0], answers=Answers(good=said(g), bad=said(b)))
        first = res(self._compare(ctx, pair.good, pair.bad))  # good is option 1
        second = res(self._compare(ctx, pair.bad, pair.good))  # good is option 2
        chose = lambda x: {"good": "1", "bad": "2"}.get(F.strict_verdict(x[0], x[1]), "tie")  # noqa: E731
        comparison = judged(
            self.id, "comparison",
            float(np.mean([first[0], second[1]])), float(np.mean([first[1], second[0]])),
            answers=Answers(order1=chose(first), order2=chose(second)),  # each order's answer (Hu & Levy, Exp. 3b)
        )
        return [judgment, comparison]


def prompting_methods() -> list[Method]:
    return [
        ABPrompting(),
        YesNoProbComp(),
        MetaPrompt("meta_question_simple"),
        MetaPrompt("meta_instruct"),
        MetaPrompt("meta_question_complex"),
    ]
