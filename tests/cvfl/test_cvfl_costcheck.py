"""The cost check (artifact tablecost): the library gives the paper's printed costs and times from the recovered
formula, its claims get the expected verdicts, and a perturbed formula or time model fails them."""

import pandas as pd
import pytest
from conftest import REPO

from fedrepro.comm import conventions
from fedrepro.cvfl import simulator, summaries
from fedrepro.cvfl.costcheck import cost_check
from fedrepro.registry.papers import Registry
from fedrepro.scorecard import evaluate_claims

COST_CLAIMS = ("C2-cost", "C6-8-cost", "C9-11-cost", "C12-cost", "C15-cost", "C16-cost")
TIME_CLAIMS = ("C13-speedup", "C14-time", "C14-std")


@pytest.fixture(scope="module")
def registry():
    return Registry.load(REPO)


def _rows(registry, scale="smoke"):
    params = registry.params("cvfl", "cost_formula", "as-stated", scale)
    return cost_check(params, registry.claims("cvfl")).assign(configuration="as-stated")


def _verdicts(registry, rows, scale="smoke"):
    table = evaluate_claims(registry.claims("cvfl", "tablecost"), rows, paper="cvfl", artifact="tablecost",
                            scale=scale, data_status={"cvfl-printed-numbers": "real"})
    return dict(zip(table.claim, table.verdict))


def _printed(rows):
    return (rows.formula - rows.paper).abs() <= rows.resolution + 1e-9 * rows.paper.abs()


def test_the_formula_gives_the_printed_numbers(registry):
    rows = _rows(registry)
    assert set(rows.part) == {"table2", "table3", "table4", "tabled1", "tabled1_alg2", "fig4", "fig4_axis",
                              "table5_time", "table5_std", "table5_speedup"}
    assert len(rows) == 10 + 8 + 10 + 4 + 2 + 4 + 2 + 12 + 12 + 8
    alg2 = rows.part == "tabled1_alg2"
    assert _printed(rows[~alg2]).all(), rows[~alg2 & ~_printed(rows)][["part", "label", "formula", "paper"]]
    assert (rows.rel_err.abs() < 0.005).all()
    # Table D.1's Algorithm-2 column is 2.6e-6 and 1.5e-5 off: no whole number of epochs per run fits its 2 decimals
    assert not _printed(rows[alg2]).any() and (rows[alg2].on_grid == 0).all()
    assert (rows[alg2].rel_err.abs() < 2e-5).all()
    gridded = rows.part.isin(["table2", "table3", "table4", "tabled1", "fig4", "fig4_axis", "table5_time"])
    assert (rows[gridded].on_grid == 1).all()


def test_printed_numbers_come_from_the_registry_claims(registry):
    rows = _rows(registry)
    claims = {c["id"]: c for c in registry.claims("cvfl")}
    t2 = {(r[0], r[1]): r[4] for r in claims["T2"]["paper_table"]}   # keys comp_id, b; columns max, std, cost, ...
    got = rows[rows.part == "table2"]
    assert {(c, b): p for c, b, p in zip(got.comp_id, got.b, got.paper)} == t2
    t5 = {(r[0], r[1]): (r[2], r[3]) for r in claims["T5"]["paper_table"]}
    for part, j in (("table5_time", 0), ("table5_std", 1)):
        got = rows[rows.part == part]
        assert {(tc, q): p for tc, q, p in zip(got.t_c, got.Q, got.paper)} == {k: v[j] for k, v in t5.items()}


def test_cost_rows_are_the_runs_own_accounting(registry):
    """Independent of the module: epochs x run_epoch_bits, as every C-VFL run charges an epoch."""
    rows = _rows(registry)
    r = rows[(rows.part == "table4") & (rows.compressor == "vector") & (rows.b == 2)].iloc[0]
    bits = simulator.run_epoch_bits(simulator.CvflConfig(M=4, Q=10, B=64, b=2), 1008, P=4096, n_out=10)
    assert r.formula == pytest.approx(17.2 * bits / conventions.MIB_BITS) == pytest.approx(593.40)
    r = rows[(rows.part == "table5_time") & (rows.Q == 10) & (rows.t_c == 200)].iloc[0]
    assert r.derived == 15 * 310.8 and r.formula == pytest.approx(4662 * 0.3)


