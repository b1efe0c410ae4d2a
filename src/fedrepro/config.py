"""Configuration: defaults, scale overlays and command-line overrides, validated before any job runs.

Precedence (later wins): ``config/config.yaml`` < ``config/scales/<scale>.yaml`` < ``--config k=v``.
Every error names the offending key, the allowed values and where to fix it.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Mapping

import jsonschema
import yaml

SCALES = ("smoke", "quick", "paper")


class ConfigError(ValueError):
    """A configuration value is missing, unknown or of the wrong type; the message says which and where."""


def load_yaml(path: str | Path) -> Any:
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"configuration file {path} does not exist")
    try:
        return yaml.safe_load(path.read_text()) or {}
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
        return (f"unknown config key {', '.join(repr(prefix + e) for e in extra)} in {where}; "
                f"allowed keys at {parent}: {', '.join(allowed)}")
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


def resolve_config(base: Mapping, overrides: Mapping | None, root: str | Path) -> dict:
    """Merge defaults, the selected scale's overlay and the overrides; validate each layer."""
    root = Path(root)
    schemas = root / "workflow" / "schemas"
    config_schema = load_yaml(schemas / "config.schema.yaml")
    overrides = dict(overrides or {})
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
