"""Compressors by name, for configs: ``get_compressor("topk", k=10)``.

New compressors register themselves (``@register_compressor("name")`` on a ``Compressor`` subclass) in a module
listed under ``comm.plugins`` in config/config.yaml, or are found through the entry-point group
``fedrepro.compressors`` of an installed package (docs/comm.md, "Add your own compressor").
"""

from __future__ import annotations

import difflib
import functools
import inspect
import re
import sys
from collections.abc import Callable
from typing import Any

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


ENTRY_POINT_GROUP = "fedrepro.compressors"
_NAME = re.compile(r"[a-z][a-z0-9_]*")


def register_compressor(name: str, factory: Callable[..., Compressor] | None = None, *, replace: bool = False):
    """Register a compressor class (or factory) under ``name``; as a decorator: ``@register_compressor("name")``.

    A class must subclass ``Compressor``, set ``name`` to the registered name and leave ``__call__`` alone: the
    base class draws the call's U[0, 1) block from the caller's generator and hands it to ``_encode`` (declare
    how many draws with ``n_uniforms``), so every stochastic compressor takes its random stream from the engine.
    Registering the same object twice is a no-op (a module imported again); another object under a taken name
    is an error unless ``replace=True``.
    """
    if factory is None:
        return lambda f: register_compressor(name, f, replace=replace)
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"compressor name must be lower-case letters, digits and '_'; got {name!r}")
    if isinstance(factory, type):
        if not issubclass(factory, Compressor):
            raise TypeError(f"compressor {name!r}: {factory.__qualname__} must subclass fedrepro.comm.Compressor")
        if factory.__call__ is not Compressor.__call__:
            raise TypeError(f"compressor {name!r}: {factory.__qualname__} overrides __call__; implement "
                            f"n_uniforms(d) and _encode(x2, u, ...) instead, so that its randomness is the block u "
                            f"drawn from the caller's generator")
        if factory.name != name:
            raise ValueError(f"compressor {name!r}: set the class attribute name = {name!r} "
                             f"({factory.__qualname__}.name is {factory.name!r})")
    elif not callable(factory):
        raise TypeError(f"compressor {name!r}: expected a Compressor subclass or a factory; got {factory!r}")
    if name in COMPRESSORS and COMPRESSORS[name] is not factory and not replace:
        raise ValueError(f"compressor name {name!r} is taken by {COMPRESSORS[name]!r}; choose another name")
    COMPRESSORS[name] = factory
    return factory


def _entry_points():
    """The group's entry points. Scanning every installed distribution costs about 0.2 s per call (seconds in a
    registry check that names many compressors), so the scan is kept per ``sys.path``: a path added later (a
    plugin's checkout, a test's temporary distribution) is scanned afresh."""
    return _entry_points_on(tuple(sys.path))


@functools.lru_cache(maxsize=8)
def _entry_points_on(path: tuple[str, ...]):
    from importlib.metadata import entry_points

    return tuple(entry_points(group=ENTRY_POINT_GROUP))


def _load_entry_point(name: str) -> bool:
    """Register the installed entry point ``name`` of group fedrepro.compressors, if there is one.

    Its object is a Compressor class or factory (registered under the entry point's name), or a module that
    registers its compressors when imported."""
    import types

    for ep in _entry_points():
        if ep.name == name:
            obj = ep.load()
            if not isinstance(obj, types.ModuleType) and COMPRESSORS.get(name) is not obj:
                register_compressor(name, obj)
            return name in COMPRESSORS
    return False


def available_compressors() -> list[str]:
    """Registered names, plus those an installed package offers through the fedrepro.compressors entry points."""
    return sorted(set(COMPRESSORS) | {ep.name for ep in _entry_points()})


def _factory(name: str) -> Callable[..., Compressor]:
    if name not in COMPRESSORS and not _load_entry_point(name):
        close = difflib.get_close_matches(str(name), available_compressors(), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ValueError(f"unknown compressor {name!r}{hint}; allowed names: {', '.join(available_compressors())}")
    return COMPRESSORS[name]


def compressor_parameters(name: str) -> list[str]:
    """The parameters the factory of `name` takes."""
    return [p for p in inspect.signature(_factory(name)).parameters if p != "self"]


def get_compressor(name: str, **params: Any) -> Compressor:
    """A compressor by registry name; unknown names or parameters raise ValueError."""
    factory = _factory(name)
    allowed = compressor_parameters(name)
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise ValueError(f"compressor {name!r} got unknown parameter(s) {unknown}; allowed parameters: {', '.join(allowed)}")
    out = factory(**params)
    if not isinstance(out, Compressor):
        raise TypeError(f"compressor {name!r}: its factory returned {type(out).__name__}, not a Compressor")
    return out
