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
# # Fig. 8: large sparse synthetic data, cost vs. BPV and vs. iteration
#
# The paper ((J, N, D, K, I) = (50000, 2000, 200, 5, 3), density ρ = 0.02, 5 trials) shows that q = 3 costs the least
# communication on large sparse views.
#
# We generate sparse views X_i = Z A_i + ν E_i, warm start from MVLSA, v* by Lanczos on the implicit operator;
# the sizes of this scale (smaller than the paper's below paper scale) are in the figure's title and printed below it
# (claims C13, C13b).

# %% tags=["parameters"]
root = None  # repository root; None: searched upwards from the working directory
scale = "quick"
configuration = "calibrated"
run_files = None  # None: the artifact's runs under results/<scale>/gcca/runs/
outputs = None  # None: a scratch folder under results/<scale>/gcca/scratch/

# %%
from fedrepro.artifact import open_artifact
from fedrepro.gcca.artifacts import fig8, summary

art = open_artifact("gcca", "fig8", root=root, scale=scale, configuration=configuration,
                    run_files=run_files, outputs=outputs)
fig8(art)

# %%
summary(art)

# %%
art.paper_vs_ours()
