"""Partitioners and vertical splits: deterministic for a seed, covering every sample exactly once where they should."""

from __future__ import annotations

import numpy as np
import pytest

from fedrepro.data import multiview as mv
from fedrepro.data import partition as pt
from fedrepro.runtime import rng_stream

# MNIST train class counts (adept.md 6): the ADEPT per-client sizes follow from them
MNIST_COUNTS = np.array([5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949])


@pytest.fixture
def labels():
    return np.repeat(np.arange(10), MNIST_COUNTS)[rng_stream(0, "labels").permutation(MNIST_COUNTS.sum())]


def same(a, b):
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))


def assert_exact_cover(parts, n):
    allidx = np.concatenate(parts)
    assert len(allidx) == n and np.array_equal(np.sort(allidx), np.arange(n))


@pytest.mark.parametrize("make", [
    lambda y, r: pt.iid_split(len(y), 7, r),
    lambda y, r: pt.sorted_shards(y, 60, r),
    lambda y, r: pt.sorted_shards(y, 60),
    lambda y, r: pt.dirichlet_split(y, 20, 0.3, r, min_size=10),
    lambda y, r: pt.node_split(y, 6, "iid", r),
    lambda y, r: pt.node_split(y, 60, "sorted", r),
])
def test_exact_cover_and_determinism(labels, make):
    a = make(labels, rng_stream(3, "split"))
    b = make(labels, rng_stream(3, "split"))
    assert same(a, b)
    assert_exact_cover(a, len(labels))


def test_seed_changes_split(labels):
    assert not same(pt.iid_split(len(labels), 7, rng_stream(1, "s")), pt.iid_split(len(labels), 7, rng_stream(2, "s")))
    assert not same(pt.dirichlet_split(labels, 5, 0.5, rng_stream(1, "s")), pt.dirichlet_split(labels, 5, 0.5, rng_stream(2, "s")))


def test_sorted_shards_thesis_a45(labels):
    parts = pt.sorted_shards(labels, 60)
    assert {len(p) for p in parts} == {1000}
    n_classes = [len(np.unique(labels[p])) for p in parts]
    assert max(n_classes) == 2 and n_classes.count(1) > 40


def test_adept_pathological_mnist(labels):
    parts = pt.one_class_per_client(labels, 50, data_ratio=0.1)
    # adept.md 5.3: n_i in {118, 134, 119, 122, 116, 108, 118, 125, 117, 118} for classes 0-9
    assert [len(parts[5 * c]) for c in range(10)] == [118, 134, 119, 122, 116, 108, 118, 125, 117, 118]
    assert all(len(np.unique(labels[p])) == 1 and labels[p][0] == i // 5 for i, p in enumerate(parts))
    allidx = np.concatenate(parts)
    assert len(np.unique(allidx)) == len(allidx)                       # disjoint
    assert same(parts, pt.one_class_per_client(labels, 50, data_ratio=0.1))


def test_adept_pathological_block_layout():
    y = np.repeat(np.arange(10), 5000)
    parts = pt.one_class_per_client(y, 50, data_ratio=0.25, layout="block", rng=rng_stream(0, "cifar"))
    assert {len(p) for p in parts} == {250}
    assert all(np.all((p // 1000) == i) for i, p in enumerate(parts))   # client i draws from the i-th block of 1000
    full = pt.one_class_per_client(y, 10, data_ratio=1.0)                # the 10-client local baseline
    assert_exact_cover(full, len(y))


def test_dirichlet_skew_grows_as_alpha_shrinks(labels):
    def mean_classes(alpha):
        parts = pt.dirichlet_split(labels, 20, alpha, rng_stream(0, "d"))
        return np.mean([len(np.unique(labels[p])) for p in parts if len(p)])
    assert mean_classes(0.05) < mean_classes(100.0)


def test_owner_vector_inverts_split(labels):
    parts = pt.iid_split(len(labels), 4, rng_stream(0, "o"))
    owner = pt.owner_vector(parts, len(labels))
    assert all(np.all(owner[p] == i) for i, p in enumerate(parts))


def test_quadrants_reassemble():
    x = rng_stream(0, "img").integers(0, 255, (5, 32, 32, 3))
    q = mv.image_quadrants(x, "NHWC")
    assert [a.shape for a in q] == [(5, 16, 16, 3)] * 4
    top = np.concatenate([q[0], q[1]], axis=2)
    bottom = np.concatenate([q[2], q[3]], axis=2)
    assert np.array_equal(np.concatenate([top, bottom], axis=1), x)
    assert np.array_equal(mv.image_quadrants(x.transpose(0, 3, 1, 2), "NCHW")[1], q[1].transpose(0, 3, 1, 2))


def test_feature_blocks_and_view_groups():
    x = np.arange(2 * 48 * 76).reshape(2, 48, 76)
    blocks = mv.feature_blocks(x, 4)
    assert [b.shape[-1] for b in blocks] == [19] * 4 and np.array_equal(np.concatenate(blocks, -1), x)
    v = np.arange(3 * 12 * 4).reshape(3, 12, 2, 2)
    g4 = mv.view_groups(v, 4)
    assert [g.shape[1] for g in g4] == [3] * 4 and np.array_equal(g4[1], v[:, 3:6])
    assert len(mv.view_groups(v, 12)) == 12
    with pytest.raises(ValueError):
        mv.view_groups(v, 5)


def test_two_view_noisy_partner_is_same_class_other_sample():
    from fedrepro.data.standins import sklearn_digits

    x, y = sklearn_digits()
    v1, v2 = mv.two_view_noisy(x, y, rng_stream(0, "nm"))
    w1, w2 = mv.two_view_noisy(x, y, rng_stream(0, "nm"))
    assert np.array_equal(v1, w1) and np.array_equal(v2, w2)
    assert v1.shape == v2.shape == x.shape and v2.min() >= 0 and v2.max() <= 1


def test_within_group_shuffle_keeps_group_structure():
    rng = rng_stream(0, "g")
    labels = np.repeat(np.arange(3), [5, 4, 3])
    views = np.stack([np.arange(12)[:, None] * np.ones((1, 2)) + 100 * i for i in range(3)])
    sv, lab = mv.within_group_shuffle(views, labels, rng)
    for i in range(3):
        rows = (sv[i][:, 0] - 100 * i).astype(int)
        assert np.array_equal(labels[rows], lab)                        # each row keeps its group
        assert sorted(rows) == list(range(12))
    tr, te = mv.holdout(12, 4, rng_stream(0, "h"))
    assert_exact_cover([tr, te], 12) and len(te) == 4
