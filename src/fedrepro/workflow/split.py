"""Runs longer than a partition allows, as jobs that fit (docs/cluster.md, "Runs longer than the time limit").

A runner may say how its work divides: its package's `splits` module defines a function of the run's parameters
and names it in `RUNNERS = {"<module>:<runner>": "<function>"}` (C-VFL: `fedrepro/cvfl/splits.py`), returning the
levels of division, coarsest first, as `[(label, [overrides, ...]), ...]`.  The workflow imports that module when it
reads the Snakefile, in every job's process too, so it must stay light (no torch, no data): a runner module imported
there put torch's 450 MB into the peak of every paper-scale job.
Each overrides mapping, merged into the configuration's parameters, makes one independent part; the parts' rows,
concatenated in the order given, are the whole configuration's rows (the runner's loops run in that order and each
part seeds its own random streams, so no part depends on another).

A leaderboard board run (parameters with a `board_compressors` list, run by `fedrepro.leaderboard.candidates.run_each`:
one engine call per compressor, each from the configuration's own seeds) divides per compressor without declaring it.

A runner may also run in chained blocks (fedrepro.checkpoint): its `splits` module names it in
`BLOCKS = {"<module>:<runner>": "<function>"}`, a function of the run's parameters giving the most blocks the run
divides into (thesis ch. 3: its epochs, `fedrepro/decentral/splits.py`).

The workflow runs a configuration whose planned runtime request (fedrepro.workflow.plan) exceeds
`cluster.max_runtime_h` as the parts of the coarsest level whose share fits (rule `run_part`, one job each), then
concatenates them (rule `run_merge`) into the CSV the unsplit run writes.  Where even the finest level's share does
not fit and the runner runs in blocks, each part is a chain of jobs (rule `run_block`, then `run_part` for the last
block), each going on from the checkpoint of the one before.  A part or block that finished is kept when a build is
killed or a job times out, and a block killed mid-way goes on from its last checkpoint: the next build runs only
what is missing.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass, field
from pathlib import Path

PARTS_SUFFIX = ".parts"   # results/<scale>/<paper>/runs/<experiment>/<configuration>.parts/p000.csv
BLOCKS_SUFFIX = ".blocks"  # ... .parts/p000.blocks/b000.pt: the checkpoint block 0 of part 0 hands on


@dataclass
class Split:
    """One configuration run as parts: where, why, and each part's parameter overrides."""
    paper: str
    experiment: str
    configuration: str
    scale: str
    label: str                                   # what one part is ("seed x (compressor, b) run")
    overrides: list[dict] = field(default_factory=list)
    hours: float = 0.0                           # the unsplit run's runtime request (h)
    fits: bool = True                            # each job's share within the limit
    blocks: int = 1                              # chained jobs per part (fedrepro.checkpoint)

    @property
    def run(self) -> str:
        """The run's path below results/ without `.csv` (the merge rule's wildcard)."""
        return f"{self.scale}/{self.paper}/runs/{self.experiment}/{self.configuration}"

    def part_names(self) -> list[str]:
        return [part_name(i) for i in range(len(self.overrides))]

    def part_files(self) -> list[str]:
        """Each part's CSV: written by its job (rule run_part), or by the last of its blocks (rule run_last_block)."""
        if self.blocks > 1:
            return [f"results/{self.run}{PARTS_SUFFIX}/{name}{BLOCKS_SUFFIX}/rows.csv" for name in self.part_names()]
        return [f"results/{self.run}{PARTS_SUFFIX}/{name}.csv" for name in self.part_names()]

    def block_names(self) -> list[str]:
        """The blocks of a part that hand on a checkpoint (every one but the last, which writes the part's CSV)."""
        return [block_name(k) for k in range(self.blocks - 1)]

    def block_file(self, part: str, block: str) -> str:
        return f"results/{self.run}{PARTS_SUFFIX}/{part}{BLOCKS_SUFFIX}/{block}.pt"

    def runtime_min(self, limit_h: float) -> int:
        """A job's runtime request: an even share of the unsplit request, at most the limit."""
        share = self.hours * 60 / (len(self.overrides) * self.blocks)
        return max(1, int(min(limit_h * 60, max(10, math.ceil(share)))))


def part_name(index: int) -> str:
    return f"p{index:03d}"


def name_index(name: str) -> int:
    """The index of a part or block named by `part_name` or `block_name` (p003, b003 -> 3)."""
    return int(name[1:])


def block_name(index: int) -> str:
    return f"b{index:03d}"


def split_module(runner: str) -> str:
    """Where a runner's split function lives: its package's `splits` module."""
    return runner.partition(":")[0].rpartition(".")[0] + ".splits"


def split_function_name(root: str | Path, runner: str) -> str | None:
    """The function of the runner's package `splits` module that divides its runs, or None (read without
    importing anything)."""
    from fedrepro.workflow.plan import declared

    return declared(root, split_module(runner), "RUNNERS").get("RUNNERS", {}).get(runner)


def declares_split(root: str | Path, runner: str) -> bool:
    return split_function_name(root, runner) is not None


def max_blocks(root: str | Path, runner: str, params: dict) -> int:
    """The most chained blocks a run of `runner` with these parameters divides into (1: it does not run in blocks)."""
    from fedrepro.workflow.plan import declared

    function = declared(root, split_module(runner), "BLOCKS").get("BLOCKS", {}).get(runner)
    if function is None:
        return 1
    return max(1, int(getattr(importlib.import_module(split_module(runner)), function)(params)))


