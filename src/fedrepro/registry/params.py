"""What a runner accepts, and the check of every registry experiment against it before any job runs.

Each runner module declares, just after its imports, the parameters its runner reads (itself and every function it
passes them to) as a literal.  The check reads that literal from the source with `ast`; nothing is imported, so
torch-heavy runner modules cost nothing at DAG-build time:

    PARAMETERS = {
        "problem": "qcqp|logistic",          # one of these words
        "n": "int>=2",                       # an integer, at least 2
        "p": "float>0<=1",                   # a number (ints and inf count) in (0, 1]
        "T_max?": "int>=1|null",             # `?`: optional key; `|`: alternatives (here: an int >= 1 or null)
        "c_range": "list[float, float]",     # exactly two numbers;  list[S]: a list of any length
        "feedbacks?": "list[sample|bandit]",
        "lr": {"kind?": "inverse|constant", "a?": "float>0"},      # a mapping with these keys
        "gamma?": {"*": "float>0"},          # a mapping with any keys
        "runs?": [{"method": "method_name", "b": "int>=1"}],       # a list of such mappings
        "codec": "compressor",               # a fedrepro.comm name, or {name: <name>, <its parameters>}
        "methods": {"*": {"algorithm": "squarm|choco", "compressor?": "compressor"}},   # fedrepro/registry/methods.py
    }

A string spec is alternatives separated by `|`; each alternative is one of

    int | float          optionally with bounds: >=a  >a  <=a  <a  (chained: float>0<=1)
    bool | str | null | any
    compressor           a compressor registered in fedrepro.comm (plugins included), checked by building it
    partial_compressor   the same where the engine supplies some parameters (C-VFL's bits `b`): name and parameter
                         names are checked, the compressor is built by the run
    method_name          a key of the experiment's `methods:` mapping (fedrepro/registry/methods.py), checked on the merged
                         configuration
    list[S]              a list whose items match S;  list[S1, S2]: exactly these positions
    true | false | 12 | 0.5 | any other word     that literal value

A dict spec is a mapping (`"*"`: any other key, checked against its spec), a one-item list `[S]` a list of S, a
tuple `(S1, S2)` alternatives.  A key ending in `?` is optional; every other key must be present once a
configuration is merged with its scale's `params`.  A module with several runners declares
`<FUNCTION>_PARAMETERS` (e.g. `TABLE1_PARAMETERS` for `table1`) for each, falling back to `PARAMETERS`; a literal
may name or unpack another module-level literal (`{**_TRAINING, "d": "int>=1"}`).  A runner module without a
declaration is not checked.

`check_parameters(registry, root, where)` (called by `Registry.load`) checks each configuration and each scale's
`params` on its own (so a message points at the line to fix), then every configuration a scale runs, merged with
that scale's `params`, for missing keys.  Every problem of a file is reported at once, one line each with the file,
the key path and the close matches: ``config/papers/thesis.yaml: experiments.fig4_1.scales.smoke.params.T_maxx:
unknown parameter of fedrepro.mtl.experiments:run; did you mean T_max?``.
"""

from __future__ import annotations

import ast
import difflib
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from fedrepro.registry.config import ConfigError, deep_merge

SPEC_NAME = "PARAMETERS"
# Keys the workflow sets itself: a registry value would be overwritten without notice.
RESERVED = {"seed": "the workflow sets it from the config key `seed` (--config seed=N); remove it here"}
MAX_PROBLEMS = 25


class SpecError(ValueError):
    """A malformed PARAMETERS literal (a bug in a runner module, not in the registry)."""


# ---- the compiled form ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Scalar:
    kind: str                          # int | float | bool | str | null | any | compressor | partial_compressor
                                       # | method_name
    bounds: tuple = ()                 # ((op, number), ...)


@dataclass(frozen=True)
class Literal:
    value: Any


@dataclass(frozen=True)
class AnyOf:
    options: tuple


@dataclass(frozen=True)
class ListOf:
    item: Any = None                   # every item matches this ...
    positions: tuple | None = None     # ... or exactly these positions


@dataclass(frozen=True)
class Mapping:
    fields: dict = field(default_factory=dict)   # key -> (node, optional)
    wildcard: Any = None


_KINDS = ("bool", "str", "null", "any", "compressor", "partial_compressor", "method_name")
_NUMBER = r"-?(?:inf|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)"
_BOUNDED = re.compile(rf"(int|float)((?:(?:>=|<=|>|<){_NUMBER})*)")
_BOUND = re.compile(rf"(>=|<=|>|<)({_NUMBER})")
_WORD = re.compile(r"[A-Za-z0-9_.*+/-]+")
_OPS = {">=": lambda v, b: v >= b, ">": lambda v, b: v > b, "<=": lambda v, b: v <= b, "<": lambda v, b: v < b}


