"""Thesis ch. 5: representation transfer from pre-trained linear regression models (Table 5.1)."""

from fedrepro.transfer.representation import gd_least_squares, phase1_fit, error_ratios

__all__ = ["gd_least_squares", "phase1_fit", "error_ratios"]
