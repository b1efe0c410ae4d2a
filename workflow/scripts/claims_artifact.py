"""Evaluate one artifact's claims (config/papers/<paper>.yaml) against the numbers it shows."""

import pandas as pd

from fedrepro.io import write_csv
from fedrepro.pipeline import rule_run
from fedrepro.provenance import read_sidecar
from fedrepro.registry import Registry
from fedrepro.scorecard import evaluate_claims

sm = snakemake  # noqa: F821  (provided by Snakemake's script directive)
with rule_run(sm) as run:
    paper, artifact, scale = sm.wildcards.paper, sm.wildcards.artifact, sm.wildcards.scale
    registry = Registry.load(".")
    claims = registry.claims(paper, artifact)
    sidecar = read_sidecar(sm.input.data) or {}
    table = evaluate_claims(claims, pd.read_csv(sm.input.data), paper=paper, artifact=artifact, scale=scale,
                            data_status=sidecar.get("data"))
    write_csv(sm.output.csv, table)
    run.log.info("%d claim rows: %s", len(table), table["verdict"].value_counts().to_dict())
    run.sidecars([sm.output.csv], inputs=[sm.input.data, sm.input.registry], config={"claims": claims})
