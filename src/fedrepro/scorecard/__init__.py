"""The claims scorecard: each paper number or statement against ours, with a verdict (DESIGN §4)."""

from fedrepro.scorecard.evaluate import VERDICTS, evaluate_claims

__all__ = ["VERDICTS", "evaluate_claims"]
