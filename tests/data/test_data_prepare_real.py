"""Real-data preparation code on small files made here in the real layouts (no download needed)."""

from __future__ import annotations

import hashlib
import io
import json
import pickle
import tarfile
import zipfile

import numpy as np
import pandas as pd
import pytest

from fedrepro.data.ehr import icd9_chapter, prepare_desynpuf
from fedrepro.data.images import modelnet_view_groups, prepare_cifar10, prepare_modelnet_views
from fedrepro.data.mimic import discretize, discretizer_header, prepare_mimic3_ihm
from fedrepro.data.text import align_europarl, parse_po
from fedrepro.data.verify import ChecksumMismatch


def add(tar, name, data: bytes):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def test_cifar10_batches(tmp_path):
    rng = np.random.default_rng(0)
    members = {}
    path = tmp_path / "cifar-10-python.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for name, n in [(f"data_batch_{i}", 4) for i in range(1, 6)] + [("test_batch", 3)]:
            blob = pickle.dumps({"data": rng.integers(0, 255, (n, 3072), dtype=np.uint8), "labels": list(range(n))}, protocol=2)
            add(tar, f"cifar-10-batches-py/{name}", blob)
            members[f"cifar-10-batches-py/{name}"] = {"md5": hashlib.md5(blob).hexdigest()}
        meta = pickle.dumps({"label_names": [f"c{i}" for i in range(10)]}, protocol=2)
        add(tar, "cifar-10-batches-py/batches.meta", meta)
        members["cifar-10-batches-py/batches.meta"] = {"md5": hashlib.md5(meta).hexdigest()}
    out = prepare_cifar10(path, members)
    assert out["x_train"].shape == (20, 32, 32, 3) and out["x_test"].shape == (3, 32, 32, 3)
    members["cifar-10-batches-py/test_batch"] = {"md5": "0" * 32}
    with pytest.raises(ChecksumMismatch):
        prepare_cifar10(path, members)


def test_modelnet_views_layout(tmp_path):
    from PIL import Image

    path = tmp_path / "views.tar"
    with tarfile.open(path, "w") as tar:
        for cls in ("chair", "sofa", "airplane"):
            for split in ("train", "test"):
                for obj in range(2):
                    for v in range(1, 13):
                        buf = io.BytesIO()
                        Image.fromarray(np.full((8, 8), v * 10, np.uint8)).save(buf, format="PNG")
                        add(tar, f"modelnet40v1/{cls}/{split}/{cls}_{obj:04d}_{v:03d}.png", buf.getvalue())
        add(tar, "modelnet40v1/chair/train/broken_0001_001.png", b"x")     # an object with 1 view: skipped
    out = prepare_modelnet_views(path, ["chair", "sofa"], views=12, image_size=4)
    assert out["x_train"].shape == (4, 12, 4, 4) and set(out["y_train"]) == {0, 1}
    # views sorted by index: view v has grey level 10 * (v + 1)
    assert out["x_train"][0, :, 0, 0].tolist() == [10 * v for v in range(1, 13)]
    g = modelnet_view_groups(["a/chair/test/x_10.png", "a/chair/test/x_2.png"], ["chair"], 2)
    assert list(g.values())[0] == ["a/chair/test/x_2.png", "a/chair/test/x_10.png"]


MIMIC_CFG = {
    "id_to_channel": ["Capillary refill rate", "Heart Rate", "Glascow coma scale total"],
    "is_categorical_channel": {"Capillary refill rate": True, "Heart Rate": False, "Glascow coma scale total": True},
    "normal_values": {"Capillary refill rate": "0.0", "Heart Rate": "86", "Glascow coma scale total": "15"},
    "possible_values": {"Capillary refill rate": ["0.0", "1.0"], "Heart Rate": [], "Glascow coma scale total": ["3", "15"]},
}


def test_mimic_discretizer_matches_benchmark_rules():
    header, cont = discretizer_header(MIMIC_CFG)
    assert header == ["Capillary refill rate->0.0", "Capillary refill rate->1.0", "Heart Rate",
                      "Glascow coma scale total->3", "Glascow coma scale total->15",
                      "mask->Capillary refill rate", "mask->Heart Rate", "mask->Glascow coma scale total"]
    frame = pd.DataFrame({"_episode": [0, 0, 0, 0, 1],
                          "Hours": ["0.0", "0.5", "0.9", "2.5", "49"],
                          "Capillary refill rate": ["", "1.0", "", "", "1.0"],
                          "Heart Rate": ["80", "90", "100", "", "70"],
                          "Glascow coma scale total": ["", "", "3", "", ""]})
    x = discretize(frame, 2, MIMIC_CFG, hours=4, timestep=1.0)
    assert x.shape == (2, 4, 8)
    hr, crr1, gcs3 = x[0, :, 2], x[0, :, 1], x[0, :, 3]
    assert hr.tolist() == [100, 100, 100, 100]          # last value in bin 0 wins, then carried forward
    assert crr1.tolist() == [1, 1, 1, 1] and gcs3.tolist() == [1, 1, 1, 1]
    assert x[0, :, 6].tolist() == [1, 0, 0, 0]          # heart-rate mask
    assert x[1, :, 2].tolist() == [86] * 4              # episode 1: its only row is after the window -> normal values
    assert x[1, :, 4].tolist() == [1] * 4 and x[1, :, 5:].sum() == 0


