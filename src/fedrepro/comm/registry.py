"""Compressors by name, for configs: ``get_compressor("topk", k=10)``."""

from __future__ import annotations

import inspect
from typing import Any, Callable

from .base import Compressor
from .compose import compose
from .cvfl_quantizers import A2LatticeQuantizer, DitheredScalarQuantizer
from .quantizers import QSGD, Identity, MaxAbsStochasticQuantizer, ScaledSign
from .sparsifiers import GradientRankedColumnTopK, RandK, TopK


def sign_topk(k: int | None = None, ratio: float | None = None, index_bits: int | str = 32, sign_of_zero: int = 1):
    """SignTopK (thesis §3.3): (||Top_k x||_1 / k) Sign(Top_k x) on the kept support."""
    return compose(TopK(k=k, ratio=ratio, index_bits=index_bits), ScaledSign(sign_of_zero=sign_of_zero))


def sign_randk(
    k: int | None = None, ratio: float | None = None, shared_seed: bool = True, index_bits: int | str = 32, sign_of_zero: int = 1
):
    """SignRandK (thesis §9 item 5 (b) with Rand_k)."""
    return compose(
        RandK(k=k, ratio=ratio, shared_seed=shared_seed, index_bits=index_bits), ScaledSign(sign_of_zero=sign_of_zero)
    )


def qsgd_topk(k: int | None = None, ratio: float | None = None, s: int | None = None, index_bits: int | str = 32):
    """Composed operator (a) with Top_k (thesis §9 item 5): Q_s(Top_k x) / (1 + β_{k,s})."""
    return compose(TopK(k=k, ratio=ratio, index_bits=index_bits), QSGD(s=s, scaled=True))


def qsgd_randk(
    k: int | None = None, ratio: float | None = None, s: int | None = None, shared_seed: bool = True, index_bits: int | str = 32
):
    """Composed operator (a) with Rand_k (thesis §9 item 5)."""
    return compose(RandK(k=k, ratio=ratio, shared_seed=shared_seed, index_bits=index_bits), QSGD(s=s, scaled=True))


COMPRESSORS: dict[str, Callable[..., Compressor]] = {
    "identity": Identity,
    "cutemaxvar": MaxAbsStochasticQuantizer,
    "cvfl_scalar": DitheredScalarQuantizer,
    "cvfl_vector": A2LatticeQuantizer,
    "cvfl_topk_columns": GradientRankedColumnTopK,
    "topk": TopK,
    "randk": RandK,
    "sign": ScaledSign,
    "qsgd": QSGD,
    "sign_topk": sign_topk,
    "sign_randk": sign_randk,
    "qsgd_topk": qsgd_topk,
    "qsgd_randk": qsgd_randk,
}


def available_compressors() -> list[str]:
    return sorted(COMPRESSORS)


def get_compressor(name: str, **params: Any) -> Compressor:
    """A compressor by registry name; unknown names or parameters raise ValueError."""
    if name not in COMPRESSORS:
        raise ValueError(f"unknown compressor {name!r}; allowed names: {', '.join(available_compressors())}")
    factory = COMPRESSORS[name]
    allowed = [p for p in inspect.signature(factory).parameters if p != "self"]
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise ValueError(f"compressor {name!r} got unknown parameter(s) {unknown}; allowed parameters: {', '.join(allowed)}")
    return factory(**params)
