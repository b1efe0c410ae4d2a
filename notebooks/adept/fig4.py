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
# # Figure 4: per-client KID (High-sample setting)
#
# The paper: ADEPT-DGM's worst client is much better than the other methods' worst clients, and its spread over
# clients is lower (every seed pooled here).
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
from fedrepro.adept.artifacts import fig4
from fedrepro.artifact import open_artifact

art = open_artifact("adept", "fig4", root=root, scale=scale, configuration=configuration,
                    run_files=run_files, outputs=outputs)
fig4(art)

# %%
art.paper_vs_ours()
