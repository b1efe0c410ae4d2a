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
# # Figure 3: samples of the client holding class '0'
#
# The paper: ADEPT-DGM's samples are the least noisy (Immerkær noise estimate ADEPT < FedAvg + fine-tuning <
# local). Ours: the first 16 samples of the client, High-sample setting, seed 0, the same sampler noise for the
# three methods.
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
from fedrepro.adept.artifacts import fig3
from fedrepro.artifact import open_artifact

art = open_artifact("adept", "fig3", root=root, scale=scale, configuration=configuration,
                    run_files=run_files, outputs=outputs)
fig3(art)

# %%
art.paper_vs_ours()
