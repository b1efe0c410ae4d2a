"""Undirected graphs as edge index arrays and a signed incidence matrix (no per-edge Python loops).

A-G (Sec. 4.5): an Erdős–Rényi G(n, p) graph, redrawn until connected.  The pre-registered reading names
``networkx.erdos_renyi_graph(n, p, seed)``; networkx is not a dependency here, so the graph is drawn
with numpy (each of the n(n-1)/2 pairs independently with probability p, from the caller's
generator) and connectivity is checked with ``scipy.sparse.csgraph``.  The law is the same G(n, p);
the particular graph for a seed differs from networkx's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components


@dataclass(frozen=True)
class Graph:
    n: int
    edges: np.ndarray  # (E, 2) int, i < j, one row per undirected edge

    @property
    def n_edges(self) -> int:
        return int(self.edges.shape[0])

    @property
    def heads(self) -> np.ndarray:
        return self.edges[:, 0]

    @property
    def tails(self) -> np.ndarray:
        return self.edges[:, 1]

    @property
    def degree(self) -> np.ndarray:
        return np.bincount(self.edges.ravel(), minlength=self.n).astype(np.int64)

    def incidence(self) -> sp.csr_matrix:
        """B (n × E): +1 at (i, e) and -1 at (j, e) for edge e = (i, j).  B @ W sums W_e into node i and -W_e into j."""
        E = self.n_edges
        rows = np.concatenate([self.heads, self.tails])
        cols = np.concatenate([np.arange(E), np.arange(E)])
        vals = np.concatenate([np.ones(E), -np.ones(E)])
        return sp.csr_matrix((vals, (rows, cols)), shape=(self.n, E))

    def is_connected(self) -> bool:
        adj = sp.csr_matrix((np.ones(self.n_edges), (self.heads, self.tails)), shape=(self.n, self.n))
        return connected_components(adj, directed=False)[0] == 1


def erdos_renyi(n: int, p: float, rng: np.random.Generator) -> Graph:
    iu, ju = np.triu_indices(n, k=1)
    keep = rng.random(iu.size) < p
    return Graph(n=n, edges=np.stack([iu[keep], ju[keep]], axis=1).astype(np.int64))


def erdos_renyi_connected(n: int, p: float, rng: np.random.Generator, max_tries: int = 1000) -> Graph:
    """G(n, p) redrawn from the same generator until connected (A-G)."""
    for _ in range(max_tries):
        g = erdos_renyi(n, p, rng)
        if g.n_edges and g.is_connected():
            return g
    raise RuntimeError(f"no connected G({n}, {p}) in {max_tries} draws; raise p (config key 'p')")