def board_levels(params: dict) -> list[tuple[str, list[dict]]]:
    """A board run's one level: a part per compressor (`run_each` runs them in turn, independently)."""
    names = params.get("board_compressors")
    return [("compressor", [{"board_compressors": [n]} for n in names])] if isinstance(names, list) else []


def can_split(root: str | Path, runner: str, params: dict) -> bool:
    """The runner declares its split, or the run is a board run."""
    return declares_split(root, runner) or "board_compressors" in params


def split_levels(root: str | Path, runner: str, params: dict) -> list[tuple[str, list[dict]]]:
    """The levels of division of a run with these parameters: the runner's own (imports its `splits` module), else a
    board run's, else none."""
    function = split_function_name(root, runner)
    if function is None:
        return board_levels(params)
    levels = getattr(importlib.import_module(split_module(runner)), function)(params)
    for label, overrides in levels:
        if not overrides or not all(isinstance(o, dict) for o in overrides):
            raise ValueError(f"{runner}: {function} level {label!r} must list one overrides "
                             f"mapping per part, got {overrides!r}")
    return levels


def choose_level(levels: list[tuple[str, list[dict]]], hours: float, limit_h: float) -> tuple[str, list[dict], bool]:
    """The coarsest level whose parts' even share of `hours` fits `limit_h`; else the finest (fits = False)."""
    for label, overrides in levels:
        if hours / len(overrides) <= limit_h:
            return label, overrides, True
    label, overrides = levels[-1]
    return label, overrides, False


def plan_split(registry, measurements, paper: str, experiment: str, configuration: str, scale: str,
               limit_h: float, params: dict | None = None) -> Split | None:
    """The split of one run whose runtime request exceeds `limit_h`, or None (it fits, has no estimate, or its
    runner declares no split).  `params`: the run's resolved parameters (default: the registry's)."""
    from fedrepro.workflow.plan import estimate_run, planned_runtime_min

    spec = registry.run_spec(paper, experiment, scale)
    if params is None:
        params = resolved_params(registry, paper, experiment, configuration, scale)
    if not limit_h or not can_split(registry.root, spec["runner"], params):
        return None
    est = estimate_run(registry, measurements, paper, experiment, configuration, scale)
    if est.wall_hours is None:
        return None
    hours = planned_runtime_min(est.wall_hours) / 60
    if hours <= limit_h:
        return None
    label, overrides, fits, blocks = fit(registry.root, spec["runner"], params, hours, limit_h)
    if len(overrides) * blocks < 2:
        return None
    return Split(paper, experiment, configuration, scale, label, overrides, hours, fits, blocks)


def fit(root: str | Path, runner: str, params: dict, hours: float, limit_h: float):
    """(label, overrides, fits, blocks): the coarsest level whose parts' share of `hours` fits `limit_h`; where none
    does and the runner runs in blocks, each part of the finest level in as many chained blocks as fit the limit
    (at most as many as the run has, `max_blocks`)."""
    levels = split_levels(root, runner, params) or [("run", [{}])]
    label, overrides, fits = choose_level(levels, hours, limit_h)
    blocks = 1
    if not fits:
        from fedrepro.workflow.plan import with_overrides

        most = min(max_blocks(root, runner, with_overrides(params, o)) for o in overrides)
        blocks = min(most, math.ceil(hours / len(overrides) / limit_h))
        fits = hours / len(overrides) / blocks <= limit_h
    return label, overrides, fits, blocks


def resolved_params(registry, paper: str, experiment: str, configuration: str, scale: str) -> dict:
    """A run's parameters as its job sees them: a board's `board_compressors: registered` as the registered names
    but the paper's own (as workflow/rules/common.smk's `run_params`)."""
    from fedrepro.leaderboard.spec import Board, registered_compressors

    params = registry.params(paper, experiment, configuration, scale)
    if params.get("board_compressors") == "registered":
        board = Board.load(registry.root, registry)
        params = {**params, "board_compressors": board.board_compressors(paper, experiment, registered_compressors())}
    return params


def plan_splits(registry, scale: str, limit_h: float, resolve=resolved_params) -> dict[str, Split]:
    """{run path: Split} for every run of `scale` that the workflow runs in parts.  `resolve(registry, paper,
    experiment, configuration, scale)` gives a run's parameters as its job sees them."""
    from fedrepro.workflow.plan import measurements_for, target_runs

    if not limit_h:
        return {}
    runs = [r for r in target_runs(registry, "all", scale)
            if can_split(registry.root, registry.run_spec(r[0], r[1], scale)["runner"], registry.params(*r, scale))]
    if not runs:
        return {}
    measurements = measurements_for(registry.root, registry)
    out = {}
    for paper, experiment, configuration in runs:
        params = resolve(registry, paper, experiment, configuration, scale)
        split = plan_split(registry, measurements, paper, experiment, configuration, scale, limit_h, params)
        if split is not None:
            out[split.run] = split
    return out


def merge_parts(part_csvs: list[str]):
    """The parts' rows in order, as the unsplit run's frame (read back as written: `write_csv` keeps 10 significant
    digits, which a float64 holds exactly, so a merged CSV is byte-identical to the unsplit run's, timings aside)."""
    import pandas as pd

    frames = [pd.read_csv(p) for p in part_csvs]
    return pd.concat(frames, ignore_index=True)
