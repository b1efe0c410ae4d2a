"""The paper's cost and time numbers from the recovered formula, without data or training (the formula:
docs/comm.md, "4. Ledger and conventions"; the time model of Table 5 and the derived epochs: docs/cvfl.md).

Every cost the paper prints is (mean epochs to the target) x (the cost of one epoch under the authors' formula).
The formula (docs/comm.md) and the mean epochs behind every cell (docs/cvfl.md: multiples of 1/runs, since
targets are checked once per epoch). This module puts the two together through the library functions the runs
themselves use (``simulator.run_epoch_bits`` -> ``comm.conventions.cvfl_epoch_bits``; Table 5's time model
``summaries.simulated_time_s``), so a change to the formula changes these rows and fails their claims.

One row per paper number, with these columns (the claims in config/papers/cvfl.yaml read them):

- ``part``: table2, table3, table4, tabled1 (Alg. 1 columns), tabled1_alg2 (the Q = 1 column), fig4 (per-epoch
  costs), fig4_axis (the x-axis span: 100 epochs at b = 2), table5_time, table5_std, table5_speedup;
- ``derived``: the derived mean epochs (Table 5: rounds; its stds: the one round-count std per Q that fits
  all four t_c) and ``per_unit`` the formula's cost per epoch (Table 5: the model's seconds per round);
- ``formula`` = derived x per_unit, our number (Table 5 speed-ups: the model's time ratio);
  ``paper``: the printed number (read from the claim named in ``source``) or the derived [D] number;
- ``resolution``: half a unit of the printed number's last digit; ``rel_err`` = formula / paper - 1;
- ``implied``: the epochs (rounds for Table 5) the printed number implies under the formula, and
  ``implied_lo`` / ``implied_hi`` the interval its print rounding allows;
- ``on_grid``: 1 when a whole number of epochs (rounds: of n_b rounds) per run, averaged over ``runs`` runs,
  lies in that interval (docs/cvfl.md), 0 when none does, empty where it does not apply.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from fedrepro.comm.conventions import GIB_BITS, MIB_BITS
from fedrepro.cvfl import simulator, summaries

# What `run` reads (cvfl.yaml cost_formula), checked when the registry loads; format: fedrepro/registry/params.py.
PARAMETERS = {
    "t_comp_ms?": "float>=0",               # Table 5's compute time per round
    "setups": {"*": {"n_train": "int>=1", "B": "int>=1", "P": "int>=1", "M": "int>=1", "n_out": "int>=1"}},
    "methods": {"*": "any"},               # the runs' methods (the same anchor): comp_id = position in this mapping
    "costs": [{
        "part": "str", "setup": "str", "decimals": "int>=0",
        "unit?": "MB|GB", "alg?": "1|2",
        "claim?": "str", "column?": "str",  # cells [keys..., epochs, runs] of the claim's paper_table
        "source?": "str", "comp_id?": "int>=0",   # without a claim: cells [b, epochs, runs, value]
        "cells": "list[list[float]]",
    }],
    "times": {"claim": "str", "setup": "str", "decimals": "int>=0",
              "epochs": "list[list[float]]",    # [Q, epochs, runs]
              "speedups": "list[list[float]]"},  # [t_c, Q, value, decimals]
}

# What one run costs, for `python -m fedrepro plan` (fedrepro/workflow/plan.py): formula evaluations only (constant).
WORK = {"units": "1"}

UNIT_BITS = {"MB": MIB_BITS, "GB": GIB_BITS}  # MB = 2^20 bytes, GB = 2^30 bytes (docs/comm.md, "4. Ledger and conventions")
# How a cell of the paper's tables is named in the cost-check rows (column `label`): "Scalar b=2, Q=10", ...
CELL_NAME = {"none": "No compression", "scalar": "Scalar", "vector": "Vector", "topk": "Top-k"}
COLUMNS = ["part", "label", "source", "setup", "M", "alg", "comp_id", "compressor", "b", "Q", "t_c", "unit",
           "decimals", "resolution", "runs", "grid", "per_unit", "derived", "formula", "paper", "abs_err", "rel_err",
           "implied", "implied_lo", "implied_hi", "on_grid", "from_paper_times"]


def epoch_cost(setup: dict, b: int, alg: int = 1, unit: str = "MB") -> float:
    """One epoch's cost in `unit` as a run of this setup charges it (n_train, B, P, M, n_out: docs/comm.md, "4. Ledger and conventions")."""
    cfg = simulator.CvflConfig(M=int(setup["M"]), Q=1 if alg == 2 else 10, B=int(setup["B"]), b=int(b), alg=int(alg))
    bits = simulator.run_epoch_bits(cfg, int(setup["n_train"]), P=int(setup["P"]), n_out=int(setup["n_out"]))
    return bits / UNIT_BITS[unit]


