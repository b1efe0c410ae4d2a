"""One block of a run done in chained blocks (fedrepro.checkpoint; rules run_block and run_last_block): the runner
goes on from the checkpoint of the block before (or of this block's killed job), and stops at its share of the
run's steps with the checkpoint the next block reads; the last block writes the part's tidy CSV + sidecars, as the
run rule (workflow/scripts/run.py) writes a whole run's."""

from fedrepro.checkpoint import Block, BlockEnd, Progress, run_key
from fedrepro.comm.plugins import import_plugins
from fedrepro.io import write_csv
from fedrepro.provenance.sidecar import read_sidecar
from fedrepro.runner import RunContext, load_runner
from fedrepro.runtime import limit_threads
from fedrepro.workflow.jobs import RunCost, rule_run

sm = snakemake  # noqa: F821  (provided by Snakemake's script directive)
spec, block = sm.params.spec, sm.params.block
with rule_run(sm, inputs=sm.input) as run:
    threads = 1 if spec["alone"] else spec["threads"]      # the registry's count, as the run rule's
    limit_threads(threads)
    inputs = dict(sm.input.items())
    import_plugins(sm.config.get("comm", {}).get("plugins"))
    ctx = RunContext(paper=sm.wildcards.paper, experiment=sm.wildcards.experiment,
                     configuration=sm.wildcards.configuration, scale=sm.wildcards.scale, params=dict(sm.params.cfg),
                     inputs={k: v for k, v in inputs.items() if k != "resume"}, output=sm.output[0], threads=threads,
                     device_preference=sm.config.get("device", "auto"), log=run.log,
                     progress=lambda it, **kw: run.progress(it, **kw))
    checkpoint = sm.output.get("checkpoint")                 # None in the last block
    ctx.blocks = Progress(Block(block["index"], block["count"], checkpoint, f"{sm.output[0]}.partial",
                                inputs.get("resume")),
                          key=run_key(ctx.params, sm.params.code),
                          save_every_s=60 * float((sm.config.get("cluster") or {}).get("checkpoint_minutes", 30)),
                          log=run.log.info)
    run.log.info("block %d of %d, computing with %d thread(s)", block["index"] + 1, block["count"], threads)
    cost = RunCost.start()
    try:
        result = load_runner(spec["runner"])(ctx)
    except BlockEnd:
        result = None
    cost.stop()
    run.device = getattr(ctx, "_device", "cpu")
    steps = {"block": block, "steps": ctx.blocks.counter, "of_steps": ctx.blocks.total}
    # the chain's cost so far (the plan reads a run's whole cost from its CSV's sidecar): this block's plus the
    # blocks' before it, as the previous checkpoint's sidecar sums them
    before = (read_sidecar(inputs["resume"]).get("extra") or {}) if "resume" in inputs else {}
    own = cost.record()
    total = {"wall_seconds": round(own["wall_seconds"] + before.get("wall_seconds", 0), 2),
             "cpu_seconds": round(own["cpu_seconds"] + before.get("cpu_seconds", 0), 2),
             "peak_rss_mb": max(own["peak_rss_mb"], before.get("peak_rss_mb", 0))}
    if result is None:
        run.sidecars([checkpoint], inputs=list(inputs.values()), config=ctx.params, seeds=[ctx.seed],
                     extra={"runner": spec["runner"], **steps, **total})
    else:
        rows = result.rows
        if "configuration" not in rows:
            rows.insert(0, "configuration", ctx.configuration)
        write_csv(sm.output.csv, rows)
        run.log.info("%s/%s: %d rows, the last of %d blocks", ctx.experiment, ctx.configuration, len(rows),
                     block["count"])
        run.sidecars([sm.output.csv, *result.side_files],
                     inputs=result.inputs if result.inputs is not None else list(inputs.values()),
                     config=ctx.params, seeds=result.seeds if result.seeds is not None else [ctx.seed],
                     data=result.data, extra={"runner": spec["runner"], **steps, **total, **result.extra})