@pytest.mark.parametrize("scale", ["smoke", "quick", "paper"])
def test_claim_verdicts_at_every_scale(registry, scale):
    verdicts = _verdicts(registry, _rows(registry, scale), scale)
    expected = {c: "reproduced" for c in COST_CLAIMS + TIME_CLAIMS}
    expected["C15-alg2"] = "reproduced-qualitatively"   # within 0.5%, not to the printed 0.01 MB (docs/cvfl.md)
    assert verdicts == expected


def test_the_claims_survive_the_csv_round_trip(registry, tmp_path):
    from fedrepro.io import write_csv

    write_csv(tmp_path / "t.csv", _rows(registry))
    assert _verdicts(registry, pd.read_csv(tmp_path / "t.csv")) == _verdicts(registry, _rows(registry))


@pytest.mark.parametrize("perturbation", ["text_formula", "one_percent", "true_server_size"])
def test_a_perturbed_cost_formula_fails_the_cost_claims(registry, monkeypatch, perturbation):
    real = conventions.cvfl_epoch_bits

    def perturbed(b, *, n_b, B, P, M, theta0, formula):
        if perturbation == "text_formula" and formula == "alg1_code":   # the text's B P M (M + 1) upload + download
            formula = "alg1_text"
        if perturbation == "true_server_size" and theta0:                # |θ0| counted truly: MIMIC 64 + 1, else + bias
            theta0 = M * P + 1 if theta0 == 2 * M * P else theta0 + theta0 // (M * P)
        bits = real(b, n_b=n_b, B=B, P=P, M=M, theta0=theta0, formula=formula)
        return int(bits * 1.01) if perturbation == "one_percent" else bits

    monkeypatch.setattr(simulator, "cvfl_epoch_bits", perturbed)
    verdicts = _verdicts(registry, _rows(registry))
    if perturbation == "true_server_size":   # off by 2e-6 to 5e-4: no longer to the printed digits, still within 0.5%
        assert all(verdicts[c] == "reproduced-qualitatively" for c in ("C2-cost", "C6-8-cost", "C9-11-cost",
                                                                        "C15-cost")), verdicts
        assert verdicts["C12-cost"] == "not-reproduced"
    else:
        failed = ("C2-cost", "C6-8-cost", "C9-11-cost", "C12-cost", "C15-cost", "C16-cost")
        failed += ("C15-alg2",) if perturbation == "one_percent" else ()   # the text formula leaves Alg. 2 alone
        assert all(verdicts[c] == "not-reproduced" for c in failed), verdicts
    assert all(verdicts[c] == "reproduced" for c in TIME_CLAIMS)   # the time model does not use the cost formula


@pytest.mark.parametrize("perturbation", ["t_comp_11ms", "no_latency"])
def test_a_perturbed_time_model_fails_the_time_claims(registry, monkeypatch, perturbation):
    real = summaries.simulated_time_s

    def perturbed(rounds, Q, t_c_ms, t_comp_ms=summaries.T_COMP_MS):
        if perturbation == "t_comp_11ms":
            return real(rounds, Q, t_c_ms, 11.0)
        return real(rounds, Q, 0.0 * t_c_ms, t_comp_ms)

    monkeypatch.setattr(summaries, "simulated_time_s", perturbed)
    verdicts = _verdicts(registry, _rows(registry))
    assert all(verdicts[c] == "not-reproduced" for c in ("C13-speedup", "C14-time", "C14-std")), verdicts
    assert all(verdicts[c] == "reproduced" for c in COST_CLAIMS)


def test_a_cell_missing_from_the_claim_is_an_error(registry):
    params = registry.params("cvfl", "cost_formula", "as-stated", "smoke")
    params["costs"][0]["cells"].append([1, 5, 100.0, 5])   # scalar b = 5 is not in Table 2
    with pytest.raises(ValueError, match="not in claim T2"):
        cost_check(params, registry.claims("cvfl"))


def test_time_table_uses_the_time_model():
    runs = pd.DataFrame({"Q": 10, "alg": 1, "seed": [1, 1, 2, 2], "epoch": [0, 1, 0, 1],
                         "test_metric": [0.0, 0.5, 0.0, 0.5], "rounds": [0, 15, 0, 15]})
    t = summaries.time_table(runs, 0.45, t_cs=(200,))
    assert t.time.iloc[0] == pytest.approx(float(summaries.simulated_time_s(15, 10, 200))) == pytest.approx(4.5)
