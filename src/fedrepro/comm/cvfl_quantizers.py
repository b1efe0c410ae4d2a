"""C-VFL's quantizers with subtractive dither: scalar (2^b levels) and A2 lattice (the paper's App. B).

Both follow the authors' code [C]. A message is normalized, a dither U is added, the sum is
quantized, and the receiver subtracts the same U (sender and receiver share U through a common
PRNG, A-7, so U costs no bits). Range handling (§3.4.1):

- ``range_mode="max_norm"`` (ModelNet, CIFAR, ImageNet): divide by s = max(x) over the whole
  message, a signed max as in the code; negative entries then fall below 0 and the scalar
  quantizer clips them to level 0 (the code's behaviour, kept on purpose: §3.4.1, §9.1 #14).
  One 32-bit s per message; the paper's cost formula does not charge it (A-8).
- ``range_mode="fixed"`` (MIMIC): a fixed range [low, high], [-1, 1] by default; no scale sent.

With the dither step Δ = 1/(L-1) in normalized units (L = 2^b) and no clipping, the error is
uniform on [-Δ/2, Δ/2] whatever x is (Schuchman's condition), so the quantizer is unbiased for
inputs inside the range, with E err² = Δ²/12 per component.
"""

from __future__ import annotations

from . import _backend as bk
from .base import FULL_PRECISION_BITS, Compressor, Encoding, check_choice, check_int
from .lattice import a2_nearest, a2_voronoi_uniform

# Lattice scale per b in normalized units, from the authors' code (the authors' code);
# other b fall back to 1/(2b) as the code does.
A2_SCALES = {2: 1 / 4, 3: 1 / 8.5, 4: 1 / 19}


def a2_scale(b: int) -> float:
    return A2_SCALES.get(b, 1.0 / (2 * b))


class _Dithered(Compressor):
    # The VQ code maps the fixed range to [0.5, 1.5] ((X+U)/2 + 1 on [-1, 1]); the scalar code to
    # [0, 1]. The offset only moves which lattice points are used, never the error bound.
    fixed_offset = 0.0

    def __init__(self, b, range_mode, low, high, owner):
        super().__init__()
        if b is None:
            raise ValueError(f"{owner}: parameter 'b' (bits per component, an integer >= 1; the paper uses 2, 3, 4) is required")
        self.b = check_int("b", b, minimum=1, owner=owner)
        self.levels = 2**self.b
        self.range_mode = check_choice("range_mode", range_mode, ("max_norm", "fixed"), owner=owner)
        if not (isinstance(low, (int, float)) and isinstance(high, (int, float)) and low < high):
            raise ValueError(f"{owner}: parameters 'low' < 'high' must be numbers; got low={low!r}, high={high!r}")
        self.low, self.high = float(low), float(high)
        self.params = {"b": self.b, "range_mode": self.range_mode} | (
            {"low": self.low, "high": self.high} if self.range_mode == "fixed" else {}
        )

    @property
    def dither_step(self) -> float:
        """Δ in normalized units (the dither is uniform on [-Δ/2, Δ/2] per component)."""
        return 1.0 / (self.levels - 1)

    def _normalize(self, x2):
        """Map x to normalized units; return the normalized x and the inverse map."""
        if self.range_mode == "max_norm":
            s = bk.row_max(x2)
            safe = bk.where(s != 0, s, bk.like_array(1.0, s))  # s = 0: decoded value is 0·(...) = 0
            return x2 / safe, (lambda r: r * s)
        span, off, low = self.high - self.low, self.fixed_offset, self.low
        return (x2 - low) / span + off, (lambda r: (r - off) * span + low)

    def _widths(self, d):
        counts, widths = {"values": d}, {"values": self.b}
        if self.range_mode == "max_norm":
            counts["scales"], widths["scales"] = 1, FULL_PRECISION_BITS
        return counts, widths

    def n_uniforms(self, d):
        return d


