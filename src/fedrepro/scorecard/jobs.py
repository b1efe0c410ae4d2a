"""The scorecard's two steps: per artifact (in its render job) and the whole scorecard (in the Snakemake process).

`write_artifact_claims`: one artifact's claims against the numbers it shows -> results/<scale>/<paper>/claims/
<artifact>.csv (called by the render job, right after its notebook wrote those numbers);
`write_scorecard`: every artifact's claims -> results/<scale>/claims.{csv,md} and the index page.
"""

from __future__ import annotations

from pathlib import Path


def write_artifact_claims(job, wildcards, *, data: str, registry: str, output: str) -> None:
    """One artifact's claims judged on the CSV it wrote (`data`) -> `output` and its sidecar.

    Called by the render job right after the notebook wrote `data` (and its sidecar, which carries the data status):
    the notebook's "Paper vs ours" and the scorecard are computed by this same code, `evaluate_claims`."""
    import pandas as pd

    from fedrepro.io import write_csv
    from fedrepro.provenance import read_sidecar
    from fedrepro.registry import Registry
    from fedrepro.scorecard.evaluate import artifact_configurations, evaluate_claims

    paper, artifact, scale = wildcards.paper, wildcards.artifact, wildcards.scale
    reg = Registry.load(".", check=False)   # the workflow checked it before any job ran
    claims = reg.claims(paper, artifact)
    table = evaluate_claims(claims, pd.read_csv(data), paper=paper, artifact=artifact, scale=scale,
                            data_status=(read_sidecar(data) or {}).get("data"),
                            configurations=artifact_configurations(reg, paper, artifact, scale))
    write_csv(output, table)
    job.log.info("%d claim rows: %s", len(table), table["verdict"].value_counts().to_dict())
    job.sidecars([output], inputs=[data, registry], config={"claims": claims})


def write_scorecard(scale: str, inputs, outputs, log_file: str, rule: str = "scorecard") -> None:
    """`inputs` (claims, artifacts, registries) and `outputs` (csv, md, html, assumptions) as the rule names them."""
    import pandas as pd

    from fedrepro.io import write_csv, write_text
    from fedrepro.pipeline import local_job
    from fedrepro.registry import Registry
    from fedrepro.scorecard.evaluate import unbuilt_artifact_rows
    from fedrepro.scorecard.pages import (
        assumption_files,
        claims_markdown,
        combine,
        index_html,
        paper_order,
        write_assumption_tables,
    )

    claims, artifacts, registries = list(inputs.claims), list(inputs.artifacts), list(inputs.registries)
    with local_job(rule, log_file, inputs=[*claims, *artifacts]) as job:
        registry = Registry.load(".", check=False)   # checked by the workflow at parse time
        table = combine(claims)
        unbuilt = unbuilt_artifact_rows(registry, scale).astype(str)
        table = pd.concat([table, unbuilt], ignore_index=True) if not unbuilt.empty else table
        papers = paper_order(registry)
        write_csv(outputs.csv, table)
        write_text(outputs.md, claims_markdown(table, scale, papers))
        tables = {p: assumption_files(scale, p) for p in papers}
        expected = sorted(str(f) for f in getattr(outputs, "assumptions", []))
        written = sorted(f for files in tables.values() for f in files.values())
        if expected and expected != written:
            raise ValueError(f"the scorecard rule's assumption outputs {expected} are not the tables {written}")
        write_assumption_tables(registry, scale, table, tables)
        write_text(outputs.html, index_html(registry, scale, table, Path(outputs.html)))
        job.log.info("%d claim rows", len(table))
        job.sidecars([outputs.csv, outputs.md, outputs.html, *written], inputs=[*claims, *artifacts, *registries],
                     config={"scale": scale})
