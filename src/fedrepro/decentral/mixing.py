"""Gossip averaging Y -> W Y for a mixing matrix W, without a dense (n, n) product on sparse graphs.

Every row i is computed in one fixed floating-point order: its non-zero columns j_1 < j_2 < ... < j_k (padded with
(i, 0) up to the largest degree k), out_i = ((w_i1 y_j1 + w_i2 y_j2) + w_i3 y_j3) + ..., each product and sum
rounded once. `GatherMixer` gathers the k neighbour rows (k full-array copies); `SliceMixer` computes the same sums
on slices of Y, no copy at all, over runs of consecutive rows whose neighbour lists shift by one from row to row.
A ring is 3 runs (row 0, rows 1..n-2, row n-1: the sorted order changes where the ring wraps), a torus 3 per grid
row (its first and last columns are single-row runs, gathered). Both give bit-identical results, so the choice is
only about speed (`make_mixer`).
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import torch

# A run shorter than this is cheaper gathered (with the other short runs) than sliced (2k - 1 small operations).
MIN_RUN = 4


def neighbour_lists(W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(idx, wts), each (n, k): row i's non-zero columns in increasing order and their weights, padded with (i, 0)."""
    W = np.asarray(W, dtype=np.float64)
    n = W.shape[0]
    k = int((W != 0).sum(axis=1).max())
    idx = np.zeros((n, k), dtype=np.int64)
    wts = np.zeros((n, k))
    for i in range(n):
        nz = np.flatnonzero(W[i])
        idx[i, : nz.size], wts[i, : nz.size] = nz, W[i, nz]
        idx[i, nz.size :] = i
    return idx, wts


def shift_runs(idx: np.ndarray) -> list[tuple[int, int]]:
    """Maximal row ranges [r0, r1) over which every column of idx increases by exactly one per row."""
    n = idx.shape[0]
    cuts = [0] + [i for i in range(1, n) if not np.all(idx[i] == idx[i - 1] + 1)] + [n]
    return list(pairwise(cuts))


class DenseMixer:
    def __init__(self, W: np.ndarray, dtype, device):
        self.Wt = torch.as_tensor(np.asarray(W, dtype=np.float64), dtype=dtype, device=device)

    def __call__(self, Y: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        return torch.matmul(self.Wt, Y, out=out) if out is not None else self.Wt @ Y


class GatherMixer:
    """out = w_:1 * Y[idx_:1] + w_:2 * Y[idx_:2] + ... for the rows `rows` (default all): k gathers of rows."""

    def __init__(self, idx: np.ndarray, wts: np.ndarray, dtype, device, rows: np.ndarray | None = None):
        rows = np.arange(idx.shape[0]) if rows is None else np.asarray(rows)
        self.rows = torch.as_tensor(rows, device=device)
        self.all_rows = rows.size == idx.shape[0] and bool(np.all(rows == np.arange(idx.shape[0])))
        self.cols = [(torch.as_tensor(idx[rows, j], device=device),
                      torch.as_tensor(wts[rows, j], dtype=dtype, device=device)[:, None]) for j in range(idx.shape[1])]

    def __call__(self, Y: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        ix, w = self.cols[0]
        acc = w * Y.index_select(0, ix)
        for ix, w in self.cols[1:]:
            acc = acc + w * Y.index_select(0, ix)
        if self.all_rows:
            return acc if out is None else out.copy_(acc)
        if out is None:
            out = torch.empty_like(Y)
        return out.index_copy_(0, self.rows, acc)


class SliceMixer:
    """The same sums as GatherMixer, on slices of Y: per run of rows [r0, r1) and neighbour column j, the rows
    Y[idx[r0, j] : idx[r0, j] + r1 - r0] (one product into a scratch buffer, one in-place sum). Rows in runs
    shorter than MIN_RUN are gathered together instead."""

    def __init__(self, idx: np.ndarray, wts: np.ndarray, runs: list[tuple[int, int]], dtype, device):
        self.w = torch.as_tensor(wts, dtype=dtype, device=device)
        long = [(r0, r1) for r0, r1 in runs if r1 - r0 >= MIN_RUN]
        self.plan = [(r0, r1, [int(s) for s in idx[r0]]) for r0, r1 in long]
        short = [np.arange(r0, r1) for r0, r1 in runs if r1 - r0 < MIN_RUN]
        self.rest = GatherMixer(idx, wts, dtype, device, rows=np.concatenate(short)) if short else None
        self.k = idx.shape[1]
        self._tmp: torch.Tensor | None = None

    def __call__(self, Y: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        if out is None:
            out = torch.empty_like(Y)
        if self._tmp is None or self._tmp.shape != Y.shape or self._tmp.dtype != Y.dtype:
            self._tmp = torch.empty_like(Y)
        for r0, r1, starts in self.plan:
            L = r1 - r0
            acc, tmp = out[r0:r1], self._tmp[:L]
            torch.mul(self.w[r0:r1, 0:1], Y[starts[0] : starts[0] + L], out=acc)
            for j in range(1, self.k):
                torch.mul(self.w[r0:r1, j : j + 1], Y[starts[j] : starts[j] + L], out=tmp)
                acc.add_(tmp)
        if self.rest is not None:
            self.rest(Y, out=out)
        return out


def make_mixer(W: np.ndarray, dtype, device):
    """A callable mix(Y, out=None) = W @ Y.  Dense graphs (more than a quarter of the entries non-zero): the matmul.
    Sparse graphs: slices where long shift runs cover at least half of the rows (ring, torus), else gathers."""
    W = np.asarray(W, dtype=np.float64)
    n = W.shape[0]
    if (W != 0).sum(axis=1).max() * 4 > n:
        return DenseMixer(W, dtype, device)
    idx, wts = neighbour_lists(W)
    runs = shift_runs(idx)
    if 2 * sum(r1 - r0 for r0, r1 in runs if r1 - r0 >= MIN_RUN) >= n:
        return SliceMixer(idx, wts, runs, dtype, device)
    return GatherMixer(idx, wts, dtype, device)
