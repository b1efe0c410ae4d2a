"""Configuration validation: every error names the key and the allowed values."""

import pytest

from fedrepro.config import ConfigError, load_yaml, resolve_config
from fedrepro.registry import Registry


@pytest.fixture
def base(repo):
    return load_yaml(repo / "config" / "config.yaml")


def test_defaults_resolve_to_quick(base, repo):
    cfg = resolve_config(base, {}, repo)
    assert cfg["scale"] == "quick" and cfg["data"]["on_missing"] == "standin"


def test_paper_overlay_applies_and_overrides_win(base, repo):
    assert resolve_config(base, {"scale": "paper"}, repo)["data"]["on_missing"] == "error"
    cfg = resolve_config(base, {"scale": "paper", "data": {"on_missing": "standin"}}, repo)
    assert cfg["data"]["on_missing"] == "standin"


def test_unknown_scale_names_key_and_allowed_values(base, repo):
    with pytest.raises(ConfigError) as err:
        resolve_config(base, {"scale": "huge"}, repo)
    msg = str(err.value)
    assert "'scale'" in msg and "smoke, quick, paper" in msg and "huge" in msg


def test_unknown_key_is_named_with_allowed_keys(base, repo):
    with pytest.raises(ConfigError) as err:
        resolve_config(base, {"scael": "paper"}, repo)
    msg = str(err.value)
    assert "'scael'" in msg and "allowed keys" in msg and "scale" in msg


def test_unknown_nested_key_is_named_with_its_path(base, repo):
    with pytest.raises(ConfigError) as err:
        resolve_config(base, {"data": {"on_mising": "error"}}, repo)
    assert "'data.on_mising'" in str(err.value)


def test_wrong_type_names_key(base, repo):
    with pytest.raises(ConfigError) as err:
        resolve_config(base, {"seed": "zero"}, repo)
    assert "'seed'" in str(err.value) and "integer" in str(err.value)


def test_wrong_enum_value_in_nested_key(base, repo):
    with pytest.raises(ConfigError) as err:
        resolve_config(base, {"data": {"on_missing": "ignore"}}, repo)
    assert "'data.on_missing'" in str(err.value) and "standin, error" in str(err.value)


def test_registry_error_names_file_and_key(repo, tmp_path):
    import shutil

    for part in ("config", "workflow/schemas", "notebooks"):
        shutil.copytree(repo / part, tmp_path / part)
    reg = tmp_path / "config" / "papers" / "thesis.yaml"
    reg.write_text(reg.read_text().replace("artifact: table5_1\n    statement: \"Phase 2 <= Phase 1",
                                           "artifact: table9_9\n    statement: \"Phase 2 <= Phase 1"))
    with pytest.raises(ConfigError) as err:
        Registry.load(tmp_path)
    msg = str(err.value)
    assert "config/papers/thesis.yaml" in msg and "table9_9" in msg and "allowed: table5_1" in msg


def test_registry_schema_error_names_key(repo, tmp_path):
    import shutil

    for part in ("config", "workflow/schemas", "notebooks"):
        shutil.copytree(repo / part, tmp_path / part)
    reg = tmp_path / "config" / "papers" / "thesis.yaml"
    reg.write_text(reg.read_text().replace("    kind: table\n", "    kind: tabel\n", 1))
    with pytest.raises(ConfigError) as err:
        Registry.load(tmp_path)
    assert "artifacts.table5_1.kind" in str(err.value) and "table, figure" in str(err.value)
