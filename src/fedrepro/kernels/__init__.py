"""Compiled loops (numba) for the few calls where NumPy/SciPy/torch pass over memory more often than the arithmetic
needs. Each kernel is general (no dependence on a CPU family or a vendor library's summation order) and at least
1.3x faster than the call it replaces at paper size (benchmarks/bench_kernels.py; ratios on a 2-core AMD EPYC in
benchmarks/results/kernels.csv):

- ``sparse.csr_matmul_into``: M = X Q for the gcca CSR views (SciPy's csr @ dense), 1.9x (Fig. 8 size).
- ``sparse.csr_batch_gradient_into``: the CuteMaxVar minibatch gradient X_Fᵀ (X_F Q - Ĝ_F) without building
  X_F (SciPy's row slice and two products), 1.8x.
- ``sparse.maxabs_quantize_add``: CuteMaxVar's copy update x̂ += C̃(x - x̂) in one pass (NumPy's quantizer), 1.8x.
- ``dense.momentum_step``: the decentral engine's momentum/Nesterov update in one pass (torch's four or five), 3.0x
  (thesis Fig. 3.4: 60 nodes x 7,840).
- ``dense.gossip_add``: the engine's x += γ (W x̂ - x̂) over neighbour lists (torch's mixer, difference, product
  and sum), 4.3x.
- ``dense.sign_scale_add``: the scaled sign compressor's x̂ += scale · sign(x) (five torch passes), 4.0x.
- ``dense.top_magnitudes``: top-k of |x| by strided block maxima, where the answer is unique (torch.topk), 4.1x.

Results agree with the plain path to float rounding (tests/kernels: relative 1e-5 for float32, 1e-10 for
float64), and no verdict of a claims CSV depends on which path ran (tests/kernels/test_kernels_workflow.py).

Switch: ``FEDREPRO_KERNELS=0`` takes the plain path everywhere; ``FEDREPRO_KERNELS=always`` takes the kernels for
every call whatever its size (to test them on small inputs); unset or ``1``, callers asking ``compiled(name, work)``
get the kernel module for calls of at least MIN_WORK element operations and None (their plain path) below it, where
numba is missing, or where it does not import.

Cost model (the workflow runs many short processes, each its own Python): importing numba takes about 0.4 s, a
kernel's first call loads its machine code from numba's on-disk cache (tens of ms) or, the first time on a
machine or after its source changed, compiles it (0.2-1 s). A call below MIN_WORK takes well under a millisecond
in the library, so such calls keep the library path, and a process whose every call is small (the smoke scale,
the small gcca instances) never imports numba.
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
