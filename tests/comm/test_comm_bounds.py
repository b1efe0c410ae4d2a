"""Unbiasedness, variance and δ/ω bounds the papers state, checked by Monte Carlo or exactly.

Monte-Carlo tolerances are not tuned. Each is z · σ / √N with σ the exact (or a proven upper
bound on the) standard deviation of what is averaged, N the number of independent draws (the
batch axis of one call: N copies of the same message), and z the normal quantile for a stated
false-alarm rate: ALPHA = 1e-6 per test, split over the entries tested together (Bonferroni) and
over two tails where the test is two-sided. N is at least 4000, so the normal approximation of
these means of bounded variables is accurate far beyond that rate. The generators are seeded, so
the tests are also reproducible.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from fedrepro.comm import get_compressor, realized_delta
from fedrepro.comm.cvfl_quantizers import a2_scale
from fedrepro.comm.lattice import (
    A2_NORMALIZED_SECOND_MOMENT,
    a2_cell_area,
    a2_covering_radius,
    a2_nearest,
    a2_nearest_conway_sloane,
)

ALPHA = 1e-6


def z(alpha: float) -> float:
    return float(norm.isf(alpha))


def replicate(x: np.ndarray, n: int) -> np.ndarray:
    return np.broadcast_to(x.reshape(1, -1), (n, x.size)).copy()


def two_point(x: np.ndarray, grid: float, factor: float = 1.0):
    """Exact moments of stochastic rounding of |x| to a grid of the given step (then × factor).

    Entry j becomes sgn(x_j)·factor·lo_j (prob 1 - p_j) or sgn(x_j)·factor·(lo_j + grid) (prob p_j)
    with lo_j = floor(|x_j|/grid)·grid, p_j = |x_j|/grid - floor(|x_j|/grid) (gcca eq. 18, QSGD).
    Returns per-entry E[err], E[err²] and Var[err²] with err = C(x) - x.
    """
    t = np.abs(x) / grid
    lo = np.floor(t)
    p = t - lo
    a = np.sign(x) * factor * lo * grid - x
    b = np.sign(x) * factor * (lo + 1) * grid - x
    mean = (1 - p) * a + p * b
    second = (1 - p) * a**2 + p * b**2
    var_sq = p * (1 - p) * (a**2 - b**2) ** 2
    return mean, second, var_sq


def sample_message(n: int = 40, seed: int = 3) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal(n)
    x[5] = 0.0  # a zero entry stays zero
    return x


# ------------------------------------------------------------------ CuteMaxVar (gcca §3.1.2)


@pytest.mark.parametrize("q", [2, 3, 4])
def test_cutemaxvar_unscaled_is_unbiased(q):
    """Fact 2: E[C̃(Δ)] = Δ. Per-entry sd <= m/(2S) (a two-point variable on a grid of m/S)."""
    x, N = sample_message(), 20_000
    S = 2 ** (q - 1) - 1
    m = np.abs(x).max()
    out = get_compressor("cutemaxvar", q=q)(replicate(x, N), np.random.default_rng(q))
    tol = z(ALPHA / (2 * x.size)) * (m / (2 * S)) / math.sqrt(N)
    assert np.all(np.abs(out.value.mean(axis=0) - x) <= tol)
    assert np.all(out.value[:, 5] == 0) and np.all(np.abs(out.value[:, np.argmax(np.abs(x))]) == m)


@pytest.mark.parametrize("q", [2, 3, 4, 5])
def test_cutemaxvar_unscaled_error_matches_fact2(q):
    """Fact 2: E||C̃(Δ) - Δ||² <= n m²/(4S²). The MC mean matches the exact expectation (two-sided),
    and the exact expectation is within Fact 2's bound."""
    x, N = sample_message(), 20_000
    S = 2 ** (q - 1) - 1
    m = np.abs(x).max()
    _, second, var_sq = two_point(x, m / S)
    out = get_compressor("cutemaxvar", q=q)(replicate(x, N), np.random.default_rng(10 + q))
    err = ((out.value - x) ** 2).sum(axis=1)
    tol = z(ALPHA / 2) * math.sqrt(var_sq.sum() / N)
    assert abs(err.mean() - second.sum()) <= tol
    assert second.sum() <= x.size * m**2 / (4 * S**2)
    assert err.mean() <= x.size * m**2 / (4 * S**2) + tol


