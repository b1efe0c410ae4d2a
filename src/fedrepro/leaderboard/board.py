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
# δ = ω as docs/comm.md defines them (the contraction E||C(x) - x||^2 <= (1 - δ)||x||^2; fedrepro.leaderboard.measure)
MEASURED = {"delta": "δ = ω (measured)", "error": "E‖C(x)−x‖²/‖x‖² (measured)", "bits_per_entry": "bits/entry"}


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
            if key == "delta" and not note and not np.isfinite(r.get("delta", np.nan)):
                note = (f"n/a: no contraction (E‖C(x)−x‖² = {r['error']:.3g}‖x‖²); "
                        f"C/(1+{r['error']:.3g}) has δ = {r['delta_scaled']:.3g}")
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
    frame = frame.sort_values(["rank"], kind="stable").drop(columns="rank").reset_index(drop=True)
    frame["better"] = frame.column.map(better)
    frame["rank"] = column_ranks(frame)
    return frame


BELOW_REGIME = "† target below regime at this scale"


def below_regime(root: str | Path, claims_files: dict[str, str], settings: dict) -> dict[str, str]:
    """setting -> why its numbers are below the regime the paper's claims need at this scale (its figure's claims
    judged `not-comparable` for "regime not reached" under the setting's own configuration; thesis Fig. 3.2's
    target near chance), read from the figure's claims CSV; settings whose claims reach it are left out."""
    from fedrepro.artifact import claim_base
    from fedrepro.scorecard.reasons import NOT_REACHED

    out = {}
    for name, path in claims_files.items():
        if not (Path(root) / path).is_file():
            continue
        claims = pd.read_csv(Path(root) / path, dtype=str, keep_default_na=False)
        conf = settings[name]["own"]["configuration"]
        hit = claims[claims.reason.str.startswith(NOT_REACHED) & (claims.verdict == "not-comparable")
                     & claims.configuration.isin([conf, ""])]
        if not hit.empty:
            ids = ", ".join(dict.fromkeys(hit.claim.map(claim_base)))
            why = hit.reason.iloc[0][len(NOT_REACHED):].lstrip(": ").split(" (tested ")[0]
            out[name] = f"{settings[name]['label']}, claims {ids}: {why}"
    return out


def better(column: str) -> str:
    """Which way a column is better: "higher" for δ (a contraction closer to 1 loses less), "lower" for every
    other (bits, communication cost, f/v*, the measured error)."""
    return "higher" if column == MEASURED["delta"] else "lower"


def column_ranks(frame: pd.DataFrame) -> pd.Series:
    """Each compressor's rank within its (setting, column), 1 = best; ties share the best rank ("min"); a cell
    with no number (n/a, not reached) has none (NaN)."""
    out = pd.Series(np.nan, index=frame.index)
    for _, g in frame.groupby(["setting", "column"], sort=False):
        out[g.index] = g.value.rank(method="min", ascending=g.better.iloc[0] == "lower")
    return out


def _exp(path: str) -> str:
    return Path(path).parent.name


def column_order(frame: pd.DataFrame) -> list[tuple[str, str]]:
    """(setting, column) in config/leaderboard.yaml's order of settings, then the measured ones."""
    seen = list(dict.fromkeys(zip(frame.setting, frame.column)))
    rank = {s: i for i, s in enumerate((*SETTINGS, "comm"))}
    return sorted(seen, key=lambda sc: rank.get(sc[0], len(rank)))


def _cell(value: float, note: str, own: bool, rank: float = np.nan) -> str:
    if isinstance(note, str) and note.startswith("n/a"):
        return note
    if not np.isfinite(value):
        return f"not reached ({note})" if isinstance(note, str) and note else "–"
    text = f"{value:.3g}" if abs(value) < 1e4 else f"{value:.3e}"
    if np.isfinite(rank):
        text += f" (#{int(rank)})"
    return f"{text} ★" if own else text


def _head(settings: dict, setting: str, column: str, regime: dict | None = None) -> str:
    head = f"{settings[setting]['label']}: {column}" if setting in settings else column
    return f"{head} ({better(column)} is better)" + (" †" if setting in (regime or {}) else "")


def wide(frame: pd.DataFrame, settings: dict, regime: dict | None = None) -> pd.DataFrame:
    """One row per compressor; a cell per (setting, column) with its rank in that column (#1 best); ★: the
    paper's own compressor (its figure's number); †: a column below the regime (`below_regime`)."""
    if "rank" not in frame:
        frame = frame.assign(better=frame.column.map(better))
        frame["rank"] = column_ranks(frame)
    cols = column_order(frame)
    out = []
    for c, g in frame.groupby("compressor", sort=False):
        row = {"compressor": c, "label": g.label.iloc[0]}
        for s, col in cols:
            cell = g[(g.setting == s) & (g.column == col)]
            row[_head(settings, s, col, regime)] = (_cell(float(cell.value.iloc[0]), cell.note.iloc[0], bool(cell.own.iloc[0]),
                                                  float(cell["rank"].iloc[0])) if len(cell) else "")
        out.append(row)
    return pd.DataFrame(out)


