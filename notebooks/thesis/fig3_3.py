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
# # Thesis Figure 3.3 — CIFAR-10 through a 100 Kbps link (§3.5.3)
#
# The Fig. 3.2 runs priced by the link model (thesis Sec. 3.5.3; ch3:A-34..A-36 in docs/thesis_ch3.md): each node broadcasts on its own 100 Kbps uplink,
# rounds are synchronous, so the airtime is Σ_rounds max_i bits_i / R; the wall clock adds τ_comp per iteration (the
# measured batched step time divided by n: the nodes compute in parallel) and τ_oh = 0.01 s per round with a
# transmission. ERRATA E-4: panel (b) is drawn both as bars (time to target) and as accuracy vs wall-clock. The
# paper reports ≈40× (CHOCO) and ≈3000× (vanilla) less airtime and ≈30× / ≈2.5K× less total time at 90%.
#
# **Why ours differs (budget).** These are the Fig. 3.2 quick runs, which stay near chance (see that notebook), so
# the airtime and time ratios are read at a fallback target just above chance: C3.8-C3.11 hold only qualitatively.
# The total-time ratios are smaller than the airtime ratios because the measured compute time per iteration
# is added to every method's time alike.

# %% tags=["parameters"]
root = None  # repository root; None: searched upwards from the working directory
scale = "quick"
configuration = "as-stated"
run_files = None  # None: the artifact's runs under results/<scale>/thesis/runs/
outputs = None  # None: a scratch folder under results/<scale>/thesis/scratch/

# %%
from fedrepro.artifact import open_artifact
from fedrepro.decentral.artifacts import configurations_table, describe_run, differences, fig3_3, to_target_table

art = open_artifact("thesis", "fig3_3", root=root, scale=scale, configuration=configuration,
                    run_files=run_files, outputs=outputs)
describe_run(art)

# %%
fig3_3(art)

# %% [markdown]
# ### To target: steps, rounds, bits (three conventions), airtime and wall clock

# %%
to_target_table(art)

# %% [markdown]
# ### Every configuration: the data split (ch3:A-40) and the savings
# `as-stated` is the thesis' iid split; `one-class` and `two-classes` are Fig. 3.4's class-skewed readings
# (ch3:A-45) on these nodes. The scorecard judges the figure's claims under each of them.

# %%
configurations_table(art)

# %% [markdown]
# ### Reading the result
# Savings are baseline / SQuARM at the first evaluation reaching the target (A-37; A-49 falls back to the loosest level
# every method reaches). `trigger_rate` is the fraction of (node, sync round) pairs that transmitted: with a rate
# of 1 the trigger saved nothing and SQuARM's advantage is the compressor plus its H local steps alone. The scorecard judges the
# paper band (within ×3 under B32, B64idx or Blog) and, qualitatively, the pre-registered proxy band.

# %%
differences(art)

# %%
art.paper_vs_ours()
