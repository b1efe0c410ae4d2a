"""The cross-paper leaderboard (config/leaderboard.yaml; docs/architecture.md, "The leaderboard").

(c) δ and ω measured on random vectors against closed forms; (d) a compressor that does not apply gets "n/a: <why>"
instead of failing; (b) the papers' own compressors carry exactly their figures' numbers (smoke build);
(a) a compressor added by configuration only (the README's random-k plugin) appears on the smoke leaderboard with
a label and a colour, and no file of the workflow is edited.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import REPO, snakemake

from fedrepro.leaderboard import board as board_module
from fedrepro.leaderboard.candidates import run_each, spec_with_knobs
from fedrepro.leaderboard.measure import measure
from fedrepro.plotting import color, label
from fedrepro.plotting.names import COLORS

D, K = 100, 10


def test_topk_delta_is_k_over_d_on_its_worst_case():
    r = measure("topk", d=D, draws=50, knobs={"k": K})
    assert r["delta"] == pytest.approx(K / D, abs=1e-12)      # the all-equal vector: exactly k/d
    assert r["delta_library"] == pytest.approx(K / D)          # comm's own closed form agrees
    assert not r["unbiased"] and r["error"] == pytest.approx(1 - K / D, abs=1e-12)


def test_randk_delta_is_k_over_d_on_every_vector():
    """E||Rand_k(x) - x||^2 = (1 - k/d)||x||^2 for any x: Monte Carlo within 4 standard errors."""
    r = measure("randk", d=D, draws=2000, vectors=3, knobs={"k": K})
    assert r["delta"] == pytest.approx(K / D, abs=0.01)


def test_unbiased_randk_omega_is_d_over_k_minus_one():
    from fedrepro.comm import RandK

    class Unbiased(RandK):
        name = "randk_unbiased_test"
        unbiased = True

        def _select(self, x2, u):
            idx, kept = super()._select(x2, u)
            return idx, kept * (x2.shape[1] / self.k_for(x2.shape[1]))

    from fedrepro.comm.catalog import COMPRESSORS, register_compressor

    register_compressor("randk_unbiased_test", Unbiased)
    try:
        r = measure("randk_unbiased_test", d=D, draws=3000, vectors=3, knobs={"k": K})
    finally:
        COMPRESSORS.pop("randk_unbiased_test")
    assert r["unbiased"] and r["bias"] < 0.2
    assert r["error"] == pytest.approx(D / K - 1, rel=0.1)
    # docs/comm.md's δ = ω: E||C(x) - x||^2 = 9 ||x||^2 is no contraction; scaled by 1/(1 + e) it is one
    assert np.isnan(r["delta"]) and r["delta_scaled"] == pytest.approx(1 / (1 + r["error"]))


def test_identity_and_qsgd_against_their_bounds():
    ident = measure("identity", d=D, draws=5)
    assert ident["delta"] == 1.0 and ident["error"] == 0.0 and ident["bits_per_entry"] == 32
    s = 4
    q = measure("qsgd", d=D, draws=2000, knobs={"s": s})
    assert q["unbiased"] and 0 < q["error"] <= min(D / s**2, np.sqrt(D) / s)   # Alistarh et al., Lemma 3.1


def test_a_compressor_that_does_not_apply_says_why():
    # qsgd needs `s`; a setting that offers only k cannot build it
    with pytest.raises(ValueError, match="'s'"):
        spec_with_knobs("qsgd", {"k": 1})
    calls = []
    rows = run_each(["qsgd", "topk"], {"k": 1}, lambda name, spec: calls.append(spec) or pd.DataFrame([{"x": 1}]))
    assert calls == [{"name": "topk", "k": 1}]
    na = rows[rows.board_compressor == "qsgd"].board_status.iloc[0]
    assert na.startswith("n/a: qsgd: parameter 's'")
    # an engine that refuses a compressor: the run goes on, the cell says why

    def refuse(name, spec):
        raise ValueError("needs the gradient of the server model\nsecond line")

    rows = run_each(["topk"], {"k": 1}, refuse)
    assert rows.board_status.tolist() == ["n/a: ValueError: needs the gradient of the server model"]
    assert measure("qsgd", knobs={"k": 1})["note"].startswith("n/a: qsgd: parameter 's'")


def test_the_na_cell_reaches_the_table():
    from fedrepro.leaderboard.board import wide

    frame = pd.DataFrame([
        {"setting": "ch4", "column": "bits", "compressor": "topk", "label": "TopK", "value": 3.0, "note": "",
         "method": "topk", "source": "figure", "own": True},
        {"setting": "ch4", "column": "bits", "compressor": "qsgd", "label": "qsgd", "value": np.nan,
         "note": "n/a: qsgd: parameter 's' is required", "method": "", "source": "board", "own": False}])
    table = wide(frame, {"ch4": {"label": "thesis Fig. 4.1"}})
    head = "thesis Fig. 4.1: bits (lower is better)"
    assert table.set_index("compressor").loc["qsgd", head] == "n/a: qsgd: parameter 's' is required"
    assert table.set_index("compressor").loc["topk", head] == "3 (#1) ★"


@pytest.mark.slow
def test_own_compressors_carry_their_figures_numbers(smoke_run):
    board = pd.read_csv(smoke_run / "results/smoke/leaderboard.csv")
    own = board[board.source == "figure"].set_index(["setting", "compressor", "column"])["value"]
    base = smoke_run / "results/smoke"
    t1 = pd.read_csv(base / "gcca/tables/table1.csv")
    q3 = t1[t1.q == 3].iloc[0]
    assert own[("gcca", "cutemaxvar", "final f/v*")] == pytest.approx(q3.final_ratio, rel=1e-9)
    fig4 = pd.read_csv(base / "gcca/figures/fig4.csv")
    cute = fig4[(fig4.variant == "cute-q3")]
    if np.isfinite(q3.R_C):
        assert own[("gcca", "cutemaxvar", "bpv to 1.5 v*")] == pytest.approx(
            cute.loc[cute.step == q3.R_C, "bpv"].iloc[0], rel=1e-9)
    fig3 = pd.read_csv(base / "cvfl/figures/fig3.csv")
    s = fig3[(fig3.row == "summary") & (fig3.b == 2)]
    names = {"scalar": "cvfl_scalar", "vector": "cvfl_vector", "topk": "cvfl_topk_columns"}
    for r in s.itertuples():
        if r.compressor in names:
            col = [c for c in own.index if c[0] == "cvfl" and c[1] == names[r.compressor] and f", {r.dataset} (" in c[2]]
            assert len(col) == 1
            np.testing.assert_allclose(own[col[0]], r.cost, rtol=1e-9)
    f32 = pd.read_csv(base / "thesis/figures/fig3_2.csv")
    f32 = f32[(f32.row == "summary") & (f32.configuration == "as-stated")].set_index("method")
    for method, comp in {"squarm": "sign_topk", "choco_sign": "sign", "choco_topk": "topk", "vanilla": "identity"}.items():
        np.testing.assert_allclose(own[("ch3", comp, "bits to target (B32)")], f32.loc[method, "bits_B32_to_target"])
    f41 = pd.read_csv(base / "thesis/figures/fig4_1.csv")
    f41 = f41[(f41.row == "summary") & (f41.feedback == "sample")].set_index("scheme")
    col = [c for c in own.index if c[0] == "ch4"][0][2]
    for scheme in ("vanilla", "sign", "topk", "sign_topk"):
        comp = "identity" if scheme == "vanilla" else scheme
        np.testing.assert_allclose(own[("ch4", comp, col)], f41.loc[scheme, "bits_P_tau"], rtol=1e-9)


@pytest.mark.slow
def test_a_plugin_appears_on_the_leaderboard_by_configuration_only(workdir):
    from test_own_compressor import NAME, PLUGIN, _doc_example, _tree

    (workdir / "plugins").mkdir()
    (workdir / PLUGIN).write_text(_doc_example())
    snakemake("--cores", "2", "results/smoke/leaderboard.csv", "--config", "scale=smoke",
              f"comm={{plugins: [{PLUGIN}]}}", cwd=workdir, timeout=1800)
    board = pd.read_csv(workdir / "results/smoke/leaderboard.csv")
    mine = board[board.compressor == NAME]
    assert set(mine.setting) == {"gcca", "cvfl", "ch3", "ch4", "comm"}
    assert mine[mine.setting == "comm"].set_index("column").loc[board_module.MEASURED["error"], "value"] == pytest.approx(9, rel=0.15)
    # it ran in every setting's engine (a number, or "not reached" at smoke sizes), and no cell says n/a but its
    # delta: unbiased random-k (error d/k - 1 = 9) is no contraction (docs/comm.md), and the cell says so with the
    # delta of the scaled C/(1 + 9)
    na = mine[mine.note.fillna("").str.startswith("n/a")]
    assert list(na.column) == [board_module.MEASURED["delta"]], mine[["setting", "column", "note"]]
    assert "no contraction" in na.note.iloc[0] and "C/(1+9" in na.note.iloc[0]
    ch4 = pd.read_csv(workdir / "results/smoke/thesis/runs/board_ch4/as-stated.csv")
    assert (ch4[ch4.board_compressor == NAME].board_status == "ok").all() and (ch4.scheme == NAME).any()
    assert NAME in (workdir / "results/smoke/leaderboard.md").read_text()
    assert label(NAME) == NAME and color(NAME) not in COLORS.values()
    assert (workdir / "results/smoke/leaderboard.png").stat().st_size > 10_000
    repo = _tree(REPO)
    assert {k for k, v in _tree(workdir).items() if repo.get(k) != v} == set()


def test_names_drawn_together_get_distinct_colours():
    """`colors` gives every unknown name in one figure its own free colour (hashing alone collides: with ten
    free colours, eleven names must), and keeps each known name's colour."""
    from fedrepro.comm.catalog import available_compressors
    from fedrepro.plotting import colors

    names = list(available_compressors())
    palette = colors(names)
    assert len(set(palette.values())) == len(names)                    # 13 compressors, 13 colours
    assert palette["identity"] == color("none") and label("identity") == label("none")
    assert palette["cutemaxvar"] == color("cutemaxvar") and palette["sign"] != palette["cutemaxvar"]  # both orange
    assert colors(names) == palette                                    # stable: the same figure, the same colours
    many = colors(names + [f"user_method_{i}" for i in range(20)])     # more names than colours: reuse, no error
    assert len(many) == len(names) + 20 and {many[n] for n in names} == set(palette.values())


