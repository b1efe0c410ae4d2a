"""The one figure style of fedrepro (`fedrepro.mplstyle`), and saving with the stand-in watermark.

The library never picks a matplotlib backend: the render rule sets `MPLBACKEND` for the notebook kernel
(inline, so the executed notebook shows its figures), and a script or a test gets matplotlib's default.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

STYLE = Path(__file__).with_name("fedrepro.mplstyle")


def apply_style() -> None:
    """Use the project style for every figure drawn after this call."""
    import matplotlib.pyplot as plt

    plt.style.use(STYLE)


def save_figure(fig, pdf: str | Path, png: str | Path, stand_in=False, reencoded=False) -> None:
    """Save PDF and PNG atomically.  Figures made from stand-in data carry a visible mark; figures made from a lossy
    copy of the real images (data kind real-reencoded) a lighter one (the stand-in mark wins where both apply).

    `stand_in` / `reencoded`: True marks the whole figure; a collection of Axes marks those panels only (a figure
    whose panels use different data: C-VFL Fig. 3's real CIFAR-10 panels beside stand-in MIMIC-III, the
    leaderboard's settings)."""
    from fedrepro.io import atomic_path

    stand_in_axes = _axes(stand_in)
    reencoded_axes = [ax for ax in _axes(reencoded) if ax not in stand_in_axes]
    if stand_in is True:
        fig.text(0.5, 0.5, "STAND-IN DATA", fontsize=40, color="red", alpha=0.18, ha="center", va="center",
                 rotation=25, transform=fig.transFigure, zorder=1000)
    elif reencoded is True:
        fig.text(0.5, 0.5, "RE-ENCODED JPEG", fontsize=32, color="0.35", alpha=0.12, ha="center", va="center",
                 rotation=25, transform=fig.transFigure, zorder=1000)
    if stand_in is not True:
        for ax in stand_in_axes:
            ax.text(0.5, 0.5, "STAND-IN DATA", fontsize=18, color="red", alpha=0.22, ha="center", va="center",
                    rotation=25, transform=ax.transAxes, zorder=1000)
        if reencoded is not True:
            for ax in reencoded_axes:
                ax.text(0.5, 0.5, "RE-ENCODED JPEG", fontsize=14, color="0.35", alpha=0.15, ha="center",
                        va="center", rotation=25, transform=ax.transAxes, zorder=1000)
    # fixed metadata so reruns give identical files
    with atomic_path(png) as tmp:
        fig.savefig(tmp, format="png", metadata={"Software": None})
    with atomic_path(pdf) as tmp, _layout_kept(fig) as crop:
        fig.savefig(tmp, format="pdf", metadata={"CreationDate": None}, **crop)


def _axes(mark) -> list:
    """The panels a mark names: none for a bool (True marks the figure), else the given Axes."""
    if isinstance(mark, bool) or mark is None:
        return []
    return list(mark)


@contextmanager
def _layout_kept(fig):
    """While saving the PDF: the layout and the tight crop that the PNG's savefig just computed, reused.

    Each savefig runs the figure's layout engine (the style's constrained layout: about 0.25 s of a smoke figure,
    0.47 s of a six-panel one) and a tight bounding box. The PNG, saved first, is exactly what it was; the PDF
    keeps the axes where that layout put them and is cropped to the same box, measured with Agg's text metrics
    rather than the PDF backend's (a fraction of a point apart). A figure whose box cannot be measured here gets
    savefig's own tight crop, still without a second layout."""
    import matplotlib as mpl
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    engine = fig.get_layout_engine()
    crop = {}
    if mpl.rcParams["savefig.bbox"] == "tight":
        pad = mpl.rcParams["savefig.pad_inches"]
        pads = ((engine.get()["w_pad"], engine.get()["h_pad"])
                if pad == "layout" and isinstance(engine, ConstrainedLayoutEngine) else (pad, pad))
        try:
            crop = {"bbox_inches": fig.get_tightbbox(fig._get_renderer()).padded(*pads)}
        except Exception:  # noqa: BLE001 - measured by savefig instead
            crop = {}
    _set_layout_engine(fig, None)  # no engine at all: savefig then skips its layout pass
    try:
        yield crop
    finally:
        _set_layout_engine(fig, engine)


def _set_layout_engine(fig, engine) -> None:
    """``fig.set_layout_engine(engine)``, where None means none (not the rc's default engine, as it does there)."""
    import matplotlib as mpl

    with mpl.rc_context({"figure.constrained_layout.use": False, "figure.autolayout": False}):
        fig.set_layout_engine(engine)