def batches_per_epoch(setup: dict) -> int:
    return -(-int(setup["n_train"]) // int(setup["B"]))


def _grid_hit(lo: float, hi: float, step: float) -> int:
    """1 if a multiple of `step` lies in [lo, hi] (up to float noise), else 0."""
    eps = 1e-9 * max(1.0, abs(hi))
    return int(math.floor((hi + eps) / step) * step >= lo - eps)


def _paper_table(claims: dict, claim_id: str, column: str) -> dict[tuple, float]:
    """{claim keys: printed value of `column`} from a cells claim's paper_table (the registry holds the numbers once)."""
    claim = claims[claim_id]
    keys, cols = claim["keys"], claim["columns"]
    j = len(keys) + cols.index(column)
    return {tuple(float(v) for v in row[: len(keys)]): float(row[j]) for row in claim["paper_table"]}


def _row(part, label, source, setup_name, setup, *, per_unit, derived, paper, decimals, runs=None, grid=None,
         unit="MB", **keys) -> dict:
    resolution = 0.5 * 10.0 ** -int(decimals)
    implied = paper / per_unit
    lo, hi = sorted(((paper - resolution) / per_unit, (paper + resolution) / per_unit))
    formula = derived * per_unit
    return {"part": part, "label": label, "source": source, "setup": setup_name, "M": setup["M"] if setup else np.nan,
            **keys, "unit": unit, "decimals": int(decimals), "resolution": resolution,
            "runs": runs if runs is not None else np.nan, "grid": grid if grid is not None else np.nan,
            "per_unit": per_unit, "derived": derived, "formula": formula, "paper": paper,
            "abs_err": formula - paper, "rel_err": formula / paper - 1.0,
            "implied": implied, "implied_lo": lo, "implied_hi": hi,
            "on_grid": _grid_hit(lo, hi, grid) if grid else np.nan}


def _cell_label(name, b, Q=None, alg=None) -> str:
    name = CELL_NAME.get(name, name)
    out = f"{name} b={int(b)}"
    if Q is not None:
        out += f", Q={int(Q)}" + (" (Alg. 2)" if alg == 2 else "")
    return out


def cost_rows(params: dict, claims: dict) -> list[dict]:
    """Tables 2-4 and D.1 (printed numbers from the claims' paper tables) and Fig. 4 (the derived [D] numbers)."""
    rows = []
    setups = params["setups"]
    names = list(params["methods"])      # comp_id -> method name, the registry's order (as the runs number them)
    for entry in params["costs"]:
        setup = setups[entry["setup"]]
        unit, alg, part = entry.get("unit", "MB"), int(entry.get("alg", 1)), entry["part"]
        if "claim" in entry:
            printed = _paper_table(claims, entry["claim"], entry["column"])
            keys = claims[entry["claim"]]["keys"]
            source = f"paper (claim {entry['claim']})"
            for cell in entry["cells"]:
                key = tuple(float(v) for v in cell[: len(keys)])
                epochs, runs = float(cell[len(keys)]), int(cell[len(keys) + 1])
                if key not in printed:
                    raise ValueError(f"cost_formula: {part} cell {dict(zip(keys, key))} is not in claim "
                                     f"{entry['claim']}'s paper_table")
                k = dict(zip(keys, key))
                comp_id, b, Q = int(k["comp_id"]), int(k["b"]), int(k.get("Q", 10))
                rows.append(_row(part, _cell_label(names[comp_id], b, k.get("Q"), alg), source, entry["setup"], setup,
                                 per_unit=epoch_cost(setup, b, alg, unit), derived=epochs, paper=printed[key],
                                 decimals=entry["decimals"], runs=runs, grid=1.0 / runs, unit=unit, alg=alg,
                                 comp_id=comp_id, compressor=names[comp_id], b=b, Q=Q))
        else:  # the derived numbers: rows [b, epochs, runs, value]
            for b, epochs, runs, value in entry["cells"]:
                comp_id = 0 if int(b) == 32 else int(entry.get("comp_id", 2))
                label = (f"M={setup['M']}, b={int(b)}" + (f", {epochs:g} epochs" if epochs != 1 else ", per epoch"))
                rows.append(_row(part, label, entry.get("source", "derived [D]"), entry["setup"], setup,
                                 per_unit=epoch_cost(setup, int(b), alg, unit), derived=float(epochs),
                                 paper=float(value), decimals=entry["decimals"], runs=int(runs),
                                 grid=1.0 / int(runs), unit=unit, alg=alg, comp_id=comp_id,
                                 compressor=names[comp_id], b=int(b), Q=10))
    return rows


def _common_value(lo: np.ndarray, hi: np.ndarray) -> float:
    """The middle of the intersection of the intervals [lo_i, hi_i] (the midpoints' mean when they miss)."""
    a, z = float(np.max(lo)), float(np.min(hi))
    return 0.5 * (a + z) if a <= z else float(np.mean(0.5 * (lo + hi)))


def time_rows(params: dict, claims: dict) -> list[dict]:
    """Table 5: the time model at the derived rounds vs the printed means, one round-count std per Q vs the printed
    stds, and the speed-ups over Q = 1 (the derived [D] numbers) from the model and from the printed times."""
    t = params["times"]
    setup, t_comp = params["setups"][t["setup"]], float(params.get("t_comp_ms", 10.0))
    n_b = batches_per_epoch(setup)
    means = _paper_table(claims, t["claim"], "time")
    stds = _paper_table(claims, t["claim"], "time_std")
    source = f"paper (claim {t['claim']})"
    epochs = {int(Q): (float(e), int(r)) for Q, e, r in t["epochs"]}
    rounds = {Q: n_b * e for Q, (e, _) in epochs.items()}
    per_round = {key: float(summaries.simulated_time_s(1, key[1], key[0], t_comp)) for key in means}
    names = list(params["methods"])
    vq3 = {"comp_id": names.index("vector"), "compressor": "vector", "b": 3}   # Table 5: VQ b = 3; Q = 1: Alg. 2
    rows = []
    for (tc, Q), paper in sorted(means.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        _, runs = epochs[int(Q)]
        rows.append(_row("table5_time", f"Q={int(Q)}, t_c={tc:g} ms", source, t["setup"], setup,
                         per_unit=per_round[(tc, Q)], derived=rounds[int(Q)], paper=paper, decimals=t["decimals"],
                         runs=runs, grid=n_b / runs, unit="s", alg=2 if Q == 1 else 1, Q=int(Q), t_c=tc, **vq3))
    for Q in sorted({int(q) for _, q in stds}):
        keys = sorted(k for k in stds if int(k[1]) == Q)
        res = 0.5 * 10.0 ** -int(t["decimals"])
        lo = np.array([(stds[k] - res) / per_round[k] for k in keys])
        hi = np.array([(stds[k] + res) / per_round[k] for k in keys])
        fitted = _common_value(lo, hi)   # one round-count std that explains every t_c, if there is one
        for k in keys:
            rows.append(_row("table5_std", f"Q={Q}, t_c={k[0]:g} ms (std)", source, t["setup"], setup,
                             per_unit=per_round[k], derived=fitted, paper=stds[k], decimals=t["decimals"], unit="s",
                             alg=2 if Q == 1 else 1, Q=Q, t_c=k[0], **vq3))
    for tc, Q, value, decimals in t["speedups"]:
        model = (float(summaries.simulated_time_s(rounds[1], 1, tc, t_comp))
                 / float(summaries.simulated_time_s(rounds[int(Q)], int(Q), tc, t_comp)))
        resolution = 0.5 * 10.0 ** -int(decimals)
        rows.append({"part": "table5_speedup", "label": f"Q={int(Q)} over Q=1, t_c={tc:g} ms",
                     "source": "derived [D] (Table 5)", "setup": t["setup"], "M": setup["M"], "alg": 1, **vq3,
                     "Q": int(Q), "t_c": float(tc), "unit": "x", "decimals": int(decimals), "resolution": resolution,
                     "formula": model, "paper": float(value), "abs_err": model - float(value),
                     "rel_err": model / float(value) - 1.0,
                     "from_paper_times": means[(float(tc), 1.0)] / means[(float(tc), float(Q))]})
    return rows


def cost_check(params: dict, claims: list[dict] | dict) -> pd.DataFrame:
    """Every row of the cost check. `params`: the cost_formula experiment's parameters (config/papers/cvfl.yaml);
    `claims`: the paper's claims (list or {id: claim}), whose paper tables hold the printed numbers."""
    by_id = claims if isinstance(claims, dict) else {c["id"]: c for c in claims}
    rows = cost_rows(params, by_id) + time_rows(params, by_id)
    out = pd.DataFrame(rows)
    return out.reindex(columns=COLUMNS)


def run(ctx):
    """Runner of the cost check (no data, no training): the paper's printed costs and times from the formula."""
    from fedrepro.registry.papers import Registry
    from fedrepro.runner import RunResult

    # the printed numbers live in the registry's claims (input `registry`, so editing them reruns the check)
    claims = Registry.load(".").claims("cvfl")
    rows = cost_check(ctx.params, claims)
    ctx.log.info("%d cells; %d within the printed digits", len(rows),
                 int((abs(rows.formula - rows.paper) <= rows.resolution + 1e-9 * abs(rows.paper)).sum()))
    return RunResult(rows, seeds=[], data={"cvfl-printed-numbers": "real"},
                     extra={"note": "no dataset and no training: the paper's numbers (registry claims) and the "
                                    "derived epochs (experiment parameters) through fedrepro.cvfl.costcheck"})
