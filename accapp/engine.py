"""One engine for every model kind: minimal pairs and methods in, one scorer call, scores out.

Methods say which strings they need scored (requests, accapp.scoring.api); the engine
deduplicates the requests of all methods and pairs, hands them to the scorer in one
`execute` call (so methods share forward passes), then lets each method score.

    engine = build_engine("smollm2-135m-instruct")
    result = engine.score_pair("These casseroles disgust Kayla.", "These casseroles disgusts Kayla.")
    result.scores    # one MethodScore per method x template x answer order
    result.tokens    # per-token log-probs of both sentences
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from accapp import languages
from accapp.errors import UserError, check_token_length, validate_sentence
from accapp.methods import resolve
from accapp.methods.base import CallResults, Context, MethodScore, score_of
from accapp.scoring import convention as conventions
from accapp.scoring import topk as top_k
from accapp.scoring.api import BoundaryRequest, NextRequest, Pair, SeqResult, TopKRequest
from accapp.scoring.collector import spaced_collections
from accapp.scoring.context import check_context
from accapp.scoring.tokens import vocabulary_id
from accapp.scoring.word_prob import WORD_RULE_CORRECTED, WORD_RULE_SUM, sum_records, word_records
from accapp.segment import group_records, merge_crossing, needs_segmenting, pair_spans

MAX_CONTEXT_TOKENS = 256  # a context's tokens (a paragraph); its characters: scoring/context.MAX_CONTEXT_CHARS
IN_TEMPLATE_SCOPES = ("whole", "sentence")  # in-template readout over the whole string or the sentence only


def check_scope(in_template_scope: str) -> str:
    if in_template_scope not in IN_TEMPLATE_SCOPES:
        raise UserError(f"in_template_scope must be one of {', '.join(IN_TEMPLATE_SCOPES)}.")
    return in_template_scope


def word_rule(kind: str) -> str:
    """Which word log-probability Engine.word_scores gives for a model kind ("causal", "masked")."""
    return WORD_RULE_SUM if kind == "masked" else WORD_RULE_CORRECTED


def detect_language(*texts: str) -> str:
    """The language of typed text, as the language table recognises it (accapp/languages.py)."""
    return languages.detect(*(t or "" for t in texts))


def _wait_for(begun: threading.Event, stopping: threading.Event) -> None:
    """begun.wait(), given up once stopping is set (the thread that would set begun has stopped)."""
    while not begun.wait(0.05):
        if stopping.is_set():
            return


@dataclass
class PairResult:
    pair: Pair
    tokens: dict  # "good"/"bad" -> list of {token, start, end, logprob}
    scores: list[MethodScore]
    len_good: int  # tokens of the bare sentences (special tokens excluded)
    len_bad: int
    detail: dict = field(default_factory=dict)  # masked LMs: "good"/"bad" -> SentencePLL
    words: dict | None = None  # with words=True: "good"/"bad" -> Engine.word_scores' records
    unavailable: dict = field(default_factory=dict)  # asked-for methods the model cannot run -> why (Engine.unavailable)
    # with words=True and topk > 0 (a causal LM): "good"/"bad" -> {"tokens": [...], "words": [...]}, what the
    # model expected at each token and at each word (accapp/scoring/topk.py), from the same passes
    expected: dict | None = None

    @property
    def rows(self) -> list[dict]:
        """The scores as plain dicts (method, template, variant, score_good, score_bad, verdict, prediction)."""
        return [s.as_dict() for s in self.scores]


@dataclass
class StringResult:
    """One string scored on its own: {method id: score} under the per-string methods, and its tokens."""

    text: str
    scores: dict
    n_tokens: int  # tokens of the bare string (special tokens excluded)


@dataclass
class _Block:
    """One engine call between its stages (Engine._prepare_block, the scorer, Engine._finish_block)."""

    pairs: list
    methods: list  # resolved: the ones the model can run
    off: dict  # asked-for methods the model cannot run -> why
    requests: list
    ctx_of: dict  # id(pair) -> Context
    words: bool
    topk: int
    call: object = None  # a staged scorer's prepared call (CausalScorer.prepare_call)


def token_view(result) -> tuple[list[dict], object]:
    """(per-token {token, start, end, logprob}, detail or None) of a sentence's token result."""
    if isinstance(result, SeqResult):
        return [{"token": t, "start": a, "end": b, "logprob": float(lp)}
                for t, (a, b), lp in zip(result.tokens, result.offsets, result.logprobs)], None
    # A SentencePLL: the PLL-original log-probs, and the whole detail for the word view.
    return [{"token": t.token, "start": t.start, "end": t.end, "logprob": float(t.logprob["original"])}
            for t in result.tokens], result


