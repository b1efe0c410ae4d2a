"""Prepare one dataset: real arrays from the verified files, or the declared stand-in, with a sidecar."""

import json
from pathlib import Path

from fedrepro.data.download import HttpPolicy
from fedrepro.data.prepare import prepare
from fedrepro.registry.datasets import load_registry
from fedrepro.workflow.jobs import rule_run

sm = snakemake  # noqa: F821  (provided by Snakemake's script directive)
# inputs: the manifest is checked against its sidecar, so an edited manifest cannot vouch for changed raw files
with rule_run(sm, inputs=sm.input) as run:
    ds = load_registry(".")[sm.wildcards.dataset]
    manifest = json.loads(Path(sm.input.manifest).read_text())
    result = prepare(ds, manifest, Path(sm.output.npz).parent, on_missing=sm.params.cfg["on_missing"], scale=sm.config["scale"],
                     downloads_dir=Path(sm.input.manifest).parent, policy=HttpPolicy.from_config(sm.config["data"]))
    if result.status == "stand-in":
        run.log.warning("%s is a STAND-IN (%s): %s", ds.name, ds.standin["generator"], ds.standin["differs"])
    elif result.status != "real":
        run.log.warning("%s is %s: %s", ds.name, result.status, result.extra.get("image_set", {}).get("note", ""))
    run.sidecars([sm.output.npz], inputs=[sm.input.manifest], config=dict(sm.params.cfg),
                 data={ds.name: result.status}, extra=result.extra)
