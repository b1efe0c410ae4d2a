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
# # Fig. 2: the compression operation
#
# The paper's Fig. 2 illustrates CuteMaxVar's compressor (§III-C, eqs. 18-19): the normalized value
# |Δ(j,k)|/‖Δ‖_max in [0, 1] is split into S intervals, and a value in [p/S, (p+1)/S] is rounded stochastically to
# p/S or (p+1)/S, up with probability |Δ(j,k)|S/‖Δ‖_max − p; sign and ‖Δ‖_max are sent beside it.
#
# We draw it from the project's own quantizer (`fedrepro.comm`, "cutemaxvar", the unscaled C̃ every run uses) applied
# to one random Δ many times: (a) one draw on the number line, (b) the share of draws rounded up against eq. (18),
# (c) the decoded values on the grid ±p/S. q, S, the size of Δ and the number of draws come from the run.

# %% tags=["parameters"]
root = None  # repository root; None: searched upwards from the working directory
scale = "quick"
configuration = "as-stated"
run_files = None  # None: the artifact's runs under results/<scale>/gcca/runs/
outputs = None  # None: a scratch folder under results/<scale>/gcca/scratch/

# %%
from fedrepro.artifact import open_artifact
from fedrepro.gcca.artifacts import fig2, summary

art = open_artifact("gcca", "fig2", root=root, scale=scale, configuration=configuration,
                    run_files=run_files, outputs=outputs)
fig2(art)

# %%
summary(art)

# %%
art.paper_vs_ours()
