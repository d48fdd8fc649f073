"""The probe's logic as plain data: which methods run, scoring one pair with an engine, the
majority verdict, one verdict record per judgment, and what the precomputed benchmark run says
about the pair. The UI makes one call and renders what comes back:

    probe_api(model, good, bad, methods)        # the /probe answer: checked, scored on the host, assembled
    for stage in staged_probe(good, bad, models, methods, unit, meta):   # the Probe tab, stage by stage
        ...                                     # stage.reports: one report per model, as probe_api's

A request is checked once, here, before any model loads (:func:`check_request`); the model host
(accapp.service.host) scores it. A stage is one engine call, so other visitors' requests get the
model between stages.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pandas as pd

from accapp import benchmarks
from accapp.engine import PairResult, detect_language
from accapp.errors import UserError, validate_sentence
from accapp.methods import describe, descriptors, for_model, headline_methods, ids_for, method_ids, split_stages, stage_families
from accapp.methods.base import MethodScore
from accapp.models import DEFAULT_MODEL, get_spec
from accapp.schema import IDENTICAL_WARNING, pair_flag
from accapp.service import context as pair_context
from accapp.service import expected, probe_cache, ratings, region, verdicts
from accapp.service.gpu import method_count, model_call
from accapp.service.host import get_state
from accapp.service.pairs import find_pair

# The method whose benchmark accuracy the probe shows first, per model kind: the headline method.
DEFAULT_BENCH_METHOD = headline_methods()
PAIR_KEYS = ("benchmark", "paradigm", "phenomenon", "pair_id")
RUN_KEY = ["method", "template", "variant"]
probe_methods = ids_for  # the method ids a probe runs, checked against the model's kind (accapp.methods.ids_for)


# ------------------------------------------------------------------------------------------ methods
def method_name(method_id: str) -> str:
    m = descriptors().get(method_id)
    return m.name if m else method_id


def family(method_id: str) -> str:
    m = descriptors().get(method_id)
    return m.family if m else ""


def method_choices(kind: str) -> list[tuple[str, str]]:
    """(label, id) of every method a model kind can run, in display order."""
    return [(f"{describe(i).name}  ({describe(i).family})", i) for i in method_ids(kind)]


def model_id_of(model) -> str:
    """A request's model id (None or '' = the default model); anything but a string id is refused
    with a message here, before it reaches code that expects one."""
    if model is None or model == "":
        return DEFAULT_MODEL
    if not isinstance(model, str):
        raise UserError(f"The model must be a model id (a string such as '{DEFAULT_MODEL}'), not a {type(model).__name__}.")
    return model


def model_spec(model):
    """The spec of a request's model (model_id_of's checks first)."""
    return get_spec(model_id_of(model))


def check_probe(kind: str, good, bad, methods) -> list[str]:
    """Everything about a probe request that can fail without a model: methods, then both sentences."""
    methods = ids_for(kind, methods)
    validate_sentence(good, "acceptable sentence")
    validate_sentence(bad, "unacceptable sentence")
    return methods


def language_mismatch(languages, good: str, bad: str) -> str | None:
    """The pair's language ('en' or 'zh') when the model was not trained for it, else None."""
    lang = detect_language(good or "", bad or "")
    return None if lang in languages else lang


# ------------------------------------------------------------------------------------------ scoring
@model_call(lambda good, bad, methods=None, *_, **__: (1, method_count(methods)))
def probe(engine, good: str, bad: str, methods=None, language: str | None = None, words: bool = False,
          context: str = "") -> PairResult:
    """Score one pair: methods checked against the engine's model kind, the pair through engine.check_pair
    (words=True: with its words, PairResult.words; context: text both sentences follow)."""
    methods = ids_for(engine.kind, methods)
    return engine.score_pairs([checked_pair(engine, good, bad, context)], methods, language, words=words,
                              topk=expected.top_k() if words else 0)[0]


