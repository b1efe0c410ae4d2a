"""The scorecard job, in the Snakemake process: every artifact's claims -> results/<scale>/claims.{csv,md}, the
assumption tables, the index page and the rst the report opens with.  (Each artifact's own claims are judged by its
render job: `fedrepro.scorecard.artifact_claims`.)
"""

from __future__ import annotations

from pathlib import Path


def write_scorecard(scale: str, inputs, outputs, log_file: str, rule: str = "scorecard") -> None:
    """`inputs` (claims, artifacts, registries) and `outputs` (csv, md, html, summary, assumptions) as the rule names
    them (summary: the rst `snakemake --report` opens with)."""
    import pandas as pd

    from fedrepro.io import write_csv, write_text
    from fedrepro.registry.papers import Registry
    from fedrepro.scorecard.evaluate import unbuilt_artifact_rows
    from fedrepro.scorecard.pages import (
        assumption_files,
        claims_markdown,
        combine,
        index_html,
        paper_order,
        write_assumption_tables,
    )
    from fedrepro.scorecard.report_summary import report_summary_rst
    from fedrepro.workflow.jobs import local_job

    claims, artifacts, registries = list(inputs.claims), list(inputs.artifacts), list(inputs.registries)
    published = list(getattr(inputs, "published", []))   # published/paper claims, shown beside this scale's
    with local_job(rule, log_file, inputs=[*claims, *artifacts, *published]) as job:
        registry = Registry.load(".", check=False)   # checked by the workflow at parse time
        table = combine(claims)
        unbuilt = unbuilt_artifact_rows(registry, scale).astype(str)
        table = pd.concat([table, unbuilt], ignore_index=True) if not unbuilt.empty else table
        if published:
            from fedrepro.provenance.published import paper_scale_verdicts

            table = table.merge(paper_scale_verdicts(published), on=["paper", "claim", "configuration"], how="left")
            table = table.fillna({"paper_scale_value": "", "paper_scale_verdict": ""})
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
        write_text(outputs.summary, report_summary_rst(registry, scale, table))
        job.log.info("%d claim rows", len(table))
        job.sidecars([outputs.csv, outputs.md, outputs.html, outputs.summary, *written],
                     inputs=[*claims, *artifacts, *registries, *published],
                     config={"scale": scale})
