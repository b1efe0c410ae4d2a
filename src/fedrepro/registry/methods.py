"""Methods are data: a registry experiment's `methods:` mapping, name -> algorithm, compressor and settings.

    methods:
      choco_topk: {algorithm: choco, compressor: {name: topk, k: 10}, gamma: 0.4}
      vanilla:    {algorithm: dsgd}                     # no compressor: identity

- `algorithm` is one of the engine's own algorithms (code: each engine keeps its small table of them);
- `compressor` is any name known to `fedrepro.comm` (built-ins, `comm.plugins`, entry points), as a bare name or
  `{name: <name>, <its parameters>}` (data: nothing at a call site names a compressor);
- every other key is a setting the engine reads for that method (`gamma`, `H`, `b`, `server`, ...).

The mapping's order is the methods' order: runs, CSV rows, legends and the integer `comp_id`/`method_id` that
tables and claims key on follow it, so a new method is appended and changes no existing id.  Where an engine sweeps
a knob (C-VFL's bits per entry `b`), it offers that knob to each compressor whose factory takes it and whose spec
does not set it (`Method.build(b=2, ratio=2 / 32)`); the registry check knows each runner's knobs.

The registry check (`fedrepro.registry.params`) validates every spec before any job runs: the runner declares
`"methods": {"*": {"algorithm": "squarm|choco|dsgd", "compressor?": "compressor", ...}}`, so an unknown algorithm,
compressor or compressor parameter stops the run with the file, the key path and the close matches.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

# Parameters that exclude each other (a sparsifier keeps `k` entries or a `ratio` of them): an engine's knob is not
# offered where the spec already sets its alternative.
ALTERNATIVES = {"k": ("ratio",), "ratio": ("k",)}


def compressor_spec(value: Any) -> tuple[str, dict]:
    """(name, parameters) of a compressor given as a name or as {name: ..., <parameters>}; None is the identity."""
    if value is None:
        return "identity", {}
    if isinstance(value, str):
        return value, {}
    if isinstance(value, Mapping) and isinstance(value.get("name"), str):
        return value["name"], {k: v for k, v in value.items() if k != "name"}
    raise ValueError(f"a compressor is a name or {{name: <name>, <its parameters>}}; got {value!r}")


def build_compressor(value: Any, knobs: Mapping[str, Any] | None = None):
    """The fedrepro.comm compressor of a spec; `knobs` fill the parameters its factory takes and the spec leaves out."""
    from fedrepro.comm.catalog import compressor_parameters, get_compressor

    name, params = compressor_spec(value)
    if knobs:
        accepted = compressor_parameters(name)
        for key, v in knobs.items():
            if key in accepted and key not in params and not any(a in params for a in ALTERNATIVES.get(key, ())):
                params[key] = v
    return get_compressor(name, **params)


@dataclass(frozen=True)
class Method:
    name: str
    index: int                          # position in the registry's mapping (ids, order)
    algorithm: str | None
    compressor: Any = None              # the spec as written (None: identity)
    settings: dict = field(default_factory=dict)

    @property
    def compressor_name(self) -> str:
        return compressor_spec(self.compressor)[0]

    def get(self, key: str, default: Any = None) -> Any:
        return self.settings.get(key, default)

    def build(self, **knobs):
        """This method's compressor (see `build_compressor`)."""
        return build_compressor(self.compressor, knobs)


def methods_of(params: Mapping, key: str = "methods", algorithms: Iterable[str] | None = None,
               default_algorithm: str | None = None) -> list[Method]:
    """The methods of a run's parameters, in the registry's order.  `algorithms`: the engine's own (checked here
    too, for callers that bypass the registry check)."""
    spec = params.get(key)
    if not isinstance(spec, Mapping) or not spec:
        raise ValueError(f"parameter {key!r} must be a mapping name -> {{algorithm, compressor, ...}} "
                         f"(docs/architecture.md, 'Methods are data'); got {spec!r}")
    allowed = None if algorithms is None else list(algorithms)
    out = []
    for i, (name, entry) in enumerate(spec.items()):
        entry = dict(entry or {})
        algorithm = entry.pop("algorithm", default_algorithm)
        if allowed is not None and algorithm not in allowed:
            import difflib

            close = difflib.get_close_matches(str(algorithm), allowed, n=2)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise ValueError(f"{key}.{name}.algorithm: unknown algorithm {algorithm!r}{hint} "
                             f"(allowed: {', '.join(allowed)})")
        out.append(Method(str(name), i, algorithm, entry.pop("compressor", None), entry))
    return out


def select(methods: list[Method], names: Iterable[str] | None) -> list[Method]:
    """The methods named (in the registry's order); None: all."""
    if names is None:
        return methods
    wanted = list(names)
    known = {m.name for m in methods}
    missing = [n for n in wanted if n not in known]
    if missing:
        raise ValueError(f"unknown method(s) {missing}; the experiment's methods: {', '.join(sorted(known))}")
    return [m for m in methods if m.name in wanted]
