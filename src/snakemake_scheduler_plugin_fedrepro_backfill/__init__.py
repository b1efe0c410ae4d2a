"""Snakemake scheduler plugin `fedrepro-backfill`: priority order with EASY backfilling (fedrepro.scheduling).

Snakemake finds it by its module name (`snakemake_scheduler_plugin_*` on sys.path); the workflow profile selects it
with `scheduler: fedrepro-backfill`. Expected durations: a run job's measured CPU seconds over its threads
(fedrepro.plan.expected_run_seconds: this clone's sidecars, else config/calibration.csv), DEFAULT_SECONDS for any
other job. Any error in here makes Snakemake fall back to its greedy selector (select_jobs returns None).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from snakemake_interface_scheduler_plugins.base import SchedulerBase
from snakemake_interface_scheduler_plugins.settings import SchedulerSettingsBase

DEFAULT_SECONDS = 5.0     # renders, data jobs, claims, unmeasured runs: a few seconds each at the quick scale


@dataclass
class SchedulerSettings(SchedulerSettingsBase):
    pass


class Scheduler(SchedulerBase):
    def __post_init__(self) -> None:
        self._running: dict = {}            # job -> scheduling.Running, from the moment it was selected
        self._cores: int | None = None      # all cores, read at the first selection (nothing runs yet)
        self._warned = False
        self._held = None                   # the job resources are kept for (to log each hold once)

    def select_jobs(self, selectable_jobs, remaining_jobs, available_resources, input_sizes):
        try:
            return self._select(selectable_jobs, available_resources, input_sizes)
        except Exception as err:            # never let a scheduling estimate stop a build
            if not self._warned:
                self.logger.warning(f"fedrepro-backfill: {err!r}; Snakemake's greedy selector takes over")
                self._warned = True
            return None

    def _select(self, jobs, available, input_sizes):
        # imported here, not at the top: Snakemake imports every installed scheduler plugin at start-up, also in
        # workflows that do not use this one, and that must not load fedrepro
        from fedrepro import scheduling

        now = time.monotonic()
        self._forget_finished(available)
        by_key = list(jobs)                 # a candidate's key is its job's index here
        ready = [scheduling.Candidate(i, float(job.priority), self._need(job), self._seconds(job))
                 for i, job in enumerate(by_key)]
        # among equal priorities, most input bytes first (Snakemake's own tie-break)
        ready.sort(key=lambda c: -sum(input_sizes.get(f) or 0 for f in getattr(by_key[c.key], "input", ())))
        chosen, held = scheduling.select(ready, list(self._running.values()), available, now)
        for c in chosen:
            self._running[by_key[c.key]] = scheduling.Running(now + c.seconds, c.need)
        job = None if held is None else by_key[held[0].key]
        if job is not None and job is not self._held:
            self.logger.debug(f"fedrepro-backfill: keeping resources for {job} (expected to fit in {held[1] - now:.0f} s)")
        self._held = job
        return [by_key[c.key] for c in chosen]

    @staticmethod
    def _need(job) -> dict:
        return {k: v for k, v in job.scheduler_resources.items() if isinstance(v, int)}

    def _seconds(self, job) -> float:
        rule = getattr(getattr(job, "rule", None), "name", None)
        if rule != "run":
            return DEFAULT_SECONDS
        from fedrepro.plan import expected_run_seconds

        wc = job.wildcards
        root = Path(getattr(getattr(self.dag, "workflow", None), "basedir", None) or ".")
        threads = max(1, int(job.scheduler_resources.get("_cores", 1)))
        cpu = expected_run_seconds(root, wc.paper, wc.experiment, wc.configuration, wc.scale)
        return DEFAULT_SECONDS if cpu is None else cpu / threads

    def _forget_finished(self, available) -> None:
        """Drop finished jobs; then, if the jobs still listed hold more cores than are in use (a failed job is never
        'finished'), drop the ones expected to have ended first."""
        for job in [j for j in self._running if self.dag.finished(j)]:
            del self._running[job]
        free = available.get("_cores")
        if not isinstance(free, int):
            return
        if self._cores is None:
            self._cores = free + sum(r.need.get("_cores", 0) for r in self._running.values())
        in_use = self._cores - free
        for job in sorted(self._running, key=lambda j: self._running[j].end):
            if sum(r.need.get("_cores", 0) for r in self._running.values()) <= in_use:
                break
            del self._running[job]
