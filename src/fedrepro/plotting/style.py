"""The one figure style of fedrepro (`fedrepro.mplstyle`), and saving with the stand-in watermark.

The library never picks a matplotlib backend: the render rule sets `MPLBACKEND` for the notebook kernel
(inline, so the executed notebook shows its figures), and a script or a test gets matplotlib's default.
"""

from __future__ import annotations

from pathlib import Path

STYLE = Path(__file__).with_name("fedrepro.mplstyle")


def apply_style() -> None:
    """Use the project style for every figure drawn after this call."""
    import matplotlib.pyplot as plt

    plt.style.use(STYLE)


def save_figure(fig, pdf: str | Path, png: str | Path, stand_in: bool = False, reencoded: bool = False) -> None:
    """Save PDF and PNG atomically.  Figures made from stand-in data carry a visible mark; figures made from a lossy
    copy of the real images (data kind real-reencoded) a lighter one (the stand-in mark wins where both apply)."""
    from fedrepro.io import atomic_path

    if stand_in:
        fig.text(0.5, 0.5, "STAND-IN DATA", fontsize=40, color="red", alpha=0.18, ha="center", va="center",
                 rotation=25, transform=fig.transFigure, zorder=1000)
    elif reencoded:
        fig.text(0.5, 0.5, "RE-ENCODED JPEG", fontsize=32, color="0.35", alpha=0.12, ha="center", va="center",
                 rotation=25, transform=fig.transFigure, zorder=1000)
    for path, fmt in ((pdf, "pdf"), (png, "png")):
        with atomic_path(path) as tmp:
            # fixed metadata so reruns give identical files
            fig.savefig(tmp, format=fmt, metadata={"CreationDate": None} if fmt == "pdf" else {"Software": None})
