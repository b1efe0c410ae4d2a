"""The compressor interface shared by every algorithm: ``Compressed`` and ``Compressor``.

A compressor maps a batch ``x`` of shape ``(B, ...)`` (B nodes, clients or parties) to the tensor
the receiver decodes and the exact payload bits of each element's message. Compression acts on
each element's entries flattened in C order. All randomness of one call is one block of U[0, 1)
draws of shape ``(B, n_uniforms(d))`` from the caller's generator (see ``_backend.uniforms``), so:
the same generator state gives the same output, and compressing the B elements one at a time
with one generator gives exactly the batched result.

Bits are counted per symbol kind: ``counts[kind]`` symbols of ``widths[kind]`` bits each, with
kinds ``values`` (full-precision values, quantization levels or codewords), ``scales`` (a norm or
max per message), ``signs``, ``indices`` and ``seeds`` (a shared PRNG seed that replaces the
indices of random-k). ``parts`` folds seeds into ``indices``, so its keys are the four the ledger
reports. Keeping counts lets ``conventions`` re-price a message under another paper's rules.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import _backend as bk

PART_KINDS = ("values", "scales", "signs", "indices")
COUNT_KINDS = ("values", "scales", "signs", "indices", "seeds")
FULL_PRECISION_BITS = 32  # every paper prices a float at 32 bits (gcca q_full, cvfl b=32, thesis fp32)


@dataclass(frozen=True)
class Compressed:
    """One call's result. Arrays of bits/counts have shape ``(B,)`` (batched) or ``()``.

    value        decoded tensor, same library, dtype, device and shape as the input
    bits         int64 total payload bits per element (sum of ``parts``)
    parts        bits by kind: values, scales, signs, indices (seeds included in indices)
    counts       symbols by kind: values, scales, signs, indices, seeds
    widths       bits charged per symbol of each kind
    index_space  how many positions an index can take (d, or P for column top-k); None if no index
    entries      entries per element (d)
    """

    value: Any
    bits: np.ndarray
    parts: dict[str, np.ndarray]
    counts: dict[str, np.ndarray] = field(default_factory=dict)
    widths: dict[str, int] = field(default_factory=dict)
    index_space: int | None = None
    entries: int = 0

    def sum(self) -> Compressed:
        """The batch's messages as one (bits of shape ()): e.g. C-VFL's server forwarding every
        party's embedding to each party, recorded as a broadcast with ``ledger.record("down", out.sum())``."""
        return Compressed(
            value=self.value,
            bits=np.asarray(self.bits.sum(), dtype=np.int64),
            parts={k: np.asarray(v.sum(), dtype=np.int64) for k, v in self.parts.items()},
            counts={k: np.asarray(v.sum(), dtype=np.int64) for k, v in self.counts.items()},
            widths=self.widths,
            index_space=self.index_space,
            entries=self.entries,
        )


@dataclass
class Encoding:
    """What a compressor's kernel returns for a 2-D batch: counts are per element (ints)."""

    value: Any
    counts: Mapping[str, int]
    widths: Mapping[str, int]
    index_space: int | None = None


def index_width(index_bits: int | str, space: int) -> int:
    """Bits of one index: a fixed width, or ceil(log2(space)) for ``"log2"``."""
    if index_bits == "log2":
        return int(math.ceil(math.log2(space))) if space > 1 else 0
    return int(index_bits)


def build_compressed(value: Any, enc: Encoding, batch: int, entries: int, batched: bool) -> Compressed:
    counts = [int(enc.counts.get(k, 0)) for k in COUNT_KINDS]
    widths = {k: int(enc.widths.get(k, 0)) for k in COUNT_KINDS}
    parts = [c * widths[k] for c, k in zip(counts, PART_KINDS)]
    parts[PART_KINDS.index("indices")] += counts[COUNT_KINDS.index("seeds")] * widths["seeds"]  # seeds priced as indices
    # every element of the batch carries the same counts: one (1 + 4 + 5, B) table, each entry a row of it (one
    # allocation a message instead of ten; compressors run once per node and step, so this is per-call overhead)
    column = np.array([sum(parts), *parts, *counts], dtype=np.int64)
    table = np.repeat(column[:, None], batch, axis=1) if batched else column
    rows = [table[i, ...] for i in range(len(column))]   # views: (B,) each, or 0-d arrays when not batched
    return Compressed(value, rows[0], dict(zip(PART_KINDS, rows[1:5])), dict(zip(COUNT_KINDS, rows[5:])), widths,
                      enc.index_space, entries)


