"""Error-feedback helpers: the public copies every compressed scheme keeps.

- ``TrackedCopy``: x̂ ← x̂ + C(x - x̂), the message being C(x - x̂). One class serves
  * CuteMaxVar's M̂_i (uplink) and Ĝ (downlink) (Shrestha & Fu, Algorithm 1, eqs. 12-13, 17), whose
    first message is the full-precision initial round (pass ``compressor=Identity()`` once);
  * CHOCO-SGD / SQuARM-SGD's x̂_j (thesis Algorithm 1, Sec. 3.2.1, x̂⁽⁰⁾ = 0), with the event
    trigger as ``mask`` (a node that does not fire sends 0 bits and keeps its copy);
  * the Ch. 4 algorithms' x̂_i (thesis Algorithm 2, Sec. 4.3.1, first message uncompressed).
  Whatever a message drops stays in x - x̂ and is sent later: this is the implicit error feedback.
  Sender and receivers apply the same decoded message, so one copy stands for all of them.
- ``StaleCopy``: C-VFL's round-start compressed embeddings Φ̂ (the paper's Algorithm 1, Sec. 3): each party's
  message is compressed once per global round and read, stale, during the Q local iterations;
  party m combines the others' stale copies with its own fresh, uncompressed embedding.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _backend as bk
from .base import COUNT_KINDS, PART_KINDS, Compressed, Compressor, build_compressed


def _expand(out: Compressed, mask: np.ndarray, value: Any) -> Compressed:
    """A batch-wide result from the result on the rows where mask is True (others: 0 bits)."""
    def widen(a: np.ndarray) -> np.ndarray:
        full = np.zeros(mask.shape, dtype=np.int64)
        full[mask] = a
        return full

    return Compressed(
        value=value,
        bits=widen(out.bits),
        parts={k: widen(out.parts[k]) for k in PART_KINDS},
        counts={k: widen(out.counts[k]) for k in COUNT_KINDS},
        widths=out.widths,
        index_space=out.index_space,
        entries=out.entries,
    )


class TrackedCopy:
    """A compressed public copy x̂ of a batch of vectors (difference compression).

    ``init``: the copy's starting value (default: zeros at the first update, as CHOCO/SQuARM and
    Ch. 4 start). ``batched``: whether x has a leading node axis (the gcca server's Ĝ is one
    matrix: ``batched=False``).
    """

    def __init__(self, compressor: Compressor, init: Any = None, *, batched: bool = True) -> None:
        self.compressor = compressor
        self.batched = batched
        self.value = None if init is None else (init.clone() if bk.is_torch(init) else np.array(init, copy=True))

    def update(self, x: Any, rng: Any = None, *, mask: Any = None, compressor: Compressor | None = None, **context: Any) -> Compressed:
        """Send C(x - x̂) and apply it to x̂. Returns the message (decoded value and its bits).

        ``mask``: bool per batch element; only those send (the others' bits are 0 and their copy
        is unchanged, thesis A-25). ``compressor``: a one-off compressor for this message, e.g.
        ``Identity()`` for gcca's full-precision initial round.
        """
        comp = compressor if compressor is not None else self.compressor
        if self.value is None:
            self.value = bk.zeros_like(x)
        diff = x - self.value
        if mask is None:
            out = comp(diff, rng, batched=self.batched, **context)
            self.value = self.value + out.value
            return out
        if not self.batched:
            raise ValueError("mask needs a batched TrackedCopy (a leading node axis)")
        mask = self._check_mask(mask, x)
        sent = comp(bk.index_rows(diff, mask), rng, batched=True, **context)
        message = bk.set_rows(bk.zeros_like(diff), mask, sent.value)
        self.value = self.value + message
        return _expand(sent, mask, message)

    def apply_difference(self, diff: Any, rng: Any = None, *, mask: Any = None, message: bool = True) -> Compressed:
        """``update(x, rng, mask=mask)`` for a caller that already holds diff = x - x̂ (an event trigger computes
        it first): the same message, bits and random draws, and the same x̂ to the last bit, but x̂ changes in
        place, and a sparsifying compressor (top-k, random-k and their compositions) adds its k entries per row
        instead of a dense message of d entries. ``message=False``: the result's ``value`` is None (the decoded
        message is not built; bits and counts are)."""
        comp = self.compressor
        if self.value is None:
            self.value = bk.zeros_like(diff)
        if mask is not None:
            if not self.batched:
                raise ValueError("mask needs a batched TrackedCopy (a leading node axis)")
            mask = self._check_mask(mask, diff)
        sent_in = diff if mask is None else bk.index_rows(diff, mask)
        rows = bk.rows_of(mask, sent_in.shape[0], self.value)
        if self.batched and hasattr(comp, "_encode_sparse") and bk.is_contiguous(self.value):
            out, dense = self._add_sparse(sent_in, rng, rows, message)
        elif mask is None and not message and diff.shape == self.value.shape and bk.is_contiguous(self.value):
            out, dense = self._add_compressed(diff, rng), None
        else:
            out = comp(sent_in, rng, batched=self.batched)
            if mask is None:
                self.value += out.value
                dense = out.value
            else:
                self.value[rows] += out.value
                dense = bk.set_rows(bk.zeros_like(diff), mask, out.value) if message else None
        return out if mask is None else _expand(out, mask, dense)

    def update_in_place(self, x: Any, rng: Any = None) -> Compressed:
        """``update(x, rng)`` without the message: x̂ ← x̂ + C(x - x̂) in place, the same bits and random draws;
        the result's ``value`` is None. A compressor with a compiled in-place kernel (``_add_difference``, e.g.
        CuteMaxVar's) never builds x - x̂ or C(x - x̂); any other takes ``apply_difference``."""
        comp = self.compressor
        if self.value is None:
            self.value = bk.zeros_like(x)
        if hasattr(comp, "_add_difference") and not bk.is_torch(x) and x.shape == self.value.shape:
            batch, d, x2, xhat2 = self._flat(x)
            if np.shares_memory(xhat2, self.value):
                bk.check_input(x2)
                u = self._draws(x2, rng)
                enc = comp._add_difference(x2, xhat2, u)
                if enc is None:
                    enc = comp._encode(x2 - xhat2, u, self._element_shape(x))
                    self.value += bk.reshape(enc.value, tuple(x.shape))
                return build_compressed(None, enc, batch, d, self.batched)
        return self.apply_difference(x - self.value, rng, message=False)

    def _add_compressed(self, diff: Any, rng: Any) -> Compressed:
        """x̂ += C(diff) in place, the message not built, through the compressor's ``_add_compressed`` (a compiled
        pass, e.g. the scaled sign's); where that declines, its ``_encode`` with the same draws."""
        bk.check_input(diff)
        batch, d, x2, xhat2 = self._flat(diff)
        u = self._draws(x2, rng)
        enc = self.compressor._add_compressed(x2, xhat2, u)
        if enc is None:
            enc = self.compressor._encode(x2, u, self._element_shape(diff))
            self.value += bk.reshape(enc.value, tuple(diff.shape))
        return build_compressed(None, enc, batch, d, self.batched)

    # ---- what the in-place paths share -----------------------------------------------------------------------
    def _flat(self, x: Any) -> tuple[int, int, Any, Any]:
        """(batch, d, x as (batch, d), x̂ as (batch, d)) for an x shaped like x̂."""
        batch = int(x.shape[0]) if self.batched else 1
        d = int(np.prod(tuple(x.shape))) // batch
        return batch, d, bk.reshape(x, (batch, d)), bk.reshape(self.value, (batch, d))

    def _element_shape(self, x: Any) -> tuple[int, ...]:
        return tuple(x.shape[1:]) if self.batched else tuple(x.shape)

    def _draws(self, x2: Any, rng: Any) -> Any:
        """The compressor's block of uniforms for the rows x2 (batch, d), or None if it draws none."""
        m = self.compressor.n_uniforms(int(x2.shape[1]))
        return bk.uniforms(x2, (int(x2.shape[0]), m), rng) if m else None

    def _add_sparse(self, sent_in: Any, rng: Any, rows: Any, message: bool) -> tuple[Compressed, Any]:
        """Compress the rows ``sent_in`` (rows ``rows`` of x̂) and add the k kept entries of each to x̂."""
        bk.check_input(sent_in)
        batch = int(sent_in.shape[0])
        d = int(np.prod(tuple(sent_in.shape[1:])))
        x2 = bk.reshape(sent_in, (batch, d))
        idx, enc = self.compressor._encode_sparse(x2, self._draws(x2, rng))
        pos = bk.reshape(rows[:, None] * d + idx, (-1,))
        kept = bk.reshape(enc.value, (-1,))
        flat = bk.reshape(self.value, (-1,))
        flat[pos] += kept
        dense = None
        if message:
            dense = bk.zeros_like(self.value)
            bk.reshape(dense, (-1,))[pos] = kept
        return build_compressed(dense, enc, batch, d, True), dense

    @staticmethod
    def _check_mask(mask: Any, x: Any) -> np.ndarray:
        mask = np.asarray(bk.to_numpy_int(mask) if bk.is_torch(mask) else mask, dtype=bool).reshape(-1)
        if mask.shape != (x.shape[0],):
            raise ValueError(f"mask must have one bool per batch element, shape ({x.shape[0]},); got {mask.shape}")
        return mask

    def reset(self, value: Any) -> None:
        """Set x̂ without sending anything (e.g. copies known to all from a shared seed)."""
        self.value = value.clone() if bk.is_torch(value) else np.array(value, copy=True)


class StaleCopy:
    """C-VFL's compressed round-start messages, read for Q local iterations (the paper's Algorithm 1, Sec. 3).

    ``refresh`` compresses the batch of parties' embeddings (B = M parties) once per round and
    stores the decoded values; ``view(m, fresh)`` is what party m computes with during the round:
    everybody's stale compressed embedding except its own, which is fresh and uncompressed.
    The view is built by concatenation, so torch autograd flows into ``fresh`` only.
    """

    def __init__(self, compressor: Compressor, *, batched: bool = True) -> None:
        self.compressor = compressor
        self.batched = batched
        self.value = None

    def refresh(self, x: Any, rng: Any = None, **context: Any) -> Compressed:
        out = self.compressor(x, rng, batched=self.batched, **context)
        self.value = out.value
        return out

    def view(self, m: int, fresh: Any) -> Any:
        if self.value is None:
            raise ValueError("StaleCopy.view before refresh: compress the round-start messages first")
        v = self.value
        if bk.is_torch(v):
            import torch

            return torch.cat((v[:m].detach(), fresh[None], v[m + 1 :].detach()), dim=0)
        return np.concatenate((v[:m], np.asarray(fresh)[None], v[m + 1 :]), axis=0)
