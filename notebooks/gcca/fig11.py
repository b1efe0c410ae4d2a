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
# # Fig. 11: deep toy example, linear-SVM accuracy on G vs. BPV and vs. iteration
#
# The paper shows both deep methods reaching 95% linear-SVM test accuracy on G, CuteMaxVar-Deep with CR = 0.906
# there, and the two accuracy-per-iteration curves matching.
#
# We train LinearSVC on √J G and test on fresh points, mean ± 1 std over the trials (claims C19, C20, C26b).

# %% tags=["parameters"]
root = None  # repository root; None: searched upwards from the working directory
scale = "quick"
configuration = "calibrated"
run_files = None  # None: the artifact's runs under results/<scale>/gcca/runs/
outputs = None  # None: a scratch folder under results/<scale>/gcca/scratch/

# %%
from fedrepro.artifact import open_artifact
from fedrepro.gcca.artifacts import fig11, summary

art = open_artifact("gcca", "fig11", root=root, scale=scale, configuration=configuration,
                    run_files=run_files, outputs=outputs)
fig11(art)

# %%
summary(art)

# %%
art.paper_vs_ours()