def test_a_new_name_never_takes_or_nears_a_colour_in_use():
    """The fallback palette keeps MIN_DISTANCE from every colour of the table (#e377c2 beside Sign+TopK's #cc78bc
    read as one pink), and on the leaderboard a plugin's compressor gets a colour apart from every other row's."""
    from itertools import combinations

    from fedrepro.comm.catalog import available_compressors
    from fedrepro.plotting import colors
    from fedrepro.plotting.names import MIN_DISTANCE, distance, fallback_colors

    used = set(COLORS.values())
    assert fallback_colors() and all(distance(c, u) >= MIN_DISTANCE for c in fallback_colors() for u in used)
    for name in ("randk_unbiased", "mine", "user_method_3"):
        assert all(distance(color(name), u) >= MIN_DISTANCE for u in used), name
    names = [*available_compressors(), "randk_unbiased"]
    palette = colors(names)
    assert len(set(palette.values())) == len(names)
    assert palette["sign_randk"] != palette["randk_unbiased"]
    close = [(a, b) for a, b in combinations(["randk_unbiased", "mine"], 2) if a in palette and b in palette]
    assert all(distance(palette[a], palette[b]) >= MIN_DISTANCE for a, b in close)
    assert all(distance(palette["randk_unbiased"], palette[n]) >= MIN_DISTANCE for n in names if n != "randk_unbiased")


