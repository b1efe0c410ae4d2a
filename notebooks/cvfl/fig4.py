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
# # Figure 4: ModelNet10, vector quantization, M = 4 vs M = 12
#
# The paper: for both numbers of parties, smaller b reaches higher accuracy at lower cost; M = 12 costs more in
# total.
#
# C-VFL (Castiglia et al., ICML 2022); decisions `docs/cvfl.md`. Costs use the
# paper's formula (docs/comm.md, "4. Ledger and conventions"). Targets are the paper's at paper scale; at quick and smoke scale (stand-in data)
# they are relative (A-22), a fraction of the uncompressed runs' max: both from the registry's `parameters:` of
# this artifact.

# %% tags=["parameters"]
root = None  # repository root; None: searched upwards from the working directory
scale = "quick"
configuration = "as-stated"
run_files = None  # None: the artifact's runs under results/<scale>/cvfl/runs/
outputs = None  # None: a scratch folder under results/<scale>/cvfl/scratch/

# %%
from fedrepro.artifact import open_artifact
from fedrepro.cvfl.artifacts import fig4

art = open_artifact("cvfl", "fig4", root=root, scale=scale, configuration=configuration,
                    run_files=run_files, outputs=outputs)
fig4(art)

# %%
art.paper_vs_ours()
