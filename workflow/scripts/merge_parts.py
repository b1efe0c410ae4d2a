"""Concatenate the parts of a split run (fedrepro.workflow.split) in order into the run's CSV and sidecar: the rows,
data kinds and seeds the unsplit run would record, and the parts' summed cost for the plan."""

from fedrepro.io import write_csv
from fedrepro.provenance.sidecar import read_sidecar
from fedrepro.workflow.jobs import rule_run
from fedrepro.workflow.split import merge_parts

sm = snakemake  # noqa: F821  (provided by Snakemake's script directive)
parts = [p for p in sm.input.parts if not p.endswith(".prov.json")]
with rule_run(sm, inputs=parts) as run:
    records = [read_sidecar(p) for p in parts]
    rows = merge_parts(parts)
    write_csv(sm.output.csv, rows)
    data: dict = {}
    for record in records:
        data.update(record.get("data") or {})
    extras = [record.get("extra") or {} for record in records]
    cost = {"cpu_seconds": round(sum(e.get("cpu_seconds", 0) for e in extras), 2),
            "wall_seconds": round(sum(e.get("wall_seconds", 0) for e in extras), 2),
            "peak_rss_mb": max((e.get("peak_rss_mb") or 0 for e in extras), default=0)}
    extra = {k: v for k, v in extras[0].items() if k not in (*cost, "timing")}
    timing = [t for e in extras for t in (e.get("timing") or [])]
    run.log.info("%d parts (%s), %d rows", len(parts), sm.params.split["label"], len(rows))
    run.sidecars([sm.output.csv], inputs=parts, config=dict(sm.params.cfg),
                 seeds=sorted({s for record in records for s in record.get("seeds") or []}), data=data,
                 extra={**extra, **cost, **({"timing": timing} if timing else {}),
                        "split": {"label": sm.params.split["label"], "parts": len(parts)}})