def test_every_column_is_ranked_the_way_it_is_better():
    frame = pd.DataFrame({
        "setting": ["comm"] * 6, "column": [board_module.MEASURED["delta"]] * 3 + ["bits/entry"] * 3,
        "compressor": ["a", "b", "c"] * 2, "value": [0.1, 0.9, np.nan, 32.0, 2.0, 2.0],
        "note": ["", "", "n/a: no contraction", "", "", ""]})
    frame["better"] = frame.column.map(board_module.better)
    ranks = board_module.column_ranks(frame).tolist()
    assert ranks[:2] == [2, 1] and np.isnan(ranks[2])      # δ: higher is better; no number, no rank
    assert ranks[3:] == [3, 1, 1]                          # bits: lower is better; a tie shares the best rank


def test_not_reached_is_drawn_not_left_empty():
    """A cell that ran and missed its target is a hatched bar with "not reached", never an empty or zero bar; each
    panel title says which way is better."""
    from matplotlib.patches import Rectangle

    frame = pd.DataFrame({"setting": ["comm"] * 3, "column": ["bits/entry"] * 3, "compressor": ["topk", "sign", "qsgd"],
                          "label": ["TopK", "Sign", "QSGD"], "value": [32.0, np.nan, np.nan],
                          "note": ["", "not reached in 10 iterations", "n/a: needs s"], "method": "", "source": "",
                          "own": False})
    frame["better"] = frame.column.map(board_module.better)
    frame["rank"] = board_module.column_ranks(frame)
    fig = board_module.figure(frame, {})
    ax = fig.axes[0]
    texts = [t.get_text() for t in ax.texts]
    assert "not reached" in texts and "n/a" in texts and " #1" in texts
    assert sum(bool(isinstance(p, Rectangle) and p.get_hatch()) for p in ax.patches) == 1
    assert "lower is better" in ax.get_title()


