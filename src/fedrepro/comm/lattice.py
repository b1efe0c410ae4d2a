"""The 2-D hexagonal lattice A2 that C-VFL's vector quantizer uses (the paper's App. B, vector quantization).

In data coordinates the lattice of scale s is {s(√2 i - j/√2, √(3/2) j) : i, j ∈ Z} (the
authors' ``latbin.ALattice(2, scale=s)``, which does not build, so it is re-implemented here):
minimum distance s√2, cell area √3 s², covering radius s√(2/3).

``a2_nearest`` finds the nearest lattice point with the coset trick: A2 is the union of the
rectangular lattice R = s√2 Z × s√6 Z and R + (s√2/2, s√6/2) (even and odd j). Rounding in
each coset and keeping the nearer candidate is exact and purely element-wise, so it vectorizes
in numpy and torch alike. ``a2_nearest_conway_sloane`` is Conway & Sloane's algorithm (
A2 as the plane sum = 0 of Z^3), kept as an independent reference for the tests.
"""

from __future__ import annotations

import math

import numpy as np

from . import _backend as bk

SQRT2, SQRT6 = math.sqrt(2.0), math.sqrt(6.0)


def a2_nearest(vx, vy, scale: float):
    """Nearest point of the A2 lattice of the given scale to each point (vx, vy).

    In units where R is Z² (x / (s√2), y / (s√6)), let f be the offset of a point from its nearest
    integer point. The nearest point of the other coset, Z² + (1/2, 1/2), is then at offsets
    f ∓ 1/2, and with the axes weighted 1 : 3 (because √6 = √3·√2) it is nearer exactly when
    |f_x| + 3|f_y| > 1. One comparison instead of two distance computations.
    """
    a, c = SQRT2 * scale, SQRT6 * scale
    X, Y = vx / a, vy / c
    rx, ry = bk.round_(X), bk.round_(Y)
    fx, fy = X - rx, Y - ry
    other = bk.as_dtype_of(bk.abs_(fx) + 3.0 * bk.abs_(fy) > 1.0, fx)
    half_x = (bk.as_dtype_of(fx >= 0, fx) - 0.5) * other  # ±1/2 toward the point, or 0
    half_y = (bk.as_dtype_of(fy >= 0, fy) - 0.5) * other
    return (rx + half_x) * a, (ry + half_y) * c


def a2_voronoi_uniform(u1, u2, scale: float):
    """Points uniform on the Voronoi cell of 0, from two U[0, 1) arrays.

    A point uniform on the fundamental parallelogram {u1 g1 + u2 g2}, reduced modulo the lattice
    (p minus its nearest lattice point), is uniform on the Voronoi cell. This is the "proper"
    subtractive dither that makes the error uniform on the cell whatever the input.
    """
    g1x = SQRT2 * scale
    g2x, g2y = -scale / SQRT2, scale * math.sqrt(1.5)
    px, py = u1 * g1x + u2 * g2x, u2 * g2y
    qx, qy = a2_nearest(px, py, scale)
    return px - qx, py - qy


def a2_cell_area(scale: float) -> float:
    return math.sqrt(3.0) * scale**2


def a2_covering_radius(scale: float) -> float:
    return scale * math.sqrt(2.0 / 3.0)


# Normalized second moment of the hexagon (per dimension), G = 5 / (36 √3): with the error
# uniform on the cell, the mean squared error per component is G · cell area.
A2_NORMALIZED_SECOND_MOMENT = 5.0 / (36.0 * math.sqrt(3.0))


def a2_nearest_conway_sloane(points: np.ndarray, scale: float) -> np.ndarray:
    """Reference nearest-point search of the paper's App. B, vector quantization (numpy, (N, 2) -> (N, 2))."""
    R = np.array([[1.0, -1.0, 0.0], [1.0, 1.0, -2.0]])
    R = R / np.linalg.norm(R, axis=1, keepdims=True)
    y = (np.asarray(points, dtype=np.float64) / scale) @ R
    f = np.round(y)
    delta = f.sum(axis=1)
    resid = y - f
    for r in np.nonzero(delta > 0)[0]:
        order = np.argsort(resid[r])  # smallest y - f first
        f[r, order[: int(delta[r])]] -= 1
    for r in np.nonzero(delta < 0)[0]:
        order = np.argsort(-resid[r])  # largest y - f first
        f[r, order[: int(-delta[r])]] += 1
    return scale * (f @ R.T)
