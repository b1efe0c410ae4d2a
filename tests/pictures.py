"""What a reader checks first on a figure, made testable: every legend entry is visibly drawn, the PNG is not blank.

A figure is redrawn by executing its notebook's cells in this process (the parameters cell replaced, outputs
sent to a scratch folder), so the test inspects the same matplotlib objects the render job saved.  A legend
entry counts as drawn when an artist of the figure with its label, or for a proxy entry (a legend built from
stand-alone handles) an artist of the same colour, line style and marker, has a finite point inside its axes.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np


# ---- running a notebook without a kernel --------------------------------------------------------------------
def notebook_figures(root: Path, notebook: Path, scale: str, outputs: dict[str, str]) -> list:
    """The figures a notebook's cells evaluate to (each cell's last expression), with its parameters replaced."""
    import jupytext
    from matplotlib.figure import Figure

    namespace: dict = {}
    figures = []
    for cell in jupytext.read(notebook).cells:
        if cell.cell_type != "code":
            continue
        if "parameters" in cell.metadata.get("tags", []):
            namespace.update(root=str(root), scale=scale, configuration="calibrated", run_files=None, outputs=outputs)
            continue
        tree = ast.parse(cell.source)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        exec(compile(tree, str(notebook), "exec"), namespace)  # noqa: S102  (our own notebook)
        if last is not None:
            value = eval(compile(ast.Expression(last.value), str(notebook), "eval"), namespace)  # noqa: S307
            if isinstance(value, Figure):
                figures.append(value)
    return figures


# ---- legend entries and the artists that draw them ----------------------------------------------------------
def _display_points(artist) -> np.ndarray:
    """An artist's data points in display (pixel) coordinates; empty when it has none."""
    from matplotlib.collections import Collection
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    with np.errstate(all="ignore"):
        if isinstance(artist, Line2D):
            xy = np.asarray(artist.get_xydata(), dtype=float)
            return artist.get_transform().transform(xy) if xy.size else np.empty((0, 2))
        if isinstance(artist, Collection):
            offsets = np.asarray(artist.get_offsets(), dtype=float)
            pts = [artist.get_offset_transform().transform(offsets)] if offsets.size else []
            pts += [artist.get_transform().transform(p.vertices) for p in artist.get_paths() if len(p.vertices)]
            return np.concatenate(pts) if pts else np.empty((0, 2))
        if isinstance(artist, Patch):
            return artist.get_transform().transform(artist.get_path().vertices)
    return np.empty((0, 2))


def drawn_inside(artist) -> bool:
    """A finite point of the artist lies inside its axes (1 px tolerance): it is visible, not off the range."""
    ax = artist.axes
    if ax is None or not artist.get_visible():
        return False
    from matplotlib.lines import Line2D

    pts = _display_points(artist)
    pts = pts[np.isfinite(pts).all(axis=1)] if pts.size else pts
    if not pts.size:
        return False
    box = ax.get_window_extent()
    inside = pts[(pts[:, 0] >= box.x0 - 1) & (pts[:, 0] <= box.x1 + 1)
                 & (pts[:, 1] >= box.y0 - 1) & (pts[:, 1] <= box.y1 + 1)]
    if isinstance(artist, Line2D) and artist.get_marker() in (None, "None", "", " ", "none"):
        # a line without markers shows nothing from one point: it needs a segment at least a pixel long inside
        if artist.get_linestyle() in ("None", "", " ", "none") or len(inside) < 2:
            return False
        return bool(np.ptp(inside, axis=0).max() >= 1.0)
    return len(inside) > 0


def _artists(fig) -> list[tuple[str, object]]:
    """(label, artist) of everything drawn; a container's (bars, error bars) parts carry the container's label."""
    out = []
    for ax in fig.axes:
        out += [(a.get_label(), a) for a in (*ax.lines, *ax.collections, *ax.patches)]
        for container in ax.containers:
            out += [(container.get_label(), a) for a in container.get_children() if a is not None]
    return out


