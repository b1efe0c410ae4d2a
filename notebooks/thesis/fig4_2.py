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
# # Thesis Figure 4.2 — decentralized logistic regression with compressed communication (ch. 4, §4.5)
#
# Problem (4.16): node i minimizes E[log(1 + exp(−y x_iᵀp))] with p ~ N(0, I₁₀) and P(y = 1) = σ(x_true,iᵀp), one fresh
# sample per node and iteration, on an Erdős–Rényi graph (n = 30, p = 0.3); the true models are close on adjacent nodes
# (A-L2: x_true,i = z₀ + 0.3 ε_i, feasible), c_ij ~ U[−10, −7], ball R = 40, so x* = x_true (footnote 3). The expected
# cost is computed exactly by Gauss–Hermite quadrature (A-L4); test accuracy is pooled over 500 test samples per node.
# Colour = compression scheme; solid = sample feedback (Alg. 2), dashed = bandit feedback (Alg. 3).
#
# Two configurations always run (thesis Sec. 4.5.2; docs/thesis_ch4.md, "Configurations and scales"):
# * **as-stated** — η = 10⁻³, T = 10³ as the thesis states. The gap cannot reach 10⁻² this way.
# * **calibrated** — the pre-registered deviation: η = 10⁻², T = 2·10⁴ (1.2·10⁴ at quick scale).
# * **calibrated-k2** — `calibrated` with k = 2 (ch4:A-K); **calibrated-eta5e-3** — η = 5·10⁻³, T = 4·10⁴ with k = 1
#   (ch4:A-eta; paper scale only, beyond the quick budget).
#
# **Why `calibrated` differs from the paper.** At η = 10⁻², TopK and Sign+TopK with k = 1 are past their stability
# limit (the duals grow while the one-coordinate copies lag, docs/thesis_ch4.md), so their curves diverge and C4.5-C4.7
# fail there; k = 2 (`calibrated-k2`) or η = 5·10⁻³ keeps them stable and the claims hold. `as-stated` cannot reach
# the gap 10⁻² within the stated T = 10³ (ch4:A-eta), so it has no savings to compare.
#
# The figure shows the configuration selected by the `configuration` config key; both are scored. The paper reports
# accuracy similar to vanilla for every scheme, savings at a relative sub-optimality of about 10⁻² of Sign+TopK ≈ 50×,
# Sign ≈ 20×, TopK ≈ 7×, and negative constraint values.

# %% tags=["parameters"]
root = None  # repository root; None: searched upwards from the working directory
scale = "quick"
configuration = "calibrated"
run_files = None  # None: the artifact's runs under results/<scale>/thesis/runs/
outputs = None  # None: a scratch folder under results/<scale>/thesis/scratch/

# %%
from fedrepro.artifact import open_artifact
from fedrepro.mtl.artifacts import bits_panels, describe_run, differences, fig4_2, savings_table

art = open_artifact("thesis", "fig4_2", root=root, scale=scale, configuration=configuration,
                    run_files=run_files, outputs=outputs)
describe_run(art)

# %%
fig4_2(art)

# %% [markdown]
# ### Bit savings at τ under the three pricings, for every configuration
# `savings_P` (paper-matching), `savings_F` (sign scale counted), `savings_measured` (fedrepro.comm's payload: 32-bit
# indices and scales); `ratio_per_iter_*` is the per-message ratio.

# %%
savings_table(art)

# %% [markdown]
# ### Panel (c) under the other pricings (not saved; for reading only)

# %%
bits_panels(art)

# %% [markdown]
# ### Reading the result
# Savings are read where each curve first reaches τ = 10⁻²; a configuration whose curves never get there has
# no savings (NaN), and its C4.6 rows are not reproduced. Under convention P the savings equal the per-message ratios
# (32 / 8.9 / 64) whenever the iteration counts agree; convention F counts the 32-bit sign scale.

# %%
differences(art)

# %%
art.paper_vs_ours()
