"""Seeds, named random streams, thread limits and device choice shared by every experiment."""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterable, Mapping

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


# glibc's tunable that makes malloc advise transparent huge pages for the memory it maps (glibc >= 2.35; older
# versions and other C libraries ignore it)
GLIBC_HUGE_PAGES = "glibc.malloc.hugetlb"


def huge_page_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables a build sets for its jobs so that their large buffers sit on transparent huge pages.

    torch's CPU allocator (``THP_MEM_ALLOC_ENABLE=1``) and glibc's malloc (``glibc.malloc.hugetlb=1``) then ask the
    kernel for 2 MB pages (``madvise``; only where its THP mode is ``madvise`` or ``always``) for what they map: one
    page fault per 2 MB instead of per 4 kB. Both are read when a process starts, so the Snakefile sets them for the
    processes it starts. Results do not change; the quick build took 3 % less CPU (docs/architecture.md, "Huge
    pages"). A value the user set wins, so ``THP_MEM_ALLOC_ENABLE=0`` or ``GLIBC_TUNABLES=glibc.malloc.hugetlb=0``
    switches either off."""
    out = {}
    if "THP_MEM_ALLOC_ENABLE" not in environ:
        out["THP_MEM_ALLOC_ENABLE"] = "1"
    if GLIBC_HUGE_PAGES not in _glibc_tunables(environ):
        out["GLIBC_TUNABLES"] = ":".join(filter(None, (environ.get("GLIBC_TUNABLES"), f"{GLIBC_HUGE_PAGES}=1")))
    return out


def huge_pages_on(environ: Mapping[str, str]) -> bool:
    """Whether this environment asks for huge pages in both torch and glibc (what a job's log reports)."""
    return environ.get("THP_MEM_ALLOC_ENABLE") == "1" and _glibc_tunables(environ).get(GLIBC_HUGE_PAGES) == "1"


def _glibc_tunables(environ: Mapping[str, str]) -> dict[str, str]:
    """GLIBC_TUNABLES ("name=value:name=value") as a dict."""
    return dict(t.split("=", 1) for t in environ.get("GLIBC_TUNABLES", "").split(":") if "=" in t)


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
