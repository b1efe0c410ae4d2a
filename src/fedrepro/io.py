"""Atomic file writes: a half-written file never sits where a later step would trust it.

The file gets the mode a plain ``open(path, "w")`` would give it (0666 less the umask), not mkstemp's
owner-only 0600: on a shared cluster file system the group can then read results (umask 002 or 022).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path


def current_umask() -> int:
    """The process umask, read without changing it where /proc allows (os.umask can only set it)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)      # set and restore: the only portable way to read it
    os.umask(mask)
    return mask


def new_file_mode() -> int:
    return 0o666 & ~current_umask()


@contextlib.contextmanager
def atomic_path(final: str | Path, suffix: str | None = None):
    """Yield a temporary path beside `final`; move it into place only if the block succeeds."""
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.", suffix=suffix or final.suffix + ".part", dir=final.parent)
    try:
        os.fchmod(fd, new_file_mode())      # mkstemp makes 0600; the umask decides, as for any other file
    finally:
        os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, final)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_text(path: str | Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def write_json(path: str | Path, obj) -> None:
    write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


# Timings in run CSVs.  They are measurements (CPU time on a CPU, wall time on a GPU: fedrepro.runtime.compute_clock),
# so they differ between two runs of one configuration; every other cell of a run CSV is byte-identical between runs
# on one machine (tests/test_timing_columns.py).  A timing is either a whole column or the `value` of a tidy row whose
# `metric` matches one of TIMING_METRICS (fnmatch patterns).  Add a new timing here, nowhere else.
TIMING_COLUMNS = ("seconds_per_iter",)                  # thesis ch. 3 (decentral): measured compute per iteration
TIMING_METRICS = ("time",                               # gcca Figs. 3-8: cumulative simulated-parallel clock
                  "wall_seconds",                       # adept Table 3: one training's time
                  "s_per_iter_*", "build_s", "mvlsa_s")  # gcca Europarl: per iteration of each method; set-up


def timing_cells(frame):
    """A boolean frame: True where `frame` (a run CSV) holds a timing (TIMING_COLUMNS, TIMING_METRICS)."""
    import fnmatch

    import pandas as pd

    mask = pd.DataFrame(False, index=frame.index, columns=frame.columns)
    for column in TIMING_COLUMNS:
        if column in frame:
            mask[column] = True
    if "metric" in frame and "value" in frame:
        mask["value"] |= frame["metric"].map(lambda m: any(fnmatch.fnmatchcase(str(m), p) for p in TIMING_METRICS))
    return mask


def without_timings(frame):
    """`frame` with every timing cell blanked: what the byte-identity promise covers."""
    return frame.mask(timing_cells(frame))


def write_csv(path: str | Path, frame) -> None:
    """Deterministic CSV (no index, fixed float format) so reruns are byte-identical, timings aside (TIMING_*)."""
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False, float_format="%.10g", lineterminator="\n")
