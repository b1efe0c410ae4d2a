# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Fig. 6: SGD batch size, cost vs. BPV and vs. time (the paper: wall-clock time)
#
# The paper shows that with a constant step smaller SGD batches make CuteMaxVar converge faster in time, but batch
# 10 does not converge well; settings as in Fig. 3.
#
# We run CuteMaxVar (q = 3) with batches 10, 50, 100, 200, 350 and the full gradient and AltMaxVar (claims
# C10, C11).
#
# **The timing method (gcca:A-16).** The time axis is the simulated-parallel clock of §4.10: per iteration, the
# node phase of the I simulated nodes divided by I plus the server phase, summed. Each phase is timed with the
# process's CPU time (`fedrepro.runtime.compute_clock`, since issue 18), one BLAS thread, the run alone on the
# machine; compiled kernels are called once before the clock starts. CPU time leaves out the time the process waits
# for a core, so the order of the curves does not move with the machine's load; on an idle machine it equals the
# authors' `tic`/`toc` wall time.
#
# **Why the full gradient and AltMaxVar reach 2 v\* first here, unlike the paper.** The implementation, not the
# sizes (quick runs the paper's (J, N) = (500, 25) for this figure) nor the single thread (60-95 % of an iteration
# is per-call overhead above its flop count; `benchmarks/bench_gcca_fig6.py` splits an iteration into its parts).
# Our full-gradient step goes through each view's precomputed N x N Gram, (X_i^T X_i) Q_i - X_i^T Ĝ: O(N^2 K),
# no rows to draw, the cheapest iteration at J = 500 and still at J = 50,000. The authors' Fig. 6 driver
# (`small_sgd.m` with `LargeGCCA_distributed_stochastic.m`) runs its full-gradient curve as a minibatch of all J
# rows, without a Gram; timed that way (the benchmark's `cute-bJ` row) the full gradient is the slowest variant, as
# in the paper. Among the batches 50-350 (claim C10) every batch crosses 2 v\* within about one iteration of the
# others, so their order in time is the order of their per-iteration costs, which differ by tenths of a
# millisecond (the quick build of 26 Nov 2026: 9.6, 9.5, 11.1, 12.2 ms to 2 v\* for batches 50, 100, 200, 350, so
# C10 is reproduced only qualitatively); the claim rows below give this build's times and verdict.

# %% tags=["parameters"]
root = None  # repository root; None: searched upwards from the working directory
scale = "quick"
configuration = "calibrated"
run_files = None  # None: the artifact's runs under results/<scale>/gcca/runs/
outputs = None  # None: a scratch folder under results/<scale>/gcca/scratch/

# %%
from fedrepro.artifact import open_artifact
from fedrepro.gcca.artifacts import fig6, summary

art = open_artifact("gcca", "fig6", root=root, scale=scale, configuration=configuration,
                    run_files=run_files, outputs=outputs)
fig6(art)

# %%
summary(art)

# %%
art.paper_vs_ours()
