"""SyntaxGym test suites: reading, prediction formulas, region surprisals, evaluation and scoring."""

from accapp.suites.catalog import circuit_accuracies, circuits, list_suites, load_suite, published_accuracies
from accapp.suites.evaluate import Outcome, SuiteEvaluation, evaluate_item, evaluate_suite
from accapp.suites.formula import MAX_FORMULA_CHARS
from accapp.suites.formula import evaluate as evaluate_formula
from accapp.suites.formula import parse as parse_formula
from accapp.suites.regions import region_surprisals, surprisals_from_words
from accapp.suites.score import ScoredSuite, score_item, score_suite
from accapp.suites.suite import Condition, Item, Prediction, Suite, build_sentence, read_suite, suite_as_dict

__all__ = [
    "Condition", "Item", "MAX_FORMULA_CHARS", "Outcome", "Prediction", "ScoredSuite", "Suite", "SuiteEvaluation",
    "build_sentence", "circuit_accuracies", "circuits", "evaluate_formula", "evaluate_item", "evaluate_suite",
    "list_suites", "load_suite", "parse_formula", "published_accuracies", "read_suite", "region_surprisals",
    "score_item", "score_suite", "suite_as_dict", "surprisals_from_words",
]