def test_mimic_prepare_on_benchmark_layout(tmp_path):
    task = tmp_path / "data" / "in-hospital-mortality"
    res = tmp_path / "mimic3models" / "resources"
    res.mkdir(parents=True)
    (res / "discretizer_config.json").write_text(json.dumps(MIMIC_CFG))
    for sub, stays in (("train", ["1_episode1_timeseries.csv", "2_episode1_timeseries.csv"]), ("test", ["3_episode1_timeseries.csv"])):
        (task / sub).mkdir(parents=True)
        for i, s in enumerate(stays):
            (task / sub / s).write_text("Hours,Capillary refill rate,Heart Rate,Glascow coma scale total\n"
                                        f"0.5,,{80 + 10 * i},15\n3.2,1.0,,\n")
        pd.DataFrame({"stay": stays, "y_true": [i % 2 for i in range(len(stays))]}).to_csv(task / sub / "listfile.csv", index=False)
    pd.read_csv(task / "train" / "listfile.csv").iloc[:1].to_csv(task / "train_listfile.csv", index=False)
    pd.read_csv(task / "train" / "listfile.csv").iloc[1:].to_csv(task / "val_listfile.csv", index=False)
    files = {"mimic3models/resources/discretizer_config.json": res / "discretizer_config.json"}
    out = prepare_mimic3_ihm(files, tmp_path, hours=48)
    assert out["x_train"].shape == (1, 48, 8) and out["x_val"].shape == (1, 48, 8) and out["x_test"].shape == (1, 48, 8)


def test_icd9_chapters():
    assert icd9_chapter(["0389", "1234", "25000", "4019", "7806", "E8889", "V5869", "99999"]).tolist() == [1, 1, 3, 6, 15, 17, 18, 16]


def test_desynpuf_cooccurrence(tmp_path):
    rows = [{"ICD9_DGNS_CD_1": "4019", "ICD9_DGNS_CD_2": "4019", "HCPCS_CD_1": "A1", "HCPCS_CD_2": "B2"},
            {"ICD9_DGNS_CD_1": "4011", "ICD9_DGNS_CD_2": "25000", "HCPCS_CD_1": "A1"},
            {"ICD9_DGNS_CD_1": "7806", "HCPCS_CD_1": "B2"}]
    cols = [f"ICD9_DGNS_CD_{i}" for i in range(1, 11)] + [f"HCPCS_CD_{i}" for i in range(1, 46)]
    files = {}
    for k in (1, 2, 3):
        df = pd.DataFrame(rows, columns=cols)
        name = f"DE1_0_2008_to_2010_Outpatient_Claims_Sample_{k}.zip"
        with zipfile.ZipFile(tmp_path / name, "w") as z:
            z.writestr(name.replace(".zip", ".csv"), df.to_csv(index=False))
        files[name] = tmp_path / name
    out = prepare_desynpuf(files, min_group_size=1)
    codes = out["row_codes"].tolist()
    assert "7806" not in codes                              # chapter 15 is dropped
    assert out["views"].shape == (3, 3, 2) and np.all(np.diff(out["labels"]) >= 0)
    i, a = codes.index("4019"), out["col_codes"].tolist().index("A1")
    assert out["views"][0, i, a] == 1                       # 4019 twice in one row counts once


def test_europarl_alignment(tmp_path):
    pairs = {"de": (["Hello", "Good day", "dup", "dup", "", "Only de"], ["Hallo", "Guten Tag", "a", "b", "leer", "Nur"]),
             "fr": (["Good day", "Hello", "dup", "x"], ["Bonjour", "Salut", "c", "y"])}
    files = {}
    for lang, (en, xx) in pairs.items():
        path = tmp_path / f"{lang}-en.tgz"
        with tarfile.open(path, "w:gz") as tar:
            add(tar, f"europarl-v7.{lang}-en.en", "\n".join(en).encode())
            add(tar, f"europarl-v7.{lang}-en.{lang}", "\n".join(xx).encode())
        files[path.name] = path
    from fedrepro.data.formats import save_npz
    from fedrepro.data.loaders import load_parallel_text

    out = align_europarl(files, ["en", "de", "fr"], n_train=1, n_test=1)
    save_npz(tmp_path / "e.npz", out)
    pt = load_parallel_text(tmp_path / "e.npz")
    rows = sorted(zip(pt.texts["en"], pt.texts["de"], pt.texts["fr"]))
    assert rows == [("Good day", "Guten Tag", "Bonjour"), ("Hello", "Hallo", "Salut")]
    assert sorted(pt.split.tolist()) == [0, 1]


def test_po_parser():
    po = 'msgid ""\nmsgstr "header"\n\n#, fuzzy\nmsgid "a"\nmsgstr "A"\n\nmsgctxt "c"\nmsgid "b"\n"c"\nmsgstr "B"\n"C"\n\nmsgid "one"\nmsgid_plural "many"\nmsgstr[0] "x"\n'
    assert parse_po(po) == {("c", "bc"): "BC"}
