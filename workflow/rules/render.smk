# Rendering (notebook, figure or table, and the artifact's claims), the scorecard and the index page.


report: "../report/workflow.rst"


rule render_table:
    """Execute an artifact's notebook: its table (CSV + Markdown) or figure (render_figure), the executed notebook
    and the artifact's claims."""
    input:
        unpack(render_inputs),
    output:
        **render_outputs("tables", ("csv", "md"), shown="csv", kind="table"),
    log:
        "results/{scale}/{paper}/logs/render/{artifact}.log",
    wildcard_constraints:
        artifact=_artifact_names("table"),
    conda:
        "../../environment.yml"
    threads: 1
    resources:
        machine=1,
        host_cores=1,
    params:
        nb=render_params,
        code=render_code,
        label=lambda wc: REGISTRY.artifact(wc.paper, wc.artifact)["label"],
        caption=lambda wc: REGISTRY.artifact(wc.paper, wc.artifact)["caption"],
    script:
        "../scripts/render_artifact.py"


# A figure: the same job, with the figure's files (its data CSV, PDF and PNG).
use rule render_table as render_figure with:
    output:
        **render_outputs("figures", ("csv", "pdf", "png"), shown="png", kind="figure"),
    wildcard_constraints:
        artifact=_artifact_names("figure"),


rule render_leaderboard:
    """The cross-paper leaderboard (config/leaderboard.yaml): every registered compressor through each work's
    comparison setting, from the figures' runs (the papers' own compressors) and the board runs (every other one);
    the figures' claims mark a setting below the regime the paper's claims need.
    """
    input:
        notebook="notebooks/leaderboard/leaderboard.py",
        runs=lambda wc: [
            f for fs in BOARD.run_files(wc.scale, REGISTRY).values() for f in fs
        ],
        claims=lambda wc: list(BOARD.claims_files(wc.scale, REGISTRY).values()),
        registry="config/leaderboard.yaml",
        registries=BOARD.registries(),
    output:
        csv=report(
            "results/{scale}/leaderboard.csv",
            caption="../report/leaderboard.rst",
            category="leaderboard",
            labels={"artifact": "leaderboard", "kind": "table"},
        ),
        md="results/{scale}/leaderboard.md",
        png=report(
            "results/{scale}/leaderboard.png",
            caption="../report/leaderboard.rst",
            category="leaderboard",
            labels={"artifact": "leaderboard", "kind": "figure"},
        ),
        pdf="results/{scale}/leaderboard.pdf",
        ipynb="results/{scale}/notebooks/leaderboard.ipynb",
        html="results/{scale}/notebooks/leaderboard.html",
        provs=[
            f"results/{{scale}}/{f}.prov.json"
            for f in (
                "leaderboard.csv",
                "leaderboard.md",
                "leaderboard.png",
                "leaderboard.pdf",
                "notebooks/leaderboard.ipynb",
                "notebooks/leaderboard.html",
            )
        ],
    log:
        "results/{scale}/logs/render/leaderboard.log",
    conda:
        "../../environment.yml"
    threads: 1
    resources:
        machine=1,
        host_cores=1,
    params:
        nb=lambda wc: {"plugins": list(config.get("comm", {}).get("plugins") or [])},
        code=code(
            "workflow/scripts/render_artifact.py",
            "notebooks/leaderboard/leaderboard.py",
            extra=tuple(PLUGIN_FILES),
        ),
    script:
        "../scripts/render_artifact.py"


rule scorecard:
    """results/<scale>/claims.{csv,md}, each paper's assumption tables, the landing page index.html and the rst the
    report opens with (workflow/report/workflow.rst includes it)."""
    input:
        claims=lambda wc: [
            REGISTRY.claims_file(p, a, wc.scale)
            for p, a, _ in REGISTRY.artifacts(scale=wc.scale)
        ],
        artifacts=lambda wc: [
            f
            for p, a, _ in REGISTRY.artifacts(scale=wc.scale)
            for f in REGISTRY.artifact_files(p, a, wc.scale).values()
        ],
        registries=[f"config/papers/{p}.yaml" for p in PAPERS],
        # the published paper-scale verdicts, shown beside this scale's (docs/architecture.md, "Published results")
        published=lambda wc: (
            []
            if wc.scale == "paper"
            else [str(f) for f in published_claims_files("paper", ".")]
        ),
        leaderboard=lambda wc: [
            leaderboard_files(wc.scale)[x] for x in ("csv", "md", "png")
        ],
    output:
        csv="results/{scale}/claims.csv",
        md="results/{scale}/claims.md",
        html="results/{scale}/index.html",
        summary=report(
            "results/{scale}/report_summary.rst",
            caption="../report/summary.rst",
            category="0. verdicts",
            labels={"artifact": "verdicts", "kind": "summary"},
        ),
        assumptions=[
            f"results/{{scale}}/{p}/tables/assumptions.{x}"
            for p in PAPERS
            for x in ("csv", "md")
        ],
        provs=[
            "results/{scale}/claims.csv.prov.json",
            "results/{scale}/claims.md.prov.json",
            "results/{scale}/index.html.prov.json",
            "results/{scale}/report_summary.rst.prov.json",
            *[
                f"results/{{scale}}/{p}/tables/assumptions.{x}.prov.json"
                for p in PAPERS
                for x in ("csv", "md")
            ],
        ],
    log:
        "results/{scale}/logs/scorecard.log",
    localrule: True
    resources:
        machine=1,
        host_cores=1,
    params:
        code=code(modules=("fedrepro.scorecard.outputs",)),
    run:
        from fedrepro.scorecard.outputs import write_scorecard

        write_scorecard(wildcards.scale, input, output, log[0])
