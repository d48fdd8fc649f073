"""Score minimal pairs with a masked LM under the PLL variants (Kauf & Ivanova 2023).

The masked counterpart of accapp.methods.engine.Engine, with the same calls:

    engine = masked_engine(args)       # args: .model .dtype .quantization .methods .language .batch_size
    result = engine.score_pair(good, bad, methods="all", language=None)
    results = engine.score_pairs([Pair(good, bad), ...], methods, language)

Methods: ``pll_original``, ``pll_word_l2r``, ``pll_whole_word``, ``pll_sentence_l2r``
("all" or None = the four; any other id raises UserError). A result is a
``MaskedPairResult`` (a ``PairResult``):
- ``rows``: one per method, {method, template "-", variant "", score_good, score_bad,
  verdict ("good"/"bad"/"tie", strictly greater wins), prediction ""};
- ``tokens``: "good"/"bad" -> [{token, start, end, logprob}] with the PLL-original log-probs;
- ``len_good`` / ``len_bad``: tokens of the bare sentences, special tokens excluded;
- ``detail``: "good"/"bad" -> ``accapp.scoring.masked.SentencePLL``: per token its log-prob
  under every computed variant, the token indices masked for it and its word; per word the
  summed log-probs, ``inflation`` (original - word-l2r, nats) and the ``inflated`` flag.
  ``detail[...].to_dict()`` gives plain JSON.
PLL-original and PLL-word-l2r are always computed besides the methods asked for (the token
view and the inflation flag need them; their copies mostly coincide, so this costs little).

For the app's per-variant view of one sentence: ``engine.token_table(sentence)`` (all four
variants; validated like a pair); ``engine.masked_copies(sentence, method_id)`` lists the
masked inputs a method feeds the model, as text.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from accapp.errors import UserError, check_token_length, validate_sentence
from accapp.methods.base import Pair
from accapp.methods.engine import PairResult
from accapp.methods.formulas import verdict
from accapp.methods.pll import METHOD_PREFIX, VARIANTS, mask_sets, resolve_pll
from accapp.scoring.masked import DEFAULT_CHUNK_SIZE, MaskedScorer, SentencePLL, load_masked_model

ALWAYS = ("original", "word_l2r")  # computed on every run: token view + inflation flag


@dataclass
class MaskedPairResult(PairResult):
    detail: dict = field(default_factory=dict)  # "good"/"bad" -> SentencePLL


class MaskedEngine:
    def __init__(self, scorer: MaskedScorer, language: str | None = None, cache_size: int = 512) -> None:
        self.scorer = scorer
        self.lm = scorer.lm
        self.language = language
        self.cache_size = cache_size
        self._cache: OrderedDict = OrderedDict()  # sentence -> SentencePLL

    # ---- input -------------------------------------------------------------------------
    def check_sentence(self, text: str, label: str = "sentence") -> str:
        text = validate_sentence(text, label)
        n = self.scorer.n_tokens(text)
        check_token_length(n, label)
        if n == 0:
            raise UserError(f"The {label} has no token for this model.")
        return text

    def check_pair(self, good: str, bad: str) -> Pair:
        return Pair(self.check_sentence(good, "good sentence"), self.check_sentence(bad, "bad sentence"))

    # ---- scoring -------------------------------------------------------------------------
    def sentence_details(self, texts: list[str], variants) -> list[SentencePLL]:
        """SentencePLL of each text with at least `variants`, from the cache where possible."""
        want = set(variants)
        missing = [t for t in dict.fromkeys(texts) if not (t in self._cache and want <= set(self._cache[t].variants))]
        if missing:
            order = tuple(v for v in VARIANTS if v in want)
            for t, d in zip(missing, self.scorer.score_sentences(missing, order)):
                self._cache[t] = d
        out = []
        for t in texts:
            self._cache.move_to_end(t)
            out.append(self._cache[t])
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return out

    def score_pairs(self, pairs: list[Pair], methods=None, language: str | None = None) -> list[MaskedPairResult]:
        variants = resolve_pll(methods)
        needed = tuple(v for v in VARIANTS if v in set(variants) | set(ALWAYS))
        texts = [s for p in pairs for s in (p.good, p.bad)]
        details = {}
        # Chunks of pairs keep the cache from evicting what this call still needs.
        step = max(1, self.cache_size // 4)
        for i in range(0, len(texts), step):
            for t, d in zip(texts[i : i + step], self.sentence_details(texts[i : i + step], needed)):
                details[t] = d
        out = []
        for p in pairs:
            g, b = details[p.good], details[p.bad]
            rows = [
                {
                    "method": METHOD_PREFIX + v,
                    "template": "-",
                    "variant": "",
                    "score_good": float(g.scores[v]),
                    "score_bad": float(b.scores[v]),
                    "verdict": verdict(g.scores[v], b.scores[v]),
                    "prediction": "",
                }
                for v in variants
            ]
            toks = {
                key: [{"token": t.token, "start": t.start, "end": t.end, "logprob": float(t.logprob["original"])} for t in d.tokens]
                for key, d in (("good", g), ("bad", b))
            }
            out.append(MaskedPairResult(p, toks, rows, len(g.tokens), len(b.tokens), {"good": g, "bad": b}))
        return out

    def score_pair(self, good: str, bad: str, methods=None, language: str | None = None) -> MaskedPairResult:
        resolve_pll(methods)  # bad method ids fail before any work
        return self.score_pairs([self.check_pair(good, bad)], methods, language)[0]

    def token_table(self, sentence: str, variants=VARIANTS) -> SentencePLL:
        """Per-token and per-word PLL detail of one sentence under the given variants (default all four)."""
        if isinstance(variants, str):
            variants = [variants]
        variants = [v[len(METHOD_PREFIX):] if v.startswith(METHOD_PREFIX) else v for v in variants]
        unknown = [v for v in variants if v not in VARIANTS]
        if unknown:
            raise UserError(f"Unknown PLL variant(s): {', '.join(unknown)}. Known: {', '.join(VARIANTS)}.")
        text = self.check_sentence(sentence)
        return self.sentence_details([text], tuple(dict.fromkeys(list(variants) + list(ALWAYS))))[0]

    def masked_copies(self, sentence: str, method_id: str) -> list[dict]:
        """The masked inputs a PLL method feeds the model, one per scored token, as text."""
        (variant,) = resolve_pll([method_id])
        text = self.check_sentence(sentence)
        enc = self.scorer.encode(text)
        tok = self.scorer.tokenizer
        shown = []
        for t, m in enumerate(mask_sets(enc.word_of, variant)):
            pieces = tok.convert_ids_to_tokens(self.scorer.masked_input(text, m))
            shown.append({"kind": f"predicts token {t} ({enc.pieces[t]})", "masked": list(m), "text": " ".join(pieces)})
        return shown

    def prompts_for(self, pair: Pair, method_id: str, language: str | None = None) -> list[dict]:
        """Like Engine.prompts_for: the masked copies of both sentences."""
        return [
            dict(row, kind=f"{label}: {row['kind']}")
            for label, s in (("good", pair.good), ("bad", pair.bad))
            for row in self.masked_copies(s, method_id)
        ]


def masked_engine(args) -> MaskedEngine:
    """Build the engine for a registry masked LM from CLI-style args.

    Uses args.model, args.dtype (default fp32), args.quantization (default None),
    args.language; the chunk size (masked copies per forward pass) is args.chunk_size when
    present, else args.batch_size, else DEFAULT_CHUNK_SIZE.
    """
    resolve_pll(getattr(args, "methods", None))
    lm = load_masked_model(args.model, getattr(args, "dtype", "fp32") or "fp32", getattr(args, "quantization", None))
    chunk = getattr(args, "chunk_size", None) or getattr(args, "batch_size", None) or DEFAULT_CHUNK_SIZE
    return MaskedEngine(MaskedScorer.from_loaded(lm, chunk_size=int(chunk)), getattr(args, "language", None))
