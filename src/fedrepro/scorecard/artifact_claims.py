"""One artifact's claims judged on the numbers it shows -> results/<scale>/<paper>/claims/<artifact>.csv.

Called by the render job right after its notebook wrote those numbers.  A module of its own so that a render
depends on the claim evaluation only, not on the scorecard's pages (editing `pages.py` re-renders nothing).
"""

from __future__ import annotations


def write_artifact_claims(job, wildcards, *, data: str, registry: str, output: str) -> None:
    """One artifact's claims judged on the CSV it wrote (`data`) -> `output` and its sidecar.

    Called by the render job right after the notebook wrote `data` (and its sidecar, which carries the data status):
    the notebook's "Paper vs ours" and the scorecard are computed by this same code, `evaluate_claims`."""
    import pandas as pd

    from fedrepro.io import write_csv
    from fedrepro.provenance import read_sidecar
    from fedrepro.registry.papers import Registry
    from fedrepro.scorecard.evaluate import artifact_configurations, evaluate_claims
    from fedrepro.scorecard.reasons import fitted_configurations

    paper, artifact, scale = wildcards.paper, wildcards.artifact, wildcards.scale
    reg = Registry.load(".", check=False)   # the workflow checked it before any job ran
    claims = reg.claims(paper, artifact)
    table = evaluate_claims(claims, pd.read_csv(data), paper=paper, artifact=artifact, scale=scale,
                            data_status=(read_sidecar(data) or {}).get("data"),
                            configurations=artifact_configurations(reg, paper, artifact, scale),
                            fitted=fitted_configurations(reg, paper, artifact))
    write_csv(output, table)
    job.log.info("%d claim rows: %s", len(table), table["verdict"].value_counts().to_dict())
    job.sidecars([output], inputs=[data, registry], config={"claims": claims})
