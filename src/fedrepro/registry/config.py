"""Configuration: defaults, scale overlays and command-line overrides, validated before any job runs.

Precedence (later wins): ``config/config.yaml`` < ``config/scales/<scale>.yaml`` < ``--config k=v``.
Nested keys are overridden with a YAML mapping: ``--config data='{on_missing: standin, timeout_s: 5}'``
(Snakemake merges it into the defaults key by key).  Snakemake reads such values as strings; they are
coerced to the type the schema asks for (``'5'`` -> 5 for a number) before validation.
Every error names the offending key, the allowed values and where to fix it, and advice to set a key names a
place that takes effect at the scale in use (the command line always does; config/config.yaml does not where
the scale's overlay sets the key).
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema
import yaml

SCALES = ("smoke", "quick", "paper")


class ConfigError(ValueError):
    """A configuration value is missing, unknown or of the wrong type; the message says which and where."""


class _UniqueKeyLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """A safe loader that refuses a key given twice in one mapping: plain YAML keeps the last one silently, so a
    second `assumptions:` block (or a repeated experiment) would drop the first without a word.  libyaml's parser
    where PyYAML has it (5x faster: every job reads the four registries)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue  # merge keys (<<) of anchors may repeat keys on purpose
            key = key_node.value
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} appears twice in one mapping (the first would be ignored)",
                    key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_yaml(path: str | Path) -> Any:
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"configuration file {path} does not exist")
    try:
        return yaml.load(path.read_bytes().decode("utf-8"), Loader=_UniqueKeyLoader) or {}
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not UTF-8 text ({exc}); save it as UTF-8") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML: {exc}") from exc


def deep_merge(base: Mapping, over: Mapping) -> dict:
    out = copy.deepcopy(dict(base))
    for k, v in (over or {}).items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def _key_path(error: jsonschema.ValidationError) -> str:
    return ".".join(str(p) for p in error.absolute_path) or "<top level>"


def _describe(error: jsonschema.ValidationError, where: str) -> str:
    key = _key_path(error)
    schema = error.schema if isinstance(error.schema, dict) else {}
    if error.validator == "additionalProperties":
        allowed = sorted(schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed))
        parent = key if key != "<top level>" else "the top level"
        prefix = "" if key == "<top level>" else key + "."
        close = [prefix + m for e in extra for m in difflib.get_close_matches(e, allowed, n=1)]
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        return (f"unknown config key {', '.join(repr(prefix + e) for e in extra)} in {where}; "
                f"allowed keys at {parent}: {', '.join(allowed)}{hint}")
    if error.validator == "enum":
        return (f"config key '{key}' is {error.instance!r}; allowed values: "
                f"{', '.join(str(v) for v in error.validator_value)} (set in {where})")
    if error.validator == "type":
        return f"config key '{key}' must be of type {error.validator_value}, got {error.instance!r} (set in {where})"
    if error.validator == "required":
        return f"config key '{key}' is missing a required entry: {error.message} (in {where})"
    return f"config key '{key}': {error.message} (in {where})"


def validate(instance: Any, schema: Mapping, where: str) -> None:
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(instance), key=lambda e: (len(e.absolute_path), _key_path(e)))
    if errors:
        raise ConfigError("\n".join(_describe(e, where) for e in errors))


# ---- command-line overrides: strings coerced to the schema's types ------------------------------------

_JSON_TYPES = {"integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
               "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
               "boolean": lambda v: isinstance(v, bool), "null": lambda v: v is None,
               "string": lambda v: isinstance(v, str), "object": lambda v: isinstance(v, dict),
               "array": lambda v: isinstance(v, list)}


def _subschema(schema: Mapping, key: str) -> Mapping:
    props = schema.get("properties") or {}
    if key in props:
        return props[key]
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, Mapping) else {}


def _coerce(value: Any, schema: Mapping) -> Any:
    if isinstance(value, Mapping):
        return {k: _coerce(v, _subschema(schema, str(k))) for k, v in value.items()}
    if isinstance(value, list):
        items = schema.get("items") if isinstance(schema.get("items"), Mapping) else {}
        return [_coerce(v, items) for v in value]
    if not isinstance(value, str):
        return value
    types = schema.get("type")
    types = [types] if isinstance(types, str) else list(types or [])
    if not types or ("string" in types and not ("null" in types and value in ("null", "~"))):
        return value                              # a string where a string is allowed stays one
    try:
        parsed = yaml.safe_load(value)
    except yaml.YAMLError:
        return value
    if any(_JSON_TYPES[t](parsed) for t in types if t in _JSON_TYPES):
        return _coerce(parsed, schema) if isinstance(parsed, (dict, list)) else parsed
    return value                                  # left for validation to name key, type and value


