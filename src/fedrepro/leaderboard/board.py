"""The leaderboard: every registered compressor x each work's number, plus its measured δ and ω.

`build(...)` -> the long frame written as results/<scale>/leaderboard.csv (one row per compressor, setting and
column: value, note, the method that produced it and whether it came from the paper's `figure` run or the `board`
run); `markdown(frame)` the wide table (leaderboard.md: one row per compressor, the papers' own first, a cell
"n/a: <why>" where a compressor does not apply); `figure(frame)` one panel per column, bars coloured by
`fedrepro.plotting.color` (a user's compressor gets the fallback palette).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from fedrepro.leaderboard.measure import measure
from fedrepro.leaderboard.metrics import COLUMNS, METRICS, SettingContext
from fedrepro.leaderboard.spec import SETTINGS, Board, compressor_order, registered_compressors

NEEDS_OWN = ("cvfl", "ch3")   # settings whose target is read off the figure's run (gcca, ch4: fixed levels)
MEASURED = {"delta": "δ (measured)", "omega": "ω (measured)", "bits_per_entry": "bits/entry"}


def _read(files: list[str], root: Path) -> pd.DataFrame | None:
    frames = [pd.read_csv(root / f) for f in files if (root / f).is_file()]
    return pd.concat(frames, ignore_index=True) if frames else None


def build(root: str | Path, scale: str, registry, board: Board | None = None) -> pd.DataFrame:
    """The long leaderboard frame of one scale, from the run CSVs config/leaderboard.yaml names."""
    root = Path(root)
    board = board or Board.load(root, registry)
    files = board.run_files(scale, registry)
    rows = []
    for name, s in board.settings.items():
        own_files = [f for f in files[name] if f"/runs/{_exp(f)}/" in f and _exp(f) not in s["board"]["experiments"]]
        board_files = [f for f in files[name] if _exp(f) in s["board"]["experiments"]]
        own = _read(own_files, root)
        if own is None and name in NEEDS_OWN:   # the target comes from the figure's run
            continue
        ctx = SettingContext(name, s, scale, registry)
        rows += METRICS[name](own, _read(board_files, root), ctx)
    m = board.spec.get("measure") or {}
    for c in registered_compressors():
        r = measure(c, d=int(m.get("d", 100)), draws=int(m.get("draws", 400)), vectors=int(m.get("vectors", 4)),
                    seed=int(m.get("seed", 0)), knobs=m.get("knobs"))
        for key, col in MEASURED.items():
            note = r.get("note", "")
            if key == "omega" and not note and not r.get("unbiased"):
                note = "n/a: biased (ω is the variance of an unbiased compressor)"
            rows.append({"setting": "comm", "column": col, "compressor": c, "value": r.get(key, np.nan),
                         "note": note, "method": r.get("params", ""), "source": "measured"})
    frame = pd.DataFrame(rows, columns=COLUMNS)
    setting_rank = {s: i for i, s in enumerate([*board.settings, "comm"])}
    frame = frame.sort_values("setting", key=lambda s: s.map(setting_rank), kind="stable")
    order = compressor_order(board, registered_compressors())
    frame["rank"] = frame.compressor.map({c: i for i, c in enumerate(order)}).fillna(len(order))
    frame["own"] = [c in board.own_compressors(s) if s in board.settings else False
                    for c, s in zip(frame.compressor, frame.setting)]
    from fedrepro.plotting import label

    frame.insert(3, "label", frame.compressor.map(label))
    return frame.sort_values(["rank"], kind="stable").drop(columns="rank").reset_index(drop=True)


def _exp(path: str) -> str:
    return Path(path).parent.name


def column_order(frame: pd.DataFrame) -> list[tuple[str, str]]:
    """(setting, column) in config/leaderboard.yaml's order of settings, then the measured ones."""
    seen = list(dict.fromkeys(zip(frame.setting, frame.column)))
    rank = {s: i for i, s in enumerate((*SETTINGS, "comm"))}
    return sorted(seen, key=lambda sc: rank.get(sc[0], len(rank)))


def _cell(value: float, note: str, own: bool) -> str:
    if isinstance(note, str) and note.startswith("n/a"):
        return note
    if not np.isfinite(value):
        return f"– ({note})" if isinstance(note, str) and note else "–"
    text = f"{value:.3g}" if abs(value) < 1e4 else f"{value:.3e}"
    return f"{text} ★" if own else text


def wide(frame: pd.DataFrame, settings: dict) -> pd.DataFrame:
    """One row per compressor; a cell per (setting, column); ★: the paper's own compressor (its figure's number)."""
    cols = column_order(frame)
    out = []
    for c, g in frame.groupby("compressor", sort=False):
        row = {"compressor": c, "label": g.label.iloc[0]}
        for s, col in cols:
            cell = g[(g.setting == s) & (g.column == col)]
            head = f"{settings[s]['label']}: {col}" if s in settings else col
            row[head] = _cell(float(cell.value.iloc[0]), cell.note.iloc[0], bool(cell.own.iloc[0])) if len(cell) else ""
        out.append(row)
    return pd.DataFrame(out)


