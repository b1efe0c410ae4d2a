"""The three data kinds (issue 17): real, real-reencoded (real images through a lossy codec), stand-in.

A result inherits the least real kind of its inputs; re-encoded data is judged like real data with the caveat
leading each claim's detail; figures carry a light mark for it (the stand-in watermark wins)."""

import json

import matplotlib.pyplot as plt
import pandas as pd

from fedrepro.plotting import save_figure
from fedrepro.provenance.sidecar import inherited_data_status, sidecar_path, worse_data_kind
from fedrepro.scorecard import evaluate_claims

DATA = pd.DataFrame({"configuration": ["a", "a"], "n": [1, 2], "x": [10.0, 5.0], "y": [1.0, 9.0]})
CELLS = {"id": "T", "artifact": "t", "statement": "cells", "kind": "cells", "keys": ["n"], "columns": ["x"],
         "paper_table": [[1, 10.5], [2, 9.0]], "tolerance": {"quick": {"rel": 0.1}}}
PRED = {"id": "P", "artifact": "t", "statement": "y below x", "kind": "predicate", "expr": "y < x",
        "ours": "max(y / x)", "tolerance": {"quick": {}}}


def _eval(status):
    return evaluate_claims([CELLS, PRED], DATA, paper="p", artifact="t", scale="quick", data_status=status)


def test_reencoded_data_is_judged_like_real_data_with_the_caveat_in_every_detail():
    real, reenc = _eval({"cifar10": "real"}), _eval({"cifar10": "real-reencoded", "gcca-synthetic": "real"})
    assert list(reenc["verdict"]) == list(real["verdict"])
    assert {"reproduced", "not-reproduced"} <= set(reenc["verdict"])       # judged, both ways
    assert set(reenc["data"]) == {"real-reencoded"} and set(real["data"]) == {"real"}
    assert all(d.startswith("re-encoded images (cifar10:") for d in reenc["detail"])
    assert not any("re-encoded" in d for d in real["detail"])


def test_a_stand_in_input_still_makes_every_verdict_not_comparable():
    out = _eval({"cifar10": "real-reencoded", "mnist": "stand-in"})
    assert set(out["verdict"]) == {"not-comparable"} and set(out["data"]) == {"stand-in"}


def test_a_claim_naming_its_datasets_is_judged_on_their_kinds_alone():
    """One panel of a figure over several datasets (cvfl Fig. 3's CIFAR-10 panel beside MIMIC-III and ModelNet10
    stand-ins): `datasets:` keeps the other panels' stand-ins out of its verdict, and only out of its own."""
    status = {"cifar10": "real-reencoded", "mimic3_ihm": "stand-in"}
    panel = {**PRED, "id": "P.cifar10", "datasets": ["cifar10"]}
    whole = evaluate_claims([PRED, panel], DATA, paper="p", artifact="t", scale="quick", data_status=status)
    alone = evaluate_claims([PRED], DATA, paper="p", artifact="t", scale="quick", data_status={"cifar10": "real"})
    by_id = whole.set_index("claim")
    assert by_id.loc["P", "verdict"] == "not-comparable" and by_id.loc["P", "data"] == "stand-in"
    assert by_id.loc["P.cifar10", "verdict"] == alone["verdict"].iloc[0] != "not-comparable"
    assert by_id.loc["P.cifar10", "data"] == "real-reencoded"
    assert by_id.loc["P.cifar10", "detail"].startswith("re-encoded images (cifar10:")
    stand_in_panel = {**panel, "datasets": ["mimic3_ihm"]}
    out = evaluate_claims([stand_in_panel], DATA, paper="p", artifact="t", scale="quick", data_status=status)
    assert set(out["verdict"]) == {"not-comparable"}


def test_a_claim_naming_a_dataset_the_artifact_lacks_stops_with_the_names():
    import pytest

    claim = {**PRED, "datasets": ["cifar100"]}
    with pytest.raises(ValueError, match=r"claim P: datasets \['cifar100'\].*cifar10, mimic3_ihm"):
        evaluate_claims([claim], DATA, paper="p", artifact="t", scale="quick",
                        data_status={"cifar10": "real", "mimic3_ihm": "stand-in"})


def test_a_result_inherits_the_least_real_kind_of_its_inputs(tmp_path):
    assert worse_data_kind("real", "real-reencoded") == worse_data_kind("real-reencoded", "real") == "real-reencoded"
    assert worse_data_kind("real-reencoded", "stand-in") == "stand-in"
    assert worse_data_kind(None, "real") == "real"
    files = []
    for i, data in enumerate([{"cifar10": "real-reencoded"}, {"cifar10": "real", "mnist": "real"},
                              {"mnist": "stand-in", "cifar10": "real"}]):
        f = tmp_path / f"in{i}.csv"
        f.write_text("x\n1\n")
        sidecar_path(f).write_text(json.dumps({"data": data}))
        files.append(f)
    assert inherited_data_status(files[:2]) == {"cifar10": "real-reencoded", "mnist": "real"}
    assert inherited_data_status(files[1:]) == {"cifar10": "real", "mnist": "stand-in"}
    assert inherited_data_status(files) == {"cifar10": "real-reencoded", "mnist": "stand-in"}


def _marks(tmp_path, **kw):
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    save_figure(fig, tmp_path / "f.pdf", tmp_path / "f.png", **kw)
    texts = [t.get_text() for t in fig.texts]
    plt.close(fig)
    return texts


def test_figures_mark_reencoded_data_lightly_and_stand_ins_loudly(tmp_path):
    assert _marks(tmp_path) == []
    assert _marks(tmp_path, reencoded=True) == ["RE-ENCODED JPEG"]
    assert _marks(tmp_path, stand_in=True, reencoded=True) == ["STAND-IN DATA"]
