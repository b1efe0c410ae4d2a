"""Warm job starts: a local build's jobs run in copies of one process that has already imported the libraries.

Every run and render job is a fresh Python process (Snakemake's ``script:``), and importing torch, pandas,
matplotlib, nbconvert and IPython costs it 3-4 s before it does any work: most of a smoke build, and about 15 % of
a quick one. For a local build the Snakefile starts one *warm server* (``python -m fedrepro.warm serve``) that
imports those libraries once and listens on a Unix socket named by ``FEDREPRO_WARM``. A job script's first
statement is ``handoff()``: it sends its arguments, working directory, environment and standard streams to the
server, which forks a copy of itself that runs the script from the top, exactly as the fresh process would have;
the job process waits and exits with the copy's exit code.

Where no server answers (a cluster node, a dry run, ``--config warm=false``, a job started by hand) ``handoff()``
returns and the job runs in its own process as before, so results never depend on the server. The server refuses
a job (the job then runs cold) when any source file it has imported from this repository changed on disk since it
started: a copy would otherwise run the old code. A copy whose job process disappears (Snakemake cancelling a job)
is killed with its process group.
"""

from __future__ import annotations

import gc
import json
import os
import selectors
import signal
import socket
import sys
import time
from pathlib import Path

ENV = "FEDREPRO_WARM"  # the server's socket path, for the job processes
_CHILD = "FEDREPRO_WARM_COPY"  # set in a forked copy: its handoff() returns at once
# what the jobs import before doing anything, imported once by the server, cheapest and most shared first; then
# the runner modules the registries name (with what they import: sklearn, scipy.stats, torchvision, ...)
PRELOAD = ("snakemake.iocontainers", "snakemake.io",  # every job script's preamble unpickles its `snakemake` object
           "numpy", "scipy.sparse", "pandas", "pandas.io.formats.csvs", "matplotlib.pyplot", "jupytext", "nbformat",
           "nbconvert", "ipykernel.inprocess.manager", "fedrepro.execute", "fedrepro.io", "fedrepro.pipeline",
           "fedrepro.plugins", "fedrepro.registry", "fedrepro.scorecard.artifact_claims", "fedrepro.notebook",
           "fedrepro.plotting",
           # what a render's kernel start and parameter cell import (debugpy, black, requests, sqlite3: 0.3 s):
           # the kernel's debugger class (it imports debugpy) and black (papermill formats the parameters with it)
           # load only when a kernel starts or a cell is formatted, so each copy paid them (smoke: 3.2 s, 1.4 s)
           "ipykernel.inprocess.ipkernel", "ipykernel.debugger", "papermill.parameterize", "black", "sqlite3",
           *(f"fedrepro.{family}.artifacts" for family in ("gcca", "cvfl", "decentral", "mtl", "transfer", "adept")),
           "torch", "torch._dynamo",  # torch's optimizers and torch.func import torch._dynamo on first use (2-3 s)
           "sklearn.svm", "sklearn.manifold", "scipy.optimize", "scipy.sparse.linalg", "torchvision",
           "tabulate")  # torch._dynamo's exit handler formats its (empty) compile-time table with it in every job
_MAX_MESSAGE = 1 << 20


def is_copy() -> bool:
    """Whether this process is a warm copy (its job's log says so)."""
    return bool(os.environ.get(_CHILD))


def handoff() -> None:
    """Run this job in a warm copy and exit with its code; return where there is no server (run cold)."""
    path = os.environ.get(ENV)
    if not path or os.environ.get(_CHILD):
        return
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(path)
    except OSError:  # no server here (a cluster node, a stale variable): the job runs in this process
        return
    with conn:
        request = {"argv": [os.path.abspath(sys.argv[0]), *sys.argv[1:]], "cwd": os.getcwd(), "env": dict(os.environ)}
        sys.stdout.flush()
        sys.stderr.flush()
        socket.send_fds(conn, [json.dumps(request).encode()], [0, 1, 2])
        reply = _read_line(conn)
    if reply is None or "exit" not in reply:  # refused (changed sources) or the server went away: run cold
        return
    os._exit(int(reply["exit"]))


def _read_line(conn: socket.socket) -> dict | None:
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(4096)
        if not chunk:
            return None
        data += chunk
    return json.loads(data)


