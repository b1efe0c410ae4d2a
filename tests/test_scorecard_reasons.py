"""Regimes, fitted configurations, the cause of each miss, and list values keyed like the paper's."""

from pathlib import Path

import pandas as pd
import pytest

from fedrepro.registry.papers import Registry
from fedrepro.scorecard import evaluate_claims
from fedrepro.scorecard.evaluate import paper_text
from fedrepro.scorecard.reasons import check_ref, fitted_configurations

ROOT = Path(__file__).resolve().parents[1]
DATA = pd.DataFrame({"configuration": ["fit", "fit", "plain", "plain"], "snr_db": [20, 6, 20, 6],
                     "x": [3.0, 1.0, 3.0, 1.0], "target": [0.109, 0.109, 0.9, 0.9]})
PRED = {"id": "P", "artifact": "t", "statement": "x positive", "kind": "predicate", "expr": "x > 0", "ours": "x",
        "tolerance": {"quick": {}}}


def _eval(claims, fitted=None):
    return evaluate_claims(claims, DATA, paper="p", artifact="t", scale="quick", data_status=None, fitted=fitted)


def test_below_its_regime_a_claim_is_not_comparable_with_the_regime_named():
    claim = {**PRED, "regime": {"expr": "target >= 0.45", "why": "a target above chance"}}
    out = _eval([claim]).set_index("configuration")
    assert out.loc["fit", "verdict"] == "not-comparable"
    assert out.loc["fit", "reason"].startswith("regime not reached at this scale: a target above chance")
    assert out.loc["plain", "verdict"] == "reproduced"


def test_a_reproduced_row_under_a_fitted_configuration_is_consistent_fitted():
    out = _eval([PRED], fitted={"fit": "c_u read off Table 5.1"}).set_index("configuration")
    assert out.loc["fit", "verdict"] == "consistent-fitted" and "Table 5.1" in out.loc["fit", "reason"]
    assert out.loc["plain", "verdict"] == "reproduced"


def test_a_miss_carries_its_cause_and_link():
    claim = {**PRED, "expr": "x > 2", "miss": {"cause": "budget", "ref": "docs/adept.md", "note": "few rounds"}}
    out = _eval([claim])
    assert set(out["verdict"]) == {"not-reproduced"}
    assert set(out["reason"]) == {"budget: few rounds (see docs/adept.md)"}
    assert set(out["band"]) == {"tested x > 2: fails"}      # a predicate's band says what was tested and that it failed


def test_ours_is_listed_in_the_papers_order_with_the_papers_labels():
    claim = {**PRED, "per": {"column": "snr_db", "unit": "dB"}, "paper_value": {6: 2.0, 20: 4.0}}
    row = _eval([claim]).iloc[0]
    assert row["paper_value"] == "6 dB: 2; 20 dB: 4"
    assert row["our_value"] == "6 dB: 1; 20 dB: 3"           # the CSV lists 20 dB first


def test_fitted_configurations_follow_the_registrys_sources():
    registry = Registry.load(ROOT)
    fitted = fitted_configurations(registry, "thesis", "table5_1")
    assert "calibrated" in fitted and "as-stated" not in fitted
    assert fitted_configurations(registry, "adept", "table1") == {}   # the authors' code is not a fit


def _labels(text: str) -> list[str]:
    body = text.rsplit(" (", 1)[0] if text.endswith(")") else text
    return [part.split(": ", 1)[0] for part in body.split("; ")]


@pytest.mark.parametrize("scale", ["quick"])
def test_every_list_value_is_keyed_like_the_papers(scale):
    """Every claim with a list value (a mapping paper_value) shows ours with the same labels in the same order,
    in the registry and in the rows of the published scorecard of this scale."""
    registry = Registry.load(ROOT)
    listed = [(p, c) for p, reg in registry.papers.items() for c in reg["claims"]
              if isinstance(c.get("paper_value"), dict)]
    assert listed, "no claim has a list value"
    for paper, claim in listed:
        assert claim.get("per") or isinstance(claim.get("ours"), dict), claim["id"]
        if isinstance(claim.get("ours"), dict):
            assert list(map(str, claim["ours"])) == list(map(str, claim["paper_value"])), claim["id"]
    table = pd.read_csv(ROOT / "published" / scale / "claims.csv", dtype=str, keep_default_na=False)
    for paper, claim in listed:
        rows = table[(table["paper"] == paper) & (table["claim"] == claim["id"]) & (table["our_value"] != "")]
        assert not rows.empty, claim["id"]
        for r in rows.itertuples():
            assert r.paper_value == paper_text(claim)
            assert _labels(r.our_value) == _labels(r.paper_value), (claim["id"], r.our_value, r.paper_value)


def test_every_miss_at_quick_scale_has_a_cause_and_a_working_link():
    table = pd.read_csv(ROOT / "published" / "quick" / "claims.csv", dtype=str, keep_default_na=False)
    misses = table[table["verdict"].isin(["not-reproduced", "reproduced-qualitatively"])]
    causes = ("assumption:", "budget:", "paper-inconsistency:", "defect:")
    without = misses[~misses["reason"].str.startswith(causes)]
    assert without.empty, f"{len(without)} misses without a cause: {sorted(set(without['claim']))[:20]}"
    for reason in set(misses["reason"]):
        ref = reason.rsplit("(see ", 1)[1].rstrip(")")
        assert check_ref(ROOT, ref) is None, (reason, check_ref(ROOT, ref))


def test_registry_miss_links_resolve():
    registry = Registry.load(ROOT)
    for paper, reg in registry.papers.items():
        for claim in reg["claims"]:
            misses = claim.get("miss") or []
            for entry in misses if isinstance(misses, list) else [misses]:
                assert check_ref(ROOT, entry["ref"]) is None, (claim["id"], entry["ref"])


def test_check_ref_refuses_a_missing_anchor():
    assert check_ref(ROOT, "docs/adept.md#no-such-section-here") is not None
    assert check_ref(ROOT, "docs/no-such-doc.md") == "no file docs/no-such-doc.md"


def test_rows_the_per_column_cannot_tell_apart_are_an_error_naming_per_by():
    data = pd.DataFrame({"snr_db": [6, 6], "feedback": ["sample", "bandit"], "x": [1.0, 2.0]})
    claim = {**PRED, "per": {"column": "snr_db", "unit": "dB"}, "paper_value": {6: 2.0}}
    with pytest.raises(ValueError, match="per.by"):
        evaluate_claims([claim], data, paper="p", artifact="t", scale="quick", data_status=None)
    claim["per"] = {"column": "snr_db", "unit": "dB", "by": "feedback", "groups": ["sample", "bandit"]}
    row = evaluate_claims([claim], data, paper="p", artifact="t", scale="quick", data_status=None).iloc[0]
    assert row["paper_value"] == "sample 6 dB: 2; bandit 6 dB: 2"
    assert row["our_value"] == "sample 6 dB: 1; bandit 6 dB: 2"
