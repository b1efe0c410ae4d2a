"""Sparsifiers: top-k, random-k (thesis), and C-VFL's gradient-ranked column top-k.

Sources:
- ``TopK``: thesis Secs. 2.4 and 3.5; also the C-VFL server-model top-k
  (the authors' code: keep max(1, floor(numel·b/32)) entries, i.e. ``TopK(ratio=b/32)``).
- ``RandK``: thesis Sec. 2.4, bits per ch3:A-23 (docs/thesis_ch3.md).
- ``GradientRankedColumnTopK``: the authors' embedding top-k (their code; docs/cvfl.md).

Sparsifiers also expose ``_select`` (indices and kept values), which ``compose`` uses to run a
quantizer on the kept entries only (Sign∘TopK and friends, thesis §9 item 5).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import _backend as bk
from .base import FULL_PRECISION_BITS, Compressor, Encoding, check_index_bits, check_int, index_width


def _check_k_or_ratio(k: Any, ratio: Any, owner: str) -> tuple[int | None, float | None]:
    if (k is None) == (ratio is None):
        raise ValueError(
            f"{owner}: give exactly one of parameter 'k' (entries kept, an integer >= 1) or 'ratio' "
            f"(fraction kept, 0 < ratio <= 1, k = max(1, floor(ratio·d))); got k={k!r}, ratio={ratio!r}"
        )
    if k is not None:
        return check_int("k", k, minimum=1, owner=owner), None
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 < ratio <= 1:
        raise ValueError(f"{owner}: parameter 'ratio' must be a number in (0, 1]; got {ratio!r}")
    return None, float(ratio)


class Sparsifier(Compressor):
    """Keeps k entries of each element at full precision (32 bits each) and zeroes the rest."""

    def __init__(self, k: int | None, ratio: float | None, index_bits: int | str, owner: str) -> None:
        super().__init__()
        self.k, self.ratio = _check_k_or_ratio(k, ratio, owner)
        self.index_bits = check_index_bits(index_bits, owner=owner)

    def k_for(self, d: int) -> int:
        """k for an element of d entries: a fixed k (capped at d), or max(1, floor(ratio·d)).

        The ratio rule is A-14 (CHOCO code) and C-VFL's server-model rule. The 1e-9 keeps
        ratio·d that is an integer in exact arithmetic (0.29·100) from flooring one below.
        """
        if self.k is not None:
            return min(self.k, d)
        return min(d, max(1, int(math.floor(self.ratio * d + 1e-9))))

    def _select(self, x2: Any, u: Any) -> tuple[Any, Any]:
        raise NotImplementedError

    def _index_counts(self, d: int, k: int) -> tuple[dict[str, int], dict[str, int]]:
        return {"indices": k}, {"indices": index_width(self.index_bits, d)}

    def _encode_sparse(self, x2, u) -> tuple[Any, Encoding]:
        """(indices (B, k), Encoding whose value is the (B, k) decoded kept entries): the message before it is
        scattered into d entries (``fedrepro.comm.TrackedCopy.apply_difference`` adds it in place)."""
        d = x2.shape[1]
        k = self.k_for(d)
        idx, kept = self._select(x2, u)
        counts, widths = self._index_counts(d, k)
        counts["values"], widths["values"] = k, FULL_PRECISION_BITS
        return idx, Encoding(kept, counts, widths, index_space=d)

    def _encode(self, x2, u, elem_shape, **context):
        idx, enc = self._encode_sparse(x2, u)
        enc.value = bk.scatter(x2, idx, enc.value)
        return enc

    def delta(self, n, x=None):
        return self.k_for(n) / n  # thesis §9 items 1-2: ω = k/d (random-k: in expectation)


class TopK(Sparsifier):
    """Keep the k entries of largest magnitude (thesis §3.3: exact values, zero elsewhere).

    Deterministic, biased, ||x - Top_k(x)||² <= (1 - k/d) ||x||². Bits: k values at 32 bits plus
    k indices of ``index_bits`` each (32: B32; 64: the CHOCO code's int64; ``"log2"``: ceil(log2 d)).
    """

    name = "topk"

    def __init__(self, k: int | None = None, ratio: float | None = None, index_bits: int | str = 32) -> None:
        super().__init__(k, ratio, index_bits, "topk")
        self.params = {"k": self.k, "ratio": self.ratio, "index_bits": self.index_bits}

    def _select(self, x2, u):
        idx = bk.largest_abs_k(x2, self.k_for(x2.shape[1]))
        return idx, bk.gather(x2, idx)


class RandK(Sparsifier):
    """Keep k entries chosen uniformly without replacement, unscaled (thesis §9 item 2).

    The k positions are those of the k largest of d i.i.d. uniform keys, which is a uniformly
    random k-subset. With ``shared_seed=True`` (A-23) the receiver regenerates the positions from a
    32-bit seed, so the indices cost 32 bits per message instead of k·index_bits.
    E||x - C(x)||² = (1 - k/d) ||x||² exactly.
    """

    name = "randk"

    def __init__(
        self, k: int | None = None, ratio: float | None = None, shared_seed: bool = True, index_bits: int | str = 32
    ) -> None:
        super().__init__(k, ratio, index_bits, "randk")
        if shared_seed not in (True, False):
            raise ValueError(f"randk: parameter 'shared_seed' must be True or False; got {shared_seed!r}")
        self.shared_seed = bool(shared_seed)
        self.params = {"k": self.k, "ratio": self.ratio, "shared_seed": self.shared_seed, "index_bits": self.index_bits}

    def n_uniforms(self, d):
        return d

    def _select(self, x2, u):
        idx = bk.largest_k(u, self.k_for(x2.shape[1]))
        return idx, bk.gather(x2, idx)

    def _index_counts(self, d, k):
        if self.shared_seed:
            return {"seeds": 1}, {"seeds": FULL_PRECISION_BITS}
        return super()._index_counts(d, k)


class GradientRankedColumnTopK(Compressor):
    """C-VFL's embedding top-k (the authors' code; docs/cvfl.md): one column set per message.

    Each element is a party's embedding matrix with shape (..., P) (batch rows × P components).
    The k columns kept are those with the largest |scores|, a length-P selection signal from the
    previous iteration (the loss gradient with respect to the embedding components, A-27), and
    the same columns are kept for every row. Call ``c(x, rng, scores=s)`` with s of shape (B, P)
    (or (P,) with ``batched=False``). ``scores=None`` means no previous gradient yet (first round,
    A-10): the embedding is sent uncompressed at 32 bits per entry.

    k: see ``fedrepro.comm.conventions.cvfl_topk_k`` for the code's rules per dataset.
    Bits: 32 per kept entry (rows·k values) and k indices of ``index_bits`` each. The paper's cost
    formula charges neither the indices nor the uncompressed first round (A-9, A-10); the
    ``cvfl`` convention drops them, the measured bits keep them.
    """

    name = "cvfl_topk_columns"
    context_keys = ("scores",)

    def __init__(self, k: int | None = None, index_bits: int | str = 32) -> None:
        super().__init__()
        if k is None:
            raise ValueError("cvfl_topk_columns: parameter 'k' (columns kept, an integer >= 1) is required")
        self.k = check_int("k", k, minimum=1, owner=self.name)
        self.index_bits = check_index_bits(index_bits, owner=self.name)
        self.params = {"k": self.k, "index_bits": self.index_bits}

    def _encode(self, x2, u, elem_shape, scores=None):
        batch, d = x2.shape
        width = elem_shape[-1] if elem_shape else 1
        rows = d // width
        if scores is None:
            value = x2.clone() if bk.is_torch(x2) else x2.copy()
            return Encoding(value, {"values": d}, {"values": FULL_PRECISION_BITS})
        if bk.is_torch(scores) != bk.is_torch(x2):
            raise ValueError("cvfl_topk_columns: 'scores' must be the same library (numpy/torch) as x")
        if int(np.prod(tuple(scores.shape))) != batch * width:
            raise ValueError(
                f"cvfl_topk_columns: 'scores' must have one value per column, shape ({batch}, {width}) "
                f"(or ({width},) with batched=False); got shape {tuple(scores.shape)}"
            )
        k = min(self.k, width)
        score = bk.abs_(bk.reshape(scores, (batch, width)))
        idx = bk.largest_k(score, k)
        ones = bk.zeros_like(x2[:, :k]) + 1
        keep = bk.scatter(bk.zeros_like(x2[:, :width]), idx, ones)  # (batch, P) 0/1 column mask
        x3 = bk.reshape(x2, (batch, rows, width))
        value = bk.reshape(x3 * keep[:, None, :], (batch, d))
        counts = {"values": rows * k, "indices": k}
        widths = {"values": FULL_PRECISION_BITS, "indices": index_width(self.index_bits, width)}
        return Encoding(value, counts, widths, index_space=width)
