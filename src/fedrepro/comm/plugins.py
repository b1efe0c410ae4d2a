"""User modules named in the config (`comm.plugins`), imported before the DAG is built and in every run job.

A plugin module registers what it defines when it is imported, e.g. a compressor class decorated with
`fedrepro.comm.register_compressor("name")` (docs/comm.md, "Add your own compressor").  An entry is a module name
(`mypackage.compressors`, importable from the environment) or a `.py` file (relative to the repository root).

Compressors of an installed package can also be found without any configuration, through the entry-point group
`fedrepro.compressors` of that package (`fedrepro.comm.catalog` reads it when a name is not registered yet).

This module imports nothing from fedrepro, so the run jobs that import it do not depend on fedrepro.comm.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from collections.abc import Iterable
from pathlib import Path


class PluginError(ImportError):
    """A plugin named in the config could not be imported (the message names the entry and the config key)."""


def _import_file(path: Path) -> None:
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    name = f"fedrepro_plugin_{path.stem}_{digest}"
    if name in sys.modules:
        return
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise


def import_plugins(entries: Iterable[str] | None, root: str | Path = ".") -> list[str]:
    """Import every entry of `comm.plugins` (idempotent: a module is imported once per process)."""
    done = []
    for entry in entries or ():
        try:
            if str(entry).endswith(".py"):
                path = Path(entry) if Path(entry).is_absolute() else Path(root) / entry
                if not path.is_file():
                    raise FileNotFoundError(f"no file {path}")
                _import_file(path)
            else:
                importlib.import_module(entry)
        except Exception as exc:  # noqa: BLE001 - any failure of user code is reported with the config key
            raise PluginError(f"comm.plugins: cannot import {entry!r}: {type(exc).__name__}: {exc}\n"
                              f"(an entry is a module name importable here or a .py file relative to the "
                              f"repository root; see docs/comm.md)") from exc
        done.append(str(entry))
    return done


def configured_plugins(root: str | Path = ".") -> list[str]:
    """`comm.plugins` of config/config.yaml under `root` (without command-line overrides)."""
    import yaml

    path = Path(root) / "config" / "config.yaml"
    if not path.is_file():
        return []
    cfg = yaml.safe_load(path.read_text()) or {}
    return list((cfg.get("comm") or {}).get("plugins") or [])