class Engine:
    def __init__(self, scorer, language: str | None = None, in_template_scope: str = "whole") -> None:
        self.scorer = scorer
        self.kind = scorer.kind
        self.lm = scorer.lm
        self.language = language
        self.in_template_scope = check_scope(in_template_scope)
        # accapp/scoring/convention.py: which details follow the authors' code
        self.convention = getattr(scorer, "convention", None) or conventions.get(None)
        self._ctx: dict[str, Context] = {}
        self._unavailable: dict[str, str] | None = None

    @property
    def model_id(self) -> str:
        return self.lm.spec.id if self.lm is not None else ""

    def _token_requests(self, text: str, context: str = "") -> list:
        """The request whose result is a sentence's token view (after `context`, if any); a masked
        LM's words follow the convention."""
        if self.kind == "masked":
            return self.scorer.token_requests(text, self.convention.pll_words, **({"context": context} if context else {}))
        return self.scorer.token_requests(text, **({"context": context} if context else {}))

    def context(self, language: str) -> Context:
        if language not in self._ctx:
            self._ctx[language] = Context(self.lm, language, self.in_template_scope, convention=self.convention)
        return self._ctx[language]

    def resolve(self, methods) -> list:
        """Method objects this engine's model can run ('all' or None = all of them). Methods the
        model cannot run are left out: a result carries their reasons (PairResult.unavailable)."""
        return [m for m in resolve(methods, self.kind) if m.id not in self.unavailable]

    @property
    def unavailable(self) -> dict[str, str]:
        """{method id: why the model cannot run it}: a prompt method whose answer ('Yes', 'A', ...)
        is not one token of the model's vocabulary after the prompt (found once, on a probe pair)."""
        if self._unavailable is None:
            self._unavailable = unavailable_methods(self) if self.kind == "causal" and self.lm is not None else {}
        return self._unavailable

    def unavailable_for(self, methods) -> dict[str, str]:
        """The reasons of the asked methods ('all' or None = every method of the model's kind) that cannot run."""
        return {m.id: self.unavailable[m.id] for m in resolve(methods, self.kind) if m.id in self.unavailable}

    # ---- input -------------------------------------------------------------------------
    def check_sentence(self, text, label: str = "sentence") -> str:
        """The sentence stripped, or UserError: empty, too long, control characters, or no token."""
        text = validate_sentence(text, label)
        n = self.scorer.n_tokens(text)
        check_token_length(n, label)
        if n == 0:
            raise UserError(f"The {label} has no token for this model.")
        if n == 1 and not getattr(self.scorer, "sentence_start", True):
            raise UserError(f"The {label} is one token; under the {self.convention.name!r} convention a sentence's first "
                            "token is not scored, so it needs at least two.")
        return text

    def check_pair(self, good, bad, meta: dict | None = None, context=None) -> Pair:
        """The one check every entry point (CLI, app, API, runner) puts a pair through; `context`:
        text both sentences follow (accapp/scoring/context.py), checked here too."""
        return Pair(self.check_sentence(good, "acceptable sentence"), self.check_sentence(bad, "unacceptable sentence"),
                    meta or {}, self.check_context(context))

    def check_context(self, context) -> str:
        """The context checked ('' = none): text, within MAX_CONTEXT_CHARS and MAX_CONTEXT_TOKENS."""
        text = check_context(context)
        if text:
            n = self.scorer.n_tokens(text)
            if n > MAX_CONTEXT_TOKENS:
                raise UserError(f"The context is {n:,} tokens for this model; the limit is {MAX_CONTEXT_TOKENS}.")
        return text

    def check_pairs(self, rows) -> tuple[list[tuple[object, Pair]], dict[object, str]]:
        """check_pair over many rows, each (key, good, bad, meta[, context]): ([(key, Pair)] of those that
        pass, {key: message} of those that fail), so that one bad row never stops the others."""
        checked, errors = [], {}
        for key, good, bad, meta, *context in rows:
            try:
                checked.append((key, self.check_pair(good, bad, meta, *context)))
            except UserError as exc:
                errors[key] = str(exc)
        return checked, errors

    # ---- scoring -------------------------------------------------------------------------
    def score_pairs(self, pairs: list[Pair], methods=None, language: str | None = None,
                    words: bool = False, topk: int = 0) -> list[PairResult]:
        """Score checked pairs (see check_pair) under the methods, sharing every forward pass;
        with words=True each result also carries its sentences' words (word_scores), from the
        same passes, and with topk > 0 as well (a causal LM) what the model expected at each token
        and word, its topk most probable next tokens (PairResult.expected), from the same projection."""
        with spaced_collections():  # a call's many short-lived objects, collected far less often (scoring/collector.py)
            return self._score_pairs(pairs, methods, language, words, topk)

    def _score_pairs(self, pairs: list[Pair], methods, language: str | None, words: bool, topk: int) -> list[PairResult]:
        block = self._prepare_block(pairs, methods, language, words, topk)
        return self._finish_block(block, self.scorer.execute(block.requests))

    def _prepare_block(self, pairs: list[Pair], methods, language: str | None, words: bool = False,
                       topk: int = 0) -> "_Block":
        """A call's requests (every method's, deduplicated) and what finishing it takes: no model."""
        topk = min(int(topk), top_k.K_MAX) if words and self.kind == "causal" else 0
        off = self.unavailable_for(methods)
        methods = self.resolve(methods)
        requests, ctx_of = self._requests(pairs, methods, language, words, topk)
        return _Block(pairs, methods, off, requests, ctx_of, words, topk)

    def _finish_block(self, block: "_Block", results: dict) -> list[PairResult]:
        """Each pair's PairResult from the scorer's results: every method's score, the tokens, the words."""
        methods, words, topk = block.methods, block.words, block.topk
        res = CallResults(results)
        out = []
        for pair in block.pairs:
            ctx = block.ctx_of[id(pair)]
            scores = [s for m in methods for s in score_of(m, pair, ctx, res)]
            tokens, detail = {}, {}
            for key, s in (("good", pair.good), ("bad", pair.bad)):
                tokens[key], d = token_view(results[self._token_requests(s, pair.context)[0]])
                if d is not None:
                    detail[key] = d
            spans = (pair_spans(pair.good, pair.bad) if words and (needs_segmenting(pair.good) or needs_segmenting(pair.bad))
                     else (None, None))  # Chinese: both sentences cut consistently (accapp/segment.py)
            found = ({"good": self._words_of(pair.good, results, pair.context, spans[0]),
                      "bad": self._words_of(pair.bad, results, pair.context, spans[1])} if words else None)
            # what the model expected instead: from the pass without a context only (a pair with one: None)
            expected = {key: self._expected_of(s, found[key], topk, results)
                        for key, s in (("good", pair.good), ("bad", pair.bad))} if topk and not pair.context else None
            out.append(PairResult(pair, tokens, scores, len(tokens["good"]), len(tokens["bad"]), detail, found,
                                  block.off, expected))
        return out

    def _requests(self, pairs: list[Pair], methods: list, language: str | None, words: bool, topk: int):
        """(every request the pairs need under the resolved methods, in order and once each, {id(pair): Context})."""
        ctx_of = {}
        requests: dict = {}
        for pair in pairs:
            lang = language or self.language or detect_language(pair.good, pair.bad)
            ctx = ctx_of[id(pair)] = self.context(lang)
            for s in (pair.good, pair.bad):
                for r in self._word_requests(s, pair.context) if words else self._token_requests(s, pair.context):
                    requests[r] = None
                if topk:
                    requests[TopKRequest(s, topk)] = None
            for m in methods:
                for r in m.requests(pair, ctx):
                    requests[r] = None
        return list(requests), ctx_of

    def score_blocks(self, blocks, methods=None, language: str | None = None):
        """score_pairs(block, methods, language) for each block of checked pairs, in order, yielding each
        block's results: the same results, with the host's work beside the model's. With a scorer whose
        execute comes in stages (the causal one), a second thread prepares the next block (its requests,
        tokens and plans) and finishes the last one (its results and every method's score) while this thread
        runs the current block's passes; a block's results come once the next block's passes have run. With
        another scorer, the second thread tokenizes the next block (tokenize_ahead). Blocks are read one
        ahead of the one scored."""
        self.resolve(methods)  # what the model cannot run is found here, before a second thread asks
        blocks = iter(blocks)
        if getattr(self.scorer, "staged", False):
            yield from self._score_blocks_staged(blocks, methods, language)
            return
        block = next(blocks, None)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="accapp-tokenize") as ahead:
            while block is not None:
                following = next(blocks, None)
                coming = ahead.submit(self.tokenize_ahead, following, methods, language) if following else None
                yield self.score_pairs(block, methods, language)
                if coming is not None:
                    coming.result()
                block = following

    def _score_blocks_staged(self, blocks, methods, language: str | None):
        """score_blocks with a staged scorer: prepare_call and collect_call on the second thread, run_call
        (every use of the model) on this one. Each waits until the block beside it has its first pass at the
        decoder (its call's begun): the host's work for that pass (its rows, their past) then has the
        interpreter to itself. Once this thread stops (an error, a Ctrl-C, the caller no longer reading) they
        wait no longer."""
        scorer = self.scorer
        stopping = threading.Event()

        def prepare(pairs: list[Pair], beside: _Block | None) -> _Block:
            if beside is not None:
                _wait_for(beside.call.begun, stopping)
            with spaced_collections():
                block = self._prepare_block(pairs, methods, language)
                block.call = scorer.prepare_call(block.requests)
                return block

        def finish(block: _Block, beside) -> list[PairResult]:
            if beside is not None and beside.exception() is None:  # the next block, prepared before this job ran
                _wait_for(beside.result().call.begun, stopping)
            with spaced_collections():
                return self._finish_block(block, scorer.collect_call(block.call))

        pairs = next(blocks, None)
        if pairs is None:
            return
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="accapp-block") as aside:
            try:
                coming = aside.submit(prepare, pairs, None)
                finishing = None  # the block before, being finished on the second thread
                while coming is not None:
                    try:
                        block = coming.result()
                        following = next(blocks, None)
                        coming = aside.submit(prepare, following, block) if following is not None else None
                        with spaced_collections():
                            scorer.run_call(block.call)
                    except BaseException:
                        stopping.set()  # the stages beside go on: no first pass comes
                        if finishing is not None:  # the block before still comes first, as in score_pairs one by one
                            yield finishing.result()
                        raise
                    if finishing is not None:
                        yield finishing.result()
                    finishing = aside.submit(finish, block, coming)
                yield finishing.result()
            finally:
                stopping.set()  # before the pool waits for its jobs: none waits for a pass that will not come

    def tokenize_ahead(self, pairs: list[Pair], methods=None, language: str | None = None) -> None:
        """Tokenize what score_pairs(pairs, methods, language) will ask for into the scorer's caches, so that
        call starts at the model: made for a second thread while the model scores the block before
        (score_blocks, the runner; the tokenizer's own work leaves Python's lock free). Does nothing for a
        scorer without a tokenize step, or before this engine has found which methods its model cannot run
        (that takes the model, which the other thread is using). A string the tokenizer fails on is left to
        the block's own score_pairs, which meets the same error where it is reported."""
        tokenize = getattr(self.scorer, "tokenize", None)
        if tokenize is None or self._unavailable is None:
            return
        try:
            tokenize(self._requests(pairs, self.resolve(methods), language, False, 0)[0])
        except Exception:  # noqa: BLE001 - only a head start: the block's own call reports its errors
            return

    def score_strings(self, texts: list[str], methods=None, language: str | None = None) -> list[StringResult]:
        """Score checked strings (see check_sentence) one by one under the per-string methods ('all' or
        None: every one the model's kind has; a method that needs a pair raises UserError), sharing every
        forward pass, as score_pairs does for pairs."""
        from accapp.methods import resolve_strings

        methods = resolve_strings(methods, self.kind)
        lang = language or self.language or detect_language(*texts)
        ctx = self.context(lang)
        requests: dict = {}
        for t in texts:
            for r in self._token_requests(t) + [r for m in methods for r in m.string_requests(t, ctx)]:
                requests[r] = None
        results = self.scorer.execute(list(requests))
        res = results.__getitem__
        return [StringResult(t, {m.id: float(m.score_string(t, ctx, res)) for m in methods},
                             len(token_view(results[self._token_requests(t)[0]])[0])) for t in texts]

    def token_scores(self, sentences: list[str]) -> list[tuple[list[dict], object]]:
        """Per sentence (checked like a pair's): its per-token log-probs {token, start, end,
        logprob}, and for a masked LM its SentencePLL detail (else None)."""
        texts = [self.check_sentence(s) for s in sentences]
        requests = {r: None for t in texts for r in self._token_requests(t)}
        results = self.scorer.execute(list(requests))
        return [token_view(results[self._token_requests(t)[0]]) for t in texts]

    @property
    def word_rule(self) -> str:
        """The rule word_scores' ``logprob`` follows for this model (see word_rule())."""
        return word_rule(self.kind)

    def word_scores(self, texts: list[str]) -> dict[str, list[dict]]:
        """Per sentence (checked like a pair's, keyed by the string as given, offsets into the
        checked one): one record per word (accapp/scoring/word_prob.py). A causal LM: the word
        probability with the leading-space correction (Pimentel & Meister 2024) as ``logprob``,
        the plain token sum as ``logprob_sum``; a masked LM: the PLL-word-l2r sum for both,
        ``correction_applies`` False. Token log-probs are token_scores' own."""
        checked = {t: self.check_sentence(t) for t in texts}
        requests = {r: None for c in checked.values() for r in self._word_requests(c)}
        results = self.scorer.execute(list(requests))
        return {t: self._words_of(c, results) for t, c in checked.items()}

    def _word_requests(self, text: str, context: str = "") -> list:
        """The requests whose results give a sentence's words: its tokens, and for a causal LM
        the word-boundary probabilities (answered from the same pass)."""
        extra = [] if self.kind == "masked" else [BoundaryRequest(text, context)]
        return self._token_requests(text, context) + extra

    def _words_of(self, text: str, results: dict, context: str = "", spans=None) -> list[dict]:
        """A sentence's word records; Chinese characters grouped into words (accapp/segment.py; `spans`:
        a pair's consistent cut), and the words one token crosses made one unit."""
        res = results[self._token_requests(text, context)[0]]
        if self.kind == "masked":
            records = sum_records([dict(index=w.index, text=w.text, start=w.start, end=w.end, tokens=w.tokens,
                                        logprob_sum=w.logprob["word_l2r"]) for w in res.words])
        else:
            records = word_records(text, res.offsets, res.logprobs, results[BoundaryRequest(text, context)])
        return merge_crossing(text, group_records(text, records, spans), [(t["start"], t["end"]) for t in token_view(res)[0]])

    def token_ranks(self, text: str, context: str = "") -> list[int]:
        """Each token's rank among the model's guesses at its place (1: the most probable), as GLTR colours a text."""
        return top_k.token_ranks(self.scorer, text, context)

    def expected_scores(self, texts: list[str], k: int = 5) -> dict[str, dict]:
        """Per sentence (checked like a pair's, keyed by the string as given): what a causal LM
        expected at each token and each word, its k most probable next tokens ({"k", "tokens",
        "words"}, accapp/scoring/topk.py), from the pass that scores it."""
        if self.kind != "causal":
            raise UserError("What the model expected next is for causal LMs: a masked LM reads the words on both sides.")
        k = max(1, min(int(k), top_k.K_MAX))
        checked = {t: self.check_sentence(t) for t in texts}
        requests = {r: None for c in checked.values() for r in [*self._word_requests(c), TopKRequest(c, k)]}
        results = self.scorer.execute(list(requests))
        return {t: self._expected_of(c, self._words_of(c, results), k, results) for t, c in checked.items()}

    def _expected_of(self, text: str, words: list[dict], k: int, results: dict) -> dict:
        """What the model expected in a sentence, at each token and at each word (scoring/topk.py)."""
        seq, top, bnd = results[self._token_requests(text)[0]], results[TopKRequest(text, k)], results[BoundaryRequest(text)]
        texts = self.scorer.token_texts(top_k.listed_ids(top))
        return {"k": k, "tokens": top_k.token_records(text, seq.offsets, seq.logprobs, top, texts),
                "words": top_k.word_records(text, words, seq.logprobs, top, bnd, texts)}

    def score_pair(self, good: str, bad: str, methods=None, language: str | None = None, context=None) -> PairResult:
        self.resolve(methods)  # bad method ids fail before any work
        return self.score_pairs([self.check_pair(good, bad, context=context)], methods, language)[0]

    # ---- showing what the model sees ---------------------------------------------------
    def prompts_for(self, pair: Pair, method_id: str, language: str | None = None) -> list[dict]:
        """The exact inputs a method feeds the model for this pair (start token included; for a
        masked LM, the masked copies of both sentences)."""
        (method,) = self.resolve([method_id])
        ctx = self.context(language or self.language or detect_language(pair.good, pair.bad))
        requests = method.requests(pair, ctx)
        shown = []
        for r in requests:
            for item in self.scorer.show(r):
                if self.kind == "masked":
                    side = "good" if r.text == pair.good else "bad"
                    item = dict(item, kind=f"{side}: {item['kind']}")
                shown.append(item)
        return shown


