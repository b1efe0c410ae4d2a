"""The bit ledger: every message's bits, per link direction, node and step (docs/comm.md, "4. Ledger and conventions").

Directions: ``"up"`` (node → server), ``"down"`` (server → node: charged to the receiving node),
``"p2p"`` (decentralized: charged to the sending node). Records with the same direction and step
are summed, so an algorithm that compresses per tensor records each tensor under one step and
the ledger stays small. Besides total bits the ledger keeps the bits by kind and the symbol counts
of messages recorded as ``Compressed`` objects, so that ``fedrepro.comm.conventions`` can price
the same traffic by each paper's own rules (BPV ignores the scale, C-VFL ignores indices, the
thesis re-prices indices at 32, 64 or ceil(log2 d) bits).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .base import COUNT_KINDS, PART_KINDS, Compressed

DIRECTIONS = ("up", "down", "p2p")
FIELDS = (
    ("bits",)
    + tuple(f"{k}_bits" for k in PART_KINDS)
    + tuple(f"n_{k}" for k in COUNT_KINDS)
    + ("indices_log2_bits",)  # n_indices · ceil(log2 index_space): the log2-index conventions' price
)
_FIELD_INDEX = {f: i for i, f in enumerate(FIELDS)}


class BitLedger:
    """Cumulative bits per direction and node. ``n_nodes`` may be left for the first record to set."""

    def __init__(self, n_nodes: int | None = None) -> None:
        self.n_nodes = n_nodes
        self._acc: dict[tuple[str, int], np.ndarray] = {}
        self._uncounted: set[tuple[str, int]] = set()  # steps with raw-bit records (no symbol counts)

    # --- writing -----------------------------------------------------------------------------
    def record(self, direction: str, bits: Compressed | Any, step: int | None = None, *, copies: Any = 1) -> None:
        """Add one message per node.

        bits: a ``Compressed`` result, or bits per node (array of shape (n_nodes,), or a scalar).
              A scalar, or a ``Compressed`` with shape-() bits (``batched=False``), is charged to
              every node: a broadcast that each node receives (e.g. gcca's downlink Ĝ).
        step: the iteration / round; None means one after the last step of this direction (0 first).
        copies: how many times each node's message crosses the wire (int or per node), e.g. the
              node's degree when it unicasts the same message to each neighbour (thesis ch. 4 A-B1).
        """
        if direction not in DIRECTIONS:
            raise ValueError(f"direction must be one of {', '.join(DIRECTIONS)}; got {direction!r}")
        if step is None:
            done = [s for (d, s) in self._acc if d == direction]
            step = max(done) + 1 if done else 0
        step = int(step)
        key = (direction, step)
        if isinstance(bits, Compressed):
            rows = self._rows_from_message(bits)
        else:
            per_node = self._per_node(np.asarray(bits, dtype=np.int64), "bits")
            rows = np.zeros((len(FIELDS), per_node.shape[0]), dtype=np.int64)
            rows[0] = per_node
            self._uncounted.add(key)
        if not (isinstance(copies, int) and copies == 1):   # the common case: one copy, nothing to scale
            rows = rows * self._per_node(np.asarray(copies, dtype=np.int64), "copies")
        self._acc[key] = self._acc.get(key, 0) + rows

    def _n(self) -> int:
        if self.n_nodes is None:
            raise ValueError("BitLedger(n_nodes) is needed to charge a scalar (broadcast) message to every node")
        return self.n_nodes

    def _per_node(self, a: np.ndarray, what: str) -> np.ndarray:
        if a.ndim == 0:
            return np.full(self._n(), int(a), dtype=np.int64)
        if a.ndim != 1:
            raise ValueError(f"{what} must be a scalar or one value per node; got shape {a.shape}")
        if self.n_nodes is None:
            self.n_nodes = a.shape[0]
        if a.shape[0] != self.n_nodes:
            raise ValueError(f"{what} has {a.shape[0]} values but the ledger has {self.n_nodes} nodes")
        return a

    def _rows_from_message(self, out: Compressed) -> np.ndarray:
        log2_width = int(math.ceil(math.log2(out.index_space))) if out.index_space and out.index_space > 1 else 0
        columns = (
            [out.bits]
            + [out.parts[k] for k in PART_KINDS]
            + [out.counts[k] for k in COUNT_KINDS]
            + [out.counts["indices"] * log2_width]
        )
        # one array call where every column has one shape (what build_compressed makes): a few us a message
        # instead of twelve conversions
        try:
            rows = np.array(columns, dtype=np.int64)
        except ValueError:                              # mixed shapes: column by column
            return np.stack([self._per_node(np.asarray(c, dtype=np.int64), "bits") for c in columns])
        if rows.ndim == 1:                              # a broadcast: every node receives it
            return np.repeat(rows[:, None], self._n(), axis=1)
        self._per_node(rows[0], "bits")                 # checks (or sets) the node count
        return rows

    # --- reading -----------------------------------------------------------------------------
    def steps(self, direction: str | None = None) -> np.ndarray:
        return np.array(sorted({s for (d, s) in self._acc if direction in (None, d)}), dtype=np.int64)

    def per_step(self, field: str = "bits", direction: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(steps, values of shape (n_steps, n_nodes)): the field summed per step (over directions
        unless one is given)."""
        self._check(field, direction)
        steps = self.steps(direction)
        out = np.zeros((len(steps), self.n_nodes or 0), dtype=np.int64)
        pos = {s: i for i, s in enumerate(steps)}
        for (d, s), rows in self._acc.items():
            if direction in (None, d):
                out[pos[s]] += rows[_FIELD_INDEX[field]]
        return steps, out

    def cumulative(self, direction: str | None = None, node: int | None = None, field: str = "bits") -> tuple[np.ndarray, np.ndarray]:
        """(steps, cumulative total after each step), over all nodes or for one node."""
        steps, values = self.per_step(field, direction)
        series = values.sum(axis=1) if node is None else values[:, node]
        return steps, np.cumsum(series)

    def total(self, direction: str | None = None, field: str = "bits") -> np.ndarray:
        """Per-node totals, shape (n_nodes,)."""
        return self.per_step(field, direction)[1].sum(axis=0)

    def total_bits(self, direction: str | None = None) -> int:
        return int(self.total(direction).sum())

    def has_counts(self, direction: str | None = None) -> bool:
        """Whether every record (of the direction) came as a Compressed, so conventions can re-price it."""
        return not any(direction in (None, d) for (d, _) in self._uncounted)

    def to_rows(self) -> list[dict[str, int | str]]:
        """Long format, one row per (direction, step, node), for CSV output."""
        rows = []
        for (d, s) in sorted(self._acc):
            acc = self._acc[(d, s)]
            for node in range(acc.shape[1]):
                rows.append({"direction": d, "step": s, "node": node} | {f: int(acc[i, node]) for i, f in enumerate(FIELDS)})
        return rows

    def _check(self, field: str, direction: str | None) -> None:
        if field not in _FIELD_INDEX:
            raise ValueError(f"field must be one of {', '.join(FIELDS)}; got {field!r}")
        if direction is not None and direction not in DIRECTIONS:
            raise ValueError(f"direction must be one of {', '.join(DIRECTIONS)} or None; got {direction!r}")