def _split_top(text: str, sep: str) -> list[str]:
    """Split at `sep` outside brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += {"[": 1, "]": -1}.get(ch, 0)
        if ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts]


def _compile_alternative(text: str) -> Any:
    if text.startswith("list[") and text.endswith("]"):
        items = _split_top(text[5:-1], ",")
        if len(items) == 1:
            return ListOf(item=_compile_string(items[0]))
        return ListOf(positions=tuple(_compile_string(s) for s in items))
    m = _BOUNDED.fullmatch(text)
    if m:
        return Scalar(m.group(1), tuple((op, float(num)) for op, num in _BOUND.findall(m.group(2))))
    if text in _KINDS:
        return Scalar(text)
    if text in ("true", "false"):
        return Literal(text == "true")
    for cast in (int, float):
        try:
            return Literal(cast(text))
        except ValueError:
            pass
    if not _WORD.fullmatch(text):
        raise SpecError(f"cannot read {text!r}: expected a type (int, float, bool, str, null, any, compressor, "
                        f"list[...]) or a literal word")
    return Literal(text)


def _compile_string(text: str) -> Any:
    options = [_compile_alternative(p) for p in _split_top(text.strip(), "|")]
    return options[0] if len(options) == 1 else AnyOf(tuple(options))


def compile_spec(spec: Any) -> Any:
    """A spec literal (str, dict, one-item list, tuple) -> its compiled node."""
    if isinstance(spec, str):
        return _compile_string(spec)
    if isinstance(spec, dict):
        fields, wildcard = {}, None
        for key, sub in spec.items():
            if not isinstance(key, str):
                raise SpecError(f"mapping keys must be strings; got {key!r}")
            if key == "*":
                wildcard = compile_spec(sub)
            else:
                fields[key.removesuffix("?")] = (compile_spec(sub), key.endswith("?"))
        return Mapping(fields, wildcard)
    if isinstance(spec, list) and len(spec) == 1:
        return ListOf(item=compile_spec(spec[0]))
    if isinstance(spec, tuple) and spec:
        return AnyOf(tuple(compile_spec(s) for s in spec))
    raise SpecError(f"a spec is a string, a dict, a one-item list or a tuple of specs; got {spec!r}")


# ---- reading the literal from a runner module ------------------------------------------------------------------

def _evaluate(node: ast.AST, env: dict, seen: tuple = ()) -> Any:
    """A literal, where names refer to other module-level literals and dicts may unpack them (`**NAME`)."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _evaluate(node.operand, env, seen)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.List):
        return [_evaluate(e, env, seen) for e in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_evaluate(e, env, seen) for e in node.elts)
    if isinstance(node, ast.Dict):
        out = {}
        for k, v in zip(node.keys, node.values):
            if k is None:
                out.update(_evaluate(v, env, seen))
            else:
                out[_evaluate(k, env, seen)] = _evaluate(v, env, seen)
        return out
    if isinstance(node, ast.Name):
        if node.id in seen or node.id not in env:
            raise SpecError(f"name {node.id!r} is not a module-level literal")
        return _evaluate(env[node.id], env, seen + (node.id,))
    raise SpecError(f"only literals (and names of module-level literals) are allowed; got {ast.dump(node)[:80]}")


def _module_literals(path: Path) -> dict[str, ast.AST]:
    """A module's top-level assignments, plus the literals it imports by name from another fedrepro module
    (`from fedrepro.leaderboard.candidates import BOARD_KEYS`), so runner modules can share a spec part."""
    tree = ast.parse(path.read_text(), filename=str(path))
    env: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("fedrepro."):
            src = next(p for p in path.parents if p.name == "src")
            other = module_path(src.parent, node.module)
            if other is not None:
                theirs = _module_literals(other)
                env.update({a.asname or a.name: theirs[a.name] for a in node.names if a.name in theirs})
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            env.update({t.id: node.value for t in targets if isinstance(t, ast.Name)})
    return env


@lru_cache(maxsize=64)
def _module_specs(path: str, mtime_ns: int) -> dict[str, Any]:
    """Every `*PARAMETERS` literal of a module, compiled (cached per file version)."""
    env = _module_literals(Path(path))
    out = {}
    for name, value in env.items():
        if name == SPEC_NAME or name.endswith("_" + SPEC_NAME):
            try:
                out[name] = compile_spec(_evaluate(value, env, (name,)))
            except SpecError as exc:
                raise SpecError(f"{path}: {name}: {exc}") from None
    return out


