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
# # Fig. 5: CR at several objective levels near the optimum, q = 3
#
# The paper zooms into Fig. 4 near v* and shows CR = 0.9062 at every objective level under consideration, because
# CuteMaxVar needs the same number of iterations as AltMaxVar.
#
# We plot the Fig. 4 runs for q = 3 and AltMaxVar against BPV and annotate each level of the registry's `levels`
# with its CR (claim C9).

# %% tags=["parameters"]
root = None  # repository root; None: searched upwards from the working directory
scale = "quick"
configuration = "calibrated"
run_files = None  # None: the artifact's runs under results/<scale>/gcca/runs/
outputs = None  # None: a scratch folder under results/<scale>/gcca/scratch/

# %%
from fedrepro.artifact import open_artifact
from fedrepro.gcca.artifacts import fig5, summary

art = open_artifact("gcca", "fig5", root=root, scale=scale, configuration=configuration,
                    run_files=run_files, outputs=outputs)
fig5(art)

# %%
summary(art)

# %%
art.paper_vs_ours()