def test_a_setting_below_its_claims_regime_is_marked_in_the_table_and_on_the_figure(tmp_path):
    """thesis Fig. 3.2's target near chance: its savings claims are not-comparable ("regime not reached"), so the
    leaderboard's ch3 column carries † in the Markdown and a note on its panel; a setting whose claims reach their
    regime (ch4 here) and a configuration the leaderboard does not read stay unmarked."""
    from fedrepro.scorecard.reasons import NOT_REACHED

    why = "bits to a Top-1 target say something about the paper's 90 % only at a target of 45 % or more"
    claims = {
        "ch3": pd.DataFrame({"claim": ["C3.5", "C3.6", "C3.7"], "configuration": ["as-stated"] * 3,
                             "verdict": ["not-comparable", "not-comparable", "reproduced"],
                             "reason": [f"{NOT_REACHED}: {why} (tested target >= 0.45: target=0.109)"] * 2 + [""]}),
        "ch4": pd.DataFrame({"claim": ["C4.1", "C4.1"], "configuration": ["as-stated", "calibrated"],
                             "verdict": ["reproduced", "not-comparable"], "reason": ["", f"{NOT_REACHED}: other"]})}
    files = {}
    for name, frame in claims.items():
        files[name] = f"{name}.csv"
        frame.to_csv(tmp_path / files[name], index=False)
    settings = {"ch3": {"label": "thesis Fig. 3.2", "value": "bits to target", "own": {"configuration": "as-stated"}},
                "ch4": {"label": "thesis Fig. 4.1", "value": "bits to tau", "own": {"configuration": "as-stated"}}}
    regime = board_module.below_regime(tmp_path, files, settings)
    assert regime == {"ch3": f"thesis Fig. 3.2, claims C3.5, C3.6: {why}"}

    frame = pd.DataFrame([
        {"setting": s, "column": "bits", "compressor": "topk", "label": "TopK", "value": v, "note": "",
         "method": "topk", "source": "figure", "own": True} for s, v in (("ch3", 5.0), ("ch4", 3.0))])
    md = board_module.markdown(frame, settings, "quick", regime)
    assert "| thesis Fig. 3.2: bits (lower is better) † |" in md.replace("  ", " ")
    assert "thesis Fig. 4.1: bits (lower is better) |" in md
    assert f"{board_module.BELOW_REGIME}: thesis Fig. 3.2, claims C3.5, C3.6" in md
    fig = board_module.figure(frame, settings, regime=regime)
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    assert board_module.BELOW_REGIME in titles[0] and board_module.BELOW_REGIME not in titles[1]