def module_path(root: str | Path, module: str) -> Path | None:
    base = Path(root) / "src" / Path(*module.split("."))
    return next((p for p in (base.with_suffix(".py"), base / "__init__.py") if p.is_file()), None)


def runner_spec(root: str | Path, runner: str) -> Mapping | None:
    """The compiled parameter spec of a registry `runner:` ('pkg.module:function'); None if it declares none."""
    module, _, function = runner.partition(":")
    path = module_path(root, module)
    if path is None:
        return None
    specs = _module_specs(str(path), path.stat().st_mtime_ns)
    spec = specs.get(f"{function.upper()}_{SPEC_NAME}", specs.get(SPEC_NAME))
    if spec is not None and not isinstance(spec, Mapping):
        raise SpecError(f"{path}: the parameters of {runner} must be a dict literal")
    return spec


# ---- checking values -------------------------------------------------------------------------------------------

def _number(x: float) -> str:
    return f"{x:g}" if math.isfinite(x) else ("inf" if x > 0 else "-inf")


def describe(node: Any) -> str:
    """What a node accepts, in words (for messages)."""
    if isinstance(node, Scalar):
        bounds = " and ".join(f"{op} {_number(b)}" for op, b in node.bounds)
        words = {"int": "an integer", "float": "a number", "bool": "true or false", "str": "a string",
                 "null": "null", "any": "any value",
                 "compressor": "a compressor name (fedrepro.comm) or {name: <name>, <its parameters>}",
                 "partial_compressor": "a compressor name (fedrepro.comm) or {name: <name>, <some of its "
                                       "parameters>}",
                 "method_name": "the name of one of the experiment's methods"}[node.kind]
        return f"{words} {bounds}" if bounds else words
    if isinstance(node, Literal):
        return str(node.value).lower() if isinstance(node.value, bool) else str(node.value)
    if isinstance(node, AnyOf):
        if all(isinstance(o, Literal) for o in node.options):
            return "one of " + ", ".join(describe(o) for o in node.options)
        return " or ".join(describe(o) for o in node.options)
    if isinstance(node, ListOf):
        if node.positions is not None:
            return f"a list of {len(node.positions)} items ({'; '.join(describe(p) for p in node.positions)})"
        return f"a list of {describe(node.item)}"
    if isinstance(node, Mapping):
        keys = list(node.fields)
        if node.wildcard is not None and not keys:
            return f"a mapping of names to {describe(node.wildcard)}"
        return "a mapping with keys " + ", ".join(keys) + (" (and others)" if node.wildcard is not None else "")
    raise TypeError(node)


def _show(value: Any) -> str:
    text = repr(value)
    text = text if len(text) <= 60 else text[:57] + "..."
    return f"{text} ({type(value).__name__})" if isinstance(value, str) else text


def _join(path: str, key: Any) -> str:
    return f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}"


def _did_you_mean(word: Any, candidates) -> str:
    close = difflib.get_close_matches(str(word), [str(c) for c in candidates], n=3, cutoff=0.6)
    return f"; did you mean {', '.join(close)}?" if close else ""


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _scalar_ok(node: Scalar, value: Any) -> bool:
    if node.kind == "int":
        ok = _is_number(value) and (isinstance(value, int) or float(value).is_integer())
    elif node.kind == "float":
        ok = _is_number(value)
    elif node.kind == "bool":
        return isinstance(value, bool)
    elif node.kind == "str":
        return isinstance(value, str)
    elif node.kind == "null":
        return value is None
    else:
        return True
    return ok and all(_OPS[op](value, b) for op, b in node.bounds)


def _literal_ok(node: Literal, value: Any) -> bool:
    if isinstance(node.value, bool) or isinstance(value, bool):
        return type(value) is type(node.value) and value == node.value
    return value == node.value and (_is_number(value) == _is_number(node.value))


def _shape(node: Any) -> str:
    return {Mapping: "dict", ListOf: "list"}.get(type(node), "scalar")


def _value_shape(value: Any) -> str:
    return "dict" if isinstance(value, dict) else "list" if isinstance(value, list) else "scalar"