def checked_pair(engine, good, bad, context: str = ""):
    """engine.check_pair, with the context where there is one."""
    return engine.check_pair(good, bad, context=context) if context else engine.check_pair(good, bad)


def majority(scores: list[MethodScore]) -> dict:
    """Majority verdict over the methods' judgments (an ensemble is a vote of other judgments: left out)."""
    judged = [s for s in scores if family(s.method) != "ensemble"]
    counts = Counter(s.verdict for s in judged)
    g, b = counts.get("good", 0), counts.get("bad", 0)
    verdict = "good" if g > b else "bad" if b > g else "tie"
    return {"verdict": verdict, "good": g, "bad": b, "tie": counts.get("tie", 0), "judgments": len(judged)}


def votes_text(s: MethodScore) -> str:
    """What a judgment's model answered, in words: ensemble draws, the A/B letter, Yes/No per sentence."""
    a = s.answers
    if family(s.method) == "ensemble":
        votes = f"P votes {a.p_votes}/5, L votes {a.l_votes}/5" if a.p_votes is not None else ""
        return f"{round(float(s.score_good) * 10)}/10 draws pick good · {votes}"
    if a.letter is not None:
        return f"answered {a.letter}"
    if a.good is not None:
        return f"good → {a.good}, bad → {a.bad}"
    if a.order1 is not None:  # a comparison prompt: its answer with the good sentence as option 1, then as 2
        return f"good as 1 → {a.order1}, good as 2 → {a.order2}"
    return s.prediction


def verdict_records(scores: list[MethodScore]) -> list[dict]:
    """JSON-able verdict table: one record per method x template x answer order."""
    maj = majority(scores)
    out = []
    for s in scores:
        ens = family(s.method) == "ensemble"
        agrees = None if ens or maj["verdict"] == "tie" else s.verdict == maj["verdict"]
        good, bad = float(s.score_good), float(s.score_bad)
        out.append({
            "method": s.method, "name": method_name(s.method), "family": family(s.method),
            "template": s.template, "variant": s.variant, "score_good": good, "score_bad": bad,
            "difference": good - bad, "verdict": s.verdict, "agrees_with_majority": agrees,
            "prediction": s.prediction, "votes": votes_text(s),
        })
    return out


def probe_json(model_id: str, result: PairResult) -> dict:
    """The /probe answer: {model, good, bad, flag ("identical": no pair, schema.pair_flag), majority, verdicts, tokens}."""
    return {"model": model_id, "good": result.pair.good, "bad": result.pair.bad,
            "flag": pair_flag(result.pair.good, result.pair.bad),
            "majority": majority(result.scores), "verdicts": verdict_records(result.scores), "tokens": result.tokens}


def probe_json_full(model_id: str, spec, result: PairResult, words: dict | None, reliability: dict,
                    pending: list[str] | None = None, word_rule: str = "", unit: str = "bits") -> dict:
    """The whole probe answer for one model: probe_json plus the headline, the words, the warnings,
    one vote per method by family and the reliability flags (the page renders exactly this)."""
    from accapp.analysis.hu_levy import SOURCE_3A, SOURCE_3B, pair_answers

    out = probe_json(model_id, result)
    votes = verdicts.method_votes(result.scores, reliability)
    families = verdicts.family_agreement(votes)
    lang = detect_language(result.pair.good, result.pair.bad)
    out.update(
        model_name=spec.name, kind=spec.kind,
        headline=verdicts.headline(spec.kind, result.scores, words, unit),
        words=_public_words(words), word_rule=word_rule,
        warnings=verdicts.warnings(result.pair.good, result.pair.bad, result.len_good, result.len_bad,
                                   spec.languages, lang) + list(result.unavailable.values()),  # methods the model cannot run, and why
        methods=votes, families=families, agreement=verdicts.overall(families),
        split=verdicts.split_explained(votes, result.len_good, result.len_bad),  # why the methods disagree, if they do
        reliability={m: r.as_dict() for m, r in reliability.items()},
        reliability_benchmark=benchmark_for(lang) if reliability else None,
        pending=list(pending or []), len_good=result.len_good, len_bad=result.len_bad,
    )
    if words and words.get("good") and words.get("bad"):
        out["difference"] = verdicts.difference_strip(words["good"], words["bad"])
    out["humans"] = ratings.humans_of(model_id, result.pair.good, result.pair.bad)  # a built-in rated pair
    out["expected"] = expected.report(result, spec.kind, words)  # what the model expected instead, first where they differ
    out["hu_levy"] = pair_answers(out["verdicts"])  # Hu & Levy's own measures of the metalinguistic prompts
    out["hu_levy_sources"] = {"judgment": SOURCE_3A, "comparison": SOURCE_3B}
    return out