def markdown(frame: pd.DataFrame, settings: dict, scale: str) -> str:
    from fedrepro.plotting.tables import markdown_table

    lines = [f"# Leaderboard ({scale} scale): every registered compressor in each work's comparison setting", "",
             "★: the paper's own compressor, its figure's number.  Lower is better for bits and f/v*; δ is "
             "measured on random vectors (1/(1+ω) for an unbiased one), ω only for unbiased compressors.", ""]
    for name, s in settings.items():
        lines.append(f"- **{s['label']}**: {s['value']}")
    lines.append("")
    return "\n".join(lines) + markdown_table(wide(frame, settings)) + "\n"


def figure(frame: pd.DataFrame, settings: dict, title: str = ""):
    """One horizontal bar panel per column (log scale where the values span more than a decade)."""
    from matplotlib.figure import Figure

    from fedrepro.plotting import colors

    cols = column_order(frame)
    names = list(dict.fromkeys(frame.compressor))
    palette = colors(names)
    ncol = 3
    nrow = int(np.ceil(len(cols) / ncol))
    fig = Figure(figsize=(4.2 * ncol, 0.28 * len(names) * nrow + 1.2 * nrow))
    axes = fig.subplots(nrow, ncol, squeeze=False).ravel()
    for ax, (s, col) in zip(axes, cols):
        sub = frame[(frame.setting == s) & (frame.column == col)].set_index("compressor")
        y = np.arange(len(names))
        vals = np.array([float(sub.value.get(n, np.nan)) for n in names])
        finite = vals[np.isfinite(vals) & (vals > 0)]
        log = len(finite) > 1 and finite.max() / finite.min() > 10
        shown = np.isfinite(vals) & ((vals > 0) | (not log))
        ax.barh(y[shown], vals[shown], color=[palette[n] for n, s in zip(names, shown) if s])
        for i, n in enumerate(names):
            own = n in sub.index and bool(sub.own.get(n, False))
            if not np.isfinite(vals[i]):
                # why there is no bar: "n/a" (does not apply) or "not reached" (ran, missed the target)
                note = str(sub.note.get(n, "")) if n in sub.index else ""
                text = "n/a" if note.startswith("n/a") else ("not reached" if n in sub.index else "")
                ax.text(0.01, i, text + (" ★" if own and text else ""), va="center", fontsize=6.5, color="0.35",
                        transform=ax.get_yaxis_transform())
            elif vals[i] == 0 or not shown[i]:
                ax.text(0.01, i, f"{vals[i]:g}" + (" ★" if own else ""), va="center", fontsize=6.5,
                        transform=ax.get_yaxis_transform())
            elif own:
                ax.text(vals[i], i, " ★", va="center", fontsize=7)
        if log:
            from matplotlib.ticker import LogLocator, NullFormatter

            ax.set_xscale("log")
            ax.xaxis.set_major_locator(LogLocator(numticks=5))
            ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_yticks(y, [n for n in names], fontsize=7)
        ax.set_ylim(len(names) - 0.5, -0.5)   # every compressor's row, also where no bar is drawn
        head = settings[s]["label"] if s in settings else "fedrepro.comm"
        ax.set_title(f"{head}\n{col}", fontsize=8)
        ax.tick_params(axis="x", labelsize=7)
    for ax in axes[len(cols):]:
        ax.set_visible(False)
    fig.tight_layout(rect=(0, 0, 1, 0.985 if title else 1))
    if title:
        fig.suptitle(title, fontsize=9, y=0.998)
    return fig


def leaderboard(root, scale: str, outputs: dict, plugins=None):
    """The notebook's one call: import the plugins, build, write the CSV, the Markdown and the figure."""
    from fedrepro.io import write_csv, write_text
    from fedrepro.notebook import uses_stand_in
    from fedrepro.plotting.style import save_figure
    from fedrepro.plugins import import_plugins
    from fedrepro.registry import Registry

    import_plugins(plugins, root=Path(root))
    registry = Registry.load(root, check=False)
    board = Board.load(root, registry)
    frame = build(root, scale, registry, board)
    files = [f for fs in board.run_files(scale, registry).values() for f in fs if (Path(root) / f).is_file()]
    stand_in = uses_stand_in(root, files)
    write_csv(outputs["csv"], frame)
    text = markdown(frame, board.settings, scale)
    if stand_in:
        text = text.replace("\n\n", "\n\nSome runs use stand-in data (see each figure's page).\n\n", 1)
    write_text(outputs["md"], text)
    fig = figure(frame, board.settings, title=f"fedrepro leaderboard ({scale} scale): ★ = the paper's own compressor")
    save_figure(fig, outputs["pdf"], outputs["png"], stand_in=stand_in)
    return frame


def scratch_outputs(root, scale: str) -> dict[str, str]:
    """Where a notebook opened by hand writes (never over the workflow's outputs)."""
    base = Path(root) / "results" / scale / "scratch"
    base.mkdir(parents=True, exist_ok=True)
    return {x: str(base / f"leaderboard.{x}") for x in ("csv", "md", "png", "pdf")}
