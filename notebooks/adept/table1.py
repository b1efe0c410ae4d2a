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
# # Table 1: ADEPT-AE on synthetic data
#
# The paper: energy captured (%) of a linear auto-encoder at three heterogeneity levels σ* (SNR 6, 12, 20 dB);
# ADEPT-AE above global and local training at every level and above the Baseline at 12 and 20 dB.
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
from fedrepro.adept.artifacts import table1
from fedrepro.artifact import open_artifact

art = open_artifact("adept", "table1", root=root, scale=scale, configuration=configuration,
                    run_files=run_files, outputs=outputs)
table1(art)

# %%
art.paper_vs_ours()
