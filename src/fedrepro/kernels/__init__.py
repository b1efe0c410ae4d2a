"""Compiled loops for the few kernels where NumPy/SciPy/torch pass over memory more often than the arithmetic
needs (issue 19): the CuteMaxVar iteration's sparse products and quantizer, the decentral engine's momentum
and gossip passes.

Each kernel performs the same floating-point operations, in the same order, as the library calls it replaces,
so results are bit-identical whichever path runs (tests/kernels). The kernels are compiled with numba when it
is installed (a dependency of the project); ``available()`` is False without it, or with FEDREPRO_KERNELS=0
in the environment, and every caller then takes its NumPy/SciPy/torch path.
"""

from __future__ import annotations

import os

_NUMBA = None


def available() -> bool:
    """Whether the compiled kernels can be used (numba importable and not switched off)."""
    global _NUMBA
    if os.environ.get("FEDREPRO_KERNELS", "1") == "0":
        return False
    if _NUMBA is None:
        try:
            import numba  # noqa: F401

            _NUMBA = True
        except ImportError:
            _NUMBA = False
    return _NUMBA
