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
# # Fig. 13: EHR, RBF-SVM accuracy vs. BPV and vs. iteration
#
# The paper (10 trials) shows AltMaxVar-Deep improving faster in the first iterations, both methods peaking at
# about the same iteration, and CuteMaxVar-Deep (q = 4) reaching 80% accuracy with CR = 0.867.
#
# We evaluate SVC(kernel='rbf') on G every iteration; mean ± 1 std over the trials of this scale
# (claims C23, C24, C26c).

# %% tags=["parameters"]
root = None  # repository root; None: searched upwards from the working directory
scale = "quick"
configuration = "calibrated"
run_files = None  # None: the artifact's runs under results/<scale>/gcca/runs/
outputs = None  # None: a scratch folder under results/<scale>/gcca/scratch/

# %%
from fedrepro.artifact import open_artifact
from fedrepro.gcca.artifacts import fig13, summary

art = open_artifact("gcca", "fig13", root=root, scale=scale, configuration=configuration,
                    run_files=run_files, outputs=outputs)
fig13(art)

# %%
summary(art)

# %%
art.paper_vs_ours()
