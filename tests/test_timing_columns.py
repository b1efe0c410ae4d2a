"""Run CSVs are byte-identical between two runs of one configuration, except the declared timing cells
(fedrepro.io.TIMING_COLUMNS / TIMING_METRICS; docs/architecture.md, 'Randomness')."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from fedrepro.io import TIMING_COLUMNS, TIMING_METRICS, timing_cells, without_timings, write_csv
from fedrepro.registry.papers import Registry
from fedrepro.runtime import compute_clock, limit_threads
from fedrepro.workflow import plan


def _csv(frame, path):
    write_csv(path, frame)
    return path.read_bytes()


@pytest.mark.parametrize("experiment", ["fig6", "europarl"])
def test_two_smoke_runs_differ_only_in_declared_timings(repo, tmp_path, experiment):
    registry = Registry.load(repo)
    configuration = registry.configurations("gcca", experiment, "smoke")[0]
    inputs = None
    if registry.run_spec("gcca", experiment, "smoke")["dataset"]:
        data = repo / "results" / "data" / "europarl" / "europarl.npz"
        if not data.exists():
            pytest.skip(f"{data} not prepared (snakemake --cores 1 {data.relative_to(repo)} --config scale=smoke)")
        inputs = {"data": str(data)}
    limit_threads(1)
    frames = [plan.run_once(registry, "gcca", experiment, configuration, "smoke", inputs=inputs,
                            output=tmp_path / f"{i}.csv")[0] for i in range(2)]
    raw = [_csv(f, tmp_path / f"run{i}.csv") for i, f in enumerate(frames)]
    masked = [_csv(without_timings(f), tmp_path / f"masked{i}.csv") for i, f in enumerate(frames)]
    assert masked[0] == masked[1], "a cell outside the declared timings differs between two runs"
    again = [pd.read_csv(io.BytesIO(b)) for b in raw]
    mask = timing_cells(again[0])
    assert mask.to_numpy().any(), "this run has timings: the test must see some"
    differs = (again[0] != again[1]) & ~(again[0].isna() & again[1].isna())
    assert not (differs & ~mask).to_numpy().any()


def test_timing_cells_marks_columns_and_tidy_metric_rows():
    frame = pd.DataFrame({"metric": ["objective", "time", "wall_seconds", "s_per_iter_cute", "bpv"],
                          "value": [1.0, 2.0, 3.0, 4.0, 5.0], "seconds_per_iter": [0.1] * 5, "step": range(5)})
    mask = timing_cells(frame)
    assert mask["value"].tolist() == [False, True, True, True, False]
    assert mask["seconds_per_iter"].all() and not mask["step"].any() and not mask["metric"].any()
    assert "seconds_per_iter" in TIMING_COLUMNS and "time" in TIMING_METRICS
    assert without_timings(frame)["value"].isna().tolist() == [False, True, True, True, False]


def test_the_timing_clock_is_cpu_time_on_a_cpu():
    """A busy-wait of 0.2 s of CPU: the CPU clock counts it; a sleep of 0.2 s: the CPU clock does not (so waiting
    for a core under load does not count either)."""
    import time

    clock = compute_clock("cpu")
    t0 = clock()
    time.sleep(0.2)
    assert clock() - t0 < 0.05
    assert compute_clock("cuda:0") is time.perf_counter
