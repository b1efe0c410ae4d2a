"""Stand-in generators: what `data.on_missing: standin` uses when a dataset's real files cannot be had.

Each generator keeps what the experiments need (shapes, numbers of classes / views / parties, label
signal spread across parties) and returns arrays in the same layout as the real prepared data, so
downstream code is the same; only the provenance sidecar (data: {<dataset>: stand-in}) differs.
Everything is seeded through fedrepro.runtime.rng_stream and vectorized over samples.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
from scipy import ndimage

from fedrepro.runtime import rng_stream

log = logging.getLogger("fedrepro.data")


# ---- helpers -----------------------------------------------------------------------------------------

def sklearn_digits() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's bundled UCI optdigits test set: 1,797 real 8x8 digits (values 0..16), labels 0..9."""
    from sklearn.datasets import load_digits

    d = load_digits()
    return d.images.astype(np.float64) / 16.0, d.target.astype(np.int64)


def stratified_split(y: np.ndarray, test_fraction: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Indices (train, test) with the same class proportions, without a loop over samples."""
    order = rng.permutation(len(y))
    order = order[np.argsort(y[order], kind="stable")]            # random order within each class
    cls, starts, counts = np.unique(y[order], return_index=True, return_counts=True)
    rank = np.arange(len(y)) - np.repeat(starts, counts)          # position inside its class
    n_test = np.round(counts * test_fraction).astype(int)
    is_test = rank < np.repeat(n_test, counts)
    return np.sort(order[~is_test]), np.sort(order[is_test])


def warp_batch(img: np.ndarray, out_size: int, angle: np.ndarray, scale: np.ndarray, shift: np.ndarray,
               fill_fraction: float = 1.0) -> np.ndarray:
    """Resample each (h, w) image onto an out_size grid with its own rotation/scale/shift (bilinear).

    One scipy.ndimage.map_coordinates call over a stacked volume: the sample axis is addressed with
    exact integer coordinates, so samples never mix.  `fill_fraction` is the share of the output the
    unrotated image covers (MNIST puts a 20x20 digit inside 28x28: 20/28).
    """
    n, h, w = img.shape
    c = (np.arange(out_size) + 0.5) / out_size * 2 - 1                       # output coords in [-1, 1]
    yy, xx = np.meshgrid(c, c, indexing="ij")
    cos, sin = np.cos(angle)[:, None, None], np.sin(angle)[:, None, None]
    k = (1.0 / (fill_fraction * scale))[:, None, None]
    u = k * (cos * xx[None] + sin * yy[None]) - shift[:, 0, None, None]      # inverse map: output -> input
    v = k * (-sin * xx[None] + cos * yy[None]) - shift[:, 1, None, None]
    rows = (v + 1) / 2 * h - 0.5
    cols = (u + 1) / 2 * w - 0.5
    idx = np.broadcast_to(np.arange(n)[:, None, None], rows.shape).astype(np.float64)
    return ndimage.map_coordinates(img, [idx, rows, cols], order=1, mode="constant", cval=0.0)


def to_uint8(x: np.ndarray) -> np.ndarray:
    return np.clip(np.round(x * 255.0), 0, 255).astype(np.uint8)


def smooth_fields(rng: np.random.Generator, n: int, shape, sigma: float) -> np.ndarray:
    """n random smooth fields of `shape` (last axis = channels if 3-D), each scaled to [0, 1]."""
    raw = rng.standard_normal((n, *shape), dtype=np.float32)
    sig = (0, sigma, sigma) + ((0,) if len(shape) == 3 else ())
    f = ndimage.gaussian_filter(raw, sigma=sig, mode="wrap")
    axes = tuple(range(1, f.ndim))
    lo, hi = f.min(axis=axes, keepdims=True), f.max(axis=axes, keepdims=True)
    return (f - lo) / np.maximum(hi - lo, 1e-12)


# ---- generators --------------------------------------------------------------------------------------

def digits_images(size: int = 28, n_train: int = 12000, n_test: int = 2000, seed: int = 0) -> dict:
    """MNIST-shaped images from real handwritten digits: each optdigits image upsampled into a 20/28 box,
    with a random small rotation, scale and shift per copy; train and test copies come from disjoint digits."""
    x, y = sklearn_digits()
    rng = rng_stream(seed, "standin", "digits_images")
    tr, te = stratified_split(y, 0.2, rng)
    out = {}
    for split, pool, n in (("train", tr, n_train), ("test", te, n_test)):
        # every source digit once, then random ones, so all writers appear
        pick = np.concatenate([pool, rng.choice(pool, size=max(0, n - len(pool)))])[:n]
        pick = pick[rng.permutation(n)]
        ang = rng.uniform(-0.2, 0.2, n)
        scl = rng.uniform(0.9, 1.1, n)
        sh = rng.uniform(-0.08, 0.08, (n, 2))
        imgs = warp_batch(x[pick], size, ang, scl, sh, fill_fraction=20 / 28)
        out[f"x_{split}"] = to_uint8(imgs)
        out[f"y_{split}"] = y[pick]
    return out


def prototype_images(shape=(28, 28), n_classes: int = 10, n_train: int = 12000, n_test: int = 2000,
                     signal: float = 0.6, seed: int = 0, name: str = "prototype_images") -> dict:
    """Synthetic class-template images: one smooth random template per class, shifted (wrap-around) by up
    to 1/8 of the image, mixed with per-sample smooth clutter and pixel noise.  Class information covers the
    whole image, so any patch (a C-VFL quadrant) carries some of it."""
    shape = tuple(int(s) for s in shape)
    rng = rng_stream(seed, "standin", name)
    h, w = shape[:2]
    templates = smooth_fields(rng, n_classes, shape, sigma=max(h, w) / 10)
    bank = smooth_fields(rng, 64, shape, sigma=max(h, w) / 14)            # clutter basis shared by all classes
    out = {}
    for split, n in (("train", n_train), ("test", n_test)):
        y = np.tile(np.arange(n_classes), -(-n // n_classes))[:n]
        y = y[rng.permutation(n)]
        dy = rng.integers(-(h // 8), h // 8 + 1, n)
        dx = rng.integers(-(w // 8), w // 8 + 1, n)
        rows = (np.arange(h)[None, :] + dy[:, None]) % h                  # (n, h)
        cols = (np.arange(w)[None, :] + dx[:, None]) % w                  # (n, w)
        base = templates[y[:, None, None], rows[:, :, None], cols[:, None, :]]
        weights = rng.dirichlet(np.ones(len(bank)) * 0.3, size=n)
        clutter = np.tensordot(weights, bank, axes=1)
        img = signal * base + (1 - signal) * clutter.astype(np.float32) + rng.normal(0, 0.04, base.shape).astype(np.float32)
        gain = rng.uniform(0.8, 1.2, (n,) + (1,) * len(shape))           # brightness / contrast jitter
        out[f"x_{split}"] = to_uint8(0.5 + (img - 0.5) * gain)
        out[f"y_{split}"] = y.astype(np.int64)
    return out


def digits_multiview(views: int = 12, size: int = 16, noise: float = 0.05, test_fraction: float = 0.2,
                     seed: int = 0) -> dict:
    """Multi-view 'renders' of real digits (the ModelNet10 stand-in, docs/data.md): view v is the digit rotated by 360/views * v degrees
    (bilinear, no reshape), plus N(0, noise^2) pixel noise; (n, views, size, size) uint8, views in azimuth order."""
    x, y = sklearn_digits()
    rng = rng_stream(seed, "standin", "digits_multiview")
    n = len(y)
    rep = np.repeat(np.arange(n), views)
    ang = np.tile(np.arange(views) * 2 * np.pi / views, n)
    imgs = warp_batch(x[rep], size, ang, np.ones(n * views), np.zeros((n * views, 2)))
    imgs = imgs + rng.normal(0, noise, imgs.shape)
    imgs = to_uint8(imgs).reshape(n, views, size, size)
    tr, te = stratified_split(y, test_fraction, rng)
    return {"x_train": imgs[tr], "y_train": y[tr], "x_test": imgs[te], "y_test": y[te],
            "view_azimuth_deg": np.arange(views) * 360.0 / views}


def synthmimic(n_train: int = 2000, n_test: int = 1000, timesteps: int = 48, channels: int = 76,
               parties: int = 4, positive_rate: float = 0.13, n_masks: int = 17, latent: int = 8,
               seed: int = 0) -> dict:
    """MIMIC-IHM-like time series (the MIMIC-III stand-in `synthmimic`, docs/data.md): latent z ~ N(0, I_8); channel d of party block b
    follows a_d^T z * phi_d(t) + 0.5 eps with a_d sparse (two coordinates of the block's own pair, one shared);
    the last n_masks channels are mask-like Bernoulli channels whose rate also depends on z; label
    1[w^T z + 0.5 (z1 z2 + z5^2) > tau] with tau at the (1 - positive_rate) quantile.  Continuous channels are
    standardized with train statistics."""
    rng = rng_stream(seed, "standin", "synthmimic")
    n = n_train + n_test
    block = channels // parties
    z = rng.standard_normal((n, latent))
    own = (np.arange(channels) // block).clip(max=parties - 1)           # party of each channel
    a = np.zeros((channels, latent))
    pair = (2 * own[:, None] + np.array([0, 1])[None, :]) % latent
    np.put_along_axis(a, pair, rng.normal(0, 1, (channels, 2)), axis=1)
    shared = rng.integers(0, latent, channels)
    a[np.arange(channels), shared] += rng.normal(0, 0.5, channels)
    t = np.arange(timesteps)[None, :]
    omega = rng.uniform(0.05, 0.5, channels)[:, None]
    phase = rng.uniform(0, 2 * np.pi, channels)[:, None]
    trend = rng.random(channels)[:, None] < 0.3
    phi = np.where(trend, (t - timesteps / 2) / timesteps * 2, np.sin(omega * t + phase))   # (channels, T)
    drive = z @ a.T                                                        # (n, channels)
    x = drive[:, None, :] * phi.T[None, :, :] + 0.5 * rng.standard_normal((n, timesteps, channels))
    masks = slice(channels - n_masks, channels)
    logit = np.log(0.7 / 0.3) + 0.5 * drive[:, None, masks]
    x[:, :, masks] = (rng.random((n, timesteps, n_masks)) < 1 / (1 + np.exp(-logit))).astype(np.float64)
    w = rng.normal(0, 1, latent)
    score = z @ w + 0.5 * (z[:, 0] * z[:, 1] + z[:, 4] ** 2)
    y = (score > np.quantile(score, 1 - positive_rate)).astype(np.int64)
    cont = np.ones(channels, bool)
    cont[masks] = False
    mu = x[:n_train][:, :, cont].mean(axis=(0, 1))
    sd = x[:n_train][:, :, cont].std(axis=(0, 1)) + 1e-8
    x[:, :, cont] = (x[:, :, cont] - mu) / sd
    x = x.astype(np.float32)
    return {"x_train": x[:n_train], "y_train": y[:n_train], "x_test": x[n_train:], "y_test": y[n_train:],
            "channel_is_mask": ~cont, "party_of_channel": own}


def cooccurrence_views(views: int = 3, n_rows: int = 727, n_cols: int = 511, group_sizes=(175, 152, 130, 110, 90, 70),
                       density: float = 0.08, seed: int = 0) -> dict:
    """DE-SynPUF-like views: row j (a 'diagnosis' of group g) x column n (a 'medicine') Poisson counts with
    rate lambda_j * profile_g[n] * view perturbation.  Rows are sorted by group, like the real prepare output;
    the group structure (not the row identity) is shared across views, as after gcca's within-group shuffle."""
    rng = rng_stream(seed, "standin", "cooccurrence_views")
    group_sizes = np.asarray(group_sizes)
    assert group_sizes.sum() == n_rows, "group_sizes must add up to n_rows"
    g = len(group_sizes)
    labels = np.repeat(np.arange(g), group_sizes)
    active = rng.random((g, n_cols)) < density                                  # each group's typical medicines
    profile = active * rng.gamma(2.0, 1.0, (g, n_cols)) + 0.02                  # plus a little background
    profile /= profile.sum(axis=1, keepdims=True)
    lam = rng.lognormal(mean=5.0, sigma=1.0, size=n_rows)                       # how common each diagnosis is
    out = np.empty((views, n_rows, n_cols), dtype=np.int64)
    for i in range(views):                                                      # a loop over the 3 views, not samples
        pert = rng.gamma(20.0, 1 / 20.0, (g, n_cols))
        rate = lam[:, None] * (profile * pert)[labels]
        out[i] = rng.poisson(rate)
    return {"views": out, "labels": labels,
            "row_codes": np.array([f"D{j:04d}" for j in range(n_rows)]),
            "col_codes": np.array([f"M{n:04d}" for n in range(n_cols)])}


def synthetic_parallel(languages, n_sentences: int = 2000, vocab: int = 3000, words_per_sentence=(4, 20),
                       seed: int = 0) -> dict:
    """Row-aligned synthetic 'translations': latent sentences of concept ids (Zipf-distributed), each language
    rendering a concept as its own random word and permuting adjacent words with some probability."""
    rng = rng_stream(seed, "standin", "synthetic_parallel")
    lo, hi = words_per_sentence
    lengths = rng.integers(lo, hi + 1, n_sentences)
    concepts = np.minimum(rng.zipf(1.3, lengths.sum()), vocab) - 1
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    texts = {}
    for lang in languages:
        r = rng_stream(seed, "standin", "synthetic_parallel", lang)
        wl = r.integers(2, 10, vocab)
        chars = letters[r.integers(0, 26, (vocab, 10))]
        words = np.array(["".join(row[:k]) for row, k in zip(chars, wl)])     # vocabulary, not samples
        toks = words[concepts]
        texts[lang] = [" ".join(toks[s:s + k]) for s, k in zip(starts, lengths)]
    return texts


def write_png_folder(root: Path, images: np.ndarray, labels: np.ndarray, classes, split: str) -> list[str]:
    """Write images as root/<split>/<class>/<i>.png; returns the relative paths (the index)."""
    from PIL import Image

    rel = [f"{split}/{classes[c]}/{i:06d}.png" for i, c in enumerate(labels)]
    for cls in set(classes[c] for c in np.unique(labels)):
        (root / split / cls).mkdir(parents=True, exist_ok=True)
    for path, img in zip(rel, images):                                        # file writing is per file
        Image.fromarray(img).save(root / path, optimize=False)
    return rel