@pytest.mark.parametrize("u", ["worst_case", "per_message"])
@pytest.mark.parametrize("q", [2, 3])
def test_cutemaxvar_scaled_is_a_delta_compressor(q, u):
    """Fact 1: C = C̃/u with u >= 1 + n m²/(4S²||Δ||²) has E||C(Δ) - Δ||² <= (1 - 1/u)||Δ||²."""
    x, N = sample_message(), 20_000
    S = 2 ** (q - 1) - 1
    m = np.abs(x).max()
    c = get_compressor("cutemaxvar", q=q, scaled=True, u=u)
    u_val = 1 + x.size / (4 * S**2) if u == "worst_case" else 1 + x.size * m**2 / (4 * S**2 * (x**2).sum())
    delta = float(c.delta(x.size, x[None])[0])
    assert delta == pytest.approx(1 / u_val, rel=1e-12)
    _, second, var_sq = two_point(x, m / S, factor=1 / u_val)
    out = c(replicate(x, N), np.random.default_rng(20 + q))
    err = ((out.value - x) ** 2).sum(axis=1)
    tol = z(ALPHA / 2) * math.sqrt(var_sq.sum() / N)
    assert abs(err.mean() - second.sum()) <= tol
    assert second.sum() <= (1 - delta) * (x**2).sum() * (1 + 1e-12)


def test_cutemaxvar_delta_values():
    """δ as Facts 1-2 state it; Fact 2's unscaled δ(x) is 1 - n m²/(4S²||Δ||²)."""
    x = sample_message()[None]
    n, m2, sq = x.size, np.abs(x).max() ** 2, (x**2).sum()
    assert get_compressor("cutemaxvar", q=3, scaled=True).delta(n) == pytest.approx(1 / (1 + n / 36))
    assert get_compressor("cutemaxvar", q=3).delta(n, x)[0] == pytest.approx(1 - n * m2 / (36 * sq))
    assert get_compressor("cutemaxvar", q=3).delta(n) is None  # 1 - n/(4S²) < 0: no x-free δ
    assert get_compressor("cutemaxvar", q=5).delta(100) == pytest.approx(1 - 100 / (4 * 15**2))


# ------------------------------------------------------------------ QSGD (thesis §9 item 3)


@pytest.mark.parametrize("s", [1, 4, 16])
def test_qsgd_unbiased_with_variance_within_beta(s):
    """(i) E[Q_s(x)] = x, (ii) E||Q_s(x) - x||² <= min(d/s², √d/s) ||x||²."""
    x, N = sample_message(), 20_000
    nrm = np.linalg.norm(x)
    c = get_compressor("qsgd", s=s)
    out = c(replicate(x, N), np.random.default_rng(s))
    tol_mean = z(ALPHA / (4 * x.size)) * (nrm / (2 * s)) / math.sqrt(N)
    assert np.all(np.abs(out.value.mean(axis=0) - x) <= tol_mean)
    _, second, var_sq = two_point(x, nrm / s)
    err = ((out.value - x) ** 2).sum(axis=1)
    tol = z(ALPHA / 4) * math.sqrt(var_sq.sum() / N)
    assert abs(err.mean() - second.sum()) <= tol
    assert second.sum() <= c.beta(x.size) * (x**2).sum()


def test_qsgd_scaled_delta():
    """Q_s/(1+β) satisfies Def. 1 with ω = 1/(1+β) (exact expectation, then MC)."""
    x, N, s = sample_message(), 20_000, 4
    c = get_compressor("qsgd", s=s, scaled=True)
    beta = c.beta(x.size)
    assert c.delta(x.size) == pytest.approx(1 / (1 + beta))
    _, second, var_sq = two_point(x, np.linalg.norm(x) / s, factor=1 / (1 + beta))
    assert second.sum() <= (1 - c.delta(x.size)) * (x**2).sum()
    err = ((c(replicate(x, N), np.random.default_rng(1)).value - x) ** 2).sum(axis=1)
    assert abs(err.mean() - second.sum()) <= z(ALPHA / 2) * math.sqrt(var_sq.sum() / N)


# ------------------------------------------------------------------ sparsifiers and sign (thesis §3.7)


