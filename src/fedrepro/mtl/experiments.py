"""Figs. 4.1 (QCQP) and 4.2 (logistic regression): instances, the eight schemes, logs and summaries.

``run_experiment(params, experiment)`` returns the tidy run table (one row per seed, feedback,
scheme, logged step and metric, with the cumulative bits of that step under three pricings);
``curves`` and ``summarize`` turn it into the figure's data and the per-scheme numbers the claims
read (bit savings at a target gap, final values, ratios to vanilla).

Bits (Sec. 4.5; docs/thesis_ch4.md): ``bits_measured`` is the ledger's payload (fedrepro.comm's default pricing:
32-bit values, 32-bit indices, 32-bit sign scales); ``bits_P`` the paper-matching convention P
(indices ⌈log2 d⌉ bits, scales not counted) and ``bits_F`` convention F (P plus the 32-bit scale),
both from ``fedrepro.comm.conventions.thesis_bits_from_ledger``.  Every message is unicast to each
neighbour (A-B1); the first iteration is uncompressed for every scheme.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fedrepro.comm.conventions import thesis_bits_from_ledger
from fedrepro.leaderboard.candidates import BOARD_KEYS
from fedrepro.mtl.algorithms import log_grid, run_scheme
from fedrepro.mtl.problems import edge_values, make_logistic, make_qcqp
from fedrepro.mtl.projection import project_ball, project_shrunk
from fedrepro.mtl.reference import qcqp_optimum
from fedrepro.registry.methods import Method, methods_of
from fedrepro.runtime import rng_stream

# What `run` reads (thesis.yaml fig4_1 / fig4_2), checked when the registry loads; format: fedrepro/registry/params.py.
PARAMETERS = {
    "problem": "qcqp|logistic",
    "n": "int>=2",                          # nodes
    "d": "int>=1",                          # dimension of each node's x
    "p": "float>0<=1",                      # Erdős–Rényi edge probability
    "R": "float>0",                         # feasible ball radius R / sqrt(n)
    "c_range": "list[float, float]",        # [low, high] of the constraint levels c_ij
    "df?": "int>=1",                        # QCQP: degrees of freedom of the Wishart matrices
    "scalar_mean?": "bool",                 # QCQP
    "spread?": "float>=0",                  # logistic
    "n_test?": "int>=1",                    # logistic
    "batch?": "int>=1",                     # logistic: samples per stochastic gradient
    "eta": "float>0",
    "delta": "float>=0",
    "zeta": "float>0",
    "T": "int>=1",                          # iterations
    "T_max?": "int>=1|null",                # a cap on T (quick and smoke scales)
    "runs?": "int>=1",                      # independent instances
    "n_log?": "int>=2",                     # logged iterations
    # the schemes, in order (fedrepro/registry/methods.py): vanilla sends x~ at full precision; compressed is Algorithm 2
    # (sample feedback) / 3 (bandit) with the compressor, any fedrepro.comm name
    "methods": {"*": {"algorithm": "vanilla|compressed", "compressor?": "compressor"}},
    "feedbacks?": "list[sample|bandit]",
    "tau?": "float>0",                      # target gap of the figure (fedrepro.mtl.artifacts)
}


# The leaderboard's board run (config/leaderboard.yaml): this runner's parameters, the board's keys and the
# figure method whose settings each compressor takes (`template`).
BOARD_PARAMETERS = {**PARAMETERS, **BOARD_KEYS, "template": "method_name"}

# What one run costs, for `python -m fedrepro plan` (fedrepro/workflow/plan.py): runs x iterations x nodes x dimension (the
# eight schemes and both feedbacks are the same at every scale).
WORK = {"units": "runs * (min(T, T_max) if T_max else T) * n * d", "defaults": {"T_max": "None"},
        "shape": ["problem"]}
FEEDBACKS = ("sample", "bandit")
CONVENTIONS = {"bits_measured": None, "bits_P": "P", "bits_F": "F"}
# The engine's algorithms (the methods' `algorithm:`); the compressors are data.
ALGORITHMS = ("vanilla", "compressed")


def schemes(params: dict) -> list[Method]:
    """The configuration's methods, in the registry's order.  A compressor's random draws come from the run's
    `compressor` stream of that scheme."""
    return methods_of(params, algorithms=ALGORITHMS)


def make_compressor(method: Method):
    """None for the vanilla scheme (x~ itself at full precision), else the method's compressor."""
    return None if method.algorithm == "vanilla" else method.build()


@dataclass
class Instance:
    problem: object
    x_star: np.ndarray
    x_init: np.ndarray
    edge: int
    how: str


