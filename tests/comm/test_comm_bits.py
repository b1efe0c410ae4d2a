"""Exact payload bits on hand-computed cases, for every compressor."""

from __future__ import annotations

import numpy as np
import pytest

from fedrepro.comm import get_compressor
from fedrepro.comm.conventions import cvfl_topk_k, thesis_message_bits

RNG = np.random.default_rng(0)


def bits_of(name, shape, rng=RNG, **params):
    ctx = params.pop("_ctx", {})
    out = get_compressor(name, **params)(RNG.standard_normal(shape), rng, **ctx)
    return int(out.bits[0]), {k: int(v[0]) for k, v in out.parts.items()}


# (name, params, element shape, total bits, parts): each total worked out by hand in the comment.
CASES = [
    # thesis §3.5 MNIST sanity sizes, d = 7840 (784 x 10), k = 10
    ("identity", {}, (784, 10), 250_880, {"values": 250_880}),  # 32 · 7840
    ("sign", {}, (784, 10), 7_872, {"signs": 7840, "scales": 32}),  # 7840 + 32
    ("topk", {"k": 10}, (784, 10), 640, {"values": 320, "indices": 320}),  # 10 (32 + 32)
    ("sign_topk", {"k": 10}, (784, 10), 362, {"signs": 10, "indices": 320, "scales": 32}),  # 10 (1 + 32) + 32
    # index conventions: int64 indices (CHOCO code) and ceil(log2 7840) = 13
    ("topk", {"k": 10, "index_bits": 64}, (784, 10), 960, {"values": 320, "indices": 640}),
    ("topk", {"k": 10, "index_bits": "log2"}, (784, 10), 450, {"values": 320, "indices": 130}),
    ("sign_topk", {"k": 10, "index_bits": "log2"}, (784, 10), 172, {"signs": 10, "indices": 130, "scales": 32}),
    # ratio rule k = max(1, floor(0.01 d)): d = 7840 -> 78; d = 50 -> 1
    ("topk", {"ratio": 0.01}, (7840,), 78 * 64, {"values": 78 * 32, "indices": 78 * 32}),
    ("topk", {"ratio": 0.01}, (50,), 64, {"values": 32, "indices": 32}),
    # random-k: 32k values + one 32-bit seed, or explicit indices
    ("randk", {"k": 10}, (7840,), 352, {"values": 320, "indices": 32}),
    ("randk", {"k": 10, "shared_seed": False}, (7840,), 640, {"values": 320, "indices": 320}),
    ("sign_randk", {"k": 10}, (7840,), 74, {"signs": 10, "indices": 32, "scales": 32}),
    # QSGD: d (1 + ceil(log2(s+1))) + 32; s = 4 -> 3 level bits, s = 1 -> 1, s = 7 -> 3
    ("qsgd", {"s": 4}, (100,), 432, {"values": 300, "signs": 100, "scales": 32}),
    ("qsgd", {"s": 1}, (100,), 232, {"values": 100, "signs": 100, "scales": 32}),
    ("qsgd", {"s": 7}, (100,), 432, {"values": 300, "signs": 100, "scales": 32}),
    # composed (a): k (idx + 1 + ceil(log2(s+1))) + 32 = 10 (32 + 1 + 3) + 32
    ("qsgd_topk", {"k": 10, "s": 4}, (100,), 392, {"values": 30, "signs": 10, "indices": 320, "scales": 32}),
    # CuteMaxVar, J x K = 500 x 5 (gcca §3.8): q J K + 32; (q-1) level bits + 1 sign bit per entry
    ("cutemaxvar", {"q": 3}, (500, 5), 3 * 2500 + 32, {"values": 5000, "signs": 2500, "scales": 32}),
    ("cutemaxvar", {"q": 2}, (500, 5), 2 * 2500 + 32, {"values": 2500, "signs": 2500, "scales": 32}),
    ("cutemaxvar", {"q": 5, "scaled": True}, (500, 5), 5 * 2500 + 32, {"values": 10000, "signs": 2500, "scales": 32}),
    # C-VFL scalar/vector: b per component; max-norm adds one 32-bit scale; MIMIC's fixed range none
    ("cvfl_scalar", {"b": 2}, (1000, 16), 32_032, {"values": 32_000, "scales": 32}),
    ("cvfl_scalar", {"b": 3, "range_mode": "fixed"}, (1000, 16), 48_000, {"values": 48_000}),
    ("cvfl_vector", {"b": 4}, (64, 128), 4 * 8192 + 32, {"values": 32_768, "scales": 32}),
    ("cvfl_vector", {"b": 2, "range_mode": "fixed"}, (1000, 16), 32_000, {"values": 32_000}),
    # C-VFL column top-k, ModelNet b = 2: k = 256 of P = 4096 columns, B = 64 rows:
    # 32 · 64 · 256 value bits + 256 indices of 32 bits (the paper charges neither indices, A-9)
    ("cvfl_topk_columns", {"k": 256, "_ctx": {"scores": RNG.standard_normal((1, 4096))}}, (64, 4096),
     524_288 + 8_192, {"values": 524_288, "indices": 8_192}),
    ("cvfl_topk_columns", {"k": 256, "_ctx": {"scores": None}}, (64, 4096), 32 * 64 * 4096, {"values": 32 * 64 * 4096}),
]