def _public_words(words: dict | None) -> dict | None:
    """Per sentence, each word {word, start, end, surprisal_bits, surprisal_nats, tokens, ...}."""
    if not words:
        return None
    return {k: [dict(w, surprisal_nats=-w["logprob"], surprisal_bits=-w["logprob"] / verdicts.LN2) for w in ws]
            for k, ws in words.items()}


# ------------------------------------------------------------------------------------------ stages
# The probe's stages, ((stage, its families), ...) in the order they run: the methods' descriptors
# say which (accapp/methods/data/methods.json).
STAGES = stage_families()


def stages(methods: list[str]) -> list[tuple[str, list[str]]]:
    """The methods split into STAGES (non-empty stages only, each in the given order)."""
    return split_stages(methods)


def probe_stage(engine, good: str, bad: str, methods: list[str], with_words: bool = False, context: str = ""):
    """One stage of a probe: (PairResult, words or None, the word rule); words = {"good": [...],
    "bad": [...]}, each word's record from Engine.word_scores (the first stage asks for them)."""
    result = probe(engine, good, bad, methods, words=with_words, context=context)
    return result, result.words, engine.word_rule if with_words else ""


@model_call(lambda items: (len(items), max((method_count(item[2]) for item in items), default=1)))
def probe_stages(engine, items: list[tuple]) -> list:
    """Several visitors' probe stages in one engine call, their forward passes shared: items are
    (good, bad, methods, with_words[, context]); per item, probe_stage's answer, or the UserError of its pair
    (one bad pair fails only itself). Items asking for the same methods and words score together."""
    out: list = [None] * len(items)
    groups: dict = {}
    for i, (good, bad, methods, with_words, *context) in enumerate(items):
        try:
            methods = ids_for(engine.kind, methods)
            groups.setdefault((tuple(methods), bool(with_words)), []).append((i, checked_pair(engine, good, bad, *context)))
        except UserError as exc:
            out[i] = exc
    for (methods, with_words), members in groups.items():
        results = engine.score_pairs([pair for _, pair in members], list(methods), None, words=with_words,
                                     topk=expected.top_k() if with_words else 0)  # with the words: what it expected
        for (i, _), result in zip(members, results):
            out[i] = (result, result.words, engine.word_rule if with_words else "")
    return out


def batched_stage(model_id: str, good: str, bad: str, methods, with_words: bool = False, context: str = "", state=None):
    """probe_stage through the app's host, batched with the other visitors' stages waiting for the same
    model (AppState.batched): (PairResult, words or None, the word rule, where it ran). A stage asked
    before with the same model, settings and methods answers from service.probe_cache (the cache of
    repeats, or the gallery's shipped answers) without the model."""
    state = state or get_state()
    key = probe_cache.stage_key(model_id, good, bad, methods, with_words, context, state)
    answer = probe_cache.lookup(key, state)
    if answer is None:
        answer = state.batched(model_id, probe_stages, (good, bad, methods, with_words, context))
        probe_cache.remember(key, answer, state)
    return answer


