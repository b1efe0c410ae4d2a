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
# # Figure D.4: ModelNet10 test accuracy by epochs, panels b = 2, 3, 4
#
# The paper: vector quantization and top-k match no compression even at b = 2; scalar quantization converges lower
# and varies more.
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
from fedrepro.cvfl.artifacts import figd4

art = open_artifact("cvfl", "figd4", root=root, scale=scale, configuration=configuration,
                    run_files=run_files, outputs=outputs)
figd4(art)

# %%
art.paper_vs_ours()