def coerce_overrides(overrides: Mapping | None, schema: Mapping) -> dict:
    """`--config` values with the types the schema asks for.

    Snakemake parses a nested value (``data='{timeout_s: 5}'``) with YAML's BaseLoader, so every scalar in it
    is a string; this turns ``'5'`` into 5 where a number is expected, ``'true'`` into True where a boolean is,
    ``'null'`` into None where null is allowed.  Values that do not fit stay as they are for `validate`.
    """
    return _coerce(dict(overrides or {}), schema)


def override_argument(key_path: str, value: Any) -> str:
    """The `--config` argument that sets one (nested) key, e.g. ``data='{on_missing: standin}'``."""
    head, *rest = key_path.split(".")
    text = yaml.safe_dump(value, default_flow_style=True).strip()
    text = text[: -len("...")].strip() if text.endswith("...") else text
    for key in reversed(rest):
        text = f"{{{key}: {text}}}"
    return f"{head}='{text}'" if rest else f"{head}={text}"


def _sets(cfg: Mapping, key_path: str) -> bool:
    node: Any = cfg
    for key in key_path.split("."):
        if not isinstance(node, Mapping) or key not in node:
            return False
        node = node[key]
    return True


def setting_advice(key_path: str, value: Any, *, scale: str | None = None, root: str | Path = ".") -> str:
    """How to set `key_path` to `value` so that it takes effect at `scale`.

    The command line always wins.  config/config.yaml does not where the scale's overlay sets the key (e.g.
    data.on_missing at the paper scale): then the advice names the overlay instead.  Without a scale, every
    overlay that sets the key is named.
    """
    root = Path(root)
    arg = f"`--config {override_argument(key_path, value)}`"
    shown = yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...").strip()
    scales = [scale] if scale else list(SCALES)
    overlays = []
    for s in scales:
        path = root / "config" / "scales" / f"{s}.yaml"
        try:
            if _sets(load_yaml(path).get("config") or {}, key_path):
                overlays.append(path.relative_to(root).as_posix())
        except ConfigError:
            continue
    if scale and overlays:
        where = f"{key_path}: {shown} under `config:` in {overlays[0]} (it overrides config/config.yaml at the " \
                f"{scale} scale)"
    elif overlays:
        where = (f"{key_path}: {shown} in config/config.yaml, except at the scale(s) whose overlay sets it "
                 f"({', '.join(overlays)}: change it there)")
    else:
        where = f"{key_path}: {shown} in config/config.yaml"
    # at the end: --config takes every word up to the next option, targets included
    return f"rerun with {arg} at the end of the snakemake command line, or set {where}"


def resolve_config(base: Mapping, overrides: Mapping | None, root: str | Path) -> dict:
    """Merge defaults, the selected scale's overlay and the overrides; validate each layer.

    `base` is Snakemake's `config` (config/config.yaml with the overrides already merged in) and `overrides`
    the raw `--config` values; these are coerced to the schema's types first and then win over every layer.
    """
    root = Path(root)
    schemas = root / "workflow" / "schemas"
    config_schema = load_yaml(schemas / "config.schema.yaml")
    overrides = coerce_overrides(overrides, config_schema)
    first = deep_merge(base, overrides)
    validate(first, config_schema, "config/config.yaml or --config")
    scale = first["scale"]
    overlay_path = root / "config" / "scales" / f"{scale}.yaml"
    overlay = load_yaml(overlay_path)
    validate(overlay, load_yaml(schemas / "scale.schema.yaml"), str(overlay_path.relative_to(root)))
    resolved = deep_merge(deep_merge(base, overlay.get("config", {})), overrides)
    validate(resolved, config_schema, f"{overlay_path.relative_to(root)} or --config")
    resolved["scale_info"] = {k: v for k, v in overlay.items() if k != "config"}
    return resolved