def merge(first: PairResult | None, more: PairResult) -> PairResult:
    """A pair's result with a later stage's judgments added (tokens from the first)."""
    if first is None:
        return more
    return PairResult(first.pair, first.tokens, first.scores + more.scores, first.len_good, first.len_bad,
                      first.detail or more.detail, unavailable={**first.unavailable, **more.unavailable},
                      expected=first.expected or more.expected)


def benchmark_for(language: str) -> str:
    """The built-in benchmark in a language (its run tells how reliable a method is there)."""
    return benchmarks.for_language(language)


def reliability_for(store, model_id: str, good: str, bad: str, meta: dict | None = None) -> dict:
    """service.reliability for the model on the pair's benchmark (its own, or the one in its language)."""
    from accapp.service.reliability import CACHE

    if store is None:
        return {}
    bench = meta["benchmark"] if meta and meta.get("benchmark") in benchmarks.BUILTIN else benchmark_for(
        detect_language(good or "", bad or ""))
    return CACHE.get(store, model_id, bench)


def pll_details(result: PairResult) -> dict | None:
    """A masked LM's per-token PLL detail of both sentences as plain dicts (None for a causal LM)."""
    if not result.detail:
        return None
    return {k: (v.to_dict() if hasattr(v, "to_dict") else v) for k, v in result.detail.items()}


# ------------------------------------------------------------------------------------------ benchmark context
def pair_meta(good: str, bad: str, meta: dict | None = None) -> dict | None:
    """The benchmark pair behind these sentences: `meta` when it is theirs, else BLiMP's or CLiMP's, else None."""
    good, bad = (good or "").strip(), (bad or "").strip()
    if meta and meta.get("good") == good and meta.get("bad") == bad:
        return meta
    return find_pair(good, bad)


def pair_rows(store, model_id: str, meta: dict | None, good: str, bad: str) -> pd.DataFrame:
    """The precomputed run's rows for this very pair: by benchmark + paradigm + pair_id, else by the sentences."""
    if meta:
        rows = store.pair_rows(model_id, benchmark=meta["benchmark"], paradigm=meta["paradigm"],
                               pair_id=str(meta["pair_id"]))
        if not rows.empty:
            return rows
    return store.pair_rows(model_id, good=(good or "").strip(), bad=(bad or "").strip())


def _meta_of(rows: pd.DataFrame) -> dict:
    return {k: str(rows[k].iloc[0]) for k in PAIR_KEYS}


@dataclass
class RunContext:
    """What the model's precomputed run says beside the verdict table."""

    meta: dict | None  # the pair's benchmark, paradigm, phenomenon, pair_id (None: not a benchmark pair)
    # per method x template x variant: correct (this pair in the run), phen_accuracy (% on its
    # phenomenon); None when the model has no run on the pair's benchmark
    run: pd.DataFrame | None = None

    @property
    def has_run(self) -> bool:
        return self.run is not None and not self.run.empty


def run_context(store, model_id: str, meta: dict | None, good: str, bad: str) -> RunContext:
    """The run's accuracy on the pair's phenomenon and its verdict on this pair, per judgment.
    `store` None (no results to read) gives no context."""
    from accapp.analysis import accuracy_by_phenomenon

    if store is None:
        return RunContext(meta)
    rows = pair_rows(store, model_id, meta, good, bad)
    if meta is None and not rows.empty:
        meta = _meta_of(rows)
    if meta is None or model_id not in store.models(meta["benchmark"]):
        return RunContext(meta)
    try:
        acc = accuracy_by_phenomenon(store, model_id, meta["benchmark"], None, template=None)
        acc = acc[acc.phenomenon == meta["phenomenon"]][["method", "template", "accuracy"]]
    except UserError:
        acc = pd.DataFrame(columns=["method", "template", "accuracy"])
    run = rows[RUN_KEY + ["correct"]].copy()
    run = run.merge(acc.rename(columns={"accuracy": "phen_accuracy"}), on=["method", "template"], how="outer")
    for c in RUN_KEY:
        run[c] = run[c].fillna("").astype(str)
    return RunContext(meta, run)


