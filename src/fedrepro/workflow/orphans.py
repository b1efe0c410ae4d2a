"""A job stops when the Snakemake that started it is killed (kill -9 leaves no chance to stop its jobs).

Without this, a job whose Snakemake was killed goes on and writes its outputs beside those of the rerun.  Every
workflow script calls `exit_with_parent()` (from `fedrepro.workflow.jobs.rule_run`): it finds the process that started
the job (skipping a shell between them, e.g. Snakemake's `bash -c`), and a daemon thread checks once a second that
it is still there; if not, the job exits at once, without running cleanup code that could write.  On Linux it
also asks the kernel for SIGKILL when the direct parent ends (PR_SET_PDEATHSIG), which covers the common case
without waiting for the poll.
"""

from __future__ import annotations

import os
import sys
import threading
import time

from fedrepro.runtime import process_alive

_SHELLS = {"sh", "bash", "dash", "zsh"}
POLL_S = 1.0
_started = False


def _stat(pid: int) -> tuple[str, int, str] | None:
    """(command name, parent pid, start time) of a live process, from /proc (Linux); None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    name = text[text.index("(") + 1:text.rindex(")")]
    fields = text[text.rindex(")") + 2:].split()
    return name, int(fields[1]), fields[19]


def _starter() -> tuple[int, str | None]:
    """The pid (and start time) of the process that started this job: the parent, or its parent when the parent
    is a shell."""
    pid = os.getppid()
    info = _stat(pid)
    if info is not None and info[0] in _SHELLS and info[1] > 1 and _stat(info[1]) is not None:
        pid, info = info[1], _stat(info[1])
    return pid, (info[2] if info else None)


def _alive(pid: int, started: str | None) -> bool:
    if started is not None:                       # same pid, same start time: not a reused pid
        info = _stat(pid)
        return info is not None and info[2] == started
    return process_alive(pid)


def _set_parent_death_signal() -> None:
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)   # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def exit_with_parent() -> None:
    """Exit this process (status 137) as soon as the process that started it is gone.  Idempotent."""
    global _started
    if _started:
        return
    _started = True
    pid, started = _starter()
    if pid <= 1:                                  # already orphaned (or started by init): nothing to watch
        return
    if pid == os.getppid():
        _set_parent_death_signal()

    def watch():
        while _alive(pid, started):
            time.sleep(POLL_S)
        sys.stderr.write(f"the process that started this job (pid {pid}) is gone; stopping without writing\n")
        sys.stderr.flush()
        os._exit(137)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()
