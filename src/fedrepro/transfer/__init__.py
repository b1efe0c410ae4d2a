"""Thesis ch. 5: representation transfer from pre-trained linear regression models (Table 5.1)."""

from fedrepro.lazy import lazy_getattr

# Names resolve lazily (PEP 562): importing one module of the package does not import the others, so start-up
# stays fast and a job's code dependencies (derived from imports) stay the modules it really uses.
_EXPORTS = {
    "error_ratios": "fedrepro.transfer.representation",
    "gd_least_squares": "fedrepro.transfer.representation",
    "phase1_fit": "fedrepro.transfer.representation",
}

__getattr__ = lazy_getattr(__name__, _EXPORTS)


__all__ = sorted(_EXPORTS)
