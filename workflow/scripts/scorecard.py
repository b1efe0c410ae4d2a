"""Combine the per-artifact claims into results/<scale>/claims.{csv,md} and write index.html."""

from pathlib import Path

import pandas as pd

from fedrepro.io import write_csv, write_text
from fedrepro.pipeline import rule_run
from fedrepro.registry import Registry
from fedrepro.scorecard.evaluate import unbuilt_artifact_rows
from fedrepro.scorecard.pages import claims_markdown, combine, index_html

sm = snakemake  # noqa: F821  (provided by Snakemake's script directive)
with rule_run(sm) as run:
    scale = sm.wildcards.scale
    registry = Registry.load(".")
    claims = combine(sm.input.claims)
    unbuilt = unbuilt_artifact_rows(registry, scale).astype(str)
    claims = pd.concat([claims, unbuilt], ignore_index=True) if not unbuilt.empty else claims
    write_csv(sm.output.csv, claims)
    write_text(sm.output.md, claims_markdown(claims, scale))
    write_text(sm.output.html, index_html(registry, scale, claims, Path(sm.output.html)))
    run.sidecars([sm.output.csv, sm.output.md, sm.output.html], inputs=[*sm.input.claims, *sm.input.artifacts, *sm.input.registries],
                 config={"scale": scale})