_NO_LINE = (None, "None", "", " ", "none")


def _rgb(colour):
    from matplotlib.colors import to_rgba

    try:
        return tuple(np.round(to_rgba(colour)[:3], 3))
    except (ValueError, TypeError):
        return None


def _colours(artist) -> set:
    """The colours an artist is drawn in (line colour, face and edge colours)."""
    from matplotlib.lines import Line2D

    if isinstance(artist, Line2D):
        return {_rgb(artist.get_color()), _rgb(artist.get_markerfacecolor()), _rgb(artist.get_markeredgecolor())}
    out = set()
    for colours in (artist.get_facecolor(), artist.get_edgecolor()):
        colours = np.atleast_2d(colours) if np.size(colours) else []
        out |= {_rgb(c) for c in colours}
    return out


def _is_line(artist) -> bool:
    from matplotlib.lines import Line2D

    return isinstance(artist, Line2D)


def _matches_proxy(handle, artist) -> bool:
    """A proxy legend entry (a handle drawn nowhere) against a drawn artist.

    A coloured proxy means "what is drawn in this colour" (and, for a line, this line style).  A grey proxy is
    a style key ("dashed = the other target", "open triangle = not reached"): any artist with that line style,
    or for a marker-only key any artist that draws markers, in the legend's axes."""
    line = _is_line(handle)
    colour = _rgb(handle.get_color() if line else handle.get_facecolor())
    grey = colour is not None and max(colour) - min(colour) < 1e-3
    marker_only = line and handle.get_linestyle() in _NO_LINE
    if not grey:
        same_colour = colour in _colours(artist)
        if line and not marker_only and _is_line(artist):
            return same_colour and artist.get_linestyle() == handle.get_linestyle()
        return same_colour
    if marker_only:
        return not _is_line(artist) or artist.get_marker() not in _NO_LINE
    if line:
        return _is_line(artist) and artist.get_linestyle() == handle.get_linestyle()
    return colour in _colours(artist)


def legend_entries(fig) -> list[tuple[str, object, object]]:
    """(label, legend handle, the legend's axes or None for a figure legend) of every legend entry."""
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None] + list(fig.legends)
    out = []
    for legend in legends:
        handles = getattr(legend, "legend_handles", None) or getattr(legend, "legendHandles", [])
        owner = legend.axes if legend in [ax.get_legend() for ax in fig.axes] else None
        out += [(text.get_text(), handle, owner) for text, handle in zip(legend.get_texts(), handles)]
    return out


def undrawn_legend_entries(fig) -> list[str]:
    """The labels of legend entries that no visible artist inside the plotted range draws."""
    fig.canvas.draw()          # final limits and layout
    artists = _artists(fig)
    missing = []
    for label, handle, owner in legend_entries(fig):
        candidates = [a for name, a in artists if name == label]
        if not candidates and handle is not None:
            near = [a for _, a in artists if owner is None or a.axes in _twins(owner)]
            candidates = [a for a in near if _matches_proxy(handle, a)]
        if not any(drawn_inside(a) for a in candidates):
            missing.append(label if candidates else f"{label} (no artist with this label or look)")
    return missing


def _twins(ax) -> list:
    """An axes and the axes sharing its position (twinx/twiny), whose artists its legend may describe."""
    return [a for a in ax.figure.axes if a is ax or a.get_position().bounds == ax.get_position().bounds]


# ---- the PNG ------------------------------------------------------------------------------------------------
def blank_fraction(png: Path) -> float:
    """The fraction of pixels equal to the most common colour (the background): 1.0 is a blank image."""
    from matplotlib.image import imread

    img = imread(png)
    pixels = np.round(img[..., :3].reshape(-1, 3) * 255).astype(np.int32)
    codes = pixels[:, 0] * 65536 + pixels[:, 1] * 256 + pixels[:, 2]
    return float(np.bincount(codes).max() / codes.size)