def _number(v) -> float | None:
    return None if v is None or pd.isna(v) else float(v)


def with_run(records: list[dict], ctx: RunContext) -> list[dict]:
    """The verdict records, each with `run_accuracy` (% on the pair's phenomenon) and `run_correct`
    (this pair in the run: 1 right, 0 wrong, an ensemble's share of draws), None where the run has none."""
    found: dict[tuple, dict] = {}
    if ctx.has_run:
        for row in ctx.run.to_dict("records"):
            found.setdefault(tuple(row[c] for c in RUN_KEY), row)
    out = []
    for r in records:
        row = found.get((r["method"], str(r["template"]), str(r["variant"] or "")), {})
        out.append(dict(r, run_accuracy=_number(row.get("phen_accuracy")), run_correct=_number(row.get("correct"))))
    return out


@dataclass
class MethodContext:
    """How one method with one model did on the pair's phenomenon, and on the pair itself."""

    meta: dict | None  # None: not a benchmark pair, nothing more to say
    human_accuracy: float | None = None  # published human accuracy on the phenomenon (BLiMP)
    human_source: str | None = None
    has_run: bool = False  # a precomputed run of this method with this model on the pair's benchmark
    template: str = "-"  # the template the numbers are for: the method's best
    phen_accuracy: float | None = None  # % right on the pair's phenomenon (None: no pair of it in the run)
    phen_pairs: int | None = None
    overall_accuracy: float | None = None  # % over the whole benchmark
    pair_correct: float | None = None  # this pair: 1 right, 0 wrong, between: share of judgments right; None: not sampled


def method_context(store, model_id: str, method: str, meta: dict | None, good: str, bad: str) -> MethodContext:
    from accapp.analysis import accuracy_by_phenomenon, accuracy_overall, published_human

    meta = pair_meta(good, bad, meta)
    rows = pair_rows(store, model_id, meta, good, bad)
    if meta is None and not rows.empty:
        meta = _meta_of(rows)
    if meta is None:
        return MethodContext(None)
    bench, phen = meta["benchmark"], meta["phenomenon"]
    ctx = MethodContext(meta)
    human = published_human(store, bench, "phenomenon")
    h = human[human.phenomenon == phen] if not human.empty else human
    if len(h):
        ctx.human_accuracy, ctx.human_source = float(h.accuracy.iloc[0]), str(h.source.iloc[0])
    if model_id not in store.models(bench) or method not in store.methods(model_id, bench):
        return ctx
    ctx.has_run = True
    acc = accuracy_by_phenomenon(store, model_id, bench, [method], template="best")
    a = acc[acc.phenomenon == phen]
    ov = accuracy_overall(store, model_id, bench, [method], template="best")
    ctx.template = str(a.template.iloc[0]) if len(a) else (str(ov.template.iloc[0]) if len(ov) else "-")
    if len(a):
        ctx.phen_accuracy, ctx.phen_pairs = float(a.accuracy.iloc[0]), int(a.pairs.iloc[0])
    if len(ov):
        ctx.overall_accuracy = float(ov.accuracy.iloc[0])
    mine = rows[(rows.method == method) & (rows.template.astype(str) == ctx.template)]
    if len(mine):
        ctx.pair_correct = float(mine.correct.mean())
    return ctx


# ------------------------------------------------------------------------------------------ one call
@dataclass(frozen=True)
class ProbeRequest:
    """A probe request as checked at the service's boundary, before any model loads."""

    model_id: str
    spec: object  # the model's accapp.models.ModelSpec
    good: str
    bad: str
    methods: list[str]  # the method ids to run, each one the model's kind can run
    context: str = ""  # text both sentences follow (accapp/scoring/context.py), checked; "" = none


