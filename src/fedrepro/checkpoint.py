"""A run done in chained blocks, with checkpoints (docs/cluster.md, "Runs longer than the time limit").

A runner whose run is longer than a partition's time limit counts its steps through a `Progress`.  Its loops of
steps (a γ-tuning trial, one method's run for one seed, ...) each have a name and a length, and run in the same
order every time the runner is called:

    cached = progress.cached(name)          # a loop a previous job finished: its result, else None
    state = progress.begin(name, T)         # the saved state of a loop interrupted mid-way, else None
    for t in range(start, T):
        ...                                 # one step
        progress.step(lambda: {...})        # may save a checkpoint (the state the lambda returns), may end the block
    progress.done(name, result)

Block k of K stops the job once the run has made `ceil(total * (k + 1) / K)` of its `total` steps: it writes its
checkpoint (the finished loops' results and the state of the loop in progress) and raises `BlockEnd`; block k + 1
starts from that file.  Within a block a checkpoint is also written every `save_every_s` seconds, beside the block's
output, so a job that is killed (or times out) resumes from it instead of from the block's start.  Every
checkpoint carries the run's key (its parameters and code): one of another run is refused, never resumed from.

The block rules (workflow/scripts/run_block.py) hand a block's `Progress` to the runner as `ctx.blocks`, and
record the block's checkpoint when the runner raises `BlockEnd`; the runners that can run in blocks say so in
their package's `splits` module (`BLOCKS`; fedrepro.workflow.split).

Saving changes nothing a run computes: a run split into blocks, killed and resumed writes the rows the straight
run writes (tests/test_split.py).  Without a block (`Progress()`), every call is a no-op.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class BlockEnd(Exception):
    """This job's block of a chained run is done and its checkpoint written; the next block goes on from it."""


def run_key(params: dict, code: Any = None) -> str:
    """What a checkpoint must have been written by: the run's parameters and the code of its closure."""
    text = json.dumps({"params": params, "code": code}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass
class Block:
    """Which block of a chained run this job is, and its files."""
    index: int                      # k, from 0
    count: int                      # K
    output: str | None              # the checkpoint this block writes (None: the last block, which writes the CSV)
    partial: str                    # the checkpoint written within the block, read by a rerun of this block
    previous: str | None = None     # the checkpoint block k - 1 wrote (None for block 0)

    @property
    def last(self) -> bool:
        return self.index == self.count - 1


class Progress:
    """The position of a run in its loops of steps; saves and restores it (see the module's docstring)."""

    def __init__(self, block: Block | None = None, key: str = "", save_every_s: float = 1800.0, log=print):
        self.block, self.key, self.save_every_s, self.log = block, key, save_every_s, log
        self.total: int | None = None
        self.counter = 0                      # steps made (a finished loop counts its full length)
        self.journal: dict[str, Any] = {}     # name -> result of each finished loop
        self.current: dict | None = None      # {"name", "state"} of the loop in progress at the checkpoint
        self._loop: tuple[str, int, int] | None = None     # (name, first step's counter, length)
        self._saved_at = time.monotonic()
        if block is not None:
            self._restore()

    # ---- what a runner calls ----------------------------------------------------------------------------------
    def start(self, total: int) -> None:
        """The run's total steps (every loop's full length), known once the data is read."""
        if self.block is not None and self.total is not None and self.total != total:
            raise ValueError(f"checkpoint of a run of {self.total} steps; this run has {total}: "
                             "delete the run's .blocks folder and run it again")
        self.total = total

    def cached(self, name: str):
        """The result of loop `name` if a previous job finished it, else None."""
        return self.journal.get(name)

    def begin(self, name: str, length: int) -> dict | None:
        """Loop `name` of `length` steps starts (or goes on): its saved state when the checkpoint was taken in it."""
        state = None
        if self.current is not None and self.current["name"] == name:
            state, self.current = self.current["state"], None
            self._loop = (name, self.counter - state["t"], length)
        else:
            self._loop = (name, self.counter, length)
        return state

    def step(self, state: Callable[[], dict]) -> None:
        """One step of the loop in progress is done; `state()` (with its `t`, the steps done) is what a resumed job
        needs to go on from here."""
        if self.block is None:
            return
        self.counter += 1
        if self._at_block_end():
            self._save(self.block.output, state())
            raise BlockEnd
        if time.monotonic() - self._saved_at >= self.save_every_s:
            self._save(self.block.partial, state())

    def done(self, name: str, result) -> None:
        """Loop `name` is finished (a loop stopped early, by divergence, counts its full length)."""
        if self.block is None:
            return
        _, first, length = self._loop
        self.counter = first + length
        self.journal[name] = result
        self._loop = None
        if self._at_block_end():
            self._save(self.block.output, None)
            raise BlockEnd

    def finish(self) -> None:
        """The run is done.  A block before the last (its steps all made early) still hands its journal on."""
        if self.block is None:
            return
        if self.total is not None and self.counter != self.total:
            raise RuntimeError(f"the run made {self.counter} steps, its plan {self.total}: the step count "
                               "(the runner's `total`) and its loops disagree")
        if not self.block.last:
            self._save(self.block.output, None)
            raise BlockEnd
        Path(self.block.partial).unlink(missing_ok=True)

    # ---- the checkpoint file ----------------------------------------------------------------------------------
    def _at_block_end(self) -> bool:
        if self.block.last or self.total is None:
            return False
        return self.counter >= math.ceil(self.total * (self.block.index + 1) / self.block.count)

    def _save(self, path: str, state: dict | None) -> None:
        import torch

        current = None if state is None else {"name": self._loop[0], "state": state}
        payload = {"key": self.key, "block": self.block.index, "total": self.total, "counter": self.counter,
                   "journal": self.journal, "current": current}
        tmp = f"{path}.tmp"
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        torch.save(payload, tmp)
        os.replace(tmp, path)            # a job killed while saving leaves the previous checkpoint whole
        self._saved_at = time.monotonic()
        if path == self.block.output:
            Path(self.block.partial).unlink(missing_ok=True)
        where = "block end" if path == self.block.output else "within the block"
        self.log(f"checkpoint ({where}) at step {self.counter} of {self.total}: {path}")

    def _restore(self) -> None:
        """From this block's own checkpoint (a rerun of a killed job), else from the previous block's."""
        for path, own in ((self.block.partial, True), (self.block.previous, False)):
            if not path or not Path(path).exists():
                continue
            payload = _load(path)
            if payload.get("key") != self.key:
                if own:               # another run's (parameters or code changed since): start the block again
                    self.log(f"ignored {path}: written by another configuration or code")
                    continue
                raise ValueError(f"{path} was written by another configuration or code than this run's: "
                                 "delete the run's .blocks folder and run it again")
            if own and payload.get("block") != self.block.index:
                continue
            self.total, self.counter = payload["total"], payload["counter"]
            self.journal, self.current = payload["journal"], payload["current"]
            self.log(f"resumed at step {self.counter} of {self.total} from {path}")
            return


def _load(path: str) -> dict:
    import torch

    # our own file (its key is checked next); it holds the finished loops' frames, hence no weights_only.  Tensors
    # come back on the device they were saved from (a run resumes on the kind of node it started on)
    return torch.load(path, weights_only=False)