class Checker:
    """Checks values against compiled specs, collecting (key path, message) problems."""

    def __init__(self, root: str | Path = "."):
        self.root = Path(root)
        self.problems: list[tuple[str, str]] = []
        self._top = ""
        self._root: Any = None             # the whole value checked (its `methods:` names the methods)

    def fail(self, path: str, message: str) -> None:
        self.problems.append((path, message))

    def check(self, value: Any, node: Any, path: str, *, partial: bool = False, owner: str = "") -> bool:
        before = len(self.problems)
        self._top, self._root = path, value
        self._check(value, node, path, partial, owner)
        return len(self.problems) == before

    def _check(self, value, node, path, partial, owner) -> None:
        if isinstance(node, Scalar):
            if node.kind in ("compressor", "partial_compressor"):
                self._compressor(value, path, build=node.kind == "compressor")
            elif node.kind == "method_name":
                self._method_name(value, path, partial)
            elif not _scalar_ok(node, value):
                self.fail(path, f"expected {describe(node)}, got {_show(value)}")
        elif isinstance(node, Literal):
            if not _literal_ok(node, value):
                self.fail(path, f"expected {describe(node)}, got {_show(value)}")
        elif isinstance(node, AnyOf):
            self._any_of(value, node, path, partial, owner)
        elif isinstance(node, ListOf):
            self._list(value, node, path, partial, owner)
        elif isinstance(node, Mapping):
            self._mapping(value, node, path, partial, owner)
        else:
            raise TypeError(node)

    def _any_of(self, value, node: AnyOf, path, partial, owner) -> None:
        for option in node.options:
            probe = Checker(self.root)
            probe._top, probe._root = path, self._root
            probe._check(value, option, path, partial, owner)
            if not probe.problems:
                return
        same_shape = [o for o in node.options if _shape(o) == _value_shape(value)]
        if len(same_shape) == 1 and _shape(same_shape[0]) != "scalar":   # report inside the one container that fits
            self._check(value, same_shape[0], path, partial, owner)
            return
        words = [o.value for o in node.options if isinstance(o, Literal) and isinstance(o.value, str)]
        if isinstance(value, str) and words:
            self.fail(path, f"unknown value {value!r}{_did_you_mean(value, words)} (allowed: {describe(node)})")
        else:
            self.fail(path, f"expected {describe(node)}, got {_show(value)}")

    def _list(self, value, node: ListOf, path, partial, owner) -> None:
        if not isinstance(value, list):
            self.fail(path, f"expected {describe(node)}, got {_show(value)}")
            return
        if node.positions is not None:
            if len(value) != len(node.positions):
                self.fail(path, f"expected {describe(node)}, got {len(value)} items")
                return
            for i, (v, sub) in enumerate(zip(value, node.positions)):
                self._check(v, sub, _join(path, i), partial, owner)
            return
        for i, v in enumerate(value):
            self._check(v, node.item, _join(path, i), partial, owner)

    def _mapping(self, value, node: Mapping, path, partial, owner) -> None:
        if not isinstance(value, dict):
            self.fail(path, f"expected {describe(node)}, got {_show(value)}")
            return
        for key, v in value.items():
            if key in node.fields:
                self._check(v, node.fields[key][0], _join(path, key), partial, owner)
            elif node.wildcard is not None:
                self._check(v, node.wildcard, _join(path, key), partial, owner)
            elif key in RESERVED and path == self._top:
                self.fail(_join(path, key), RESERVED[key])
            else:
                whose = f" of {owner}" if owner else ""
                hint = _did_you_mean(key, node.fields) or f" (known: {', '.join(sorted(node.fields))})"
                self.fail(_join(path, key), f"unknown parameter{whose}{hint}")
        if not partial:
            for key, (_, optional) in node.fields.items():
                if not optional and key not in value:
                    self.fail(_join(path, key), "missing" + (f": {owner} reads it" if owner else ""))

    def _method_name(self, value, path, partial) -> None:
        """A method's name: a string, and (once the configuration is merged with its scale) a key of `methods:`."""
        if not isinstance(value, str):
            self.fail(path, f"expected {describe(Scalar('method_name'))}, got {_show(value)}")
            return
        methods = (self._root or {}).get("methods") if isinstance(self._root, dict) else None
        if partial or not isinstance(methods, dict) or value in methods:
            return
        self.fail(path, f"unknown method {value!r}{_did_you_mean(value, methods)} (this experiment's methods: "
                        f"{', '.join(methods)})")

    def _compressor(self, value, path, build: bool = True) -> None:
        """Build the compressor: its name must be registered and its parameters accepted (fedrepro.comm).  A
        partial one (`build=False`) is checked for its name and parameter names only."""
        import importlib

        # importlib (not an import statement): checking a name cannot change a job's output, so the modules that
        # import this one (registry, notebooks) should not depend on fedrepro.comm (fedrepro.workflow.codedeps).
        catalog = importlib.import_module("fedrepro.comm.catalog")
        plugins = importlib.import_module("fedrepro.comm.plugins")
        if isinstance(value, str):
            name, params = value, {}
        elif isinstance(value, dict) and isinstance(value.get("name"), str):
            name, params = value["name"], {k: v for k, v in value.items() if k != "name"}
        else:
            self.fail(path, f"expected {describe(Scalar('compressor'))}, got {_show(value)}")
            return
        if name not in catalog.COMPRESSORS and name not in catalog.available_compressors():
            plugins.import_plugins(plugins.configured_plugins(self.root), root=self.root)
        if name not in catalog.COMPRESSORS and name not in (names := catalog.available_compressors()):
            self.fail(path, f"unknown compressor {name!r}{_did_you_mean(name, names)} (registered: "
                            f"{', '.join(names)}; a new one: docs/comm.md, 'Add your own compressor')")
            return
        if not build:
            allowed = catalog.compressor_parameters(name)
            for key in params:
                if key not in allowed:
                    self.fail(f"{path}.{key}", f"unknown parameter of compressor {name!r}"
                                               f"{_did_you_mean(key, allowed)} (its parameters: {', '.join(allowed)})")
            return
        try:
            catalog.get_compressor(name, **params)
        except (ValueError, TypeError) as exc:
            self.fail(path, str(exc))


