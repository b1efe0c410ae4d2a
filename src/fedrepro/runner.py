"""The runner contract: an experiment's `runner:` in its registry names a function `run(ctx: RunContext) -> RunResult`.

The one run rule builds the context (parameters, named input files, threads, device, log) and writes what the
runner returns: the tidy CSV, its sidecar, and the sidecars of any side files the runner wrote
(docs/architecture.md, "The run rule and the runner contract").
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fedrepro.runtime import choose_device


@dataclass
class RunContext:
    """Everything a runner gets: what to run, with which parameters, reading which files, on what."""

    paper: str
    experiment: str
    configuration: str
    scale: str
    params: dict                          # the configuration at this scale, plus `seed`
    inputs: dict[str, str]                # `data`: the prepared dataset; one entry per `needs:` name
    output: str                           # the run CSV (side files go beside it)
    threads: int = 1
    device_preference: str = "auto"
    log: logging.Logger = field(default_factory=lambda: logging.getLogger("fedrepro"))
    progress: Callable = field(default=lambda iterable, **kw: iterable)

    @property
    def seed(self) -> int:
        return int(self.params["seed"])

    @property
    def device(self) -> str:
        """cpu or cuda (config key `device`), decided the first time a runner asks."""
        if not hasattr(self, "_device"):
            self._device = choose_device(self.device_preference)
        return self._device

    def side_file(self, suffix: str) -> str:
        """A file written beside the run CSV (e.g. model weights), recorded in its own sidecar."""
        return str(Path(self.output).with_suffix(suffix))


@dataclass
class RunResult:
    """What a runner returns; the run rule writes it.  `rows` is the tidy frame (one row per seed, step, metric)."""

    rows: Any                                           # pandas.DataFrame
    seeds: list[int] | None = None                      # default: [ctx.seed]
    data: dict | None = None                            # dataset -> real|stand-in for data made in the run
    extra: dict = field(default_factory=dict)           # facts for the sidecar (timing, RNG streams, ...)
    inputs: list[str] | None = None                     # the inputs read (default: every ctx.inputs file)
    side_files: list[str] = field(default_factory=list)  # files written beside the CSV


def load_runner(spec: str) -> Callable[[RunContext], RunResult]:
    """'package.module:function' -> the function (the registry's `runner:`)."""
    import importlib

    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def verified_side_file(run_csv: str, suffix: str) -> str:
    """A side file written beside another run's CSV (e.g. `.pt` weights), checked against its own sidecar first:
    Snakemake tracks the CSV, so a side file changed since its run is refused rather than built upon."""
    from fedrepro.provenance.hashing import sha256_file
    from fedrepro.provenance.sidecar import read_sidecar

    path = str(Path(run_csv).with_suffix(suffix))
    record = read_sidecar(path)
    if not Path(path).exists() or record is None:
        raise FileNotFoundError(f"{path} (written by the run of {run_csv}) or its sidecar is missing; rebuild it: "
                                f"snakemake --cores 2 {run_csv} --forcerun run")
    actual = sha256_file(path)
    if actual != record["sha256"]:
        raise RuntimeError(f"{path} changed since its run recorded it (sha256 {actual[:12]}… != recorded "
                           f"{record['sha256'][:12]}…); rebuild it: snakemake --cores 2 {run_csv} --forcerun run")
    return path
