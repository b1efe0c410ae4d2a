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
# # Fig. 4: compression levels, cost vs. bits per variable and vs. iteration
#
# The paper shows that with q = 3 bits CuteMaxVar costs the least communication (BPV) without any loss in
# iterations, and that q = 2 (S = 1) struggles to converge; settings as in Fig. 3.
#
# We run AltMaxVar and CuteMaxVar with q = 2, 3, 4, 5 (SGD batch 150, warm start); BPV is read from the runs' bit
# ledger (claim C25 checks BPV(r) = 32 + r q). The run's sizes are printed below the figure.

# %% tags=["parameters"]
root = None  # repository root; None: searched upwards from the working directory
scale = "quick"
configuration = "calibrated"
run_files = None  # None: the artifact's runs under results/<scale>/gcca/runs/
outputs = None  # None: a scratch folder under results/<scale>/gcca/scratch/

# %%
from fedrepro.artifact import open_artifact
from fedrepro.gcca.artifacts import fig4, summary

art = open_artifact("gcca", "fig4", root=root, scale=scale, configuration=configuration,
                    run_files=run_files, outputs=outputs)
fig4(art)

# %%
summary(art)

# %%
art.paper_vs_ours()