def build_instance(params: dict, experiment: str, trial: int) -> Instance:
    seed = int(params["seed"])
    n, d = int(params["n"]), int(params["d"])
    radius = float(params["R"]) / np.sqrt(n)
    streams = {name: rng_stream(seed, experiment, trial, name) for name in ("graph", "problem", "test", "init", "edge")}
    if params["problem"] == "qcqp":
        problem = make_qcqp(n, d, float(params["p"]), radius, tuple(params["c_range"]), int(params["df"]),
                            streams["graph"], streams["problem"], scalar_mean=bool(params.get("scalar_mean", False)))
        x_star, how = qcqp_optimum(problem)
        problem.x_star = x_star
    elif params["problem"] == "logistic":
        problem = make_logistic(n, d, float(params["p"]), radius, tuple(params["c_range"]), float(params["spread"]),
                                int(params["n_test"]), streams["graph"], streams["problem"], streams["test"],
                                batch=int(params.get("batch", 1)))
        x_star, how = problem.x_true, "ground truth (footnote 3)"
    else:
        raise ValueError(f"params 'problem' must be 'qcqp' or 'logistic'; got {params['problem']!r}")
    x_init = project_ball(streams["init"].standard_normal((n, d)), radius)  # A-C4
    edge = int(streams["edge"].integers(problem.graph.n_edges))  # A-M2
    return Instance(problem, x_star, x_init, edge, how)


def _metrics_fn(inst: Instance):
    problem = inst.problem
    F_star = float(problem.expected_cost(inst.x_star).sum())
    F0 = float(problem.expected_cost(inst.x_init).sum())
    xs_norm = float(np.linalg.norm(inst.x_star))
    logistic = hasattr(problem, "accuracy")

    def fn(xbar, x, lam):
        g = edge_values(xbar, problem.graph, problem.c)
        out = {
            "gap": (float(problem.expected_cost(xbar).sum()) - F_star) / (F0 - F_star),
            "gap_last": (float(problem.expected_cost(x).sum()) - F_star) / (F0 - F_star),
            "param_err": float(np.linalg.norm(xbar - inst.x_star)) / xs_norm,
            "g_edge": float(g[inst.edge]),
            "g_max": float(g.max()),
            "lam_max": float(lam.max()),
        }
        if logistic:
            out["acc"] = problem.accuracy(xbar)
        return out

    return fn


def iterations(params: dict) -> int:
    """T of a run: the configuration's T, capped by the scale's T_max (quick and smoke scales)."""
    return int(min(params["T"], params.get("T_max") or params["T"]))


def run_experiment(params: dict, experiment: str, progress=None, log=None) -> tuple[pd.DataFrame, dict]:
    """Every (trial, feedback, scheme) of one configuration.  Returns (tidy frame, facts for the sidecar)."""
    T = iterations(params)
    steps = log_grid(T, int(params.get("n_log", 200)))
    feedbacks = list(params.get("feedbacks", FEEDBACKS))
    frames, facts = [], {"timing": [], "instances": []}
    jobs = [(r, fb, m) for r in range(int(params.get("runs", 1))) for fb in feedbacks for m in schemes(params)]
    inst_cache: dict[int, Instance] = {}
    for trial, feedback, method in (progress(jobs) if progress else jobs):
        scheme = method.name
        if trial not in inst_cache:
            inst = inst_cache[trial] = build_instance(params, experiment, trial)
            p = inst.problem
            facts["instances"].append({"trial": trial, "n_edges": p.graph.n_edges, "x_star": inst.how,
                                       "tracked_edge": [int(v) for v in p.graph.edges[inst.edge]],
                                       "c_tracked": float(p.c[inst.edge])})
        inst = inst_cache[trial]
        p = inst.problem
        zeta = float(params["zeta"])
        x0 = project_shrunk(inst.x_init, p.radius, zeta) if feedback == "bandit" else inst.x_init
        seed = int(params["seed"])
        t0 = time.perf_counter()
        res = run_scheme(p, x0, compressor=make_compressor(method), feedback=feedback,
                         eta=float(params["eta"]), delta=float(params["delta"]), zeta=zeta, T=T,
                         rng_samples=rng_stream(seed, experiment, trial, "samples"),
                         rng_directions=rng_stream(seed, experiment, trial, "directions"),
                         rng_compressor=rng_stream(seed, experiment, trial, "compressor", feedback, scheme),
                         log_steps=steps, metrics_fn=_metrics_fn(inst))
        wall = time.perf_counter() - t0
        facts["timing"].append({"trial": trial, "feedback": feedback, "scheme": scheme, "seconds": round(wall, 3),
                                "it_per_s": round(T / wall, 1)})
        if log:
            log(f"{feedback}/{scheme} trial {trial}: {T} iterations in {wall:.1f} s ({T / wall:.0f} it/s), "
                f"final gap {res.metrics['gap'][-1]:.3g}")
        bits = {}
        for col, conv in CONVENTIONS.items():
            if conv is None:
                _, cum = res.ledger.cumulative("p2p")
            else:
                _, cum = thesis_bits_from_ledger(res.ledger, conv, "p2p")
            bits[col] = cum
        wide = pd.DataFrame({"step": res.log_steps, **res.metrics})
        long = wide.melt(id_vars="step", var_name="metric", value_name="value")
        for col, cum in bits.items():
            long[col] = np.tile(cum, len(res.metrics))
        long.insert(0, "scheme", scheme)
        long.insert(0, "feedback", feedback)
        long.insert(0, "seed", trial)
        frames.append(long)
    return pd.concat(frames, ignore_index=True), facts