class _Server:
    def __init__(self, path: str, parent: int, modules: tuple[str, ...]):
        self.path, self.parent, self.modules = path, parent, modules
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if os.path.exists(path):
            os.unlink(path)
        self.listener.bind(path)
        self.listener.listen(64)  # jobs queue here while the libraries import
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.listener, selectors.EVENT_READ)
        self.copies: dict[int, socket.socket] = {}
        self.sources: dict[str, tuple[int, int]] = {}
        self.scanned: set[str] = set()  # module names already looked at (a scan after each step sees only new ones)

    def preload(self, root: Path):
        """Import PRELOAD one module at a time (a generator: jobs that arrive meanwhile are served between steps,
        with what is loaded so far), then fill the caches the jobs share (one drawing, one HTML export, the package
        versions, the parsed configuration); record the repository files imported, to spot changes."""
        import importlib

        for name in self.modules:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - a missing optional library: the jobs that need it import it themselves
                pass
            self._record_sources(root)
            yield
        _draw_once()
        _export_once()
        _lookups_once(root)
        self._record_sources(root)

    def _record_sources(self, root: Path) -> None:
        for f in _repository_sources(root, skip=self.scanned):
            self.sources.setdefault(f, _stat(f))

    def changed_sources(self) -> list[str]:
        return [f for f, st in self.sources.items() if _stat(f) != st]

    def serve(self, root: Path) -> None:
        steps = self.preload(root)
        loading = True
        while os.getppid() == self.parent:  # else the build ended without stopping us
            for key, _ in self.selector.select(timeout=0 if loading else 0.2):
                if key.fileobj is self.listener:
                    self.accept()
                else:  # a job process closed its end before its copy finished: cancelled
                    self.cancel(key.fileobj)
            self.reap()
            if loading:
                loading = next(steps, False) is None
        self.shutdown()

    def accept(self) -> None:
        conn, _ = self.listener.accept()
        msg, fds, _, _ = socket.recv_fds(conn, _MAX_MESSAGE, 3)
        request = json.loads(msg)
        changed = self.changed_sources()
        if changed or len(fds) != 3:
            conn.sendall(json.dumps({"refused": f"sources changed since the server started: {changed[:3]}"}).encode()
                         + b"\n")
            conn.close()
            for fd in fds:
                os.close(fd)
            return
        # Everything the server holds now goes to the collector's permanent generation: a copy's collections
        # (IPython runs a full one at exit) then walk only the job's own objects, and do not write to (and so
        # copy) every page of the server's memory.  Objects are never freed by this, only not scanned.
        gc.freeze()
        pid = os.fork()
        if pid == 0:
            self.listener.close()
            conn.close()
            for other in self.copies.values():
                other.close()
            _run_copy(request, fds)  # never returns
        for fd in fds:
            os.close(fd)
        self.copies[pid] = conn
        self.selector.register(conn, selectors.EVENT_READ, pid)

    def cancel(self, conn) -> None:
        pid = self.selector.get_key(conn).data
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def reap(self) -> None:
        while self.copies:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.copies.pop(pid, None)
            if conn is None:
                continue
            self.selector.unregister(conn)
            code = os.waitstatus_to_exitcode(status)
            try:
                conn.sendall(json.dumps({"exit": code if code >= 0 else 128 - code}).encode() + b"\n")
            except OSError:
                pass
            conn.close()

    def shutdown(self) -> None:
        for pid in list(self.copies):
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.unlink(self.path)
        except OSError:
            pass


