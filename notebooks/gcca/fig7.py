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
# # Fig. 7: number of views I, cost vs. BPV and vs. time (the paper: wall-clock time)
#
# The paper shows that CuteMaxVar does not deteriorate as I grows from 10 to 100, and at I = 100 has almost the
# same objective as AltMaxVar at every iteration.
#
# We run AltMaxVar and CuteMaxVar (q = 3, batch 150) for each I of the run parameters, with v* per I (claims C12,
# C12b). The time axis is Fig. 6's clock: the process's CPU time on the simulated-parallel clock of §4.10
# (node phase / I + server phase per iteration, one BLAS thread; see the Fig. 6 notebook).

# %% tags=["parameters"]
root = None  # repository root; None: searched upwards from the working directory
scale = "quick"
configuration = "calibrated"
run_files = None  # None: the artifact's runs under results/<scale>/gcca/runs/
outputs = None  # None: a scratch folder under results/<scale>/gcca/scratch/

# %%
from fedrepro.artifact import open_artifact
from fedrepro.gcca.artifacts import fig7, summary

art = open_artifact("gcca", "fig7", root=root, scale=scale, configuration=configuration,
                    run_files=run_files, outputs=outputs)
fig7(art)

# %%
summary(art)

# %%
art.paper_vs_ours()