PROBE_PAIR = Pair("The cat sleeps.", "The cat sleep.", {})  # what the answer check builds its prompts from


def unavailable_methods(engine: Engine) -> dict[str, str]:
    """{method id: reason} for the methods whose prompts read an answer the model's vocabulary
    does not hold as one token (accapp.models.inspect: the answer written after the prompt)."""
    from accapp.models.inspect import written_after

    ctx = engine.context(engine.language or languages.default())
    tokenizer = engine.lm.tokenizer
    out = {}
    for method in resolve(None, engine.kind):
        split: dict[str, list[str]] = {}
        for r in method.requests(PROBE_PAIR, ctx):
            if isinstance(r, NextRequest) and r.read == "vocabulary":
                for answer in r.answers:
                    if answer not in split and vocabulary_id(tokenizer, answer) is None:
                        split[answer] = written_after(tokenizer, r.prompt, answer)
        if split:
            parts = ", ".join(f"'{a}' is {len(t)} tokens ({' + '.join(repr(x) for x in t)})" for a, t in split.items())
            out[method.id] = (f"{method.name} is unavailable for this model: it reads each answer as one token of the "
                              f"model's vocabulary after the prompt, and {parts}.")
    return out


def convention_ids() -> list[str]:
    """The scoring conventions a run can name (accapp/scoring/convention.py), for the CLI and the app."""
    return sorted(conventions.conventions())


