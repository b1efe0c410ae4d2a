"""Which ready jobs a local build starts: highest priority first, with EASY backfilling.

Snakemake's greedy selector fills every free core with the best ready job that fits and never keeps a core free.
A job that needs two cores and becomes ready while a one-core job runs therefore waits until both cores are free
at the same moment, which on a busy two-core machine is the end of the build (ADEPT's feature net, then Table 3
alone, for the last two minutes of a fresh quick build).

EASY backfilling (Lifka 1995; the policy of SLURM's backfill scheduler) keeps the priority order and closes that gap:
the highest-priority ready job that does not fit gets a reservation at the earliest time the running jobs'
expected ends free enough resources for it. A lower-priority job may start before it only if it fits now and either
ends by that time or leaves the reservation's resources untouched. Expected durations are estimates (measured run
seconds, else a default): a wrong one delays or advances a start, never a result.

This module is the policy alone, on plain values; `snakemake_scheduler_plugin_fedrepro_backfill` adapts it to
Snakemake's scheduler plugin interface (`scheduler: fedrepro-backfill` in profiles/default/config.yaml).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

Resources = Mapping[str, int]


@dataclass(frozen=True)
class Candidate:
    """A ready job: its priority, the resources it holds while it runs, and its expected wall seconds."""

    key: Hashable
    priority: float
    need: Resources = field(hash=False)
    seconds: float


@dataclass(frozen=True)
class Running:
    """A running job: when it is expected to end (same clock as `now`) and the resources it holds."""

    end: float
    need: Resources = field(hash=False)


def fits(need: Resources, free: Resources) -> bool:
    """Whether `need` fits in `free`; a resource `free` does not name is not limited."""
    return all(need.get(name, 0) <= amount for name, amount in free.items())


def _minus(free: Resources, need: Resources) -> dict:
    return {name: amount - need.get(name, 0) for name, amount in free.items()}


def _plus(free: Resources, held: Resources) -> dict:
    return {name: amount + held.get(name, 0) for name, amount in free.items()}


def reservation(need: Resources, free: Resources, running: Sequence[Running], now: float) -> tuple[float, dict]:
    """(the earliest expected time `need` fits, the resources left beside it then): running jobs release what they
    hold at their expected ends, in order. (inf, {}) when it would not fit even with everything released."""
    available = dict(free)
    at = now
    for job in sorted(running, key=lambda r: r.end):
        if fits(need, available):
            break
        available, at = _plus(available, job.need), max(now, job.end)
    if not fits(need, available):
        return math.inf, {}
    return at, _minus(available, need)


def select(ready: Sequence[Candidate], running: Sequence[Running], free: Resources,
           now: float) -> tuple[list[Candidate], tuple[Candidate, float] | None]:
    """(the ready jobs to start now, (the job reserved for, its expected start) or None). `ready` in the order to
    prefer among equal priorities; `free` the resources free now (integers only). Highest priority first; the first
    job that does not fit is reserved for (see the module docstring) and every later one is started only if it
    cannot delay that reservation."""
    free = {name: amount for name, amount in free.items() if isinstance(amount, int)}
    running = list(running)
    chosen: list[Candidate] = []
    held_at = None                       # (start time of the reserved job, resources spare beside it then)
    reserved = None
    for job in sorted(ready, key=lambda j: -j.priority):
        if not fits(job.need, free):
            if held_at is None:
                held_at, reserved = reservation(job.need, free, running, now), job
            continue
        end = now + job.seconds
        if held_at is not None and end > held_at[0]:     # still running when the reserved job should start
            if not fits(job.need, held_at[1]):
                continue
            held_at = (held_at[0], _minus(held_at[1], job.need))
        chosen.append(job)
        free = _minus(free, job.need)
        running.append(Running(end, job.need))
    return chosen, (None if reserved is None else (reserved, held_at[0]))
