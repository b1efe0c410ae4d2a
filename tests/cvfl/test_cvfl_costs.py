"""The run's cost accounting reproduces the paper's Table 2, Table 4 and Table D.1 costs from the spec's derived
epochs (cvfl.md §3.5-3.6, §5.2, §5.4, §5.7), and Table 5's times from the derived round counts (§4 item 9).

The numbers here are typed in from the spec on purpose: they check, independently of the registry, the library
function behind the cost-check artifact (fedrepro.cvfl.costcheck, tests/cvfl/test_cvfl_costcheck.py)."""

import numpy as np
import pytest
from conftest import REPO

from fedrepro.cvfl.costcheck import cost_check
from fedrepro.cvfl.simulator import CvflConfig, run_epoch_bits
from fedrepro.cvfl.summaries import simulated_time_s
from fedrepro.registry.papers import Registry

MIB = 8 * 2**20
# (compressor, b) -> (paper cost in MB, derived mean epochs) -- Table 2 (MIMIC-III, N=14,681, B=1000, P=16, M=4)
TABLE2 = {("none", 32): (3830.0, 130.6), ("scalar", 2): (233.1, 127.2), ("vector", 2): (236.1, 128.8),
          ("topk", 2): (309.8, 169.0), ("scalar", 3): (343.1, 124.8), ("vector", 3): (330.5, 120.2),
          ("topk", 3): (470.7, 171.2), ("scalar", 4): (456.0, 124.4), ("vector", 4): (446.5, 121.8),
          ("topk", 4): (519.1, 141.6)}
# Table 4 (ModelNet10, 1,008 training objects, B=64, P=4096, M=4, 10 classes)
TABLE4 = {("none", 32): (9604.80, 17.4), ("scalar", 2): (1932.00, 56.0), ("vector", 2): (593.40, 17.2),
          ("topk", 2): (1317.90, 38.2), ("scalar", 3): (1738.80, 33.6), ("vector", 3): (900.45, 17.4),
          ("topk", 3): (1593.90, 30.8), ("scalar", 4): (2194.20, 31.8), ("vector", 4): (1200.60, 17.4),
          ("topk", 4): (1821.60, 26.4)}


@pytest.mark.parametrize("key", sorted(TABLE2))
def test_table2_costs(key):
    comp, b = key
    cost, epochs = TABLE2[key]
    bits = run_epoch_bits(CvflConfig(M=4, Q=10, B=1000, method=comp, b=b), 14681, P=16, n_out=1)
    assert epochs * bits / MIB == pytest.approx(cost, abs=0.05)


@pytest.mark.parametrize("key", sorted(TABLE4))
def test_table4_costs(key):
    comp, b = key
    cost, epochs = TABLE4[key]
    bits = run_epoch_bits(CvflConfig(M=4, Q=10, B=64, method=comp, b=b), 1008, P=4096, n_out=10)
    assert epochs * bits / MIB == pytest.approx(cost, abs=0.005)


def test_tabled1_alg2_and_fig4_m12():
    # Table D.1, Q=1 (Alg. 2, A-12): 616.8 and 631.0 derived epochs
    none = run_epoch_bits(CvflConfig(M=4, Q=1, B=1000, alg=2, b=32), 14681, P=16, n_out=1)
    vq = run_epoch_bits(CvflConfig(M=4, Q=1, B=1000, alg=2, b=3), 14681, P=16, n_out=1)
    assert 616.8 * none / MIB == pytest.approx(4517.59, abs=0.05)  # 616.8 is itself rounded (docs/comm.md §5)
    assert 631.0 * vq / MIB == pytest.approx(433.28, abs=0.01)
    # Fig. 4: 552 vs 4968 MiB per epoch at b = 32 (M = 4 vs M = 12)
    assert run_epoch_bits(CvflConfig(M=4, B=64, b=32), 1008, P=4096, n_out=10) / MIB == pytest.approx(552.0)
    assert run_epoch_bits(CvflConfig(M=12, B=64, b=32), 1008, P=4096, n_out=10) / MIB == pytest.approx(4968.0)


def test_table5_time_model():
    # time = R (Q t_comp + t_c), R = 15 x derived epochs: 4662 rounds at Q = 10 for every t_c
    for tc, paper in ((1, 470.86), (10, 512.82), (50, 699.30), (200, 1398.60)):
        assert 4662 * (10 * 10 + tc) / 1000 == pytest.approx(paper, abs=0.01)
        assert float(simulated_time_s(4662, 10, tc)) == pytest.approx(paper, abs=0.01)   # the library's time model
    assert np.isclose(63138.75 * (10 + 200) / 1000, 13259.14, atol=0.01)
    assert np.isclose(simulated_time_s(63138.75, 1, 200), 13259.14, atol=0.01)
    assert np.isclose(simulated_time_s(1773.75, 25, 200), 798.19, atol=0.01)


def test_cost_check_rows_agree_with_these_numbers():
    """The cost-check artifact's library function (numbers from the registry) against the numbers typed in here."""
    registry = Registry.load(REPO)
    rows = cost_check(registry.params("cvfl", "cost_formula", "as-stated", "quick"), registry.claims("cvfl"))
    name = {0: "none", 1: "scalar", 2: "vector", 3: "topk"}
    for part, table, n_train, B, P, n_out in (("table2", TABLE2, 14681, 1000, 16, 1),
                                              ("table4", TABLE4, 1008, 64, 4096, 10)):
        got = rows[rows.part == part]
        assert len(got) == len(table)
        for comp_id, b, paper, epochs, formula in zip(got.comp_id, got.b, got.paper, got.derived, got.formula):
            cost, derived = table[(name[comp_id], b)]
            assert (paper, epochs) == (cost, derived)
            bits = run_epoch_bits(CvflConfig(M=4, Q=10, B=B, method=name[comp_id], b=b), n_train, P=P, n_out=n_out)
            assert formula == pytest.approx(derived * bits / MIB, rel=1e-12)
    t5 = rows[(rows.part == "table5_time") & (rows.Q == 10)].sort_values("t_c")
    assert list(t5.t_c) == [1, 10, 50, 200]
    assert list(t5.formula) == pytest.approx([470.862, 512.82, 699.3, 1398.6])
