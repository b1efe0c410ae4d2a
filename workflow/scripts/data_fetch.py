"""Fetch and verify one dataset's raw files into results/downloads/<dataset>/ (or record why not)."""

from pathlib import Path

from fedrepro.data.acquire import DataUnavailable, acquire, data_kind, raw_inputs, unavailable_message
from fedrepro.data.download import HttpPolicy
from fedrepro.registry.datasets import load_registry
from fedrepro.workflow.jobs import rule_run

sm = snakemake  # noqa: F821  (provided by Snakemake's script directive)
with rule_run(sm) as run:
    ds = load_registry(".")[sm.wildcards.dataset]
    data_cfg = sm.config["data"]
    manifest = acquire(ds, Path(sm.output.manifest).parent, policy=HttpPolicy.from_config(data_cfg),
                       credentials=data_cfg.get("credentials") or {}, images=data_cfg.get("images") or {})
    real = manifest["status"] != "unavailable"
    run.log.info("%s: %s", ds.name, "verified: " + ", ".join(f"{n} <- {r['source']}" for n, r in manifest["files"].items())
                 if real else f"unavailable ({len(manifest['attempts'])} failed attempts)")
    if not real and sm.params.cfg["on_missing"] == "error":
        raise DataUnavailable(unavailable_message(ds, manifest, scale=sm.config["scale"]))
    run.sidecars([sm.output.manifest], inputs=raw_inputs(manifest), config=dict(sm.params.cfg), data={ds.name: data_kind(manifest)},
                 extra={"sources_used": sorted({r["source"] for r in manifest["files"].values()}),
                        "missing": manifest["missing"]})
