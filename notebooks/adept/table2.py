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
# # Table 2: ADEPT-AE on MNIST and Fashion-MNIST, one class per client
#
# The paper: energy captured (%) with Low / High latent size; ADEPT-AE above FedAvg and local training in every
# cell. The Baseline: 10 clients holding a whole class each.
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
from fedrepro.adept.artifacts import table2
from fedrepro.artifact import open_artifact

art = open_artifact("adept", "table2", root=root, scale=scale, configuration=configuration,
                    run_files=run_files, outputs=outputs)
table2(art)

# %%
art.paper_vs_ours()
