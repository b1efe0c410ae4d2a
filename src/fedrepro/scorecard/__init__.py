"""The claims scorecard: each paper number or statement against ours, with a verdict (docs/architecture.md, "Claims")."""

from fedrepro.scorecard.evaluate import VERDICTS, evaluate_claims

__all__ = ["VERDICTS", "evaluate_claims"]
