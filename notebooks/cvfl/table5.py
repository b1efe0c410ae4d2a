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
# # Table 5: MIMIC-III, time to F1 = 0.45 against local iterations Q and latency t_c
#
# The paper: with vector quantization b = 3, more local iterations reach the target sooner, and the gain over Q =
# 1 grows with the round latency t_c (t_comp = 10 ms per local iteration).
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
from fedrepro.cvfl.artifacts import table5

art = open_artifact("cvfl", "table5", root=root, scale=scale, configuration=configuration,
                    run_files=run_files, outputs=outputs)
table5(art)

# %%
art.paper_vs_ours()
