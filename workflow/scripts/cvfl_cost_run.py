"""C-VFL cost check (no data, no training): the paper's printed costs and times from the recovered formula."""

from fedrepro.cvfl.costcheck import cost_check
from fedrepro.io import write_csv
from fedrepro.pipeline import rule_run
from fedrepro.registry import Registry

sm = snakemake  # noqa: F821  (provided by Snakemake's script directive)
with rule_run(sm) as run:
    params = dict(sm.params.cfg)
    claims = Registry.load(".").claims("cvfl")          # the printed numbers live in the claims' paper tables
    rows = cost_check(params, claims)
    rows.insert(0, "configuration", sm.wildcards.configuration)
    write_csv(sm.output.csv, rows)
    run.log.info("%d cells; %d within the printed digits", len(rows),
                 int((abs(rows.formula - rows.paper) <= rows.resolution + 1e-9 * abs(rows.paper)).sum()))
    run.sidecars([sm.output.csv], inputs=[sm.input.registry], config=params, seeds=[],
                 data={"cvfl-printed-numbers": "real"},
                 extra={"note": "no dataset and no training: the paper's numbers (registry claims) and the spec's "
                                "derived epochs (experiment parameters) through fedrepro.cvfl.costcheck"})