# ---- the registry check ----------------------------------------------------------------------------------------

def check_parameters(reg: dict, root: str | Path, where: str) -> None:
    """Check every experiment of one registry file against its runner's declared parameters (see module doc).

    Raises ConfigError listing every problem, one per line: file, key path, what is wrong and close matches."""
    checker = Checker(root)
    for name, e in reg["experiments"].items():
        runner = e["runner"]
        try:
            spec = runner_spec(root, runner)
        except SpecError as exc:
            raise ConfigError(f"{where}: experiments.{name}.runner {runner!r}: {exc}") from None
        if spec is None:
            continue
        base, before = f"experiments.{name}", len(checker.problems)
        for conf, params in e["configurations"].items():
            checker.check(params or {}, spec, f"{base}.configurations.{conf}", partial=True, owner=runner)
        for scale, entry in e["scales"].items():
            params = (entry or {}).get("params")
            if params is not None:
                checker.check(params, spec, f"{base}.scales.{scale}.params", partial=True, owner=runner)
        if len(checker.problems) > before:
            continue
        missing: dict[tuple[str, str], list[str]] = {}
        for scale, entry in e["scales"].items():
            entry = entry or {}
            for conf in entry.get("configurations") or e["configurations"]:
                merged = deep_merge(e["configurations"][conf] or {}, entry.get("params") or {})
                probe = Checker(root)
                probe.check(merged, spec, f"{base}.configurations.{conf}", owner=runner)
                for path, message in probe.problems:
                    missing.setdefault((path, message), []).append(scale)
        for (path, message), scales in missing.items():
            checker.fail(path, f"{message} (at scale {', '.join(scales)})")
    if checker.problems:
        lines = [f"{where}: {path}: {message}" for path, message in checker.problems[:MAX_PROBLEMS]]
        if len(checker.problems) > MAX_PROBLEMS:
            lines.append(f"... and {len(checker.problems) - MAX_PROBLEMS} more")
        raise ConfigError("\n".join(lines) + "\n(each runner declares its parameters in its module's PARAMETERS "
                                             "literal; the format: fedrepro/registry/params.py)")


def declared_keys(spec: Mapping, prefix: str = "") -> set[str]:
    """Every key path a spec declares ('lr.kind', 'runs[].b', 'setups.*.B'), for coverage checks."""
    out = set()
    entries = [(key, node) for key, (node, _) in spec.fields.items()]
    if spec.wildcard is not None:
        entries.append(("*", spec.wildcard))
    for key, node in entries:
        path = f"{prefix}{key}"
        out.add(path)
        for outer, mapping in _containers(node):
            out |= declared_keys(mapping, path + ("[]." if isinstance(outer, ListOf) else "."))
    return out


def _containers(node: Any):
    """(outer, mapping) for each mapping reachable from a node through alternatives and lists."""
    if isinstance(node, Mapping):
        yield node, node
    elif isinstance(node, AnyOf):
        for o in node.options:
            yield from _containers(o)
    elif isinstance(node, ListOf) and node.item is not None:
        for _, m in _containers(node.item):
            yield node, m
