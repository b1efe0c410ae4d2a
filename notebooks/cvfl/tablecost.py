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
# # Cost check: the paper's printed costs and times from the recovered formula
#
# No data and no training: for every cost the paper prints (Tables 2, 3, 4, D.1), Figure 4's per-epoch costs and
# Table 5's times and speed-ups, the recovered formula (docs/comm.md, "4. Ledger and conventions") or time model (docs/cvfl.md) at the derived
# derived mean epochs (§3.6, §5), computed by `fedrepro.cvfl.costcheck` through the functions every run uses,
# beside the printed number. The same at every scale.
#
# Decisions `docs/cvfl.md`.

# %% tags=["parameters"]
root = None  # repository root; None: searched upwards from the working directory
scale = "quick"
configuration = "as-stated"
run_files = None  # None: the artifact's runs under results/<scale>/cvfl/runs/
outputs = None  # None: a scratch folder under results/<scale>/cvfl/scratch/

# %%
from fedrepro.artifact import open_artifact
from fedrepro.cvfl.artifacts import tablecost

art = open_artifact("cvfl", "tablecost", root=root, scale=scale, configuration=configuration,
                    run_files=run_files, outputs=outputs)
tablecost(art)

# %%
art.paper_vs_ours()
