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
# # Figure 2: ADEPT-PCA vs local and global training
#
# The paper: the reconstruction error of the estimates over that of the true models, against the true
# heterogeneity σ*: at small σ* global beats local and ADEPT is lower still; at large σ* ADEPT learns a large σ
# and behaves like local; in between it beats both; the learned σ grows with σ*. Local and global are Riemannian
# GD where run (paper scale), else their closed forms.
#
# ADEPT (Ozkara et al.); decisions `docs/adept.md`. The sizes we ran are the run
# parameters in the table's header and the registry.

# %% tags=["parameters"]
root = None  # repository root; None: searched upwards from the working directory
scale = "quick"
configuration = "as-stated"
run_files = None  # None: the artifact's runs under results/<scale>/adept/runs/
outputs = None  # None: a scratch folder under results/<scale>/adept/scratch/

# %%
from fedrepro.adept.artifacts import fig2
from fedrepro.artifact import open_artifact

art = open_artifact("adept", "fig2", root=root, scale=scale, configuration=configuration,
                    run_files=run_files, outputs=outputs)
fig2(art)

# %%
art.paper_vs_ours()
