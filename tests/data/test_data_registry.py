"""config/datasets.yaml: complete (every dataset of the four works), valid, internally consistent."""

from __future__ import annotations

import copy
import hashlib

import pytest
from loopback import REPO

from fedrepro.data.acquire import acquire, credential_message, unavailable_message
from fedrepro.registry.config import ConfigError, load_yaml, validate
from fedrepro.registry.datasets import load_registry

WORKS_DATASETS = {"mnist", "fashion_mnist", "cifar10", "modelnet10", "mimic3_ihm", "imagenet", "imagenet100",
                  "europarl", "desynpuf"}


@pytest.fixture(scope="module")
def reg():
    return load_registry(REPO)


def test_every_dataset_of_the_four_works_has_an_entry(reg):
    assert WORKS_DATASETS <= set(reg.names())
    for scale in ("smoke", "quick", "paper"):
        assert reg.needed(scale)


def test_entries_are_complete(reg):
    for name in reg.names():
        e = reg[name].entry
        for key in ("citation", "licence", "access", "homepage", "standin"):
            assert e[key], f"{name}.{key}"
        if not reg[name].derived_from:
            assert reg[name].files and reg[name].sources, name
        for src in reg[name].sources:
            if src["kind"] in ("pypi", "debian"):
                assert len(src["artifact"]["sha256"]) == 64


def test_open_registry_mirrors_check_official_checksums(reg):
    for name in ("mnist", "fashion_mnist"):
        assert all("md5" in f for f in reg[name].files.values()), name
        assert {s["kind"] for s in reg[name].sources} & {"pypi", "debian"}


def test_imagenet100_class_list_matches_published_hash(reg):
    p = reg["imagenet100"].prepare
    text = "\n".join(p["classes"]) + "\n"
    assert len(set(p["classes"])) == 100
    assert hashlib.sha256(text.encode()).hexdigest() == p["class_list_sha256"]


def test_schema_rejects_bad_checksum_and_unknown_keys():
    raw = load_yaml(REPO / "config/datasets.yaml")
    schema = load_yaml(REPO / "workflow/schemas/datasets.schema.yaml")
    bad = copy.deepcopy(raw)
    bad["datasets"]["mnist"]["files"]["train-images-idx3-ubyte"]["md5"] = "xyz"
    with pytest.raises(ConfigError, match="datasets.mnist.files"):
        validate(bad, schema, "config/datasets.yaml")
    bad = copy.deepcopy(raw)
    bad["datasets"]["mnist"]["mirror"] = "x"
    with pytest.raises(ConfigError, match="mirror"):
        validate(bad, schema, "config/datasets.yaml")


def test_credential_messages_name_key_and_what_to_obtain(reg, tmp_path):
    m = acquire(reg["mimic3_ihm"], tmp_path / "m", credentials={})
    assert m["status"] == "unavailable"
    msg = unavailable_message(reg["mimic3_ihm"], m)
    assert "data.credentials.mimic3" in msg and "config/config.yaml" in msg and "PhysioNet" in msg
    # a folder that lacks files: they are named
    m = acquire(reg["imagenet"], tmp_path / "i", credentials={"imagenet": str(tmp_path)})
    assert "ILSVRC2012_img_train.tar" in m["attempts"][0]["error"] and "data.credentials.imagenet" in m["attempts"][0]["error"]
    assert "image-net.org" in credential_message(reg["imagenet"], None)


def test_credentialed_folder_is_verified_in_place(tmp_path):
    from fedrepro.registry.datasets import Dataset

    folder = tmp_path / "user"
    folder.mkdir()
    (folder / "a.csv").write_text("x\n")
    entry = {"title": "t", "credential": {"key": "toy", "folder": "f", "obtain": "o"},
             "files": {"a.csv": {"md5": hashlib.md5(b"x\n").hexdigest()}, "b.json": {}},
             "sources": [{"name": "user-folder", "kind": "local"}], "standin": {"generator": "synthmimic"}}
    ds = Dataset("toy", entry)
    (folder / "b.json").write_text("{}")
    m = acquire(ds, tmp_path / "dl", credentials={"toy": str(folder)})
    assert m["status"] == "real" and m["files"]["a.csv"]["path"] == (folder / "a.csv").as_posix()
    assert not (tmp_path / "dl" / "a.csv").exists()              # never copied
    (folder / "a.csv").write_text("tampered\n")
    m = acquire(ds, tmp_path / "dl", credentials={"toy": str(folder)})
    assert m["status"] == "unavailable" and "md5 mismatch" in m["attempts"][0]["error"]
