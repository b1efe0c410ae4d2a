"""The compressor interface: types, shapes, determinism, batching, registry and errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedrepro.comm import Compressed, TopK, available_compressors, compose, get_compressor
from fedrepro.comm.base import PART_KINDS

# One configuration per registry name; the element shape (4, 6) fits every compressor
# (even entries for the lattice quantizer, a last axis of columns for C-VFL top-k).
CONFIGS = {
    "identity": {},
    "cutemaxvar": {"q": 3},
    "cvfl_scalar": {"b": 2},
    "cvfl_vector": {"b": 3},
    "cvfl_topk_columns": {"k": 2},
    "topk": {"k": 5},
    "randk": {"k": 5},
    "sign": {},
    "qsgd": {"s": 4},
    "sign_topk": {"k": 5},
    "sign_randk": {"k": 5},
    "qsgd_topk": {"k": 5, "s": 2},
    "qsgd_randk": {"k": 5, "s": 2},
}
EXTRA = [("cutemaxvar", {"q": 2, "scaled": True}), ("cvfl_vector", {"b": 2, "dither": "voronoi"}),
         ("cvfl_scalar", {"b": 3, "range_mode": "fixed"}), ("randk", {"k": 3, "shared_seed": False})]
ALL = list(CONFIGS.items()) + EXTRA
IDS = [f"{n}-{'-'.join(f'{k}{v}' for k, v in p.items())}" for n, p in ALL]


def test_registry_covers_every_name():
    assert sorted(CONFIGS) == available_compressors()


def _context(name, x):
    if name != "cvfl_topk_columns":
        return {}
    scores = np.linspace(-1, 1, x.shape[0] * x.shape[-1]).reshape(x.shape[0], x.shape[-1])
    return {"scores": torch.as_tensor(scores) if isinstance(x, torch.Tensor) else scores}


def _gen(x, seed):
    return torch.Generator().manual_seed(seed) if isinstance(x, torch.Tensor) else np.random.default_rng(seed)


def _data(lib, dtype, batch=3):
    x = np.random.default_rng(123).standard_normal((batch, 4, 6)).astype(dtype)
    return torch.as_tensor(x) if lib == "torch" else x


@pytest.mark.parametrize("name,params", ALL, ids=IDS)
@pytest.mark.parametrize("lib", ["numpy", "torch"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_output_type_shape_dtype_and_parts(name, params, lib, dtype):
    c = get_compressor(name, **params)
    x = _data(lib, dtype)
    out = c(x, _gen(x, 0), **_context(name, x))
    assert type(out.value) is type(x)
    assert out.value.shape == x.shape and out.value.dtype == x.dtype
    if lib == "torch":
        assert out.value.device == x.device
    assert out.bits.dtype == np.int64 and out.bits.shape == (3,)
    assert set(out.parts) == set(PART_KINDS)
    assert all(p.shape == (3,) and p.dtype == np.int64 for p in out.parts.values())
    np.testing.assert_array_equal(sum(out.parts.values()), out.bits)
    assert (out.bits > 0).all()
    assert isinstance(c.unbiased, bool) and c.name == name


@pytest.mark.parametrize("name,params", ALL, ids=IDS)
@pytest.mark.parametrize("lib", ["numpy", "torch"])
def test_same_generator_same_output(name, params, lib):
    c = get_compressor(name, **params)
    x = _data(lib, np.float32)
    a = c(x, _gen(x, 7), **_context(name, x))
    b = c(x, _gen(x, 7), **_context(name, x))
    np.testing.assert_array_equal(np.asarray(a.value), np.asarray(b.value))
    np.testing.assert_array_equal(a.bits, b.bits)


@pytest.mark.parametrize("name,params", ALL, ids=IDS)
@pytest.mark.parametrize("lib", ["numpy", "torch"])
def test_batched_equals_per_element(name, params, lib):
    """One call on B elements == B calls on one element each, sharing one generator."""
    c = get_compressor(name, **params)
    x = _data(lib, np.float64, batch=5)
    ctx = _context(name, x)
    whole = c(x, _gen(x, 11), **ctx)
    g = _gen(x, 11)
    pieces = []
    for i in range(5):
        ctx_i = {"scores": ctx["scores"][i : i + 1]} if ctx else {}
        pieces.append(c(x[i : i + 1], g, **ctx_i))
    lib_cat = torch.cat if lib == "torch" else np.concatenate
    np.testing.assert_array_equal(np.asarray(whole.value), np.asarray(lib_cat([p.value for p in pieces])))
    np.testing.assert_array_equal(whole.bits, np.concatenate([p.bits for p in pieces]))
    for kind in PART_KINDS:
        np.testing.assert_array_equal(whole.parts[kind], np.concatenate([p.parts[kind] for p in pieces]))


@pytest.mark.parametrize("name,params", ALL, ids=IDS)
def test_unbatched_call_is_one_element(name, params):
    c = get_compressor(name, **params)
    x = _data("numpy", np.float64, batch=1)
    ctx = _context(name, x)
    batched = c(x, _gen(x, 5), **ctx)
    single = c(x[0], _gen(x, 5), batched=False, **({"scores": ctx["scores"][0]} if ctx else {}))
    assert single.bits.shape == () and single.value.shape == x[0].shape
    np.testing.assert_array_equal(single.value, batched.value[0])
    assert int(single.bits) == int(batched.bits[0])


@pytest.mark.parametrize("name", ["identity", "topk", "sign", "sign_topk", "cvfl_topk_columns"])
def test_deterministic_compressors_agree_across_numpy_and_torch(name):
    c = get_compressor(name, **CONFIGS[name])
    x = _data("numpy", np.float64)
    xt = torch.as_tensor(x)
    a = c(x, None, **_context(name, x))
    b = c(xt, None, **_context(name, xt))
    np.testing.assert_allclose(a.value, b.value.numpy(), rtol=1e-12, atol=0)
    np.testing.assert_array_equal(a.bits, b.bits)


@pytest.mark.parametrize(
    "name", ["identity", "cutemaxvar", "topk", "randk", "sign", "qsgd", "sign_topk", "sign_randk", "qsgd_topk", "qsgd_randk"]
)
def test_zero_maps_to_zero(name):
    """C(0) = 0 (thesis_ch3 §9: the shared library enforces it; gcca §3.1.2 step 1)."""
    c = get_compressor(name, **CONFIGS[name])
    x = np.zeros((2, 4, 6))
    out = c(x, np.random.default_rng(0))
    assert isinstance(out, Compressed) and not np.any(out.value)


@pytest.mark.parametrize("name", ["cvfl_scalar", "cvfl_vector"])
def test_cvfl_max_norm_quantizers_map_zero_to_zero(name):
    # s = max(x) = 0: the code's NaN -> 0 path; the decoded message is s·(...) = 0.
    out = get_compressor(name, b=2)(np.zeros((2, 4, 6)), np.random.default_rng(0))
    assert not np.any(out.value)


def test_compose_by_name_equals_compose_of_parts():
    x = _data("numpy", np.float64)
    a = get_compressor("sign_topk", k=5)(x, None)
    b = compose(get_compressor("topk", k=5), get_compressor("sign"))(x, None)
    assert compose(TopK(k=5), get_compressor("sign")).name == "sign_topk"
    np.testing.assert_array_equal(a.value, b.value)
    np.testing.assert_array_equal(a.bits, b.bits)


def test_identity_returns_a_copy():
    x = np.ones((2, 3))
    out = get_compressor("identity")(x, None)
    x[0, 0] = 5.0
    assert out.value[0, 0] == 1.0


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "name,params,needle",
    [
        ("nope", {}, "allowed names"),
        ("topk", {"kk": 3}, "allowed parameters"),
        ("topk", {}, "'k'"),
        ("topk", {"k": 3, "ratio": 0.1}, "'ratio'"),
        ("topk", {"ratio": 0.0}, "'ratio'"),
        ("topk", {"k": 0}, "'k'"),
        ("topk", {"k": 2.5}, "'k'"),
        ("topk", {"k": 2, "index_bits": "log10"}, "'index_bits'"),
        ("cutemaxvar", {}, "'q'"),
        ("cutemaxvar", {"q": 1}, "'q'"),
        ("cutemaxvar", {"q": "3"}, "'q'"),
        ("cutemaxvar", {"q": 3, "scaled": True, "u": 0.5}, "'u'"),
        ("cutemaxvar", {"q": 3, "scaled": True, "u": "best"}, "'u'"),
        ("cvfl_scalar", {"b": 0}, "'b'"),
        ("cvfl_scalar", {"b": 2, "range_mode": "minmax"}, "'range_mode'"),
        ("cvfl_scalar", {"b": 2, "range_mode": "fixed", "low": 1, "high": -1}, "'low'"),
        ("cvfl_vector", {"b": 2, "dither": "hex"}, "'dither'"),
        ("qsgd", {"s": 0}, "'s'"),
        ("sign", {"sign_of_zero": -1}, "'sign_of_zero'"),
        ("randk", {"k": 2, "shared_seed": "yes"}, "'shared_seed'"),
    ],
)
def test_bad_names_and_parameters_raise_value_error(name, params, needle):
    with pytest.raises(ValueError, match=needle):
        get_compressor(name, **params)


def test_bad_calls_raise_value_error():
    x = np.ones((2, 6))
    with pytest.raises(ValueError, match="rng"):
        get_compressor("qsgd", s=2)(x, None)
    with pytest.raises(ValueError, match="torch.Generator"):
        get_compressor("qsgd", s=2)(torch.ones(2, 6), np.random.default_rng(0))
    with pytest.raises(ValueError, match="numpy.random.Generator"):
        get_compressor("qsgd", s=2)(x, torch.Generator())
    with pytest.raises(ValueError, match="floating"):
        get_compressor("topk", k=1)(np.ones((2, 3), dtype=np.int64), None)
    with pytest.raises(ValueError, match="batched=False"):
        get_compressor("topk", k=1)(np.ones(3), None)
    with pytest.raises(ValueError, match="even"):
        get_compressor("cvfl_vector", b=2)(np.ones((2, 5)), np.random.default_rng(0))
    with pytest.raises(ValueError, match="unknown keyword"):
        get_compressor("topk", k=1)(x, None, scores=np.ones((2, 6)))
    with pytest.raises(ValueError, match="scores"):
        get_compressor("cvfl_topk_columns", k=1)(x, None, scores=np.ones((2, 5)))
    with pytest.raises(ValueError, match="sparsifier"):
        compose(get_compressor("sign"), get_compressor("topk", k=1))
    with pytest.raises(ValueError, match="quantizer"):
        compose(get_compressor("topk", k=2), get_compressor("randk", k=1))