def test_randk_is_uniform_and_keeps_k_over_d_in_expectation():
    """Each coordinate is kept with probability k/d, and E||x - C(x)||² = (1 - k/d)||x||²."""
    x, N, k = sample_message(), 20_000, 7
    d = x.size
    x[5] = 0.5  # no zero entry here: a kept zero would look like a dropped one
    out = get_compressor("randk", k=k)(replicate(x, N), np.random.default_rng(2))
    kept = out.value != 0
    assert np.all(kept.sum(axis=1) == k)
    p = k / d
    freq_tol = z(ALPHA / (2 * d)) * math.sqrt(p * (1 - p) / N)
    assert np.all(np.abs(kept.mean(axis=0) - p) <= freq_tol)
    # Var of sum_j (1 - I_j) x_j² for a uniform k-subset: exact, from the inclusion covariances.
    w = x**2
    cov = k * (k - 1) / (d * (d - 1)) - p**2
    var = p * (1 - p) * (w**2).sum() + cov * (w.sum() ** 2 - (w**2).sum())
    err = ((out.value - x) ** 2).sum(axis=1)
    assert abs(err.mean() - (1 - p) * w.sum()) <= z(ALPHA / 2) * math.sqrt(var / N)


@pytest.mark.parametrize("lib", ["numpy", "torch"])
def test_topk_keeps_the_largest_and_meets_its_bound(lib):
    """||x - Top_k(x)||² <= (1 - k/d)||x||², kept = the k largest |x_i| (exact values)."""
    import torch

    x = np.random.default_rng(4).standard_normal((50, 300))
    for k in (1, 3, 30, 300):
        xin = torch.as_tensor(x) if lib == "torch" else x
        v = np.asarray(get_compressor("topk", k=k)(xin, None).value)
        thresh = -np.sort(-np.abs(x), axis=1)[:, k - 1 : k]
        np.testing.assert_array_equal(v != 0, np.abs(x) >= thresh)
        np.testing.assert_array_equal(v[v != 0], x[v != 0])
        assert np.all(((x - v) ** 2).sum(axis=1) <= (1 - k / 300) * (x**2).sum(axis=1) * (1 + 1e-12))


def test_scaled_sign_identity_and_omega():
    """||x - C(x)||² = ||x||² - ||x||_1²/d and ω(x) = ||x||_1²/(d||x||²) exactly (float64)."""
    x = np.random.default_rng(5).standard_normal((20, 333))
    c = get_compressor("sign")
    out = c(x, None)
    lhs = ((x - out.value) ** 2).sum(axis=1)
    rhs = (x**2).sum(axis=1) - np.abs(x).sum(axis=1) ** 2 / 333
    np.testing.assert_allclose(lhs, rhs, rtol=1e-10)
    np.testing.assert_allclose(c.delta(333, x), realized_delta(x, out.value), rtol=1e-10)


def test_sign_topk_identity_and_omegas():
    """||x - C(x)||² = ||x||² - ||Top_k x||_1²/k; exact ω equals the realized one; the thesis'
    printed ω (E-7) is a valid but looser lower bound."""
    x = np.random.default_rng(6).standard_normal((20, 500))
    k = 10
    c = get_compressor("sign_topk", k=k)
    out = c(x, None)
    y = -np.sort(-np.abs(x), axis=1)[:, :k]
    lhs = ((x - out.value) ** 2).sum(axis=1)
    np.testing.assert_allclose(lhs, (x**2).sum(axis=1) - y.sum(axis=1) ** 2 / k, rtol=1e-10)
    exact = c.exact_delta(x)
    np.testing.assert_allclose(exact, realized_delta(x, out.value), rtol=1e-10)
    assert np.all(c.delta(500, x) <= exact) and np.all(c.delta(500, x) >= 1 / 500)


def test_composed_qsgd_topk_meets_its_omega():
    """Composed (a): Q_s(Top_k x)/(1 + β_{k,s}) has E||C(x) - x||² <= (1 - k/(d(1+β_{k,s})))||x||²
    (E-6: the source paper's ω). Exact expectation (support fixed, kept entries two-point) + MC."""
    x, N, k, s = sample_message(60), 20_000, 12, 3
    c = get_compressor("qsgd_topk", k=k, s=s)
    beta = min(k / s**2, math.sqrt(k) / s)
    omega = c.delta(x.size)
    assert omega == pytest.approx(k / (x.size * (1 + beta)))
    top = np.argsort(-np.abs(x))[:k]
    rest = np.setdiff1d(np.arange(x.size), top)
    y = x[top]
    _, second, var_sq = two_point(y, np.linalg.norm(y) / s, factor=1 / (1 + beta))
    expected = second.sum() + (x[rest] ** 2).sum()
    assert expected <= (1 - omega) * (x**2).sum()
    err = ((c(replicate(x, N), np.random.default_rng(8)).value - x) ** 2).sum(axis=1)
    assert abs(err.mean() - expected) <= z(ALPHA / 2) * math.sqrt(var_sq.sum() / N)