# ---- the figure's data and the claims' numbers ----------------------------------------------------

def curves(runs: pd.DataFrame) -> pd.DataFrame:
    """Wide per (configuration, feedback, scheme, step): every metric averaged over seeds, plus the bits."""
    keys = ["configuration", "feedback", "scheme", "step"]
    wide = runs.pivot_table(index=keys + ["seed"], columns="metric", values="value").reset_index()
    bits = runs.groupby(keys + ["seed"])[list(CONVENTIONS)].first().reset_index()
    wide = wide.merge(bits, on=keys + ["seed"])
    return wide.drop(columns="seed").groupby(keys, as_index=False).mean()


def crossing(steps: np.ndarray, gap: np.ndarray, tau: float) -> float:
    """First iteration with gap ≤ τ, log-linearly interpolated between logged points (docs/thesis_ch4.md); nan if never."""
    below = np.nonzero(gap <= tau)[0]
    if below.size == 0:
        return float("nan")
    b = below[0]
    if b == 0:
        return float(steps[0])
    t0, t1, g0, g1 = steps[b - 1], steps[b], np.log(gap[b - 1]), np.log(gap[b])
    return float(t0 + (np.log(tau) - g0) / (g1 - g0) * (t1 - t0)) if g1 != g0 else float(t1)


def summarize(curve: pd.DataFrame, tau: float, t_min: int = 100) -> pd.DataFrame:
    """Per (configuration, feedback, scheme): t_τ, bits to τ and savings vs vanilla of the same feedback (A-B3)
    under each pricing, the largest ratio to vanilla's gap curve for t ≥ t_min (C4.1), final values,
    and the bandit/sample ratio of final gaps (C4.8)."""
    rows = []
    for (cfg, fb, sch), g in curve.groupby(["configuration", "feedback", "scheme"], sort=False):
        g = g.sort_values("step")
        steps, gap = g["step"].to_numpy(), g["gap"].to_numpy()
        t_tau = crossing(steps, gap, tau)
        row = {"configuration": cfg, "feedback": fb, "scheme": sch, "tau": tau, "t_tau": t_tau,
               "final_step": int(steps[-1]), "final_gap": gap[-1], "final_gap_last": g["gap_last"].iloc[-1],
               "final_param_err": g["param_err"].iloc[-1], "final_g_edge": g["g_edge"].iloc[-1],
               "final_g_max": g["g_max"].iloc[-1], "final_lam_max": g["lam_max"].iloc[-1]}
        for col in CONVENTIONS:
            row[f"{col}_tau"] = float(np.interp(t_tau, steps, g[col].to_numpy())) if np.isfinite(t_tau) else float("nan")
            row[f"{col}_per_iter"] = float(np.diff(g[col].to_numpy())[-1] / np.diff(steps)[-1])
        last = steps >= 0.1 * steps[-1]
        pe = g["param_err"].to_numpy()[last]
        row["param_err_decreasing_frac"] = float(np.mean(np.diff(pe) < 0)) if pe.size > 1 else float("nan")
        row["param_err_drop"] = float(pe[-1] / pe[0]) if pe.size else float("nan")
        if "acc" in g:
            row["final_acc"] = g["acc"].iloc[-1]
        rows.append(row)
    out = pd.DataFrame(rows)
    curve_idx = curve.set_index(["configuration", "feedback", "scheme", "step"])
    ratios, savings = [], {c: [] for c in CONVENTIONS}
    acc_diff, fb_ratio = [], []
    for _, r in out.iterrows():
        mine = curve_idx.loc[(r.configuration, r.feedback, r.scheme)]
        van = curve_idx.loc[(r.configuration, r.feedback, "vanilla")]
        sel = mine.index >= t_min
        q = mine["gap"][sel] / van["gap"][sel]
        ratios.append(float(np.max(np.maximum(q, 1 / q))) if sel.any() else float("nan"))
        vrow = out[(out.configuration == r.configuration) & (out.feedback == r.feedback) & (out.scheme == "vanilla")].iloc[0]
        for c in CONVENTIONS:
            savings[c].append(vrow[f"{c}_tau"] / r[f"{c}_tau"])
        if "final_acc" in out:
            acc_diff.append(r.final_acc - vrow.final_acc)
        srow = out[(out.configuration == r.configuration) & (out.feedback == "sample") & (out.scheme == r.scheme)]
        fb_ratio.append(r.final_gap / srow.final_gap.iloc[0] if len(srow) else float("nan"))
    out["max_ratio_vs_vanilla"] = ratios
    for c in CONVENTIONS:
        out["savings_" + c.removeprefix("bits_")] = savings[c]
        out["ratio_per_iter_" + c.removeprefix("bits_")] = [
            out[(out.configuration == r.configuration) & (out.feedback == r.feedback) & (out.scheme == "vanilla")][f"{c}_per_iter"].iloc[0]
            / r[f"{c}_per_iter"] for _, r in out.iterrows()]
    if acc_diff:
        out["acc_diff_vs_vanilla"] = acc_diff
    out["gap_ratio_bandit_sample"] = fb_ratio
    # C4.2 / C4.6 ordering, per (configuration, feedback) and pricing: Sign+TopK > Sign > TopK > 1
    for c in CONVENTIONS:
        col = "savings_" + c.removeprefix("bits_")
        ok = {}
        for key, g in out.groupby(["configuration", "feedback"]):
            s = dict(zip(g.scheme, g[col]))
            ok[key] = float(all(k in s for k in ("sign_topk", "sign", "topk"))
                            and s["sign_topk"] > s["sign"] > s["topk"] > 1)
        out["order_ok_" + c.removeprefix("bits_")] = [ok[(r.configuration, r.feedback)] for _, r in out.iterrows()]
    return out


