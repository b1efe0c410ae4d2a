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
# # Fig. 12: EHR, t-SNE of the test diagnoses with RBF-SVM accuracy
#
# The paper shows t-SNE embeddings of the 200 test diagnoses: the raw view X_1 (RBF-SVM accuracy 42.5%) and the G of
# AltMaxVar-Deep (80.0%) and CuteMaxVar-Deep (q = 4, 82.0%), which separate the diagnosis groups.
#
# We use trial 0 of the Fig. 13 runs, t-SNE as in A-15. Where the data layer could not fetch DE-SynPUF the views are its
# marked stand-in (claims C21, C22).

# %% tags=["parameters"]
root = None  # repository root; None: searched upwards from the working directory
scale = "quick"
configuration = "calibrated"
run_files = None  # None: the artifact's runs under results/<scale>/gcca/runs/
outputs = None  # None: a scratch folder under results/<scale>/gcca/scratch/

# %%
from fedrepro.artifact import open_artifact
from fedrepro.gcca.artifacts import fig12, summary

art = open_artifact("gcca", "fig12", root=root, scale=scale, configuration=configuration,
                    run_files=run_files, outputs=outputs)
fig12(art)

# %%
summary(art)

# %%
art.paper_vs_ours()
