"""Execute a notebook in this process: ipykernel's in-process kernel, papermill's parameter injection.

Why not a kernel process (papermill's default executor): a render job would start a second Python, which imports
matplotlib, pandas and fedrepro again, about 2 s of a render's 5 on 2 cores (docs/architecture.md, "Render
path").  The in-process kernel is ipykernel's own (the same shell, display formatters and inline backend as a
Jupyter kernel); each cell's outputs are built from its IOPub messages by nbformat's `output_from_msg`, as
nbclient builds them, so the executed `.ipynb` is the notebook a Jupyter kernel would give.  Each render job is
its own process, so no state leaks from one notebook into the next.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import time

import nbformat

log = logging.getLogger("fedrepro")
logging.getLogger("fontTools").setLevel(logging.WARNING)   # a line per font subset of every PDF: noise in the log

# the in-process kernel imports debugpy, which warns about frozen modules on every start
os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_OUTPUT_MESSAGES = ("stream", "display_data", "execute_result", "error")
_FLUSH = "import sys as _s; _s.stdout.flush(); _s.stderr.flush(); del _s"


class NotebookExecutionError(RuntimeError):
    """A cell raised: names the cell, its first lines and the kernel's traceback."""

    def __init__(self, index: int, source: str, ename: str, evalue: str, traceback: list[str]):
        self.index, self.ename, self.evalue = index, ename, evalue
        head = "\n".join(source.splitlines()[:6])
        trace = _ANSI.sub("", "\n".join(traceback))
        super().__init__(f"cell {index} raised {ename}: {evalue}\n--- cell {index} ---\n{head}\n--- traceback ---\n{trace}")


def _now() -> str:
    from datetime import datetime, timezone

    return datetime.now(timezone.utc).isoformat()


def inject_parameters(nb, parameters: dict):
    """papermill's own injection: an `injected-parameters` cell after the cell tagged `parameters`."""
    from papermill.parameterize import parameterize_notebook

    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata.setdefault("papermill", {})     # as papermill's loader prepares a notebook: its metadata block
    for cell in nb.cells:                       # and a tag list on every cell
        cell.metadata.setdefault("tags", [])
    return parameterize_notebook(nb, parameters, kernel_name="python3", language="python")


@contextlib.contextmanager
def _working_directory(path):
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


@contextlib.contextmanager
def in_process_kernel():
    """A started ipykernel InProcessKernel and its blocking client."""
    from ipykernel.inprocess.manager import InProcessKernelManager

    manager = InProcessKernelManager()
    manager.start_kernel()
    _no_figures_of_the_host()
    _inline_figures(manager.kernel.shell)
    client = manager.client()
    client.start_channels()
    try:
        yield client
    finally:
        client.stop_channels()
        manager.shutdown_kernel()
        # ipykernel stops its IOPub thread's loop before that loop has run the cancellation of its event-pipe task,
        # and asyncio reports the pending task when the process exits, by then into a closed log file: noise only
        logging.getLogger("asyncio").setLevel(logging.CRITICAL)


def _no_figures_of_the_host() -> None:
    """A kernel process starts with no figures; this kernel shares pyplot's figure list with its host, and the inline
    backend shows every open figure after a cell that draws: a figure the host (a test, a notebook rendered before
    this one in the same warm copy) left open would appear in this notebook."""
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")


def _inline_figures(shell) -> None:
    """Figures as image/png outputs.  matplotlib_inline wires its backend into the shell when its module is first
    imported with a shell present; a warm copy (fedrepro.warm) imported it before this kernel existed (the render
    script selects the backend first), so wire it here, once, as that import would have."""
    if "matplotlib_inline.backend_inline" not in sys.modules:
        return                                   # the kernel's first `import matplotlib.pyplot` will do it
    import matplotlib
    from IPython.core.pylabtools import activate_matplotlib
    from matplotlib_inline.backend_inline import configure_inline_support

    backend = matplotlib.rcParams._get("backend")   # as matplotlib_inline reads it (no backend resolution)
    if backend in ("inline", "module://matplotlib_inline.backend_inline"):
        activate_matplotlib(backend)
        configure_inline_support(shell, backend)


def _outputs(messages) -> list:
    """nbformat outputs from IOPub messages, consecutive text on one stream merged (as Jupyter shows it)."""
    outputs: list = []
    for msg in messages:
        kind = msg["msg_type"]
        if kind == "clear_output":
            outputs.clear()
        elif kind in _OUTPUT_MESSAGES:
            out = nbformat.v4.output_from_msg(msg)
            if kind == "stream" and outputs and outputs[-1].output_type == "stream" and outputs[-1].name == out.name:
                outputs[-1].text += out.text
            else:
                outputs.append(out)
    return outputs


def run_cell(client, source: str):
    """Execute one cell; returns (outputs, execution_count, reply content)."""
    client.execute(source)
    reply = client.get_shell_msg(timeout=60)["content"]   # the in-process kernel has already run it
    client.execute(_FLUSH, silent=True)        # the kernel's stdout is buffered: its text belongs to this cell
    client.get_shell_msg(timeout=60)
    return _outputs(client.iopub_channel.get_msgs()), reply.get("execution_count"), reply


_HTML_EXPORTER = None


def export_html(nb) -> str:
    """The executed notebook as HTML (nbconvert's `HTMLExporter`, its default template).

    One exporter per process: its first export compiles the Jinja templates, the regular expressions and the
    Pygments lexers (about 0.4 s of a render; a warm server does it once, `fedrepro.warm`), later ones reuse them.
    An export reads nothing from an earlier one, so the HTML is byte for byte what a new exporter writes
    (tests/test_execute.py)."""
    global _HTML_EXPORTER
    if _HTML_EXPORTER is None:
        from nbconvert import HTMLExporter

        _HTML_EXPORTER = HTMLExporter()
    return _HTML_EXPORTER.from_notebook_node(nb)[0]


def execute_notebook(nb, parameters: dict, cwd) -> nbformat.NotebookNode:
    """Inject `parameters`, run every code cell in order in an in-process kernel (cwd: `cwd`) and return the
    executed notebook.  Raises `NotebookExecutionError` at the first cell that raises."""
    nb = inject_parameters(nb, parameters)
    with _working_directory(cwd), in_process_kernel() as client:
        client.iopub_channel.get_msgs()       # the kernel's start-up status messages
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            log.info("Executing cell %d", index)
            started, start_time = time.perf_counter(), _now()
            cell.outputs, cell.execution_count, reply = run_cell(client, cell.source)
            duration = time.perf_counter() - started
            # papermill's per-cell record, as the notebooks had when papermill ran them
            cell.metadata["papermill"] = {"start_time": start_time, "end_time": _now(), "duration": round(duration, 3),
                                          "status": "failed" if reply.get("status") == "error" else "completed",
                                          "exception": reply.get("status") == "error"}
            log.info("Ending cell %d (%.2f s)", index, duration)
            if reply.get("status") == "error":
                raise NotebookExecutionError(index, cell.source, reply.get("ename", ""), reply.get("evalue", ""),
                                             reply.get("traceback", []))
    return nb