def check_request(model, good, bad, methods, runnable_only: bool = False, context=None) -> ProbeRequest:
    """Both sentences, the model (a string id; None or '' = the default), then the methods for its kind,
    then the context. runnable_only (the Probe tab, where two models may differ in kind): of the methods,
    those the model can run, or all of its own where it can run none."""
    validate_sentence(good, "acceptable sentence")
    validate_sentence(bad, "unacceptable sentence")
    model_id = model_id_of(model)
    spec, ids = for_model(model_id, methods, runnable_only)
    return ProbeRequest(model_id, spec, good, bad, ids, pair_context.check_context(context))


def store_or_none():
    """The host's results store, or None: no store means no benchmark context, never a failed probe."""
    try:
        return get_state().store()
    except Exception:  # noqa: BLE001 - see above
        return None


def probe_api(model, good: str, bad: str, methods=None, context=None) -> dict:
    """The /probe answer in one call: the request checked, the pair scored on the model host with
    every method in one stage, and the whole report (probe_json_full) with where it ran. A [[...]]
    region in the sentences is stripped before scoring and reported (service/region.py); `context`:
    text both sentences follow (service/context.py)."""
    good, bad, regions = region.split_pair(good, bad)
    request = check_request(model, good, bad, methods or None, context=context)
    result, words, rule, where = batched_stage(request.model_id, good, bad, request.methods, True,
                                                         request.context)
    rel = reliability_for(store_or_none(), request.model_id, good, bad, pair_meta(good, bad))
    out = dict(probe_json_full(request.model_id, request.spec, result, words, rel, [], rule, "bits"), ran_on=where)
    return attach(out, request.context, regions, "bits")


def attach(report: dict, context: str, regions: dict | None, unit: str) -> dict:
    """The report with its context and its region (service/context.py, service/region.py); the
    headline then speaks of the region the user marked, when there is one."""
    region.attach(pair_context.attach(report, context), regions)
    report["headline"] = verdicts.with_region(report.get("headline"), report.get("region"), unit)
    return report


@dataclass
class Stage:
    """What the Probe tab shows after a stage: saved = {"reports": [a, b or None], "models": [...]}
    (None before the first stage), the pair's benchmark meta, and the stages still to come."""

    saved: dict | None
    meta: dict | None
    pending: list[str]
    first: bool = False  # the first stage: the words and tokens (later stages add judgments only)
    loading: list[str] = field(default_factory=list)  # before the first stage: the models that load first, by name
    notice: str = ""  # before the first stage: what is known of the pair before any method runs (identical sentences)


def staged_probe(good: str, bad: str, models: list[str], methods, unit: str = "bits", meta: dict | None = None,
                 go_on=lambda: True, context=None):
    """The probe of one model or two, in stages (a generator of Stage): the sentence-probability
    methods first, then the in-template and prompting methods as they finish. Side by side, each
    model's stages run on a thread of their own and each shows as it finishes: the first model's
    answer never waits for the second model's loading. Stops at the next stage once
    go_on() is false (a newer probe of the same visitor owns the page). A [[...]] region is
    stripped before scoring and reported (service/region.py); `context`: text both sentences follow."""
    host = get_state()
    good, bad, regions = region.split_pair(good, bad)
    requests = {m: check_request(m, good, bad, methods, runnable_only=True, context=context) for m in models}
    context = requests[models[0]].context
    meta = pair_meta(good, bad, meta)
    store = store_or_none()
    rel = {m: reliability_for(store, m, good, bad, meta) for m in models}
    plan = {m: stages(r.methods) for m, r in requests.items()}
    yield Stage(None, meta, [], loading=[r.spec.name for m, r in requests.items() if not host.is_loaded(m)],
                notice=IDENTICAL_WARNING if pair_flag(good, bad) else "")
    results, words, rules, reports = {}, {}, {}, {}
    whole = answered_whole(host, plan, good, bad, context)  # every stage known already: one step, drawn once
    source = whole if whole is not None else stages_as_they_finish(host, plan, good, bad, go_on, context)
    for m, k, (res, w, rule, where) in source:
        r = requests[m]
        results[m] = merge(results.get(m), res)
        words[m], rules[m] = (w, rule) if w else (words.get(m), rules.get(m, ""))
        pending = [label for label, _ in plan[m][k + 1:]]
        reports[m] = dict(probe_json_full(m, r.spec, results[m], words[m], rel[m], pending, rules[m], unit),
                          ran_on=where)
        attach(reports[m], context, regions, unit)
        waiting = [x for x in models if x not in reports]  # no stage of theirs yet: loading, or scoring
        todo = [p for x in waiting for p, _ in plan[x]] + [p for rep in reports.values() for p in rep["pending"]]
        pending = sorted(set(todo), key=[s[0] for s in STAGES].index)
        saved = {"reports": [reports.get(x) for x in models] + [None] * (2 - len(models)), "models": models}
        if not pending:
            meta = _finish(saved, store, models[0], results[models[0]], meta, good, bad)
        yield Stage(saved, meta, pending, first=k == 0 or whole is not None,
                    loading=[requests[x].spec.name for x in waiting if not host.is_loaded(x)])


