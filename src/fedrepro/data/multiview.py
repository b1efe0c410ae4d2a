"""Vertical (feature) splits across parties and multi-view construction, vectorized over samples."""

from __future__ import annotations

import numpy as np


def image_grid(x: np.ndarray, rows: int = 2, cols: int = 2, layout: str = "NHWC") -> list[np.ndarray]:
    """Cut every image into rows x cols patches, one per party, row-major: for 2x2, party 0 top-left,
    1 top-right, 2 bottom-left, 3 bottom-right (C-VFL CIFAR-10 / ImageNet-100 quadrants).
    layout: NHW, NHWC or NCHW.  Returns views (no copy)."""
    h_ax, w_ax = {"NHW": (1, 2), "NHWC": (1, 2), "NCHW": (2, 3)}[layout]
    h, w = x.shape[h_ax], x.shape[w_ax]
    if h % rows or w % cols:
        raise ValueError(f"image {h}x{w} does not split into {rows}x{cols} equal patches")
    ph, pw = h // rows, w // cols
    out = []
    for r in range(rows):
        for c in range(cols):
            sl = [slice(None)] * x.ndim
            sl[h_ax], sl[w_ax] = slice(r * ph, (r + 1) * ph), slice(c * pw, (c + 1) * pw)
            out.append(x[tuple(sl)])
    return out


def image_quadrants(x: np.ndarray, layout: str = "NHWC") -> list[np.ndarray]:
    return image_grid(x, 2, 2, layout)


def feature_blocks(x: np.ndarray, n_parties: int, axis: int = -1) -> list[np.ndarray]:
    """Contiguous feature blocks [d*m/M, d*(m+1)/M) per party (C-VFL MIMIC: 76 channels -> 4 x 19).
    Uneven sizes differ by at most one (numpy.array_split)."""
    return np.array_split(x, n_parties, axis=axis)


def view_groups(x: np.ndarray, n_parties: int, view_axis: int = 1) -> list[np.ndarray]:
    """Contiguous groups of views per party (C-VFL ModelNet10: 12 views, M=4 -> views 3m..3m+2; M=12 -> one)."""
    v = x.shape[view_axis]
    if v % n_parties:
        raise ValueError(f"{v} views do not divide among {n_parties} parties")
    return np.split(x, n_parties, axis=view_axis)


def two_view_noisy(x: np.ndarray, y: np.ndarray, rng: np.random.Generator,
                   max_angle: float = np.pi / 4) -> tuple[np.ndarray, np.ndarray]:
    """Noisy-MNIST two views (Wang et al., ICML 2015): view 1 = the image rotated by U[-max_angle, max_angle];
    view 2 = a different random image of the same class plus U[0, 1] pixel noise, clipped to [0, 1].
    x: (n, H, W) floats in [0, 1].  Returns (view1, view2) of the same shape."""
    from fedrepro.data.standins import warp_batch

    n, h, w = x.shape
    ang = rng.uniform(-max_angle, max_angle, n)
    v1 = np.clip(warp_batch(x, h, ang, np.ones(n), np.zeros((n, 2))), 0, 1) if h == w else x
    # a partner of the same class: shift each sample by a random non-zero offset inside its class
    order = np.lexsort((rng.permutation(n), y))
    cls, starts, counts = np.unique(y[order], return_index=True, return_counts=True)
    pos = np.arange(n) - np.repeat(starts, counts)
    size = np.repeat(counts, counts)
    step = 1 + (rng.integers(0, np.iinfo(np.int64).max, n) % np.maximum(size - 1, 1))
    partner = np.empty(n, dtype=np.int64)
    partner[order] = order[np.repeat(starts, counts) + (pos + step) % size]
    v2 = np.clip(x[partner] + rng.uniform(0, 1, x.shape), 0, 1)
    return v1, v2


def within_group_shuffle(views: np.ndarray, labels: np.ndarray, rng: np.random.Generator,
                         per_view: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """gcca 6.5 step 6 (A-33): rows sorted by label; each view gets its own random permutation inside each
    group (per_view=False: one permutation for all views), then one common global permutation.
    views: (n_views, rows, cols).  Returns (shuffled views, labels in the new row order)."""
    n_views, n = views.shape[:2]
    order = np.argsort(labels, kind="stable")
    lab = labels[order]
    perms = []
    for _ in range(n_views if per_view else 1):            # a loop over views, not samples
        perms.append(order[np.lexsort((rng.permutation(n), lab))])
    if not per_view:
        perms = perms * n_views
    glob = rng.permutation(n)
    out = np.stack([views[i][perms[i]][glob] for i in range(n_views)])
    return out, lab[glob]


def holdout(n: int, n_test: int, rng: np.random.Generator | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Train / test indices: the last n_test rows are test (after an optional random permutation)."""
    idx = rng.permutation(n) if rng is not None else np.arange(n)
    return np.sort(idx[: n - n_test]), np.sort(idx[n - n_test:])