def convention_label(convention_id: str | None) -> str:
    """'Project default', "Authors' code", ... for a results manifest's convention (none: the default)."""
    known = conventions.conventions()
    conv = known.get(convention_id or conventions.DEFAULT)
    return conv.name if conv else str(convention_id)


def make_scorer(lm, batch_size: int | None = None, naive: bool = False, convention=None):
    """The scorer for a loaded model's kind (batch_size: sequences one forward pass takes, strings for
    a causal LM, masked copies for a masked LM; None = the scorer's default, accapp/scoring/pass_size.py;
    convention: an id of accapp/scoring/convention.py, None = the project's default)."""
    conv = conventions.get(convention)
    if lm.spec.kind == "masked":
        from accapp.scoring.masked import MaskedScorer

        scorer = MaskedScorer.from_loaded(lm, **({"batch_size": batch_size} if batch_size else {}))
        scorer.convention = conv  # the masked scorer follows it through its requests (PLLRequest.words)
        return scorer
    from accapp.scoring.causal import CausalScorer
    from accapp.scoring.naive import NaiveScorer

    return (NaiveScorer if naive else CausalScorer)(lm, convention=conv, **({"batch_size": batch_size} if batch_size else {}))


def check_options(in_template_scope: str = "whole", convention: str | None = None) -> None:
    """An unknown in-template scope or convention is an error before a model loads."""
    check_scope(in_template_scope)
    conventions.get(convention)


