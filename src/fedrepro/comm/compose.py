"""Composition: sparsify, then quantize the kept entries (thesis Sec. 2.4, compositions (a)-(b)).

``compose(TopK(k), ScaledSign())`` is SignTopK: y = Top_k(x) and C(x) = (||y||_1 / k) Sign(y) on
the support of y (§3.3, A-16: the scale is ||y||_1 / k). The quantizer sees the k kept values as a
dense vector of length k, which is what makes the scale ||y||_1 / k rather than ||y||_1 / d, and
what gives composed operator (a), Q_s(Comp_k(x)) / (1 + β_{k,s}), its β on k entries.
Bits: the sparsifier's indices (or seed) plus the quantizer's bits on k entries, e.g. SignTopK
k(1 + index_bits) + 32 (§3.5).
"""

from __future__ import annotations

import numpy as np

from . import _backend as bk
from .base import Compressor, Encoding, as_numpy64
from .quantizers import QSGD, ScaledSign
from .sparsifiers import RandK, Sparsifier, TopK


class Composed(Compressor):
    """quantizer ∘ sparsifier; name ``<quantizer>_<sparsifier>`` (e.g. ``sign_topk``)."""

    def __init__(self, sparsifier: Sparsifier, quantizer: Compressor) -> None:
        super().__init__()
        if not isinstance(sparsifier, (TopK, RandK)):
            raise ValueError(
                f"compose: the first compressor must be a sparsifier (TopK or RandK); got {type(sparsifier).__name__}"
            )
        if isinstance(quantizer, (Sparsifier, Composed)) or quantizer.context_keys:
            raise ValueError(
                f"compose: the second compressor must be a quantizer acting on the kept entries "
                f"(sign, qsgd, cutemaxvar, identity, ...); got {type(quantizer).__name__}"
            )
        self.sparsifier, self.quantizer = sparsifier, quantizer
        self.name = f"{quantizer.name}_{sparsifier.name}"
        self.unbiased = False  # the sparsifiers are biased
        self.params = {"sparsifier": sparsifier, "quantizer": quantizer}

    def n_uniforms(self, d):
        return self.sparsifier.n_uniforms(d) + self.quantizer.n_uniforms(self.sparsifier.k_for(d))

    def _encode_sparse(self, x2, u):
        """(indices (B, k), Encoding of the k quantized kept entries): see ``Sparsifier._encode_sparse``."""
        d = x2.shape[1]
        k = self.sparsifier.k_for(d)
        m1 = self.sparsifier.n_uniforms(d)
        u1 = u[:, :m1] if (u is not None and m1) else None
        u2 = u[:, m1:] if (u is not None and self.quantizer.n_uniforms(k)) else None
        idx, kept = self.sparsifier._select(x2, u1)
        inner = self.quantizer._encode(kept, u2, (k,))
        counts, widths = dict(inner.counts), dict(inner.widths)
        sp_counts, sp_widths = self.sparsifier._index_counts(d, k)
        counts.update(sp_counts)
        widths.update(sp_widths)
        return idx, Encoding(inner.value, counts, widths, index_space=d)

    def _encode(self, x2, u, elem_shape, **context):
        idx, enc = self._encode_sparse(x2, u)
        enc.value = bk.scatter(x2, idx, enc.value)
        return enc

    def delta(self, n, x=None):
        """ω as the thesis states it (§9 item 5), where it states one.

        (a) Q_s scaled by 1/(1+β_{k,s}) after Comp_k: ω = k / (n (1 + β_{k,s})) (E-6: the
            source paper's value; the thesis prints 1 - that, which looks inverted).
        (b) Sign after Comp_k: the printed ω = max{1/n, (k/n) ||y||_1² / (n ||y||²)} with
            y = Comp_k(x) (needs x; without x its minimum 1/n). See ``exact_delta`` (E-7).
        """
        k = self.sparsifier.k_for(n)
        if isinstance(self.quantizer, QSGD) and self.quantizer.scaled:
            return k / (n * (1.0 + self.quantizer.beta(k)))
        if isinstance(self.quantizer, ScaledSign):
            if x is None:
                return 1.0 / n
            y = self._kept(x)
            l1, l2 = np.abs(y).sum(axis=1), (y**2).sum(axis=1)
            ratio = np.where(l2 > 0, l1**2 / (n * np.where(l2 > 0, l2, 1.0)), 1.0)
            return np.maximum(1.0 / n, (k / n) * ratio)
        return None

    def exact_delta(self, x) -> np.ndarray:
        """Sign∘TopK's exact ω(x) = ||Top_k(x)||_1² / (k ||x||²) (thesis §9 item 5, E-7)."""
        if not (isinstance(self.quantizer, ScaledSign) and isinstance(self.sparsifier, TopK)):
            raise ValueError("exact_delta is defined for Sign∘TopK only; use fedrepro.comm.realized_delta(x, out.value)")
        xs = as_numpy64(x)
        k = self.sparsifier.k_for(xs.shape[1])
        y = self._kept(x)
        l2 = (xs**2).sum(axis=1)
        return np.where(l2 > 0, np.abs(y).sum(axis=1) ** 2 / (k * np.where(l2 > 0, l2, 1.0)), 1.0)

    def _kept(self, x) -> np.ndarray:
        """Top_k(x)'s kept values per element (deterministic sparsifiers only)."""
        if not isinstance(self.sparsifier, TopK):
            raise ValueError("the data-dependent ω needs the kept entries, known only for TopK")
        xs = as_numpy64(x)
        idx, kept = self.sparsifier._select(xs, None)
        return kept


def compose(sparsifier: Sparsifier, quantizer: Compressor) -> Composed:
    """Sparsify with the first compressor, then quantize the kept entries with the second."""
    return Composed(sparsifier, quantizer)
