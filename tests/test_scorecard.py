"""Verdict logic on hand-made tables."""

import pandas as pd

from fedrepro.scorecard import evaluate_claims

DATA = pd.DataFrame({"configuration": ["a", "a", "b", "b"], "n": [1, 2, 1, 2], "x": [10.0, 5.0, 20.0, 4.0],
                     "y": [1.0, 1.0, 30.0, 1.0]})
CELLS = {"id": "T", "artifact": "t", "statement": "cells", "kind": "cells", "keys": ["n"], "columns": ["x"],
         "paper_table": [[1, 10.5], [2, 5.0], [3, 1.0]], "tolerance": {"quick": {"rel": 0.1}}}
PRED = {"id": "P", "artifact": "t", "statement": "y below x", "kind": "predicate", "expr": "y < x",
        "ours": "max(y / x)", "tolerance": {"quick": {}}}


def _eval(claims, scale="quick", status=None):
    return evaluate_claims(claims, DATA, paper="p", artifact="t", scale=scale, data_status=status)


def test_cells_within_band_outside_band_and_missing_row():
    out = _eval([CELLS]).set_index(["configuration", "claim"])["verdict"]
    assert out[("a", "T[n=1,x]")] == "reproduced"          # 10 vs 10.5: within 10 %
    assert out[("b", "T[n=1,x]")] == "not-reproduced"      # 20 vs 10.5
    assert out[("a", "T[n=3,x]")] == "not-run"             # no such row


def test_no_band_at_scale_is_not_comparable():
    assert set(_eval([CELLS], scale="smoke")["verdict"]) <= {"not-comparable", "not-run"}


def test_stand_in_data_is_never_reproduced():
    out = _eval([CELLS, PRED], status={"mnist": "stand-in"})
    assert set(out["verdict"]) <= {"not-comparable", "not-run"}
    assert set(out["data"]) == {"stand-in"}


def test_predicate_holds_in_one_configuration_only():
    out = _eval([PRED]).set_index("configuration")
    assert out.loc["a", "verdict"] == "reproduced"
    assert out.loc["b", "verdict"] == "not-reproduced"
    assert out.loc["b", "detail"] == "1/2 rows hold"


def test_monotonicity_helpers():
    claim = {**PRED, "expr": "decreasing(x, by=n)"}
    assert set(_eval([claim])["verdict"]) == {"reproduced"}
    claim = {**PRED, "expr": "increasing(x, by=n)"}
    assert set(_eval([claim])["verdict"]) == {"not-reproduced"}


def test_value_claim_with_qualitative_fallback():
    claim = {"id": "V", "artifact": "t", "statement": "x at n=1", "kind": "value", "where": "n == 1", "column": "x",
             "paper_value": 15.0, "qualitative": "x > y", "tolerance": {"quick": {"abs": 1.0}}}
    out = _eval([claim]).set_index("configuration")["verdict"]
    assert out["a"] == "reproduced-qualitatively" and out["b"] == "not-reproduced"
