"""The picture test: every legend entry of every figure is visibly drawn, and no PNG is blank.

The checks themselves are tried first on hand-made figures (they must catch the faults they are for: a baseline
that is a single point, a curve outside the axis range, a proxy entry for a colour nothing is drawn in), then on
every figure of the smoke build (the session fixture `smoke_run`).
"""

import matplotlib

matplotlib.use("Agg")  # a test process draws off-screen; the library itself never picks a backend

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from conftest import REPO  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from pictures import blank_fraction, notebook_figures, undrawn_legend_entries  # noqa: E402

from fedrepro.registry.papers import Registry  # noqa: E402

REGISTRY = Registry.load(REPO)
FIGURES = [(p, a) for p, a, e in REGISTRY.artifacts(scale="smoke") if e["kind"] == "figure"]


# ---- the checks catch what they are for ---------------------------------------------------------------------
def _fig():
    fig, ax = plt.subplots()
    ax.plot([0, 1, 2], [1, 2, 3], label="drawn")
    return fig, ax


def test_a_complete_legend_passes():
    fig, ax = _fig()
    ax.scatter([1], [2], label="one marker is visible")
    ax.axhline(2.5, color="k", ls=":", label="a level")
    ax.legend()
    assert undrawn_legend_entries(fig) == []
    plt.close(fig)


def test_a_baseline_that_is_one_point_without_a_marker_is_not_drawn():
    """cvfl's 'No compression (b = 32)' cut at the b = 2 budget: a line of one point at cost 0 shows nothing."""
    fig, ax = _fig()
    ax.plot([0], [1.5], label="single point")
    ax.legend()
    assert undrawn_legend_entries(fig) == ["single point"]
    plt.close(fig)


def test_a_curve_outside_the_plotted_range_is_not_drawn():
    fig, ax = _fig()
    ax.plot([10, 11], [1, 2], label="off to the right")
    ax.set_xlim(0, 2)
    ax.legend()
    assert undrawn_legend_entries(fig) == ["off to the right"]
    plt.close(fig)


def test_a_proxy_entry_needs_something_drawn_in_its_colour():
    fig, ax = _fig()
    handles = [Line2D([], [], color="C0", label="C0 curves"), Line2D([], [], color="tab:red", label="red curves")]
    ax.legend(handles=handles)
    assert undrawn_legend_entries(fig) == ["red curves (no artist with this label or look)"]
    plt.close(fig)


def test_a_figure_legend_over_empty_axes_is_caught():
    fig, (a, b) = plt.subplots(1, 2)
    a.plot([0, 1], [0, 1], label="left")
    b.plot([], [], label="empty")
    fig.legend()
    assert undrawn_legend_entries(fig) == ["empty"]
    plt.close(fig)


def test_a_blank_png_is_recognised(tmp_path):
    fig, ax = plt.subplots()
    ax.set_axis_off()
    fig.savefig(tmp_path / "blank.png")
    ax.set_axis_on()
    ax.plot(np.arange(50), np.sin(np.arange(50)), lw=3)
    fig.savefig(tmp_path / "drawn.png")
    plt.close(fig)
    assert blank_fraction(tmp_path / "blank.png") == 1.0
    assert blank_fraction(tmp_path / "drawn.png") < 0.95


# ---- every figure of the smoke build ------------------------------------------------------------------------
@pytest.mark.parametrize("paper,artifact", FIGURES, ids=[f"{p}:{a}" for p, a in FIGURES])
def test_every_legend_entry_is_drawn_and_the_png_is_not_blank(smoke_run, paper, artifact, tmp_path):
    files = REGISTRY.artifact_files(paper, artifact, "smoke")
    data = pd.read_csv(smoke_run / files["csv"])
    assert len(data), f"{files['csv']} is empty"
    assert blank_fraction(smoke_run / files["png"]) < 0.98, f"{files['png']} is (nearly) blank"

    outputs = {k: str(tmp_path / f"{artifact}.{k}") for k in ("csv", "pdf", "png")}
    plt.close("all")
    figures = notebook_figures(smoke_run, smoke_run / REGISTRY.notebook(paper, artifact), "smoke", outputs)
    assert figures, "the notebook shows no figure"
    # a figure left open in pyplot as well as returned is shown twice by Jupyter's inline backend
    assert not plt.get_fignums(), f"{paper}:{artifact}: a figure is left open in pyplot"
    # the figure inspected here is the one the build shipped: the same numbers come out of the same runs
    pd.testing.assert_frame_equal(pd.read_csv(outputs["csv"]), data, check_exact=False)
    for fig in figures:
        assert undrawn_legend_entries(fig) == [], f"{paper}:{artifact}: legend entries with nothing drawn"
        plt.close(fig)
