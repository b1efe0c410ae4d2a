"""Element-wise quantizers: identity, CuteMaxVar's max-abs quantizer, QSGD, scaled sign.

Sources:
- identity: full-precision 32-bit floats (gcca q_full, cvfl b = 32, thesis vanilla).
- ``MaxAbsStochasticQuantizer``: Shrestha & Fu, Sec. III-C.2, eqs. (18)-(20), Facts 1-2.
- ``QSGD``: thesis Sec. 2.4 (Alistarh et al. 2017), bits per ch3:A-24 (docs/thesis_ch3.md).
- ``ScaledSign``: thesis Secs. 2.4 and 3.5 (Karimireddy et al. 2019).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from . import _backend as bk
from .base import FULL_PRECISION_BITS, Compressor, Encoding, as_numpy64, check_choice, check_int

if TYPE_CHECKING:  # imported at run time by kernels.compiled(); named here for the import closure (codedeps)
    from fedrepro.kernels import dense, sparse  # noqa: F401


class Identity(Compressor):
    """No compression: every entry sent as a ``bits_per_value``-bit float (32 in every paper).

    The decoded tensor is a copy of x, not rounded to float32: the papers charge 32 bits even
    where the authors computed in float64 (gcca [C] used MATLAB doubles).
    """

    name = "identity"
    unbiased = True

    def __init__(self, bits_per_value: int = FULL_PRECISION_BITS) -> None:
        super().__init__()
        self.bits_per_value = check_int("bits_per_value", bits_per_value, minimum=1, owner="identity")
        self.params = {"bits_per_value": self.bits_per_value}

    def _encode(self, x2, u, elem_shape, **context):
        value = x2.clone() if bk.is_torch(x2) else x2.copy()
        d = x2.shape[1]
        return Encoding(value, {"values": d}, {"values": self.bits_per_value})

    def delta(self, n, x=None):
        return 1.0


def _stochastic_levels(magnitude_in_levels, u):
    """Round t >= 0 to floor(t) or floor(t) + 1, up with probability t - floor(t) (gcca eq. 18).

    Comparing u < frac (instead of floor(t + u)) keeps an entry with an integer t exactly on its
    level whatever u is, so zeros stay zero and the max entry stays at the top level.
    """
    low = bk.floor(magnitude_in_levels)
    up = u < (magnitude_in_levels - low)
    return low + bk.as_dtype_of(up, low)


class MaxAbsStochasticQuantizer(Compressor):
    """CuteMaxVar's compressor (Shrestha & Fu, Sec. III-C.2): q bits per entry plus one max.

    With m = max|Δ| and S = 2^(q-1) - 1 intervals, each entry becomes
    m·sgn(Δ)·h with h the stochastic rounding of |Δ|/m to the grid {0, 1/S, ..., 1} (eq. 18).
    ``scaled=False`` is the unscaled C̃ of eq. (19), used in every experiment; it is unbiased and
    E||C̃(Δ) - Δ||² <= n m² / (4 S²) (Fact 2). ``scaled=True`` is C = C̃ / u of eq. (20) with u:
    ``"worst_case"`` u = 1 + n/(4S²) (valid for every Δ since m² <= ||Δ||²), ``"per_message"``
    u = 1 + n m²/(4 S² ||Δ||²) (the smallest u Fact 1 allows for this Δ), or a fixed number.

    Bits per message (§3.8): (q - 1) level bits + 1 sign bit per entry, and m at 32 bits.
    An all-zero Δ decodes to 0 (§3.1.2 step 1) and is charged the same q·n + 32 bits, so every
    message of one run has the same size, as BPV assumes.
    """

    name = "cutemaxvar"

    def __init__(self, q: int | None = None, scaled: bool = False, u: float | str = "worst_case") -> None:
        super().__init__()
        owner = "cutemaxvar"
        if q is None:
            raise ValueError(f"{owner}: parameter 'q' (bits per entry, an integer >= 2; the paper uses 2, 3, 4, 5) is required")
        self.q = check_int("q", q, minimum=2, owner=owner)
        self.S = 2 ** (self.q - 1) - 1
        self.scaled = bool(check_choice("scaled", scaled, (False, True), owner=owner))
        if isinstance(u, str):
            check_choice("u", u, ("worst_case", "per_message"), owner=owner)
        elif not (isinstance(u, (int, float)) and u >= 1):
            raise ValueError(f"{owner}: parameter 'u' must be 'worst_case', 'per_message' or a number >= 1; got {u!r}")
        self.u = u
        self.unbiased = not self.scaled
        self.params = {"q": self.q, "scaled": self.scaled} | ({"u": u} if self.scaled else {})

    def n_uniforms(self, d):
        return d

    def _encode(self, x2, u, elem_shape, **context):
        d = x2.shape[1]
        mag = bk.abs_(x2)
        m = bk.row_max(mag)
        safe_m = bk.where(m > 0, m, bk.like_array(1.0, m))
        if bk.is_torch(x2):
            levels = _stochastic_levels(mag * (self.S / safe_m), u)
            value = bk.sign(x2) * levels * (m / self.S)
        else:  # the same operations in place: CuteMaxVar's messages are MBs, and each fresh array page-faults
            mag *= self.S / safe_m
            levels = np.floor(mag)
            mag -= levels
            levels += u < mag
            value = np.sign(x2)
            value *= levels
            value *= m / self.S
        if self.scaled:
            value = value / self._u_factor(x2, m, d)
        counts = {"values": d, "signs": d, "scales": 1}
        widths = {"values": self.q - 1, "signs": 1, "scales": FULL_PRECISION_BITS}
        return Encoding(value, counts, widths)

    def _add_difference(self, x2, xhat2, u):
        """xhat2 += C̃(x2 - xhat2) in place, without building the difference or the message (the compiled
        kernel fedrepro.kernels.sparse.maxabs_quantize_add: _encode's operations, so the same bits); the
        Encoding's value is None. None where the kernel does not apply (torch, float32, scaled, no numba) or does
        not pay (fewer than fedrepro.kernels.MIN_WORK entries)."""
        from fedrepro import kernels

        if (self.scaled or bk.is_torch(x2)
                or any(a.dtype != np.float64 or not a.flags.c_contiguous for a in (x2, xhat2, u))):
            return None
        compiled = kernels.compiled("sparse", x2.size)
        if compiled is None:
            return None
        compiled.maxabs_quantize_add(x2, xhat2, u, float(self.S))
        d = x2.shape[1]
        return Encoding(None, {"values": d, "signs": d, "scales": 1},
                        {"values": self.q - 1, "signs": 1, "scales": FULL_PRECISION_BITS})

    def _u_factor(self, x2, m, d):
        if self.u == "worst_case":
            return 1.0 + d / (4.0 * self.S**2)
        if self.u == "per_message":
            sq = bk.row_sum(x2 * x2)
            ratio = bk.where(sq > 0, (m * m) / bk.where(sq > 0, sq, bk.like_array(1.0, sq)), bk.zeros_like(sq))
            return 1.0 + d / (4.0 * self.S**2) * ratio
        return float(self.u)

    def delta(self, n, x=None):
        """Fact 1 (scaled: δ = 1/u) or Fact 2 (unscaled: δ = 1 - n m²/(4S²||Δ||²) where positive)."""
        worst = n / (4.0 * self.S**2)  # n m²/(4S²||Δ||²) is at most this, since m² <= ||Δ||²
        if x is None:
            if self.scaled and self.u in ("worst_case", "per_message"):
                return 1.0 / (1.0 + worst)  # per_message's u is never larger than the worst case
            if self.scaled:
                return 1.0 / self.u if self.u >= 1.0 + worst else None
            return 1.0 - worst if worst < 1.0 else None
        xs = as_numpy64(x)
        m2 = (np.abs(xs).max(axis=1)) ** 2
        sq = (xs**2).sum(axis=1)
        kappa_term = np.where(sq > 0, xs.shape[1] * m2 / (4.0 * self.S**2 * np.where(sq > 0, sq, 1.0)), 0.0)
        if not self.scaled:
            return 1.0 - kappa_term  # <= 0 means Fact 2's condition fails for that message
        if self.u == "per_message":
            return 1.0 / (1.0 + kappa_term)
        u = 1.0 + xs.shape[1] / (4.0 * self.S**2) if self.u == "worst_case" else float(self.u)
        return np.where(u >= 1.0 + kappa_term, 1.0 / u, np.nan)  # nan: Fact 1's condition fails


class QSGD(Compressor):
    """QSGD stochastic quantizer Q_s with the l2 norm (thesis Sec. 2.4).

    Q_s(x)_i = ||x||_2 sign(x_i) ξ_i / s with ξ_i the stochastic rounding of s|x_i|/||x||_2.
    Unbiased, E||Q_s(x) - x||² <= β ||x||², β = min(d/s², √d/s). ``scaled=True`` divides by
    1 + β, which makes it a compression operator with ω = 1/(1+β); this is the form used inside
    the composed operator (a) of §9 item 5 (there with β_{k,s} on the k kept entries).
    Bits (§3.5, A-24): per entry 1 sign + ceil(log2(s+1)) level bits; one 32-bit norm.
    """

    name = "qsgd"

    def __init__(self, s: int | None = None, scaled: bool = False) -> None:
        super().__init__()
        if s is None:
            raise ValueError("qsgd: parameter 's' (number of levels, an integer >= 1) is required")
        self.s = check_int("s", s, minimum=1, owner="qsgd")
        self.scaled = bool(check_choice("scaled", scaled, (False, True), owner="qsgd"))
        self.unbiased = not self.scaled
        self.params = {"s": self.s, "scaled": self.scaled}

    def beta(self, n: int) -> float:
        return min(n / self.s**2, math.sqrt(n) / self.s)

    def n_uniforms(self, d):
        return d

    def _encode(self, x2, u, elem_shape, **context):
        d = x2.shape[1]
        norm = bk.norm_l2(x2)
        safe = bk.where(norm > 0, norm, bk.like_array(1.0, norm))
        levels = _stochastic_levels(bk.abs_(x2) * (self.s / safe), u)
        value = bk.sign(x2) * levels * (norm / self.s)
        if self.scaled:
            value = value / (1.0 + self.beta(d))
        counts = {"values": d, "signs": d, "scales": 1}
        widths = {"values": int(math.ceil(math.log2(self.s + 1))), "signs": 1, "scales": FULL_PRECISION_BITS}
        return Encoding(value, counts, widths)

    def delta(self, n, x=None):
        b = self.beta(n)
        if self.scaled:
            return 1.0 / (1.0 + b)
        return 1.0 - b if b < 1.0 else None  # §9 item 3: valid only if β < 1


class ScaledSign(Compressor):
    """Scaled sign (||x||_1 / d) Sign(x) (thesis Secs. 2.4 and 3.5).

    ``sign_of_zero``: +1 is Ch. 3's A-15 (one bit per entry can then encode every entry);
    0 is numpy's sign, which our Ch. 4 runs use (docs/thesis_ch4.md). C(0) = 0 either way.
    Deterministic and biased; ω(x) = ||x||_1² / (d ||x||²) exactly.
    Bits: one sign bit per entry and one 32-bit scale per message.
    """

    name = "sign"

    def __init__(self, sign_of_zero: int = 1) -> None:
        super().__init__()
        self.sign_of_zero = check_choice("sign_of_zero", sign_of_zero, (1, 0), owner="sign")
        self.params = {"sign_of_zero": self.sign_of_zero}

    @staticmethod
    def _scale(x2):
        """||x||_1 / d per row (B, 1): the message's one float."""
        return bk.norm_l1(x2) / x2.shape[1]

    def _encode(self, x2, u, elem_shape, **context):
        d = x2.shape[1]
        scale = self._scale(x2)
        sgn = bk.sign(x2)
        if self.sign_of_zero == 1:
            sgn = bk.where(x2 == 0, bk.like_array(1.0, x2), sgn)
        return Encoding(scale * sgn, {"signs": d, "scales": 1}, {"signs": 1, "scales": FULL_PRECISION_BITS})

    def _add_compressed(self, x2, xhat2, u):
        """xhat2 += C(x2) in place without building the message: the scale as _encode computes it, then the sign,
        the zero rule, the product and the sum in one compiled pass (fedrepro.kernels.dense.sign_scale_add, the
        same bits). The Encoding's value is None. None where the kernel does not apply (not a contiguous CPU
        float32/float64 pair of one dtype, no numba) or does not pay (fewer than fedrepro.kernels.MIN_WORK entries)."""
        from fedrepro import kernels

        xs, hs = bk.host_float_view(x2), bk.host_float_view(xhat2)
        if xs is None or hs is None or xs.dtype != hs.dtype or xs.shape != hs.shape:
            return None
        compiled = kernels.compiled("dense", xs.size)
        if compiled is None:
            return None
        d = xs.shape[1]
        compiled.sign_scale_add(xs, hs, bk.host_float_view(bk.reshape(self._scale(x2), (-1,))), self.sign_of_zero == 1)
        return Encoding(None, {"signs": d, "scales": 1}, {"signs": 1, "scales": FULL_PRECISION_BITS})

    def delta(self, n, x=None):
        """ω(x) = ||x||_1²/(d||x||²) per element; without x its minimum over x, 1/n."""
        if x is None:
            return 1.0 / n
        xs = as_numpy64(x)
        l1, l2 = np.abs(xs).sum(axis=1), (xs**2).sum(axis=1)
        return np.where(l2 > 0, l1**2 / (xs.shape[1] * np.where(l2 > 0, l2, 1.0)), 1.0)
