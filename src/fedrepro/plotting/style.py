"""The one figure style of fedrepro, and saving with the stand-in watermark."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import seaborn as sns  # noqa: E402

from fedrepro.io import atomic_path  # noqa: E402

PALETTE = "colorblind"


def apply_style() -> None:
    sns.set_theme(context="paper", style="whitegrid", palette=PALETTE, font_scale=1.1)
    plt.rcParams.update({"figure.dpi": 110, "savefig.dpi": 150, "savefig.bbox": "tight",
                         "axes.titleweight": "bold", "legend.frameon": False,
                         "pdf.fonttype": 42, "svg.hashsalt": "fedrepro"})


def save_figure(fig, pdf: str | Path, png: str | Path, stand_in: bool = False) -> None:
    """Save PDF and PNG atomically.  Figures made from stand-in data carry a visible mark."""
    if stand_in:
        fig.text(0.5, 0.5, "STAND-IN DATA", fontsize=40, color="red", alpha=0.18, ha="center", va="center",
                 rotation=25, transform=fig.transFigure, zorder=1000)
    for path, fmt in ((pdf, "pdf"), (png, "png")):
        with atomic_path(path) as tmp:
            # fixed metadata so reruns give identical files
            fig.savefig(tmp, format=fmt, metadata={"CreationDate": None} if fmt == "pdf" else {"Software": None})