class DitheredScalarQuantizer(_Dithered):
    """C-VFL scalar quantizer, L = 2^b levels on [0, 1] after normalization (the paper's App. B, scalar quantization).

    Z = clip(round((z + U)/Δ), 0, L-1), decoded z_hat = ΔZ - U, with U ~ U(-Δ/2, Δ/2) per entry.
    Bits: b per component (+ one 32-bit scale with max_norm). Not unbiased in general (clipping);
    unbiased with E err² = Δ²/12 per component for inputs inside the range.
    """

    name = "cvfl_scalar"

    def __init__(self, b: int | None = None, range_mode: str = "max_norm", low: float = -1.0, high: float = 1.0) -> None:
        super().__init__(b, range_mode, low, high, "cvfl_scalar")

    def _encode(self, x2, u, elem_shape, **context):
        step = self.dither_step
        z, denormalize = self._normalize(x2)
        dither = bk.as_dtype_of((u - 0.5) * step, x2)
        level = bk.clip(bk.round_((z + dither) / step), 0, self.levels - 1)
        value = denormalize(level * step - dither)
        counts, widths = self._widths(x2.shape[1])
        return Encoding(bk.as_dtype_of(value, x2), counts, widths)


class A2LatticeQuantizer(_Dithered):
    """C-VFL vector quantizer: consecutive pairs of entries to the nearest A2 lattice point.

    the paper's App. B, vector quantization. Lattice scale ``a2_scale(b)`` in normalized units (1/4, 1/8.5, 1/19 for
    b = 2, 3, 4). The lattice is unbounded (no clipping). Dither: ``"square"`` (default, the
    code's: i.i.d. U(-Δ/2, Δ/2) per component) or ``"voronoi"`` (uniform on the hexagonal cell,
    the proper subtractive dither: then the error is uniform on the cell and the quantizer is
    unbiased, E err² = G·V per component with G = 5/(36√3), V = √3 s²).
    Deterministic bound for any dither: each pair's error <= s√(2/3) in normalized units.
    Bits: b per component, i.e. 2b per pair (the paper's 2^{2b}-word codebook; the points that
    the dithered range [−Δ/2, 1+Δ/2]² reaches, 14 / 52 / 238 for b = 2 / 3 / 4, fit in it),
    + one 32-bit scale with max_norm. The entries per element must be even.
    """

    name = "cvfl_vector"
    fixed_offset = 0.5

    def __init__(
        self, b: int | None = None, range_mode: str = "max_norm", low: float = -1.0, high: float = 1.0, dither: str = "square"
    ) -> None:
        super().__init__(b, range_mode, low, high, "cvfl_vector")
        self.dither = check_choice("dither", dither, ("square", "voronoi"), owner="cvfl_vector")
        self.scale = a2_scale(self.b)
        self.unbiased = self.dither == "voronoi"
        self.params["dither"] = self.dither

    def _encode(self, x2, u, elem_shape, **context):
        batch, d = x2.shape
        if d % 2:
            raise ValueError(f"cvfl_vector pairs consecutive entries: entries per element must be even; got {d}")
        z, denormalize = self._normalize(x2)
        z3 = bk.reshape(z, (batch, d // 2, 2))
        u3 = bk.reshape(u, (batch, d // 2, 2))
        if self.dither == "square":
            ux = bk.as_dtype_of((u3[..., 0] - 0.5) * self.dither_step, x2)
            uy = bk.as_dtype_of((u3[..., 1] - 0.5) * self.dither_step, x2)
        else:  # in x's precision: the dither only needs to be uniform on the cell, not float64-exact
            ux, uy = a2_voronoi_uniform(bk.as_dtype_of(u3[..., 0], x2), bk.as_dtype_of(u3[..., 1], x2), self.scale)
        qx, qy = a2_nearest(z3[..., 0] + ux, z3[..., 1] + uy, self.scale)
        r = bk.reshape(bk.stack_last(qx - ux, qy - uy), (batch, d))
        counts, widths = self._widths(d)
        return Encoding(bk.as_dtype_of(denormalize(r), x2), counts, widths)