@pytest.mark.parametrize("name,params,shape,total,parts", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_hand_computed_bits(name, params, shape, total, parts):
    bits, got = bits_of(name, (1,) + shape, **dict(params))
    assert bits == total
    assert got == {k: parts.get(k, 0) for k in got}


def test_bits_do_not_depend_on_data_or_batch_element():
    c = get_compressor("cutemaxvar", q=4)
    x = RNG.standard_normal((3, 20))
    x[1] = 0.0  # an all-zero message still costs q·n + 32 (constant-size messages, as BPV assumes)
    out = c(x, RNG)
    np.testing.assert_array_equal(out.bits, [4 * 20 + 32] * 3)


def _resnet20_sizes():
    """Parameter tensors of the CIFAR ResNet-20 (option A shortcuts, BN affine), thesis A-27."""
    sizes = [16 * 3 * 9, 16, 16]
    for cin, cout in [(16, 16), (16, 32), (32, 64)]:
        for block in range(3):
            c_in = cin if block == 0 else cout
            sizes += [cout * c_in * 9, cout, cout, cout * cout * 9, cout, cout]
    return sizes + [64 * 10, 10]


def test_resnet20_per_tensor_sanity_sizes():
    """thesis_ch3 §3.5: d = 269,722 in 59 tensors; per message (B32) vanilla 8,631,104,
    Sign 271,610, TopK 173,888, SignTopK 91,549 with k_l = max(1, floor(0.01 d_l))."""
    sizes = _resnet20_sizes()
    assert (len(sizes), sum(sizes)) == (59, 269_722)
    totals = {}
    for name, params in [("identity", {}), ("sign", {}), ("topk", {"ratio": 0.01}), ("sign_topk", {"ratio": 0.01})]:
        c = get_compressor(name, **params)
        totals[name] = sum(int(c(RNG.standard_normal((1, d)), RNG).bits[0]) for d in sizes)
    assert totals == {"identity": 8_631_104, "sign": 271_610, "topk": 173_888, "sign_topk": 91_549}


@pytest.mark.parametrize(
    "kind,name,params",
    [
        ("identity", "identity", {}),
        ("sign", "sign", {}),
        ("topk", "topk", {"k": 7}),
        ("sign_topk", "sign_topk", {"k": 7}),
        ("randk", "randk", {"k": 7}),
        ("qsgd", "qsgd", {"s": 5}),
        ("qsgd_topk", "qsgd_topk", {"k": 7, "s": 5}),
    ],
)
@pytest.mark.parametrize("d", [10, 300, 7840])
def test_measured_bits_equal_the_thesis_table_under_b32(kind, name, params, d):
    measured = int(get_compressor(name, **params)(RNG.standard_normal((1, d)), RNG).bits[0])
    assert measured == thesis_message_bits(kind, d, k=params.get("k"), s=params.get("s"), convention="B32")


@pytest.mark.parametrize(
    "P,b,flavor,k",
    [(16, 2, "tf", 1), (16, 3, "tf", 2), (16, 4, "tf", 2), (16, 2, "torch", 1), (16, 3, "torch", 1), (16, 4, "torch", 2),
     (4096, 2, "torch", 256), (4096, 3, "torch", 384), (4096, 4, "torch", 512),
     (128, 2, "torch", 8), (128, 3, "torch", 12), (128, 4, "torch", 16)],
)
def test_cvfl_topk_k_rules(P, b, flavor, k):
    """cvfl.md §3.4.3: k per dataset and b, as the authors' code computes it."""
    assert cvfl_topk_k(P, b, flavor) == k


@pytest.mark.parametrize("numel,b,k", [(64, 2, 4), (64, 3, 6), (64, 4, 8), (10, 2, 1), (640, 3, 60)])
def test_cvfl_server_model_topk_keeps_max_1_floor_numel_b_over_32(numel, b, k):
    out = get_compressor("topk", ratio=b / 32)(RNG.standard_normal((1, numel)), None)
    assert out.counts["values"][0] == k and np.count_nonzero(out.value) == k