class Compressor:
    """Base class. Subclasses set ``name``, ``unbiased`` and implement ``_encode``.

    Call: ``c(x, rng, batched=True, **context)``. ``context`` carries side information a few
    compressors need (C-VFL column top-k takes ``scores``); others reject it.
    """

    name: str = "compressor"
    unbiased: bool = False
    context_keys: tuple[str, ...] = ()

    def __init__(self) -> None:
        self.params: dict[str, Any] = {}

    # --- to override -------------------------------------------------------------------------
    def n_uniforms(self, d: int) -> int:
        """U[0, 1) draws this compressor consumes per element of d entries."""
        return 0

    def _encode(self, x2: Any, u: Any, elem_shape: tuple[int, ...], **context: Any) -> Encoding:
        raise NotImplementedError

    def _add_compressed(self, x2: Any, xhat2: Any, u: Any) -> Encoding | None:
        """Optional fast path: xhat2 (B, d) += C(x2) in place with the draws ``u``, the message never built; returns
        the Encoding with value None. None (this default) where a compressor has no such path or declines: the
        caller (fedrepro.comm.TrackedCopy when no message is asked for) then calls ``_encode`` with the same u."""
        return None

    def delta(self, n: int, x: Any = None) -> float | np.ndarray | None:
        """δ (gcca Def. 1) = ω (thesis Def. 1): E||C(x) - x||^2 <= (1 - δ) ||x||^2.

        ``n`` is the number of entries per message. Where the paper's value depends on the data,
        pass ``x`` (batched like the call) to get it per element. None where the source paper
        states no such constant.
        """
        return None

    def omega(self, n: int, x: Any = None) -> float | np.ndarray | None:
        """The thesis' name for ``delta`` (same inequality)."""
        return self.delta(n, x)

    # --- shared machinery --------------------------------------------------------------------
    def __call__(self, x: Any, rng: Any = None, *, batched: bool = True, **context: Any) -> Compressed:
        bk.check_input(x)
        unknown = set(context) - set(self.context_keys)
        if unknown:
            allowed = ", ".join(self.context_keys) or "none"
            raise ValueError(f"{self.name} got unknown keyword(s) {sorted(unknown)}; allowed: {allowed}")
        if batched:
            if x.ndim < 2:
                raise ValueError(
                    f"x must have shape (B, ...) with at least one entry axis when batched=True; got shape "
                    f"{tuple(x.shape)}. Add a leading axis (x[None]) or pass batched=False"
                )
            batch, elem_shape = int(x.shape[0]), tuple(int(s) for s in x.shape[1:])
        else:
            batch, elem_shape = 1, tuple(int(s) for s in x.shape)
        d = int(np.prod(elem_shape)) if elem_shape else 1
        if d == 0:
            raise ValueError(f"x has no entries per element (shape {tuple(x.shape)})")
        x2 = bk.reshape(x, (batch, d))
        m = self.n_uniforms(d)
        u = bk.uniforms(x2, (batch, m), rng) if m else None
        enc = self._encode(x2, u, elem_shape, **context)
        value = bk.reshape(enc.value, tuple(x.shape))
        return build_compressed(value, enc, batch, d, batched)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{type(self).__name__}({args})"


# --- parameter validation (errors name the parameter and what is allowed) ----------------------


def check_int(name: str, value: Any, *, minimum: int, owner: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{owner}: parameter '{name}' must be an integer >= {minimum}; got {value!r}")
    return int(value)


def check_choice(name: str, value: Any, choices: tuple, *, owner: str) -> Any:
    if value not in choices:
        allowed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{owner}: parameter '{name}' must be one of {allowed}; got {value!r}")
    return value


def check_index_bits(value: Any, *, owner: str) -> int | str:
    if value == "log2":
        return "log2"
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(
            f"{owner}: parameter 'index_bits' must be a positive integer (32: the thesis' B32, 64: int64 "
            f"indices as torch.topk returns) or 'log2' (ceil(log2 d)); got {value!r}"
        )
    return int(value)


def realized_delta(x: Any, value: Any) -> np.ndarray:
    """1 - ||x - C(x)||^2 / ||x||^2 per batch element (the thesis' ``omega_realized``); 1 where x = 0."""
    xs = bk.reshape(x, (x.shape[0], -1))
    vs = bk.reshape(value, (value.shape[0], -1))
    if bk.is_torch(xs):
        xs, vs = xs.detach().double().cpu().numpy(), vs.detach().double().cpu().numpy()
    xs, vs = np.asarray(xs, dtype=np.float64), np.asarray(vs, dtype=np.float64)
    err = ((xs - vs) ** 2).sum(axis=1)
    nrm = (xs**2).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(nrm > 0, 1.0 - err / np.where(nrm > 0, nrm, 1.0), 1.0)


def as_numpy64(x: Any, batched: bool = True) -> np.ndarray:
    """float64 numpy view of a batch, for the data-dependent δ formulas (cheap, exact enough)."""
    if bk.is_torch(x):
        x = x.detach().cpu().double().numpy()
    x = np.asarray(x, dtype=np.float64)
    return x.reshape(x.shape[0], -1) if batched else x.reshape(1, -1)
