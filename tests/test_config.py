"""Configuration validation: every error names the key and the allowed values."""

import pytest

from fedrepro.registry.config import ConfigError, load_yaml, resolve_config
from fedrepro.registry.papers import Registry


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

    for part in ("config", "workflow/schemas", "notebooks", "src"):   # the registry checks its runners exist
        shutil.copytree(repo / part, tmp_path / part)
    reg = tmp_path / "config" / "papers" / "thesis.yaml"
    reg.write_text(reg.read_text().replace("artifact: table5_1\n    statement: \"Phase 2 <= Phase 1",
                                           "artifact: table9_9\n    statement: \"Phase 2 <= Phase 1"))
    with pytest.raises(ConfigError) as err:
        Registry.load(tmp_path)
    msg = str(err.value)
    assert "config/papers/thesis.yaml" in msg and "table9_9" in msg and "allowed: table5_1" in msg


def test_misspelt_claim_configuration_names_file_claim_and_close_match(repo, tmp_path):
    import shutil

    for part in ("config", "workflow/schemas", "notebooks", "src"):   # the registry checks its runners exist
        shutil.copytree(repo / part, tmp_path / part)
    reg = tmp_path / "config" / "papers" / "thesis.yaml"
    text = reg.read_text()
    line = text.index("configurations: [as-stated, calibrated]", text.index("id: C5.1"))
    reg.write_text(text[:line] + "configurations: [as-stated, calibratd]" + text[line + 39:])
    with pytest.raises(ConfigError) as err:
        Registry.load(tmp_path)
    msg = str(err.value)
    assert "config/papers/thesis.yaml" in msg and "claim C5.1" in msg and "'calibratd'" in msg
    assert "did you mean calibrated" in msg


def test_registry_schema_error_names_key(repo, tmp_path):
    import shutil

    for part in ("config", "workflow/schemas", "notebooks", "src"):   # the registry checks its runners exist
        shutil.copytree(repo / part, tmp_path / part)
    reg = tmp_path / "config" / "papers" / "thesis.yaml"
    reg.write_text(reg.read_text().replace("    kind: table\n", "    kind: tabel\n", 1))
    with pytest.raises(ConfigError) as err:
        Registry.load(tmp_path)
    assert "artifacts.table5_1.kind" in str(err.value) and "table, figure" in str(err.value)


# ---- nested --config overrides, as Snakemake parses them --------------------------------------------

def _snakemake_config(repo, *entries, configfile=None):
    """What the Snakefile sees for `--config <entries>`: Snakemake's own parser and merge."""
    from snakemake.cli import parse_config
    from snakemake.utils import update_config

    overrides = parse_config(list(entries))
    base = load_yaml(configfile or repo / "config" / "config.yaml")
    update_config(base, overrides)
    return base, overrides


def _resolve(repo, *entries, root=None):
    base, overrides = _snakemake_config(repo, *entries, configfile=(root or repo) / "config" / "config.yaml")
    return resolve_config(base, overrides, root or repo)


def test_nested_override_is_coerced_and_merged_key_by_key(repo):
    cfg = _resolve(repo, "data={timeout_s: 5, retries: 0}")
    assert cfg["data"]["timeout_s"] == 5 and cfg["data"]["retries"] == 0
    assert isinstance(cfg["data"]["retries"], int)
    assert cfg["data"]["on_missing"] == "standin"                   # the other keys of data are kept
    cfg = _resolve(repo, "data={timeout_s: 2.5, credentials: {mimic3: null, imagenet: /data/ilsvrc}}")
    assert cfg["data"]["timeout_s"] == 2.5 and cfg["data"]["credentials"] == {"mimic3": None,
                                                                              "imagenet": "/data/ilsvrc"}
    assert _resolve(repo, "scale=paper", "data={on_missing: standin}")["data"]["on_missing"] == "standin"


def test_nested_override_of_the_wrong_type_is_named(repo):
    with pytest.raises(ConfigError, match=r"'data.timeout_s' must be of type number, got 'soon'"):
        _resolve(repo, "data={timeout_s: soon}")
    with pytest.raises(ConfigError, match=r"'data.retries' must be of type integer, got '1.5'"):
        _resolve(repo, "data={retries: 1.5}")
    with pytest.raises(ConfigError, match=r"'data.timout_s'.*did you mean 'data.timeout_s'"):
        _resolve(repo, "data={timout_s: 5}")


# ---- every piece of advice works at the scale where it is printed --------------------------------------

def _advised_config_args(message):
    import re
    import shlex

    return [shlex.split(arg)[0] for arg in re.findall(r"`--config ([^`]*)`", message)]


