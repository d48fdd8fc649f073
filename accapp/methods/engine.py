"""Score minimal pairs under many methods at once, sharing forward passes between them.

Methods say which strings they need (requests); the engine deduplicates the requests of
all methods and pairs, runs them in a few batched calls, then lets each method score.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from accapp.errors import UserError, check_token_length, validate_sentence
from accapp.methods import resolve
from accapp.methods.base import Context, NextRequest, Pair, SeqRequest, SeqResult
from accapp.prompts import template_set
from accapp.scoring.causal import CausalScorer

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def detect_language(*texts: str) -> str:
    return "zh" if any(_CJK.search(t) for t in texts) else "en"


@dataclass
class PairResult:
    pair: Pair
    tokens: dict  # "good"/"bad" -> list of {token, start, end, logprob}
    rows: list[dict]
    len_good: int
    len_bad: int


class Engine:
    def __init__(self, scorer: CausalScorer, language: str | None = None, in_template_scope: str = "whole") -> None:
        if in_template_scope not in ("whole", "sentence"):
            raise UserError("in_template_scope must be 'whole' or 'sentence'.")
        self.scorer = scorer
        self.lm = scorer.lm
        self.language = language
        self.in_template_scope = in_template_scope
        self._ctx: dict[str, Context] = {}

    def context(self, language: str) -> Context:
        if language not in self._ctx:
            self._ctx[language] = Context(self.lm, language, self.in_template_scope)
        return self._ctx[language]

    # ---- executing requests -----------------------------------------------------------
    def _encode_parts(self, req: SeqRequest):
        ids: list[int] = []
        offsets: list[tuple[int, int]] = []
        part_of: list[int] = []
        base = 0
        for p, text in enumerate(req.parts):
            enc = self.scorer.encode(text)
            ids.extend(enc.ids)
            offsets.extend((base + a, base + b) for a, b in enc.offsets)
            part_of.extend([p] * len(enc.ids))
            base += len(text)
        return ids, offsets, part_of

    def _answer_plan(self, req: NextRequest):
        """Per answer: (context ids with start token, answer ids)."""
        ctx_ids = self.scorer.encode(req.prompt).ids
        plans = []
        for answer in req.answers:
            full = self.scorer.encode(req.prompt + answer).ids
            k = 0
            while k < min(len(ctx_ids), len(full)) and ctx_ids[k] == full[k]:
                k += 1
            if k == len(full):
                raise ValueError(f"answer {answer!r} adds no token after the prompt")
            plans.append((self.scorer.with_start(full[:k]), tuple(full[k:])))
        return plans

    def _seq_limit(self, req: SeqRequest) -> int:
        """Tokens a templated string shares with its template-mates: start token + first part."""
        return 1 + len(self.scorer.encode(req.parts[0]).ids) if len(req.parts) > 1 else 0

    def _prompt_limit(self, req: NextRequest) -> int:
        if not req.prefix:
            return 0
        a, b = self.scorer.encode(req.prefix).ids, self.scorer.encode(req.prompt).ids
        k = 0
        while k < min(len(a), len(b)) and a[k] == b[k]:
            k += 1
        return len(self.scorer.with_start(b[:k]))

    def execute(self, requests) -> dict:
        seq_reqs = [r for r in requests if isinstance(r, SeqRequest)]
        next_reqs = [r for r in requests if isinstance(r, NextRequest)]
        out: dict = {}
        encoded = {r: self._encode_parts(r) for r in seq_reqs}
        # A NextRequest whose answers are single tokens after one shared context needs one
        # pass and a projection at the answer position; others score the answer tokens.
        plans = {r: self._answer_plan(r) for r in next_reqs}
        simple = [r for r in next_reqs if len({c for c, _ in plans[r]}) == 1 and all(len(a) == 1 for _, a in plans[r])]
        simple_set = set(simple)
        chained = [(r, i) for r in next_reqs if r not in simple_set for i in range(len(r.answers))]

        seqs = [self.scorer.with_start(tuple(encoded[r][0])) for r in seq_reqs]
        seqs += [plans[r][i][0] + plans[r][i][1] for r, i in chained]
        limits = [self._seq_limit(r) for r in seq_reqs] + [self._prompt_limit(r) for r, _ in chained]
        n_seq = len(seqs)
        # Questions answered by one next token join the same forward passes.
        seqs += [plans[r][0][0] for r in simple]
        limits += [self._prompt_limit(r) for r in simple]
        answers = [None] * n_seq + [tuple(a[0] for _, a in plans[r]) for r in simple]
        lps = self.scorer.score(seqs, limits, answers) if seqs else []
        for r, lp in zip(seq_reqs, lps):
            ids, offsets, part_of = encoded[r]
            text = "".join(r.parts)
            out[r] = SeqResult(list(ids), [text[a:b] for a, b in offsets], offsets, part_of, lp)
        chained_lp: dict = {}
        for (r, i), lp in zip(chained, lps[len(seq_reqs) : n_seq]):
            n_ans = len(plans[r][i][1])
            chained_lp.setdefault(r, [0.0] * len(r.answers))[i] = float(np.sum(lp[-n_ans:], dtype=np.float64))
        for r, v in chained_lp.items():
            out[r] = np.asarray(v)
        for r, v in zip(simple, lps[n_seq:]):
            out[r] = v.astype(np.float64)
        return out

    # ---- scoring pairs ------------------------------------------------------------------
    def check_pair(self, good: str, bad: str) -> Pair:
        good = validate_sentence(good, "good sentence")
        bad = validate_sentence(bad, "bad sentence")
        for label, s in (("good sentence", good), ("bad sentence", bad)):
            check_token_length(len(self.scorer.encode(s).ids), label)
        return Pair(good, bad)

    def score_pairs(self, pairs: list[Pair], methods=None, language: str | None = None) -> list[PairResult]:
        methods = resolve(methods)
        ctx_of = {}
        requests: dict = {}
        for pair in pairs:
            lang = language or self.language or detect_language(pair.good, pair.bad)
            ctx = ctx_of[id(pair)] = self.context(lang)
            for r in (SeqRequest((pair.good,)), SeqRequest((pair.bad,))):
                requests[r] = None
            for m in methods:
                for r in m.requests(pair, ctx):
                    requests[r] = None
        results = self.execute(list(requests))
        res = results.__getitem__
        out = []
        for pair in pairs:
            ctx = ctx_of[id(pair)]
            rows = [r for m in methods for r in m.score(pair, ctx, res)]
            toks = {}
            for key, s in (("good", pair.good), ("bad", pair.bad)):
                sr = results[SeqRequest((s,))]
                toks[key] = [
                    {"token": t, "start": a, "end": b, "logprob": float(lp)}
                    for t, (a, b), lp in zip(sr.tokens, sr.offsets, sr.logprobs)
                ]
            out.append(PairResult(pair, toks, rows, len(toks["good"]), len(toks["bad"])))
        return out

    def score_pair(self, good: str, bad: str, methods=None, language: str | None = None) -> PairResult:
        return self.score_pairs([self.check_pair(good, bad)], methods, language)[0]

    # ---- showing prompts ---------------------------------------------------------------
    def prompts_for(self, pair: Pair, method_id: str, language: str | None = None) -> list[dict]:
        """The exact strings a method feeds the model for this pair (start token included)."""
        (method,) = resolve([method_id])
        ctx = self.context(language or self.language or detect_language(pair.good, pair.bad))
        shown = []
        start = self.scorer.tokenizer.convert_ids_to_tokens(self.scorer.start_id)
        for r in method.requests(pair, ctx):
            if isinstance(r, SeqRequest):
                shown.append({"kind": "scored string", "text": start + "".join(r.parts)})
            else:
                text = r.prompt if r.prompt.startswith(start) else start + r.prompt
                shown.append({"kind": "prompt, then one of " + " / ".join(r.answers), "text": text})
        return shown


def ide_source() -> str:
    return template_set("ide2025")["source"]
