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
# # Fig. 10: deep toy example, raw and transformed views and G with spectral clustering
#
# The paper shows three 2-D views of two clusters that no raw view separates, and that the G learned by
# AltMaxVar-Deep and CuteMaxVar-Deep clusters them (spectral clustering 89% and 91%).
#
# We show trial 0 of the Fig. 11 runs on fresh test points (A-27b), spectral clustering with an RBF affinity,
# Hungarian-matched accuracy (claims C17, C18).

# %% tags=["parameters"]
root = None  # repository root; None: searched upwards from the working directory
scale = "quick"
configuration = "calibrated"
run_files = None  # None: the artifact's runs under results/<scale>/gcca/runs/
outputs = None  # None: a scratch folder under results/<scale>/gcca/scratch/

# %%
from fedrepro.artifact import open_artifact
from fedrepro.gcca.artifacts import fig10, summary

art = open_artifact("gcca", "fig10", root=root, scale=scale, configuration=configuration,
                    run_files=run_files, outputs=outputs)
fig10(art)

# %%
summary(art)

# %%
art.paper_vs_ours()