def figure_data(runs: pd.DataFrame, taus: dict[str, float], paper_savings: dict[str, float]) -> pd.DataFrame:
    """The artifact's CSV: the plotted curves (row = 'curve') and the per-scheme summary (row = 'summary')
    that the claims read.  `taus` maps configuration -> target gap τ."""
    curve = curves(runs)
    summ = pd.concat([summarize(curve[curve.configuration == c], taus[c]) for c in curve.configuration.unique()],
                     ignore_index=True)
    summ["paper_savings"] = summ.scheme.map(lambda s: paper_savings.get(s, 1.0 if s == "vanilla" else float("nan")))
    curve.insert(0, "row", "curve")
    summ.insert(0, "row", "summary")
    return pd.concat([summ, curve], ignore_index=True)


def run(ctx):
    """Runner of Figs. 4.1 / 4.2: the eight schemes of one configuration."""
    from fedrepro.runner import RunResult

    rows, facts = run_experiment(ctx.params, ctx.experiment, progress=lambda jobs: ctx.progress(jobs, desc="schemes"),
                                 log=ctx.log.info)
    T = iterations(ctx.params)
    ctx.log.info("%s/%s: %d iterations x %d runs", ctx.experiment, ctx.configuration, T, len(facts["timing"]))
    return RunResult(rows, seeds=[ctx.seed], data={f"thesis-ch4-{ctx.experiment}-synthetic": "real"},
                     extra={"T": T, "timing": facts["timing"], "instances": facts["instances"],
                            "streams": f"rng_stream(seed, '{ctx.experiment}', trial, name), name in graph, problem, "
                                       "test, init, edge, samples, directions"})


def board(ctx):
    """Leaderboard runner: each compressor of `compressors` with the algorithm of the figure's scheme `template`
    (Algorithm 2/3 with compressed messages), one engine call each (fedrepro.leaderboard.candidates)."""
    from dataclasses import replace

    from fedrepro.leaderboard.candidates import run_each
    from fedrepro.runner import RunResult

    p = ctx.params
    template = {k: v for k, v in (p["methods"][p["template"]] or {}).items() if k != "compressor"}

    def one(name, spec):
        return run(replace(ctx, params={**p, "methods": {name: {**template, "compressor": spec}}})).rows

    rows = run_each(p["board_compressors"], p.get("knobs"), one, ctx.log)
    return RunResult(rows, seeds=[ctx.seed], data={f"thesis-ch4-{ctx.experiment}-synthetic": "real"},
                     extra={"template": p["template"],
                            "streams": f"rng_stream(seed, '{ctx.experiment}', trial, name), name in graph, problem, "
                                       "test, init, edge, samples, directions"})
