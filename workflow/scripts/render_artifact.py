"""Execute an artifact's notebook (jupytext percent `.py` -> `.ipynb`) with papermill in a `python3` kernel, export
it to HTML with nbconvert, judge the artifact's claims on the CSV it wrote, and write every output's sidecar."""

import os

# The kernel (a child process: it inherits this environment) draws with the inline backend, so each figure is an
# image/png output of the executed notebook.
os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"

import jupytext
import nbformat
import papermill
from nbconvert import HTMLExporter

from fedrepro.io import atomic_path, write_text
from fedrepro.scorecard.artifact_claims import write_artifact_claims
from fedrepro.workflow.jobs import rule_run

sm = snakemake  # noqa: F821  (provided by Snakemake's script directive)
with rule_run(sm, inputs=[*sm.input.runs]) as run:
    outputs = {k: v for k, v in sm.output.items() if k not in ("provs", "claims")}
    # relative paths only (the kernel runs in the repository root): the executed notebook names no machine path
    parameters = {
        "root": ".",
        "scale": sm.wildcards.scale,
        "run_files": list(sm.input.runs),
        "outputs": {k: v for k, v in outputs.items() if k not in ("ipynb", "html")},
        **dict(sm.params.nb),
    }
    notebook = jupytext.read(sm.input.notebook)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    # a cell that raises stops here with PapermillExecutionError (the cell's traceback), logged by rule_run
    notebook = papermill.execute_notebook(notebook, None, parameters=parameters, kernel_name="python3",
                                          cwd=os.getcwd(), progress_bar=False, log_output=True)
    notebook.metadata["papermill"].update(input_path=sm.input.notebook, output_path=outputs["ipynb"])
    with atomic_path(outputs["ipynb"]) as tmp:
        nbformat.write(notebook, str(tmp))
    write_text(outputs["html"], HTMLExporter().from_notebook_node(notebook)[0])
    # the leaderboard also reads its figures' claims (`claims`: whether each setting reaches the claims' regime)
    judged = list(sm.input.claims) if "claims" in sm.input.keys() else []
    run.sidecars(outputs.values(), inputs=[sm.input.notebook, *sm.input.runs, *judged, sm.input.registry],
                 config=parameters, extra={"notebook": sm.input.notebook})
    # the scorecard's rows for this artifact, by the same code as the notebook's "Paper vs ours" (the leaderboard
    # has no claims: it compares compressors, it judges no paper number)
    if "claims" in sm.output.keys():
        write_artifact_claims(run, sm.wildcards, data=outputs["csv"], registry=sm.input.registry,
                              output=sm.output.claims)
