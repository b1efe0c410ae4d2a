"""Execute an artifact's notebook (jupytext percent `.py` -> `.ipynb`) with papermill, export it to HTML,
and write every output's sidecar."""

import os
from pathlib import Path

import jupytext
import nbformat
import papermill
from nbconvert import HTMLExporter

from fedrepro.io import atomic_path, write_text
from fedrepro.pipeline import rule_run

# The kernel draws with the inline backend, so each figure is an image/png output of the executed notebook.
os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"

sm = snakemake  # noqa: F821  (provided by Snakemake's script directive)
root = Path.cwd()
with rule_run(sm, inputs=[*sm.input.runs]) as run:
    outputs = {k: v for k, v in sm.output.items() if k != "provs"}
    parameters = {
        "root": str(root),
        "scale": sm.wildcards.scale,
        "run_files": list(sm.input.runs),
        "outputs": {k: v for k, v in outputs.items() if k not in ("ipynb", "html")},
        **dict(sm.params.nb),
    }
    notebook = jupytext.read(sm.input.notebook)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    with atomic_path(outputs["ipynb"]) as tmp:
        papermill.execute_notebook(notebook, str(tmp), parameters=parameters, kernel_name="python3",
                                   cwd=str(root), progress_bar=False, log_output=True)
        body, _ = HTMLExporter().from_notebook_node(nbformat.read(str(tmp), as_version=4))
    write_text(outputs["html"], body)
    run.sidecars(outputs.values(), inputs=[sm.input.notebook, *sm.input.runs, sm.input.registry],
                 config=parameters | {"root": "."}, extra={"notebook": sm.input.notebook})
