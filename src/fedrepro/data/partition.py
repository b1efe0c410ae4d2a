"""Client / node splits, all seeded and vectorized: each returns a list of index arrays, one per part.

Which functions cover every sample exactly once: iid_split, sorted_shards, dirichlet_split.  The ADEPT
pathological split deliberately uses only a fraction of each class (its data_ratio), disjointly.
"""

from __future__ import annotations

import numpy as np


def iid_split(n: int, n_parts: int, rng: np.random.Generator) -> list[np.ndarray]:
    """A random permutation cut into n_parts shards whose sizes differ by at most one (thesis A-40)."""
    return [np.sort(p) for p in np.array_split(rng.permutation(n), n_parts)]


def sorted_shards(labels: np.ndarray, n_parts: int, rng: np.random.Generator | None = None) -> list[np.ndarray]:
    """Sort by label and cut into n_parts contiguous equal shards (thesis A-45: 60 nodes x 1000 MNIST images,
    one class per node, two at class boundaries).  With rng, the order inside each class is random
    (else the original order, as a stable sort)."""
    labels = np.asarray(labels)
    key = rng.permutation(len(labels)) if rng is not None else np.arange(len(labels))
    order = np.lexsort((key, labels))
    return np.array_split(order, n_parts)


def one_class_per_client(labels: np.ndarray, n_clients: int, *, data_ratio: float = 1.0, layout: str = "consecutive",
                         rng: np.random.Generator | None = None) -> list[np.ndarray]:
    """ADEPT's pathological split (adept.md 5.3): client i holds only class c = i // (n_clients / n_classes).

    layout "consecutive" (MNIST/FMNIST code): class c's samples in dataset order, slices of length
      floor(N_c * data_ratio / k) (k = clients per class); client i takes slice i mod k.
    layout "block" (CIFAR-10 code): class c cut into k blocks of floor(N_c / k); client i takes block i mod k,
      shuffled with rng, and keeps the first floor(block * data_ratio).
    Slices never overlap.  `rng` without layout "block" shuffles within each class first.
    """
    labels = np.asarray(labels)
    classes, counts = np.unique(labels, return_counts=True)
    if n_clients % len(classes):
        raise ValueError(f"n_clients={n_clients} is not a multiple of the {len(classes)} classes")
    k = n_clients // len(classes)
    order = np.argsort(labels, kind="stable")
    if rng is not None and layout == "consecutive":
        order = np.lexsort((rng.permutation(len(labels)), labels))
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    parts = []
    for i in range(n_clients):                        # a loop over clients, not samples
        c, s = divmod(i, k)
        if layout == "consecutive":
            length = int(counts[c] * data_ratio // k)
            parts.append(order[starts[c] + s * length: starts[c] + (s + 1) * length])
        elif layout == "block":
            block = counts[c] // k
            idx = order[starts[c] + s * block: starts[c] + (s + 1) * block]
            if rng is not None:
                idx = idx[rng.permutation(len(idx))]
            parts.append(idx[: int(block * data_ratio)])
        else:
            raise ValueError(f"layout must be 'consecutive' or 'block', got {layout!r}")
    return parts


def dirichlet_split(labels: np.ndarray, n_clients: int, alpha: float, rng: np.random.Generator,
                    min_size: int = 0, max_tries: int = 100) -> list[np.ndarray]:
    """Label-skewed split: each class is divided among clients in proportions drawn from Dir(alpha).
    Small alpha -> few classes per client.  Redraws (up to max_tries) until every client has min_size samples."""
    labels = np.asarray(labels)
    classes = np.unique(labels)
    for _ in range(max_tries):
        owner = np.empty(len(labels), dtype=np.int64)
        for c in classes:                              # a loop over classes, not samples
            idx = np.flatnonzero(labels == c)
            idx = idx[rng.permutation(len(idx))]
            cuts = (np.cumsum(rng.dirichlet(np.full(n_clients, alpha)))[:-1] * len(idx)).astype(int)
            owner[idx] = np.repeat(np.arange(n_clients), np.diff(np.concatenate([[0], cuts, [len(idx)]])))
        sizes = np.bincount(owner, minlength=n_clients)
        if sizes.min() >= min_size:
            break
    else:
        raise ValueError(f"no Dirichlet(alpha={alpha}) split gave every client >= {min_size} samples in {max_tries} tries")
    return groups_from_owner(owner, n_clients)


def groups_from_owner(owner: np.ndarray, n_parts: int) -> list[np.ndarray]:
    """Owner vector (sample -> part) to a list of sorted index arrays."""
    order = np.argsort(owner, kind="stable")
    return np.split(order, np.cumsum(np.bincount(owner, minlength=n_parts))[:-1])


def node_split(labels: np.ndarray, n_nodes: int, heterogeneity: str, rng: np.random.Generator) -> list[np.ndarray]:
    """Decentralized training data per node, as the thesis uses it: "iid" (random equal shards, CIFAR/ImageNet,
    A-40) or "sorted" (label-sorted contiguous shards, MNIST Fig. 3.4, A-45)."""
    if heterogeneity == "iid":
        return iid_split(len(labels), n_nodes, rng)
    if heterogeneity == "sorted":
        return sorted_shards(labels, n_nodes)
    raise ValueError(f"heterogeneity must be 'iid' or 'sorted', got {heterogeneity!r}")


def owner_vector(parts: list[np.ndarray], n: int) -> np.ndarray:
    """Inverse of a split: part index per sample (-1 where a sample belongs to no part)."""
    owner = np.full(n, -1, dtype=np.int64)
    owner[np.concatenate(parts)] = np.repeat(np.arange(len(parts)), [len(p) for p in parts])
    return owner
