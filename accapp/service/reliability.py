"""Is a method worth a vote for this model? Read from the model's precomputed benchmark run.

A method is "unreliable for this model" when, on the benchmark in the pair's language,
- its accuracy, one vote per pair (its templates and answer orders combined by its rule, as in
  the probe: service.verdicts; a pair where it casts no vote counts half right, a coin flip),
  is not above chance with 95 % confidence: the Wilson interval's low end is at or below 50 %
  (an interval wholly below 50 % means it prefers the unacceptable sentence: no better), or
- it gives one answer to at least ANSWER_BIAS_LIMIT of its prompts (the embedded models answer
  "A" to 99.8-100 % of A/B prompts; SmolLM2 answers "No" to nearly every judgment prompt).
Such a method is shown with the reason and does not vote.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from scipy.stats import norm

from accapp.benchmarks import label_of
from accapp.methods import plain

ANSWER_BIAS_LIMIT = 0.95  # share of one answer at or above which a prompt method is flagged
CONFIDENCE = 0.95
CACHE_SIZE = 32  # (store, model, benchmark) entries: a few models x two benchmarks

# Per pair, one vote per method: a template votes +1 when all its rows (answer orders) are
# right and none is a tie, -1 when all are wrong and none is a tie, else 0; the pair is right
# when the template votes sum above 0 (the majority rule of service.verdicts).
_VOTES_SQL = """
WITH t AS (
  SELECT method, paradigm, pair_id, template,
         CASE WHEN bool_and(correct = 1 AND NOT tie) THEN 1
              WHEN bool_and(correct = 0 AND NOT tie) THEN -1 ELSE 0 END AS vote
  FROM results WHERE model = $model AND benchmark = $benchmark AND method NOT LIKE 'ens_%'
  GROUP BY ALL)
SELECT method, count(*) AS pairs, sum(CASE WHEN s > 0 THEN 1 ELSE 0 END) AS right_votes,
       sum(CASE WHEN s = 0 THEN 1 ELSE 0 END) AS no_votes
FROM (SELECT method, paradigm, pair_id, sum(vote) AS s FROM t GROUP BY ALL) GROUP BY method
"""

# Every answer a prompt method gave: A/B letters, Yes/No per sentence of a judgment prompt,
# and for probability scores (Yes/No prob comp) Yes where P(Yes) > 0.5.
_ANSWERS_SQL = """
SELECT method, answer, count(*) AS n FROM (
  SELECT method, prediction AS answer FROM results
   WHERE model = $model AND benchmark = $benchmark AND prediction IN ('A', 'B')
  UNION ALL
  SELECT method, regexp_extract(prediction, 'good:(\\w+)', 1) FROM results
   WHERE model = $model AND benchmark = $benchmark AND prediction LIKE 'good:%'
  UNION ALL
  SELECT method, regexp_extract(prediction, 'bad:(\\w+)', 1) FROM results
   WHERE model = $model AND benchmark = $benchmark AND prediction LIKE 'good:%'
  UNION ALL
  SELECT method, CASE WHEN s > 0.5 THEN 'Yes' ELSE 'No' END FROM results,
         (SELECT unnest([score_good, score_bad]) AS s)
   WHERE model = $model AND benchmark = $benchmark AND method IN $prob_methods
) GROUP BY ALL
"""


@dataclass(frozen=True)
class Reliability:
    method: str
    benchmark: str
    pairs: int
    accuracy: float  # %, one vote per pair
    low: float  # 95 % Wilson interval, %
    high: float
    top_answer: str | None = None  # the answer it gives most often (prompt methods)
    top_share: float | None = None  # its share of all answers, %

    @property
    def at_chance(self) -> bool:
        return self.low <= 50.0

    @property
    def one_answer(self) -> bool:
        return self.top_share is not None and self.top_share >= ANSWER_BIAS_LIMIT * 100

    @property
    def reliable(self) -> bool:
        return not (self.at_chance or self.one_answer)

    @property
    def reason(self) -> str:
        """Why it does not vote, in words ('' when reliable)."""
        out = []
        if self.one_answer:
            out.append(f"answers {self.top_answer} to {self.top_share:.1f} % of {label_of(self.benchmark)} prompts")
        if self.at_chance:
            where = "includes" if self.high >= 50.0 else "is below"
            out.append(f"{self.accuracy:.1f} % on {self.pairs:,} {label_of(self.benchmark)} pairs "
                       f"(95 % interval {self.low:.1f}-{self.high:.1f} %) {where} chance, 50 %")
        return "; ".join(out)

    def as_dict(self) -> dict:
        return {"method": self.method, "benchmark": self.benchmark, "pairs": self.pairs, "accuracy": self.accuracy,
                "ci_low": self.low, "ci_high": self.high, "top_answer": self.top_answer, "top_answer_share": self.top_share,
                "reliable": self.reliable, "reason": self.reason}


def wilson(k: float, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Wilson score interval of a proportion k / n (k may be a half-integer: no-votes count half)."""
    z = norm.ppf(0.5 + confidence / 2)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * (p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5
    return centre - half, centre + half


def compute(store, model_id: str, benchmark: str) -> dict[str, Reliability]:
    """Reliability of every method in the model's run on the benchmark ({} when there is no run)."""
    if store is None or model_id not in store.models(benchmark):
        return {}
    params = {"model": model_id, "benchmark": benchmark}
    votes = store.query(_VOTES_SQL, params)
    prob = [m for m in votes.method if plain(m)["unit"] == "probability"] or [""]
    answers = store.query(_ANSWERS_SQL, dict(params, prob_methods=prob))
    out = {}
    for row in votes.itertuples():
        k, n = int(row.right_votes) + 0.5 * int(row.no_votes), int(row.pairs)
        low, high = wilson(k, n)
        mine = answers[answers.method == row.method]
        top, share = None, None
        if len(mine) and mine.n.sum() > 0:
            best = mine.sort_values("n", ascending=False).iloc[0]
            top, share = str(best.answer), 100.0 * float(best.n) / float(mine.n.sum())
        out[row.method] = Reliability(row.method, benchmark, n, 100.0 * k / n, 100.0 * low, 100.0 * high, top, share)
    return out


class ReliabilityCache:
    """compute() per (store, model, benchmark), the CACHE_SIZE most recent kept (they only change
    when the store's files do: the key holds the store object, which the app renews then)."""

    def __init__(self, size: int = CACHE_SIZE) -> None:
        self.size = size
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, store, model_id: str, benchmark: str) -> dict[str, Reliability]:
        key = (id(store), model_id, benchmark)
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        value = compute(store, model_id, benchmark)
        with self._lock:
            self._items[key] = value
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return value


CACHE = ReliabilityCache()
