"""Compiled loops for the few kernels where NumPy/SciPy/torch pass over memory more often than the arithmetic
needs (issue 19): the CuteMaxVar iteration's sparse products and quantizer, the decentral engine's momentum
and gossip passes.

Each kernel performs the same floating-point operations, in the same order, as the library calls it replaces,
so results are bit-identical whichever path runs (tests/kernels). The kernels are compiled with numba when it
is installed (a dependency of the project). Callers ask ``compiled(name, work)`` for the kernel module; they get
None, and take their NumPy/SciPy/torch path, where numba is missing or does not import, where FEDREPRO_KERNELS=0
is set in the environment, or where the call is too small to pay (``MIN_WORK``).

Cost model (the workflow runs many short processes, each its own Python): importing numba takes about 0.4 s, a
kernel's first call loads its machine code from numba's on-disk cache (tens of ms) or, the first time on a
machine or after its source changed, compiles it (0.2-1 s). A call below MIN_WORK element operations takes well
under a millisecond in NumPy/SciPy/torch, so the kernel would save microseconds per call while costing its
process those fixed seconds: such calls keep the library path, and a process whose every call is small (the
smoke scale, the small gcca instances) never imports numba.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from types import ModuleType

# element operations (multiply-adds, or elements passed over) of one call below which the library path is taken
MIN_WORK = 100_000

_NUMBA: bool | None = None


SWITCH = "FEDREPRO_KERNELS"          # "0": never; "always": every call, whatever its size; else above MIN_WORK
_SETTINGS = ("0", "1", "always")


def _setting() -> str:
    value = os.environ.get(SWITCH, "1")
    if value not in _SETTINGS:
        raise ValueError(f"{SWITCH} must be one of {', '.join(_SETTINGS)} (unset: 1); got {value!r}")
    return value


def available() -> bool:
    """Whether the compiled kernels can be used (numba installed and not switched off); imports nothing."""
    global _NUMBA
    if _setting() == "0":
        return False
    if _NUMBA is None:
        _NUMBA = importlib.util.find_spec("numba") is not None
    return _NUMBA


def compiled(name: str, work: int) -> ModuleType | None:
    """The kernel module ``fedrepro.kernels.<name>`` for a call doing ``work`` element operations, or None (take
    the library path): kernels off or unavailable, or work < MIN_WORK (unless FEDREPRO_KERNELS=always). numba is imported here, on first use."""
    global _NUMBA
    if (work < MIN_WORK and _setting() != "always") or not available():
        return None
    try:
        return importlib.import_module(f"fedrepro.kernels.{name}")
    except ImportError:   # a numba that does not import (e.g. built for another NumPy): the library path
        _NUMBA = False
        return None
