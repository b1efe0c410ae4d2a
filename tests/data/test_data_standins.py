"""Stand-ins keep what the experiments need, are deterministic, and are marked; on_missing: error stops."""

from __future__ import annotations

import numpy as np
import pytest
from loopback import REPO

from fedrepro.data import standins as st
from fedrepro.data.acquire import DataUnavailable
from fedrepro.data.formats import load_npz
from fedrepro.data.loaders import load_image_index, load_images, load_parallel_text
from fedrepro.data.prepare import prepare
from fedrepro.registry.datasets import load_registry

UNAVAILABLE = {"status": "unavailable", "files": {}, "missing": ["x"], "attempts": [{"source": "s", "file": "x", "error": "offline"}]}


def test_digits_images_mnist_shape_and_determinism():
    a = st.digits_images(n_train=300, n_test=100)
    b = st.digits_images(n_train=300, n_test=100)
    assert a["x_train"].shape == (300, 28, 28) and a["x_train"].dtype == np.uint8
    assert set(np.unique(a["y_train"])) == set(range(10))
    assert all(np.array_equal(a[k], b[k]) for k in a)


def test_prototype_images_signal_in_every_quadrant():
    from fedrepro.data.multiview import image_quadrants

    d = st.prototype_images(shape=(32, 32, 3), n_train=1000, n_test=300)
    assert d["x_train"].shape == (1000, 32, 32, 3)
    for q_tr, q_te in zip(image_quadrants(d["x_train"]), image_quadrants(d["x_test"])):
        # nearest class mean on one quadrant alone: well above chance (0.1)
        a, b = q_tr.reshape(1000, -1) / 255.0, q_te.reshape(300, -1) / 255.0
        means = np.stack([a[d["y_train"] == c].mean(0) for c in range(10)])
        pred = np.argmin(((b[:, None, :] - means[None]) ** 2).sum(-1), axis=1)
        assert (pred == d["y_test"]).mean() > 0.3


def test_digits_multiview_views_are_rotations():
    d = st.digits_multiview()
    assert d["x_train"].shape[1:] == (12, 16, 16) and len(np.unique(d["y_train"])) == 10
    assert not np.array_equal(d["x_train"][:, 0], d["x_train"][:, 3])


def test_synthmimic_layout_and_signal_spread():
    from sklearn.linear_model import LogisticRegression

    d = st.synthmimic(n_train=1500, n_test=500)
    assert d["x_train"].shape == (1500, 48, 76) and d["channel_is_mask"].sum() == 17
    assert 0.10 < d["y_train"].mean() < 0.16
    mask_vals = np.unique(d["x_train"][:, :, d["channel_is_mask"]])
    assert set(mask_vals) <= {0.0, 1.0}
    for m in range(4):                                    # every party alone predicts better than chance
        feats = lambda x: x[:, :, 19 * m:19 * m + 19].mean(axis=1)
        clf = LogisticRegression(max_iter=500, class_weight="balanced").fit(feats(d["x_train"]), d["y_train"])
        from sklearn.metrics import roc_auc_score
        assert roc_auc_score(d["y_test"], clf.decision_function(feats(d["x_test"]))) > 0.55


def test_cooccurrence_views_shape():
    d = st.cooccurrence_views()
    assert d["views"].shape == (3, 727, 511) and len(np.unique(d["labels"])) == 6
    assert np.all(np.diff(d["labels"]) >= 0)


def test_prepare_writes_marked_standin(tmp_path):
    reg = load_registry(REPO)
    res = prepare(reg["fashion_mnist"], UNAVAILABLE, tmp_path)
    assert res.status == "stand-in"
    z = load_npz(tmp_path / "fashion_mnist.npz")
    assert str(z["data_status"]) == "stand-in" and str(z["standin_generator"]) == "prototype_images"
    assert load_images(tmp_path / "fashion_mnist.npz", scale=True, channels_first=True).x_train.shape[1:] == (1, 28, 28)
    # same inputs, same bytes (fixed zip timestamps, seeded generator)
    first = (tmp_path / "fashion_mnist.npz").read_bytes()
    prepare(reg["fashion_mnist"], UNAVAILABLE, tmp_path)
    assert (tmp_path / "fashion_mnist.npz").read_bytes() == first


def test_prepare_image_folder_standin(tmp_path):
    reg = load_registry(REPO)
    ds = reg["imagenet100"]
    ds.entry["standin"]["params"] = {**ds.standin["params"], "n_train_per_class": 2, "n_val_per_class": 1}
    prepare(ds, UNAVAILABLE, tmp_path)
    idx = load_image_index(tmp_path / "imagenet100.npz")
    assert len(idx.paths) == 300 and idx.status == "stand-in" and len(idx.classes) == 100
    from PIL import Image
    assert Image.open(idx.paths[0]).size == (64, 64)


def test_parallel_text_synthetic_fallback(tmp_path, monkeypatch):
    import importlib

    prep = importlib.import_module("fedrepro.data.prepare")

    def offline(*a, **k):
        raise RuntimeError("offline")
    monkeypatch.setattr(prep, "_cached_package_file", offline)
    reg = load_registry(REPO)
    res = prepare(reg["europarl"], UNAVAILABLE, tmp_path)
    assert res.extra["source"] == "synthetic fallback"
    pt = load_parallel_text(tmp_path / "europarl.npz")
    assert list(pt.texts) == ["en", "de", "fr", "es", "it", "pt", "nl", "da", "sv", "fi"]
    assert len({len(v) for v in pt.texts.values()}) == 1 and (pt.split == 1).sum() > 0


def test_on_missing_error_stops_with_instructions(tmp_path):
    reg = load_registry(REPO)
    with pytest.raises(DataUnavailable, match=r"data.on_missing: standin|results/downloads/cifar10"):
        prepare(reg["cifar10"], UNAVAILABLE, tmp_path, on_missing="error")
    assert not (tmp_path / "cifar10.npz").exists()


@pytest.mark.parametrize("shape", [(7, 5, 4), (7, 5, 4, 3)])
def test_load_images_gives_the_plain_formulas_bits(tmp_path, shape):
    """load_images converts on uint8 first and divides in place; every flag combination equals the plain
    (transpose, x.astype(float32) / 255.0, reshape) to the bit."""
    from fedrepro.data.formats import save_npz

    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, size=shape, dtype=np.uint8)
    y = rng.integers(0, 3, size=shape[0])
    save_npz(tmp_path / "imgs.npz", {"x_train": x, "y_train": y, "x_test": x[:3], "y_test": y[:3],
                                     "data_status": np.array("stand-in")})
    for scale in (False, True):
        for channels_first in (False, True):
            for flatten in (False, True):
                want = x[:, None] if channels_first and x.ndim == 3 else (
                    x.transpose(0, 3, 1, 2) if channels_first else x)
                want = want.astype(np.float32) / 255.0 if scale else want
                want = want.reshape(len(want), -1) if flatten else want
                got = load_images(tmp_path / "imgs.npz", scale=scale, channels_first=channels_first,
                                  flatten=flatten).x_train
                assert got.dtype == want.dtype and got.shape == want.shape and got.flags["C_CONTIGUOUS"]
                assert got.tobytes() == np.ascontiguousarray(want).tobytes(), (scale, channels_first, flatten)
