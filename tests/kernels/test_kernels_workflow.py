"""The kernels' rule on a real build: the smoke targets whose runs use compiled kernels (thesis Fig. 3.2: the
decentral engine; gcca Fig. 8: the CSR products and CuteMaxVar's quantizer on sparse views), built with the kernels forced for every call size
(FEDREPRO_KERNELS=always; at smoke size most calls are below kernels.MIN_WORK) and then rerun with them off
(FEDREPRO_KERNELS=0): the run CSVs agree to float rounding, timing cells masked (fedrepro.io.TIMING_*), and every
verdict of the claims CSVs is the same."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import copy_workflow, snakemake

from fedrepro import kernels
from fedrepro.io import without_timings

pytestmark = pytest.mark.skipif(not kernels.available(), reason="numba not installed: the kernels are not used")

TARGETS = {"thesis_fig3_2": ("thesis", "fig3_2", 1e-5),     # float32 engine
           "gcca_fig8": ("gcca", "fig8", 1e-10)}            # float64 engine


def _outputs(wd, paper, artifact):
    base = wd / "results" / "smoke" / paper
    runs = {p.relative_to(base): pd.read_csv(p) for p in sorted((base / "runs" / artifact).glob("*.csv"))}
    return runs, pd.read_csv(base / "claims" / f"{artifact}.csv")


def _assert_runs_agree(on: pd.DataFrame, off: pd.DataFrame, rtol: float, name) -> None:
    on, off = without_timings(on), without_timings(off)
    assert list(on.columns) == list(off.columns) and len(on) == len(off), name
    numeric = on.select_dtypes("number").columns
    pd.testing.assert_frame_equal(on.drop(columns=numeric), off.drop(columns=numeric), obj=str(name))
    for column in numeric:
        a, b = on[column].to_numpy(float), off[column].to_numpy(float)
        scale = float(np.nanmax(np.abs(b))) if np.any(np.isfinite(b)) else 0.0
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * scale, equal_nan=True, err_msg=f"{name}: {column}")


@pytest.mark.slow
def test_run_csvs_and_verdicts_agree_with_the_kernels_on_and_off(tmp_path, monkeypatch):
    wd = copy_workflow(tmp_path / "wf")
    cache = tmp_path / "numba-cache"
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(cache))
    monkeypatch.setenv("FEDREPRO_KERNELS", "always")
    snakemake("--cores", "2", *TARGETS, "--config", "scale=smoke", cwd=wd)
    # the kernels ran: numba wrote their machine code for both families of kernels into the fresh cache
    modules = {p.name.split(".")[0] for p in cache.rglob("*.nbi")}       # <module>.<function>-<line>.<python>.nbi
    assert "dense" in modules and {"sparse", "_csr_unrolled"} & modules, sorted(modules)
    on = {t: _outputs(wd, paper, artifact) for t, (paper, artifact, _) in TARGETS.items()}

    monkeypatch.setenv("FEDREPRO_KERNELS", "0")             # the same runs again (the data stays), then their renders
    snakemake("--cores", "2", *TARGETS, "--forcerun", "run", "--config", "scale=smoke", cwd=wd)
    for target, (paper, artifact, rtol) in TARGETS.items():
        runs_off, claims_off = _outputs(wd, paper, artifact)
        runs_on, claims_on = on[target]
        assert runs_on.keys() == runs_off.keys() and runs_on, target
        for name in runs_on:
            _assert_runs_agree(runs_on[name], runs_off[name], rtol, name)
        assert list(claims_on["claim"]) == list(claims_off["claim"]), target
        assert list(claims_on["verdict"]) == list(claims_off["verdict"]), target
