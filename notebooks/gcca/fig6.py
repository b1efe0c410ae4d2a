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
# # Fig. 6: SGD batch size, cost vs. BPV and vs. wall-clock time
#
# The paper shows that with a constant step smaller SGD batches make CuteMaxVar converge faster in time, but batch
# 10 does not converge well; settings as in Fig. 3.
#
# We run CuteMaxVar (q = 3) with batches 10, 50, 100, 200, 350 and the full gradient and AltMaxVar; the wall
# clock is the single-threaded simulated-parallel time of §4.10 / A-16 (claims C10, C11).

# %% tags=["parameters"]
root = None  # repository root; None: searched upwards from the working directory
scale = "quick"
configuration = "calibrated"
run_files = None  # None: the artifact's runs under results/<scale>/gcca/runs/
outputs = None  # None: a scratch folder under results/<scale>/gcca/scratch/

# %%
from fedrepro.gcca.artifacts import fig6, summary
from fedrepro.notebook import open_artifact

art = open_artifact("gcca", "fig6", root=root, scale=scale, configuration=configuration,
                    run_files=run_files, outputs=outputs)
fig6(art)

# %%
summary(art)

# %%
art.paper_vs_ours()