def _run_copy(request: dict, fds: list[int]) -> None:
    """In the forked copy: become the job process (streams, directory, environment, argv) and run its script."""
    import atexit
    import runpy
    import traceback

    code = 0
    try:
        os.setpgid(0, 0)  # the copy and whatever it starts can be killed as one group
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        os.environ[_CHILD] = "1"
        sys.argv = list(request["argv"])
        sys.path[0] = os.path.dirname(sys.argv[0])
        _skip_server_finalizers()
        runpy.run_path(sys.argv[0], run_name="__main__")
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
        if not isinstance(exit_.code, int | None):
            print(exit_.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - the job's traceback goes to its stderr, as a fresh process would print it
        traceback.print_exc()
        code = 1
    try:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def _skip_server_finalizers() -> None:
    """The copy's exit runs the job's own finalizers, not the server's: those tear down libraries the server loaded
    (torch deregisters every operator library it registered, about 0.2 s), which the copy's `os._exit` discards
    anyway; they write no file of the job.  The job's own (temporary folders, ...) still run, and so do the
    `atexit` callbacks (logging's flush among them)."""
    import weakref

    for finalizer in list(weakref.finalize._registry):  # noqa: SLF001 - the only way to list live finalizers
        finalizer.atexit = False


def _draw_once() -> None:
    """Save one small figure with the project's style as PDF and PNG: the first text drawn in a process loads the
    fonts and measures glyphs (about 1 s of every figure job); the copies inherit those caches. A plain Figure (not
    pyplot's) and a style context, so no figure number or rc setting leaks into the jobs."""
    try:
        import importlib
        import io

        import matplotlib.pyplot as plt
        from matplotlib.figure import Figure

        # by name, like PRELOAD: an import statement would put the plotting modules into every job's code
        # dependencies (fedrepro.codedeps follows function-local imports), so a run would rerun on a style edit
        style = importlib.import_module("fedrepro.plotting.style").STYLE
        with plt.style.context(style):
            fig = Figure(figsize=(3, 2))
            ax = fig.add_subplot()
            ax.plot([1, 10, 100], [0.5, 0.25, 0.125], label="warm-up 0123456789")
            ax.set(xscale="log", yscale="log", title="Fig. 0.1", xlabel="bits per node", ylabel="test error")
            ax.legend()
            for fmt in ("pdf", "png"):
                fig.savefig(io.BytesIO(), format=fmt)
    except Exception:  # noqa: BLE001 - only a cache: the jobs draw without it
        pass


def _export_once() -> None:
    """Export one small notebook to HTML with the render jobs' exporter (`fedrepro.execute.export_html`): it
    compiles its templates, regular expressions and lexers once here (0.4 s of every render otherwise). By name,
    as in `_draw_once`, so that run jobs do not depend on the render code."""
    try:
        import importlib

        import nbformat

        v4 = nbformat.v4
        code = v4.new_code_cell("import numpy as np\nnp.arange(3)  # warm-up", execution_count=1, outputs=[
            v4.new_output("stream", name="stdout", text="0.25 &lt; 1\n"),
            v4.new_output("execute_result", {"text/plain": "array([0, 1, 2])", "text/markdown": "| a |\n|---|\n| 1 |"},
                          execution_count=1),
            v4.new_output("display_data", {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"})])
        nb = v4.new_notebook(cells=[v4.new_markdown_cell("# Warm-up\n\n*one* `cell` &amp; a [link](x.html)\n\n"
                                                         "| a | b |\n|---|---|\n| 1 | 2 |"), code])
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        importlib.import_module("fedrepro.execute").export_html(nb)
    except Exception:  # noqa: BLE001 - only a cache: the jobs export without it
        pass


def _lookups_once(root: Path) -> None:
    """The package versions every sidecar records (`fedrepro.provenance.sidecar.package_versions`) and the parsed
    registries, scales and schemas (`fedrepro.config.load_yaml`, kept by each file's bytes, so a file edited later
    is parsed afresh): both cached per process, so looked up here once for all the copies.  By name, as in
    `_draw_once`."""
    try:
        import importlib

        importlib.import_module("fedrepro.provenance.sidecar").package_versions()
        load_yaml = importlib.import_module("fedrepro.config").load_yaml
        for path in sorted([*Path(root, "config").rglob("*.yaml"), *Path(root, "workflow", "schemas").glob("*.yaml")]):
            load_yaml(path)
    except Exception:  # noqa: BLE001 - only a cache: the jobs look them up themselves
        pass


def _stat(path: str) -> tuple[int, int]:
    try:
        st = os.stat(path)
        return st.st_mtime_ns, st.st_size
    except OSError:
        return (0, -1)


def _repository_sources(root: Path, skip: set[str] | None = None) -> list[str]:
    """The imported modules' files in the repository (the workflow's scripts and, wherever it is installed from,
    the fedrepro package): a change to one makes the warm copies stale. Other installed libraries are not
    watched (reinstalling them during a build is not supported).

    `skip`: names of modules already looked at, updated here; the server scans after every preload step, and
    resolving the path of each of torch's thousands of modules each time was half of the server's start-up."""
    watched = tuple(os.path.join(os.path.realpath(w), "") for w in (root, os.path.dirname(__file__)))
    skip = set() if skip is None else skip
    files = []
    for name, module in list(sys.modules.items()):
        if name in skip:
            continue
        skip.add(name)
        f = getattr(module, "__file__", None)
        if f and os.path.realpath(f).startswith(watched):
            files.append(f)
    return files


def start(workdir: str | Path) -> tuple[object, str] | None:
    """Start a server for a local build (called by the Snakefile's onstart); returns (process, socket path)."""
    import subprocess
    import tempfile

    path = os.path.join(tempfile.mkdtemp(prefix="fedrepro-warm-"), "socket")
    proc = subprocess.Popen([sys.executable, "-m", "fedrepro.warm", "serve", path, str(Path(workdir).resolve())],
                            stdin=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 10
    while not os.path.exists(path) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    if not os.path.exists(path):
        proc.kill()
        return None
    os.environ[ENV] = path
    return proc, path


def stop(server) -> None:
    """Stop the server started by start() (onsuccess / onerror)."""
    if server is None:
        return
    proc, path = server
    os.environ.pop(ENV, None)
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except Exception:  # noqa: BLE001
        proc.kill()
    try:
        os.rmdir(os.path.dirname(path))
    except OSError:
        pass


def runner_modules(root: Path) -> list[str]:
    """The modules of the runners the registries name (``runner: fedrepro.<family>.<module>:<function>``)."""
    import re

    found = []
    for registry in sorted(Path(root, "config", "papers").glob("*.yaml")):
        found += re.findall(r"^\s*runner:\s*([\w.]+):", registry.read_text(), flags=re.M)
    return list(dict.fromkeys(found))


def _serve(path: str, root: str, modules: tuple[str, ...] | None = None) -> None:
    if modules is None:
        modules = (*PRELOAD, *runner_modules(Path(root)))
    server = _Server(path, os.getppid(), modules)
    signal.signal(signal.SIGTERM, lambda *_: (server.shutdown(), os._exit(0)))
    server.serve(Path(root))


if __name__ == "__main__":
    if len(sys.argv) not in (4, 5) or sys.argv[1] != "serve":
        sys.exit("usage: python -m fedrepro.warm serve SOCKET REPOSITORY_ROOT [MODULE,MODULE,...]")
    _serve(sys.argv[2], sys.argv[3], *([tuple(sys.argv[4].split(","))] if len(sys.argv) == 5 else []))