@pytest.mark.parametrize(
    "name,params",
    [("identity", {}), ("topk", {"k": 9}), ("randk", {"k": 9}), ("qsgd", {"s": 16}), ("qsgd", {"s": 2, "scaled": True}),
     ("cutemaxvar", {"q": 3, "scaled": True}), ("qsgd_randk", {"k": 9, "s": 2}), ("qsgd_topk", {"k": 9, "s": 2})],
)
def test_definition_1_for_every_compressor_with_a_stated_delta(name, params):
    """E||C(x) - x||² <= (1 - δ)||x||² (gcca Def. 1 = thesis Def. 1), on three kinds of vector.

    One-sided test on the MC mean of ||C(x) - x||²/||x||², with its sample sd (CLT; N = 4000)."""
    c = get_compressor(name, **params)
    rng = np.random.default_rng(9)
    d, N = 40, 4000
    for x in (rng.standard_normal(d), np.eye(d)[3] * 2.0, np.abs(rng.standard_cauchy(d))):
        delta = c.delta(d)
        assert delta is not None and 0 < delta <= 1
        ratio = ((c(replicate(x, N), rng).value - x) ** 2).sum(axis=1) / (x**2).sum()
        tol = z(ALPHA) * ratio.std(ddof=1) / math.sqrt(N)
        assert ratio.mean() <= (1 - delta) + tol + 1e-12


# ------------------------------------------------------------------ C-VFL quantizers (cvfl §3.4)


@pytest.mark.parametrize("b", [2, 3, 4])
@pytest.mark.parametrize("mode", ["max_norm", "fixed"])
def test_dithered_scalar_error_is_uniform_in_range(b, mode):
    """Subtractive dither, no clipping: error uniform on [-Δ/2, Δ/2] (data units), so unbiased with
    E err² = Δ²/12; Var(err) = Δ²/12 and Var(err²) = Δ⁴/180 give the tolerances."""
    rng = np.random.default_rng(b)
    N = 10_000
    if mode == "max_norm":  # entries in [0, s]: the code's range after dividing by s = max
        x = rng.uniform(0, 3.0, 32)
        x[0] = 3.0
        step = 3.0 / (2**b - 1)
    else:  # MIMIC: fixed range [-1, 1]
        x = rng.uniform(-1, 1, 32)
        step = 2.0 / (2**b - 1)
    out = get_compressor("cvfl_scalar", b=b, range_mode=mode)(replicate(x, N), rng)
    err = out.value - x
    assert np.all(np.abs(err) <= step / 2 * (1 + 1e-9))
    tol_mean = z(ALPHA / (4 * x.size)) * (step / math.sqrt(12)) / math.sqrt(N)
    assert np.all(np.abs(err.mean(axis=0)) <= tol_mean)
    tol_mse = z(ALPHA / 4) * math.sqrt(step**4 / 180 / (N * x.size))
    assert abs((err**2).mean() - step**2 / 12) <= tol_mse


def test_dithered_scalar_clips_negatives_in_max_norm_mode():
    """The code's max-norm path clips entries below 0 to level 0 (cvfl §3.4.1, kept on purpose)."""
    x = np.array([[4.0, -2.0, 1.0, -4.0]])
    out = get_compressor("cvfl_scalar", b=2)(np.repeat(x, 100, axis=0), np.random.default_rng(0))
    step = 4.0 / 3
    assert np.all(out.value[:, [1, 3]] >= -step / 2) and not get_compressor("cvfl_scalar", b=2).unbiased


