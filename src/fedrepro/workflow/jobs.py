"""What every workflow script does around its call into the library: logging, threads, sidecars, cost.

Takes the `snakemake` object that Snakemake's `script:` directive provides (duck-typed: this
package never imports Snakemake).
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from fedrepro.provenance.sidecar import now_iso, write_sidecars
from fedrepro.provenance.verify import verify_inputs
from fedrepro.runtime import choose_device, device_description, limit_threads


@dataclass
class RuleRun:
    sm: object
    started: str = field(default_factory=now_iso)
    device: str = "cpu"

    @property
    def log(self) -> logging.Logger:
        return logging.getLogger("fedrepro")

    def progress(self, iterable, **kw):
        """tqdm into the rule's log (stderr is redirected there), at most every 2 s."""
        return tqdm(iterable, file=sys.stderr, mininterval=2.0, **kw)

    def sidecars(self, outputs, *, inputs=(), config=None, seeds=None, data=None, extra=None):
        return write_sidecars(outputs, rule=self.sm.rule, inputs=inputs, config=config, seeds=seeds,
                              started=self.started, device=device_description(self.device), data=data, extra=extra,
                              code=getattr(self.sm.params, "code", None))


@contextlib.contextmanager
def rule_run(sm, use_torch_device: bool = False, inputs=None):
    """Redirect output to the rule's log, cap threads, pick the device; yields a RuleRun.

    `inputs` (e.g. ``sm.input``): checked with `verify_inputs` first, so a job never reads a file whose bytes
    changed since its sidecar was written (the error names the file, both hashes and the rebuild command).
    """
    from fedrepro.workflow.orphans import exit_with_parent

    exit_with_parent()              # a job whose Snakemake was killed (kill -9) stops instead of writing outputs
    t0, c0 = time.perf_counter(), time.process_time()
    log_path = Path(sm.log[0]) if len(sm.log) else None
    stream = open(log_path, "w") if log_path else None
    old_out, old_err = sys.stdout, sys.stderr
    if stream:
        sys.stdout = sys.stderr = stream
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", force=True)
    try:
        if inputs is not None:
            verify_inputs(inputs)
        limit_threads(sm.threads)
        run = RuleRun(sm)
        if use_torch_device:
            run.device = choose_device(sm.config.get("device", "auto"))
        run.log.info("rule %s started on %s with %d thread(s)", sm.rule, device_description(run.device), sm.threads)
        yield run
        run.log.info("rule %s finished (%.1f s, %.1f CPU s in this process)", sm.rule, time.perf_counter() - t0,
                     time.process_time() - c0)
    except BaseException:
        logging.getLogger("fedrepro").exception("rule %s failed", sm.rule)
        raise
    finally:
        sys.stdout, sys.stderr = old_out, old_err
        if stream:
            stream.close()


@dataclass
class LocalJob:
    """A small job run inside the Snakemake process (a `run:` rule): its own log file, no global side effects."""

    rule: str
    log: logging.Logger
    started: str = field(default_factory=now_iso)

    def sidecars(self, outputs, *, inputs=(), config=None, seeds=None, data=None, extra=None):
        return write_sidecars(outputs, rule=self.rule, inputs=inputs, config=config, seeds=seeds,
                              started=self.started, device=device_description("cpu"), data=data, extra=extra)


@contextlib.contextmanager
def local_job(rule: str, log_file: str, inputs=None):
    """Like `rule_run`, for jobs that run in the Snakemake process itself (claims, scorecard): no process to start,
    so they cost milliseconds.  Nothing global changes (stdout, logging config, thread limits): jobs run side by
    side in threads, each writing its own log through its own logger.  `inputs`: checked with `verify_inputs`."""
    logger = logging.getLogger(f"fedrepro.job.{log_file}")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    Path(log_file).parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(log_file, mode="w")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    logger.addHandler(handler)
    try:
        if inputs is not None:
            verify_inputs(inputs)
        logger.info("rule %s started (in the Snakemake process)", rule)
        yield LocalJob(rule=rule, log=logger)
        logger.info("rule %s finished", rule)
    except BaseException:
        logger.exception("rule %s failed", rule)
        raise
    finally:
        logger.removeHandler(handler)
        handler.close()


@dataclass
class RunCost:
    """What a runner cost: wall seconds, CPU seconds (user + system, every thread, children included: data loader
    workers) and the peak resident memory of the job's process (children's too).  Recorded in the run's sidecar;
    `fedrepro.workflow.plan` fits its cost model to them."""

    wall0: float
    cpu0: float
    wall_seconds: float = 0.0
    cpu_seconds: float = 0.0
    peak_rss_mb: float = 0.0

    @staticmethod
    def _cpu() -> float:
        import resource

        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

    @classmethod
    def start(cls) -> RunCost:
        import time

        return cls(wall0=time.perf_counter(), cpu0=cls._cpu())

    def stop(self) -> RunCost:
        import resource
        import time

        self.wall_seconds = time.perf_counter() - self.wall0
        self.cpu_seconds = self._cpu() - self.cpu0
        peak_kb = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                      resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)   # Linux: kilobytes
        self.peak_rss_mb = peak_kb / 1024
        return self

    def record(self) -> dict:
        return {"wall_seconds": round(self.wall_seconds, 2), "cpu_seconds": round(self.cpu_seconds, 2),
                "peak_rss_mb": round(self.peak_rss_mb, 1)}
