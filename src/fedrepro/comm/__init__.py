"""fedrepro.comm: compressors, error-feedback copies and the bit ledger shared by all papers.

Every algorithm sends every message through a compressor from here; the compressor returns the
decoded tensor and the exact payload bits (values, scales, signs, indices) per batch element,
the ledger sums them per link direction and node, and ``conventions`` turns the ledger into each
paper's own measure. See docs/comm.md for the reference table (source, bias, δ/ω, bits).

    from fedrepro.comm import get_compressor, BitLedger, TrackedCopy
    c = get_compressor("cutemaxvar", q=3)
    out = c(delta, rng)            # delta: (I, J, K) numpy or torch; rng: matching generator
    out.value, out.bits, out.parts

A new compressor subclasses ``Compressor`` and returns an ``Encoding`` from ``_encode`` (docs/comm.md §8).
"""

from . import conventions
from .base import Compressed, Compressor, Encoding, realized_delta
from .catalog import available_compressors, get_compressor, register_compressor
from .compose import Composed, compose
from .cvfl_quantizers import A2LatticeQuantizer, DitheredScalarQuantizer, a2_scale
from .feedback import StaleCopy, TrackedCopy
from .ledger import DIRECTIONS, BitLedger
from .quantizers import QSGD, Identity, MaxAbsStochasticQuantizer, ScaledSign
from .sparsifiers import GradientRankedColumnTopK, RandK, TopK

__all__ = [
    "A2LatticeQuantizer",
    "BitLedger",
    "Composed",
    "Compressed",
    "Compressor",
    "DIRECTIONS",
    "DitheredScalarQuantizer",
    "Encoding",
    "GradientRankedColumnTopK",
    "Identity",
    "MaxAbsStochasticQuantizer",
    "QSGD",
    "RandK",
    "ScaledSign",
    "StaleCopy",
    "TopK",
    "TrackedCopy",
    "a2_scale",
    "available_compressors",
    "compose",
    "conventions",
    "get_compressor",
    "realized_delta",
    "register_compressor",
]