@pytest.mark.parametrize("scale", ["paper", None])
def test_missing_data_advice_works_at_paper_scale(repo, tmp_path, scale):
    from fedrepro.data.acquire import DataUnavailable
    from fedrepro.data.prepare import prepare
    from fedrepro.registry.datasets import load_registry

    cfg = _resolve(repo, "scale=paper")
    assert cfg["data"]["on_missing"] == "error"
    ds = load_registry(repo)["europarl"]
    missing = {"dataset": "europarl", "status": "unavailable", "files": {}, "missing": ["de-en.tgz"],
               "attempts": [{"source": "statmt", "file": "de-en.tgz", "error": "offline"}]}
    with pytest.raises(DataUnavailable) as err:
        prepare(ds, missing, tmp_path / "out", on_missing=cfg["data"]["on_missing"], scale=scale)
    message = str(err.value)
    # the old advice (config/config.yaml) does not work at this scale, and is not given
    assert "set data.on_missing: standin in config/config.yaml to" not in message
    args = _advised_config_args(message)
    assert args, message
    fixed = _resolve(repo, "scale=paper", *args)                # apply the advice literally
    assert fixed["data"]["on_missing"] == "standin"
    result = prepare(ds, missing, tmp_path / "out2", on_missing=fixed["data"]["on_missing"])
    assert result.status == "stand-in"


def test_the_file_named_by_the_advice_is_the_one_that_decides(repo, tmp_path):
    import shutil

    import yaml

    from fedrepro.registry.config import setting_advice

    for part in ("config", "workflow/schemas"):
        shutil.copytree(repo / part, tmp_path / part)
    advice = setting_advice("data.on_missing", "standin", scale="paper", root=tmp_path)
    assert "config/scales/paper.yaml" in advice
    overlay = tmp_path / "config/scales/paper.yaml"
    doc = yaml.safe_load(overlay.read_text())
    doc["config"]["data"]["on_missing"] = "standin"                 # do what it says
    overlay.write_text(yaml.safe_dump(doc))
    assert _resolve(repo, "scale=paper", root=tmp_path)["data"]["on_missing"] == "standin"
    # at the quick scale config/config.yaml decides, and that is what the advice says there
    assert "in config/config.yaml" in setting_advice("data.on_missing", "error", scale="quick", root=tmp_path)


def test_credential_advice_works(repo):
    from fedrepro.data.acquire import credential_message
    from fedrepro.registry.datasets import load_registry

    message = credential_message(load_registry(repo)["imagenet"], None, scale="paper", root=repo)
    args = _advised_config_args(message)
    cfg = _resolve(repo, "scale=paper", *args)
    assert cfg["data"]["credentials"]["imagenet"] == "/path/to/folder"
    assert cfg["data"]["credentials"]["mimic3"] is None             # the sibling key survives the merge


def test_a_key_given_twice_is_an_error_naming_the_file_and_line(tmp_path):
    from fedrepro.registry.config import ConfigError, load_yaml

    path = tmp_path / "twice.yaml"
    path.write_text("paper: p\nassumptions: {a: 1}\nexperiments: {}\nassumptions: {b: 2}\n")
    with pytest.raises(ConfigError) as err:
        load_yaml(path)
    assert "'assumptions' appears twice" in str(err.value) and "line 4" in str(err.value) and str(path) in str(err.value)
    ok = tmp_path / "anchors.yaml"  # merge keys (<<) of anchors are not duplicates
    ok.write_text("a: &x {k: 1}\nb:\n  <<: *x\n  j: 2\n")
    assert load_yaml(ok)["b"] == {"k": 1, "j": 2}


def test_a_parsed_file_is_reused_only_for_the_same_bytes_and_never_shared(tmp_path):
    """load_yaml keeps each file's parse by its bytes: an edit of the same size and time stamp is parsed afresh,
    and a caller that changes what it got does not change the next caller's value."""
    import os

    path = tmp_path / "reg.yaml"
    path.write_text("experiments: {a: {T: 10}}\nanchor: &x {k: [1, 2]}\nalias: *x\n")
    first = load_yaml(path)
    first["experiments"]["a"]["T"] = 99
    second = load_yaml(path)
    assert second["experiments"]["a"]["T"] == 10
    assert second["alias"] is second["anchor"]               # YAML's alias stays one object, as the parser made it
    stat = path.stat()
    path.write_text("experiments: {a: {T: 20}}\nanchor: &x {k: [1, 2]}\nalias: *x\n")   # same size
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))   # and the same time stamp
    assert load_yaml(path)["experiments"]["a"]["T"] == 20


def test_a_file_that_is_not_utf8_names_the_file(tmp_path):
    path = tmp_path / "latin.yaml"
    path.write_bytes("label: caf\u00e9\n".encode("latin-1"))
    with pytest.raises(ConfigError, match=r"latin\.yaml is not UTF-8 text.*save it as UTF-8"):
        load_yaml(path)
