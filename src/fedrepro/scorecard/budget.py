"""Claim expressions are evaluated under a time and memory budget, in a forked worker process.

The load-time checks (fedrepro.scorecard.expressions) cap the integer powers and sequence sizes written as
literals; what depends on the data (``int(max(x)) ** 16`` nested, ``[0] * int(x[0])``) can only be bounded while
it runs.  A big-integer power is one C call that no signal interrupts, and claims are judged in processes that
also do other work, so the evaluation runs in a child: forked once per process (about as costly as one fork,
tens of milliseconds in a process that loaded torch), then fed one expression at a time over a pipe (a fraction of
a millisecond each).  The child's address space is capped (setrlimit) at what it had when forked plus
`MEMORY_LIMIT_BYTES`; the parent kills it when an evaluation passes `TIME_LIMIT_S` and forks a new one the next
time.  The child reads its requests from a pipe: when the parent dies, it sees the end of that pipe and exits.

Where there is no fork (Windows) expressions are evaluated in-process, under the load-time caps only.
"""

from __future__ import annotations

import atexit
import marshal
import os
import pickle
import select
import signal
import struct
import threading
import time

TIME_LIMIT_S = 10.0              # one evaluation; a claim expression over an artifact's CSV takes milliseconds
MEMORY_LIMIT_BYTES = 1 << 30     # on top of what the process had mapped when the worker was forked

_HEADER = struct.Struct("!Q")


class BudgetExceeded(RuntimeError):
    """An evaluation ran out of time or memory (the caller names the claim)."""


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes | None:
    """n bytes from fd, None at end of file; BudgetExceeded when the deadline passes first."""
    buf = bytearray()
    while len(buf) < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise BudgetExceeded("time")
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def _write_message(fd: int, payload: bytes) -> None:
    data = _HEADER.pack(len(payload)) + payload
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _mapped_bytes() -> int | None:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return None


def _serve(requests: int, replies: int, namespace: dict) -> None:
    """The child: evaluate each (code, columns) request, answer ("ok", value) or ("error", exception)."""
    import resource

    mapped = _mapped_bytes()
    if mapped is not None:
        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = mapped + MEMORY_LIMIT_BYTES
        if hard == resource.RLIM_INFINITY or limit < hard:
            resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    while (head := _read_exact(requests, _HEADER.size, None)) is not None:
        body = _read_exact(requests, _HEADER.unpack(head)[0], None)
        if body is None:
            break
        try:
            code_bytes, columns = pickle.loads(body)
            value = ("ok", eval(marshal.loads(code_bytes), {**namespace, **columns}))  # noqa: S307 (checked tree)
            reply = pickle.dumps(value)
        except MemoryError:
            reply = pickle.dumps(("memory", None))
        except Exception as exc:  # noqa: BLE001 - handed to the parent, which raises it there
            try:
                reply = pickle.dumps(("error", exc))
            except Exception:  # noqa: BLE001 - an exception that does not pickle is sent as text
                reply = pickle.dumps(("error", RuntimeError(f"{type(exc).__name__}: {exc}")))
        try:
            _write_message(replies, reply)
        except MemoryError:
            _write_message(replies, pickle.dumps(("memory", None)))


class _Worker:
    def __init__(self, namespace: dict):
        child_requests, self.requests = os.pipe()
        self.replies, child_replies = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:                                   # the child never returns from here
            code = 0
            try:
                os.close(self.requests)
                os.close(self.replies)
                signal.signal(signal.SIGINT, signal.SIG_IGN)   # the parent decides when it stops
                _serve(child_requests, child_replies, namespace)
            except BaseException:  # noqa: BLE001 - nothing of the parent may run in the child
                code = 1
            os._exit(code)
        os.close(child_requests)
        os.close(child_replies)

    def evaluate(self, code, columns: dict, timeout_s: float):
        _write_message(self.requests, pickle.dumps((marshal.dumps(code), columns)))
        deadline = time.monotonic() + timeout_s
        head = _read_exact(self.replies, _HEADER.size, deadline)
        body = None if head is None else _read_exact(self.replies, _HEADER.unpack(head)[0], deadline)
        if body is None:
            raise BudgetExceeded("the evaluation process ended without an answer (killed for memory?)")
        return pickle.loads(body)

    def stop(self) -> None:
        for fd in (self.requests, self.replies):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass


_lock = threading.Lock()
_worker: _Worker | None = None
_owner_pid: int | None = None


def _stop_worker() -> None:
    global _worker
    if _worker is not None and _owner_pid == os.getpid():
        _worker.stop()
    _worker = None


atexit.register(_stop_worker)


def evaluate_bounded(code, namespace: dict, columns: dict):
    """eval(code) over `namespace` (helpers) and `columns` (numpy arrays) within the time and memory budget.

    Raises BudgetExceeded("time" | "memory" | why the worker died); other exceptions of the evaluation are
    re-raised as they were."""
    global _worker, _owner_pid
    if not hasattr(os, "fork"):
        return eval(code, {**namespace, **columns})  # noqa: S307 (a checked tree; load-time caps apply)
    with _lock:                                         # one request at a time through the one worker
        if _worker is None or _owner_pid != os.getpid():   # none yet, or inherited by a forked process
            _worker, _owner_pid = _Worker(namespace), os.getpid()
        try:
            status, value = _worker.evaluate(code, columns, TIME_LIMIT_S)
        except BudgetExceeded:
            _stop_worker()
            raise
        except OSError as exc:                          # the worker is gone (broken pipe): a new one next time
            _stop_worker()
            raise BudgetExceeded(f"the evaluation process failed ({exc})") from None
    if status == "memory":
        raise BudgetExceeded("memory")
    if status == "error":
        raise value
    return value
