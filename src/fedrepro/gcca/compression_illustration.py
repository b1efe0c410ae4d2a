"""The data behind gcca Fig. 2: CuteMaxVar's compression operation on one random Δ (Sec. III-C.2, eqs. 18-19).

The paper's Fig. 2 illustrates the rule: the normalized value t = |Δ(j,k)|/‖Δ‖_max lies in an interval
[p/S, (p+1)/S] of [0, 1] split into S = 2^(q-1) - 1 intervals, and is rounded to p/S or (p+1)/S, up with
probability tS - p (eq. 18).  Here the project's own quantizer (`fedrepro.comm`, "cutemaxvar", unscaled C̃ as in
every run) compresses one Δ ~ N(0, 1) of shape J x K `draws` times, so the figure shows the operation the runs use.

Parameters: J, K, q, draws, seed.  Streams: rng_stream(seed, experiment, "delta") for Δ, (..., "compressor") for
the draws.  Rows, kind "entry" (one per Δ(j,k)): j, k, delta, t, p (interval, 0..S-1), frac = tS - p (eq. 18's
probability of rounding up), level (t after the first draw: p/S or (p+1)/S), up_rate (share of the draws rounded
up), z = (up_rate - frac) / its binomial std (0 where frac is 0 or 1 and the rate matches exactly, inf where it
does not), mean (mean decoded value, unbiasedness); kind "histogram": counts of the decoded C̃(Δ)/‖Δ‖_max over
every draw and entry per level; kind "message": q, S, m = ‖Δ‖_max, J, K, draws and the message's bits.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

# What `run` reads (gcca.yaml fig2), checked when the registry loads; format: fedrepro/registry/params.py.
PARAMETERS = {
    "J": "int>=1", "K": "int>=1",           # the shape of Δ
    "q": "int>=2",                          # CuteMaxVar bits per entry
    "draws": "int>=1",                      # compressions of the same Δ
}

# What one run costs, for `python -m fedrepro plan` (fedrepro/workflow/plan.py): draws x entries.
WORK = {"units": "draws * J * K"}


def run(ctx):
    """Runner (registry `runner:`) of the Fig. 2 experiment: one configuration's rows."""
    from fedrepro.runner import RunResult

    rows = illustrate(ctx.experiment, ctx.params)
    return RunResult(rows, seeds=[ctx.seed], data={"gcca-compression-synthetic": "real"},
                     extra={"streams": f"rng_stream(seed, '{ctx.experiment}', 'delta'|'compressor')"})


def illustrate(experiment: str, p: dict) -> pd.DataFrame:
    """Compress one random Δ `draws` times with comm's CuteMaxVar quantizer; the tidy rows described above."""
    from fedrepro.comm import get_compressor
    from fedrepro.runtime import rng_stream

    seed, J, K, q, draws = int(p["seed"]), int(p["J"]), int(p["K"]), int(p["q"]), int(p["draws"])
    delta = rng_stream(seed, experiment, "delta").standard_normal((J, K))
    comp = get_compressor("cutemaxvar", q=q)
    S, m = comp.S, float(np.abs(delta).max())
    # every draw is one message of Δ (batched: one max per batch element, all equal to ‖Δ‖_max)
    out = comp(np.broadcast_to(delta, (draws, J, K)).copy(), rng_stream(seed, experiment, "compressor"), batched=True)
    decoded = np.asarray(out.value)
    t = np.abs(delta) / m
    interval = np.minimum(np.floor(t * S), S - 1)  # t = 1 belongs to the last interval (p = S - 1)
    levels = np.rint(np.abs(decoded) / m * S)  # the level index (an integer) of each decoded entry
    rounded_up = levels > interval[None]
    jj, kk = np.meshgrid(np.arange(J), np.arange(K), indexing="ij")
    frac = t * S - interval
    up_rate = rounded_up.mean(axis=0)
    sd = np.sqrt(frac * (1 - frac) / draws)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(sd > 0, (up_rate - frac) / sd, np.where(np.isclose(up_rate, frac), 0.0, np.inf))
    entries = pd.DataFrame({"kind": "entry", "j": jj.ravel(), "k": kk.ravel(), "delta": delta.ravel(), "t": t.ravel(),
                            "p": interval.ravel().astype(int), "frac": frac.ravel(), "level": (levels[0] / S).ravel(),
                            "up_rate": up_rate.ravel(), "z": z.ravel(), "mean": decoded.mean(axis=0).ravel()})
    signed = np.rint(np.sign(decoded) * levels).astype(int).ravel()
    values, counts = np.unique(signed, return_counts=True)
    histogram = pd.DataFrame({"kind": "histogram", "level": values / S, "count": counts})
    message = pd.DataFrame([{"kind": "message", "q": q, "S": S, "m": m, "J": J, "K": K, "draws": draws,
                             "bits": float(np.asarray(out.bits).ravel()[0])}])
    frame = pd.concat([message, entries, histogram], ignore_index=True)
    frame.insert(0, "seed", seed)
    return frame