def answered_whole(host, plan: dict, good: str, bad: str, context: str = ""):
    """[(model, its last stage's index, every stage's answer merged)] when the cache or the shipped answers
    hold every stage of every model (service.probe_cache), else None: the probe runs stage by stage."""
    out = []
    for m, stages_of_m in plan.items():
        answers = [probe_cache.lookup(probe_cache.stage_key(m, good, bad, methods, k == 0, context, host), host)
                   for k, (_, methods) in enumerate(stages_of_m)]
        if not answers or any(a is None for a in answers):
            return None
        result = None
        for answer in answers:
            result = merge(result, answer[0])
        first = answers[0]
        out.append((m, len(answers) - 1, (result, first[1], first[2], first[3])))
    return out


_DONE = object()


def stages_as_they_finish(host, plan: dict, good: str, bad: str, go_on=lambda: True, context: str = ""):
    """(model, stage index, host.probe_stage's answer) for each model's stages, in the order they
    finish: each model's stages run in order on a thread of its own (in the caller's contextvars:
    ZeroGPU reads the visitor's request from them), so a model that is loading holds back only its
    own. The first error raises here; on return or close the threads start no further stage."""
    import contextvars
    import queue
    import threading

    answers: queue.Queue = queue.Queue()
    stop = threading.Event()

    def run(m):
        try:
            for k, (_, methods) in enumerate(plan[m]):
                if stop.is_set() or not go_on():
                    break
                answers.put((m, k, batched_stage(m, good, bad, methods, k == 0, context, state=host)))
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller
            answers.put((m, None, exc))
        finally:
            answers.put((m, None, _DONE))

    for m in plan:
        threading.Thread(target=contextvars.copy_context().run, args=(run, m), name=f"probe-{m}", daemon=True).start()
    running = len(plan)
    try:
        while running:
            m, k, answer = answers.get()
            if answer is _DONE:
                running -= 1
            elif k is None:
                raise answer
            elif not go_on():
                return
            else:
                yield m, k, answer
    finally:
        stop.set()


def _finish(saved: dict, store, model_id: str, result, meta, good, bad) -> dict | None:
    """The first model's report gets its run context (the precomputed run beside each judgment)
    and its masked-LM detail. Returns the pair's benchmark meta (found in the run if not before)."""
    a = saved["reports"][0]
    run = run_context(store, model_id, meta, good, bad)
    a["verdicts_run"] = with_run(a["verdicts"], run)
    a["has_run"] = run.has_run
    a["phenomenon"] = run.meta["phenomenon"] if run.meta else None
    a["pll"] = pll_details(result)
    return run.meta
