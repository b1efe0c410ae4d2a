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
# # Leaderboard — every registered compressor in each work's comparison setting
#
# Rows: every compressor `fedrepro.comm` knows (built-ins, `comm.plugins`, entry points), the papers' own first.
# Columns (config/leaderboard.yaml): gcca Table I's bits per variable to 1.5 v* and final f/v*; C-VFL Fig. 3's
# communication cost to the target on each dataset (b = 2); thesis Fig. 3.2's bits to the target test accuracy;
# thesis Fig. 4.1's bits to the relative gap τ (sample feedback); and each compressor's δ and ω measured on random
# vectors with a fixed seed.  The papers' own compressors carry their figure's numbers (bold, ★); every other one
# comes from a board run in the same setting (sizes: docs/architecture.md, "The leaderboard").  A cell says
# "n/a: <why>" where a compressor does not apply (its factory needs a parameter the setting does not offer, or the
# engine refuses it).  A column marked † is below the regime its paper's claims need at this scale (read from the
# figure's claims: thesis Fig. 3.2's target near chance makes its savings claims not-comparable); its ranks compare
# the compressors at this scale's target, not the paper's.

# %% tags=["parameters"]
root = None  # repository root; None: searched upwards from the working directory
scale = "quick"
plugins = None  # config comm.plugins (the workflow passes them)
run_files = None  # unused: config/leaderboard.yaml names the runs
outputs = None  # None: a scratch folder under results/<scale>/scratch/

# %%
from IPython.display import Image, Markdown

from fedrepro.artifact import repo_root
from fedrepro.leaderboard.board import leaderboard, scratch_outputs

root = repo_root(root)
outputs = outputs or scratch_outputs(root, scale)
frame = leaderboard(root, scale, outputs, plugins=plugins)
Image(filename=outputs["png"])  # the saved PNG itself, not a third drawing

# %%
Markdown(open(outputs["md"]).read())