def engine_from(lm, *, language: str | None = None, in_template_scope: str = "whole", batch_size: int | None = None,
                naive: bool = False, convention: str | None = None) -> Engine:
    """The engine for a model already loaded (a LoadedModel): the model host's, whose pool holds the model."""
    check_options(in_template_scope, convention)
    return Engine(make_scorer(lm, batch_size, naive, convention), language, in_template_scope)


def build_engine(model: str, dtype: str = "fp32", quantization: str | None = None, *, language: str | None = None,
                 in_template_scope: str = "whole", batch_size: int | None = None, device: str | None = None,
                 lm=None, naive: bool = False, convention: str | None = None, trust_remote_code: bool = False,
                 max_memory: int | str | None = None) -> Engine:
    """The engine for a model, loaded here unless `lm` (a LoadedModel) is given: a registry id, a hub
    id (org/name[@revision]), a local folder or a .gguf file (accapp.models.resolve). max_memory
    (bytes or '16GB'): a model whose estimate exceeds it is refused before any weight loads.
    The CLI and the scripts build their engines here; the app, the Python API and the runner get
    theirs from the model host (accapp.service.host), which loads through its pool and calls engine_from."""
    check_options(in_template_scope, convention)  # before a model loads
    if lm is None:
        lm = _load(model, dtype, quantization, device, trust_remote_code, max_memory)
    return engine_from(lm, language=language, in_template_scope=in_template_scope, batch_size=batch_size,
                       naive=naive, convention=convention)


def _load(model: str, dtype: str, quantization: str | None, device: str | None, trust_remote_code: bool,
          max_memory: int | str | None):
    """build_engine's model: resolved, refused before any weight loads if its estimate exceeds max_memory, loaded."""
    from accapp.models.budget import parse_bytes, plan_load
    from accapp.models.loading import load_model, quiet_transformers
    from accapp.models.resolve import resolve_model

    quiet_transformers()
    spec = resolve_model(model, trust_remote_code)
    if max_memory is not None:
        budget = parse_bytes(max_memory) if isinstance(max_memory, str) else int(max_memory)
        plan_load(spec, budget, dtype, quantization, device, budget_name="--max-memory")
    return load_model(spec, dtype, quantization, device)