@pytest.mark.parametrize("b", [2, 3, 4, 5])
@pytest.mark.parametrize("dither", ["square", "voronoi"])
@pytest.mark.parametrize("mode", ["max_norm", "fixed"])
def test_lattice_quantizer_deterministic_pair_bound(b, dither, mode):
    """Each pair's error <= covering radius s√(2/3) in normalized units, whatever the dither
    (cvfl §3.4.2): × max(x) with max-norm, × (high - low) with a fixed range."""
    rng = np.random.default_rng(b)
    x = rng.standard_normal((200, 64)) * (0.3 if mode == "fixed" else 2.0)
    out = get_compressor("cvfl_vector", b=b, dither=dither, range_mode=mode)(x, rng)
    unit = x.max(axis=1, keepdims=True) if mode == "max_norm" else 2.0
    pair_err = np.sqrt(((out.value - x) ** 2).reshape(200, 32, 2).sum(axis=2))
    assert np.all(pair_err <= a2_covering_radius(a2_scale(b)) * np.abs(unit) * (1 + 1e-9))


@pytest.mark.parametrize("b", [2, 3])
def test_lattice_quantizer_voronoi_dither_is_unbiased_with_hexagon_mse(b):
    """Dither uniform on the cell: error uniform on the hexagon, so E err = 0 and
    E err² = G·V per component (G = 5/(36√3), V = √3 s²). |err| <= r (covering radius) per
    component gives sd <= r; err² per pair in [0, r²] gives sd <= r²/2 (Popoviciu)."""
    s = a2_scale(b)
    r = a2_covering_radius(s)
    rng = np.random.default_rng(30 + b)
    x = rng.uniform(0, 1, 40)
    x[0] = 1.0  # max-norm divides by 1: normalized units = data units
    N = 10_000
    c = get_compressor("cvfl_vector", b=b, dither="voronoi")
    assert c.unbiased
    err = c(replicate(x, N), rng).value - x
    assert np.all(np.abs(err.mean(axis=0)) <= z(ALPHA / (4 * x.size)) * r / math.sqrt(N))
    pair_sq = (err**2).reshape(N, 20, 2).sum(axis=2)
    expected = 2 * A2_NORMALIZED_SECOND_MOMENT * a2_cell_area(s)
    assert abs(pair_sq.mean() - expected) <= z(ALPHA / 4) * (r**2 / 2) / math.sqrt(N * 20)


@pytest.mark.parametrize("scale", [1 / 4, 1 / 8.5, 1 / 19])
def test_a2_nearest_point_matches_conway_sloane_and_brute_force(scale):
    rng = np.random.default_rng(1)
    pts = rng.uniform(-1.5, 2.5, (20_000, 2))
    qx, qy = a2_nearest(pts[:, 0], pts[:, 1], scale)
    ref = a2_nearest_conway_sloane(pts, scale)
    np.testing.assert_allclose(np.stack([qx, qy], axis=1), ref, atol=1e-12)
    # brute force over lattice points s(√2 i - j/√2, √(3/2) j) near each of 500 points
    sub = pts[:500]
    j0 = np.round(sub[:, 1] / (scale * math.sqrt(1.5)))
    i0 = np.round((sub[:, 0] / scale + j0 / math.sqrt(2)) / math.sqrt(2))
    best = np.full(500, np.inf)
    for di in range(-2, 3):
        for dj in range(-2, 3):
            i, j = i0 + di, j0 + dj
            px, py = scale * (math.sqrt(2) * i - j / math.sqrt(2)), scale * math.sqrt(1.5) * j
            best = np.minimum(best, (sub[:, 0] - px) ** 2 + (sub[:, 1] - py) ** 2)
    got = (sub[:, 0] - qx[:500]) ** 2 + (sub[:, 1] - qy[:500]) ** 2
    np.testing.assert_allclose(got, best, atol=1e-12)


@pytest.mark.parametrize("b,in_unit,in_dithered", [(2, 12, 14), (3, 46, 52), (4, 216, 238)])
def test_lattice_point_counts_of_the_spec_table(b, in_unit, in_dithered):
    """cvfl §3.4.2 table [D]: lattice points in [0,1]² and in [-Δ/2, 1+Δ/2]², all <= 2^{2b}."""
    s = a2_scale(b)
    i, j = np.meshgrid(np.arange(-60, 61), np.arange(-60, 61))
    px, py = s * (math.sqrt(2) * i - j / math.sqrt(2)), s * math.sqrt(1.5) * j
    step = 1 / (2**b - 1)

    def count(lo, hi):
        return int(((px >= lo) & (px <= hi) & (py >= lo) & (py <= hi)).sum())

    assert count(0, 1) == in_unit and count(-step / 2, 1 + step / 2) == in_dithered <= 4**b
