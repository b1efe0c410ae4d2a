"""Execute an artifact's notebook (jupytext percent `.py` -> `.ipynb`) in an in-process kernel, export it to HTML,
judge the artifact's claims on the CSV it wrote, and write every output's sidecar."""

from fedrepro.warm import handoff

handoff()  # run in a warm copy of the libraries when a local build offers one (fedrepro.warm); else here

import os
import sys
from pathlib import Path

# The kernel draws with the inline backend, so each figure is an image/png output of the executed notebook
# (set before anything imports matplotlib: the kernel runs in this process).
INLINE = "module://matplotlib_inline.backend_inline"
os.environ["MPLBACKEND"] = INLINE
if "matplotlib" in sys.modules:  # a warm copy (fedrepro.warm) imported matplotlib before this line
    import matplotlib

    matplotlib.use(INLINE)

import jupytext
import nbformat

from fedrepro.execute import execute_notebook, export_html
from fedrepro.io import atomic_path, write_text
from fedrepro.pipeline import rule_run
from fedrepro.scorecard.artifact_claims import write_artifact_claims

sm = snakemake  # noqa: F821  (provided by Snakemake's script directive)
root = Path.cwd()
with rule_run(sm, inputs=[*sm.input.runs]) as run:
    outputs = {k: v for k, v in sm.output.items() if k not in ("provs", "claims")}
    parameters = {
        "root": str(root),
        "scale": sm.wildcards.scale,
        "run_files": list(sm.input.runs),
        "outputs": {k: v for k, v in outputs.items() if k not in ("ipynb", "html")},
        **dict(sm.params.nb),
    }
    notebook = execute_notebook(jupytext.read(sm.input.notebook), parameters, cwd=root)
    with atomic_path(outputs["ipynb"]) as tmp:
        nbformat.write(notebook, str(tmp))
    write_text(outputs["html"], export_html(notebook))
    run.sidecars(outputs.values(), inputs=[sm.input.notebook, *sm.input.runs, sm.input.registry],
                 config=parameters | {"root": "."}, extra={"notebook": sm.input.notebook})
    # the scorecard's rows for this artifact, by the same code as the notebook's "Paper vs ours" (the leaderboard
    # has no claims: it compares compressors, it judges no paper number)
    if "claims" in sm.output.keys():
        write_artifact_claims(run, sm.wildcards, data=outputs["csv"], registry=sm.input.registry,
                              output=sm.output.claims)
