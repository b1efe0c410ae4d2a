"""Lazy package exports (PEP 562), shared by the package `__init__`s.

A package lists `_EXPORTS = {name: "fedrepro.pkg.module"}` as a literal (fedrepro.codedeps reads it to follow
`from fedrepro.pkg import name` to the module that defines it) and sets `__getattr__ = lazy_getattr(...)`.
Importing one module of the package then imports none of the others: start-up stays fast, and a job's code
dependencies stay the modules it really uses.
"""

from __future__ import annotations

import importlib


def lazy_getattr(package: str, exports: dict[str, str]):
    """The module-level `__getattr__` that imports an exported name's module on first access."""

    def __getattr__(name: str):
        if name in exports:
            return getattr(importlib.import_module(exports[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