def markdown(frame: pd.DataFrame, settings: dict, scale: str, regime: dict | None = None) -> str:
    from fedrepro.plotting.tables import markdown_table

    lines = [f"# Leaderboard ({scale} scale): every registered compressor in each work's comparison setting", "",
             "★: the paper's own compressor, its figure's number.  (#n): the rank in that column, #1 best; each "
             "column's heading says which way is better (δ higher, every other column lower).  \"not reached\": "
             "the run did not reach the setting's target, so it has no number.  δ = ω as docs/comm.md defines "
             "them: E‖C(x)−x‖² ≤ (1 − δ)‖x‖², measured on random vectors for the operator as registered (an "
             "unbiased one with E‖C(x)−x‖² ≥ ‖x‖² is no contraction: its cell gives δ of C/(1+e) instead).", ""]
    for name, s in settings.items():
        lines.append(f"- **{s['label']}**: {s['value']}")
    lines.append("")
    for why in (regime or {}).values():
        lines += [f"{BELOW_REGIME}: {why}; its ranks compare the compressors at this scale's target, not the "
                  "paper's.", ""]
    return "\n".join(lines) + markdown_table(wide(frame, settings, regime)) + "\n"


def figure(frame: pd.DataFrame, settings: dict, title: str = "", regime: dict | None = None):
    """One horizontal bar panel per column (log scale where the values span more than a decade); a column below
    the regime (`below_regime`) says so under its title."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

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
        ranks = sub["rank"] if "rank" in sub else pd.Series(dtype=float)
        for i, n in enumerate(names):
            own = n in sub.index and bool(sub.own.get(n, False))
            star = " ★" if own else ""
            if not np.isfinite(vals[i]):
                # why there is no bar: "n/a" (does not apply) or "not reached" (ran, missed the target: a hatched
                # bar across the panel, so it never reads as an empty or a zero bar)
                note = str(sub.note.get(n, "")) if n in sub.index else ""
                if n not in sub.index:
                    continue
                if note.startswith("n/a"):
                    ax.text(0.01, i, "n/a" + star, va="center", fontsize=6.5, color="0.35",
                            transform=ax.get_yaxis_transform())
                    continue
                ax.add_patch(Rectangle((0, i - 0.35), 1, 0.7, transform=ax.get_yaxis_transform(), fill=False,
                                       hatch="////", edgecolor=palette[n], lw=0.6))
                ax.text(0.02, i, "not reached" + star, va="center", fontsize=6.5, color="0.1",
                        transform=ax.get_yaxis_transform(),
                        bbox={"boxstyle": "square,pad=0.1", "facecolor": "white", "edgecolor": "none"})
                continue
            rank = ranks.get(n, np.nan)
            text = (f" #{int(rank)}" if np.isfinite(rank) else "") + star
            if vals[i] == 0 or not shown[i]:
                ax.text(0.01, i, f"{vals[i]:g}" + text, va="center", fontsize=6.5,
                        transform=ax.get_yaxis_transform())
            else:
                ax.text(vals[i], i, text, va="center", fontsize=6.5)
        if log:
            from matplotlib.ticker import LogLocator, NullFormatter

            ax.set_xscale("log")
            ax.xaxis.set_major_locator(LogLocator(numticks=5))
            ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_yticks(y, [n for n in names], fontsize=7)
        ax.set_ylim(len(names) - 0.5, -0.5)   # every compressor's row, also where no bar is drawn
        head = settings[s]["label"] if s in settings else "fedrepro.comm"
        note = f"\n{BELOW_REGIME}" if s in (regime or {}) else ""
        ax.set_title(f"{head}\n{col}\n{better(col)} is better (#1 best){note}", fontsize=8,
                     **({"color": "#9a6700"} if note else {}))
        ax.tick_params(axis="x", labelsize=7)
    for ax in axes[len(cols):]:
        ax.set_visible(False)
    fig.tight_layout(rect=(0, 0, 1, 0.985 if title else 1))
    if title:
        fig.suptitle(title, fontsize=9, y=0.998)
    return fig


def leaderboard(root, scale: str, outputs: dict, plugins=None):
    """The notebook's one call: import the plugins, build, write the CSV, the Markdown and the figure."""
    from fedrepro.artifact import uses_stand_in
    from fedrepro.comm.plugins import import_plugins
    from fedrepro.io import write_csv, write_text
    from fedrepro.plotting.style import save_figure
    from fedrepro.registry.papers import Registry

    import_plugins(plugins, root=Path(root))
    registry = Registry.load(root, check=False)
    board = Board.load(root, registry)
    frame = build(root, scale, registry, board)
    by_setting = {s: [f for f in fs if (Path(root) / f).is_file()] for s, fs in board.run_files(scale, registry).items()}
    marked = {s for s, fs in by_setting.items() if uses_stand_in(root, fs)}   # settings whose runs use a stand-in
    stand_in = bool(marked)
    write_csv(outputs["csv"], frame)
    regime = below_regime(root, board.claims_files(scale, registry), board.settings)
    text = markdown(frame, board.settings, scale, regime)
    if stand_in:
        names = ", ".join(board.settings[s]["label"] for s in board.settings if s in marked)
        text = text.replace("\n\n", f"\n\nSome runs use stand-in data ({names}; see each figure's page).\n\n", 1)
    write_text(outputs["md"], text)
    fig = figure(frame, board.settings, title=f"fedrepro leaderboard ({scale} scale): ★ = the paper's own compressor",
                 regime=regime)
    # the mark on the panels of the settings made from stand-in data only (the measured δ panels use no dataset)
    panels = [ax for ax, (s, _) in zip(fig.axes, column_order(frame)) if s in marked]
    save_figure(fig, outputs["pdf"], outputs["png"], stand_in=panels)
    return frame


def scratch_outputs(root, scale: str) -> dict[str, str]:
    """Where a notebook opened by hand writes (never over the workflow's outputs)."""
    base = Path(root) / "results" / scale / "scratch"
    base.mkdir(parents=True, exist_ok=True)
    return {x: str(base / f"leaderboard.{x}") for x in ("csv", "md", "png", "pdf")}
