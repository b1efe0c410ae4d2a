"""Seeds, named random streams, thread limits and device choice shared by every experiment."""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterable

import numpy as np


def _name_key(name: str) -> int:
    # A stable 32-bit integer per stream name, so streams do not depend on the order they are asked for.
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "little")


def rng_stream(*key: int | str) -> np.random.Generator:
    """One independent generator per key path, e.g. ``rng_stream(seed, "table5_1", cell, run, "X1")``.

    Integers enter the SeedSequence entropy as they are; strings are hashed, so adding a new
    named stream never changes the numbers an existing stream draws.
    """
    entropy = [k if isinstance(k, int) else _name_key(k) for k in key]
    if any(e < 0 for e in entropy):
        raise ValueError(f"stream keys must be non-negative, got {key!r}")
    return np.random.default_rng(np.random.SeedSequence(entropy))


def compute_clock(device: str = "cpu"):
    """The clock that timing *results* (run CSV timing columns, the claims judged on them) are measured with.

    On a CPU: the process's CPU time (every thread).  Other processes' load stretches wall time but not CPU time, so
    a verdict on a time ratio (gcca C10, thesis C3.19-C3.20) does not flip with the machine's load; on an idle machine
    with one thread the two are equal.  On a GPU, kernels run asynchronously and the CPU time misses them: wall time.
    """
    import time

    return time.perf_counter if str(device).startswith("cuda") else time.process_time


def limit_threads(n: int) -> None:
    """Cap BLAS/OpenMP and torch threads at the cores Snakemake gave the rule."""
    n = max(1, int(n))
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(n)
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(n)
    except ImportError:  # threadpoolctl ships with scikit-learn; without it the env vars still apply
        pass
    # torch reads OMP_NUM_THREADS when imported; only an already imported torch needs telling
    # (importing it here would cost every job a second or two).
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(n)


def choose_device(preference: str = "auto") -> str:
    """``auto`` picks CUDA when present; ``cpu`` forces CPU; ``cuda`` fails loudly without a GPU."""
    if preference not in {"auto", "cpu", "cuda"}:
        raise ValueError(f"config key 'device' must be one of auto, cpu, cuda; got {preference!r}")
    if preference == "cpu":
        return "cpu"
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except ImportError:
        has_cuda = False
    if preference == "cuda" and not has_cuda:
        raise RuntimeError("config key 'device' is 'cuda' but no CUDA device is visible; set device: auto or cpu")
    return "cuda" if has_cuda else "cpu"


def device_description(device: str) -> str:
    if device == "cuda":
        import torch

        return f"cuda:{torch.cuda.get_device_name(0)}"
    import platform

    return f"cpu:{platform.processor() or platform.machine()} x{os.cpu_count()}"


def as_list(x: Iterable | None) -> list:
    return [] if x is None else list(x)


def process_alive(pid: int) -> bool:
    """Whether a process with this id exists (one of another user counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
