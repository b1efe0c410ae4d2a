"""Command line: `python -m fedrepro audit <artifact | claim | path>` (or `--published`), `list`,
`plan [--scale S] [TARGET]`, `status` and `publish --scale S`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fedrepro.artifact import repo_root
from fedrepro.provenance.audit import audit_paths
from fedrepro.registry.config import SCALES, ConfigError, load_yaml
from fedrepro.registry.papers import Registry


def _default_scale(root: Path) -> str:
    return load_yaml(root / "config" / "config.yaml").get("scale", "quick")


class AuditTargetError(ValueError):
    """An `audit` argument that names nothing auditable (exit 2 with the message)."""


def _suggestions(registry: Registry, ident: str) -> list[str]:
    """Artifact and claim ids close to `ident` (`paper:id`, also matched without the paper)."""
    import difflib

    ids = [f"{p}:{a}" for p, a, _ in registry.artifacts()]
    ids += [f"{p}:{c['id']}" for p in registry.papers for c in registry.claims(p)]
    bare = {i.partition(":")[2]: i for i in ids}
    close = difflib.get_close_matches(ident, ids, n=5, cutoff=0.6)
    close += [bare[b] for b in difflib.get_close_matches(ident.partition(":")[2] or ident, list(bare), n=5, cutoff=0.6)]
    return list(dict.fromkeys(close))[:5]


def _targets(registry: Registry, ident: str, scale: str, root: Path) -> tuple[str, list[str], str | None, dict]:
    """What to audit for an identifier (a file under results/, an artifact id, or a claim id), the command that
    builds it at `scale` (None for a file), and for a claim {paper, claim, runs}."""
    if (root / ident).exists():
        inside = (root / ident).resolve().is_relative_to((root / "results").resolve())
        if not inside:
            raise AuditTargetError(f"{ident}: not under results/; audit walks what the workflow built (a file under "
                                   f"results/, an artifact such as thesis:table5.1 or a claim such as thesis:C5.2)")
        return f"file {ident}", [ident], None, {}
    try:
        paper, artifact = registry.resolve_artifact(ident)
    except ConfigError:
        try:
            paper, claim = registry.find_claim(ident)
        except ConfigError:
            close = _suggestions(registry, ident)
            raise AuditTargetError(f"{ident!r} is neither a file under results/, an artifact (e.g. thesis:table5.1) "
                                   f"nor a claim id (e.g. thesis:C5.2)"
                                   + (f"; did you mean {', '.join(close)}?" if close else "")
                                   + "\nEvery artifact: python -m fedrepro list") from None
        from fedrepro.provenance.audit import claim_runs

        artifact = claim["artifact"]
        files = [registry.claims_file(paper, artifact, scale)]
        return (f"claim {paper}:{claim['id']} (artifact {paper}:{artifact}, scale {scale})", files,
                _build_command(registry, paper, artifact, scale),
                {"paper": paper, "claim": claim, "runs": claim_runs(registry, paper, claim, scale)})
    files = list(registry.artifact_files(paper, artifact, scale).values())
    files.append(registry.claims_file(paper, artifact, scale))
    return (f"artifact {paper}:{artifact} ({registry.artifact(paper, artifact)['label']}, scale {scale})", files,
            _build_command(registry, paper, artifact, scale), {})


def _build_command(registry: Registry, paper: str, artifact: str, scale: str) -> str:
    """The Snakemake call that builds one artifact at `scale`, or where it is built when not at that scale."""
    scales = registry.artifact(paper, artifact)["scales"]
    if scale not in scales:
        return (f"it is built only at scale(s) {', '.join(scales)}: run `snakemake --cores 2 {paper}_{artifact} "
                f"--config scale={scales[0]}` and audit with --scale {scales[0]}")
    return f"run `snakemake --cores 2 {paper}_{artifact} --config scale={scale}`"


def cmd_audit(args) -> int:
    if args.published:
        return cmd_audit_published(args)
    if args.target is None:
        print("audit: name an artifact, a claim or a file under results/, or pass --published", file=sys.stderr)
        return 2
    root = repo_root()
    scale = args.scale or _default_scale(root)
    registry = Registry.load(root)
    try:
        what, files, build, claim = _targets(registry, args.target, scale, root)
    except AuditTargetError as exc:
        print(f"audit: {exc}", file=sys.stderr)
        return 2
    if build is not None and not all((root / f).exists() for f in files):
        missing = [f for f in files if not (root / f).exists()]
        print(f"{what}: not built yet ({', '.join(missing)}); {build}", file=sys.stderr)
        return 2
    if claim:
        from fedrepro.provenance.audit import claim_summary

        print("\n".join(claim_summary(claim["paper"], claim["claim"], root / files[0])))
        print()
    report = audit_paths(files, root, scale=scale, runs=claim.get("runs"))
    print(f"Audit of {what}" + (f": the {len(claim['runs'])} run(s) it reads" if claim else ""))
    print("\n".join(report.lines))
    for note in report.notes:
        print(f"note: {note}")
    if report.ok:
        print(f"OK: {report.files_checked} files re-hashed, the chain matches every sidecar.")
        return 0
    print(f"DRIFT: {len(report.drift)} file(s) cannot be trusted:", file=sys.stderr)
    for d in report.drift:
        print(f"  - {d}", file=sys.stderr)
    print("Repair (rebuilds the drifted files and everything built on them):", file=sys.stderr)
    for line in report.repair:
        print(f"  {line}", file=sys.stderr)
    return 1


def cmd_list(args) -> int:
    registry = Registry.load(repo_root())
    for paper, artifact, entry in registry.artifacts():
        claims = registry.claims(paper, artifact)
        print(f"{paper}_{artifact:<14} {paper}:{entry['label']:<12} scales={','.join(entry['scales']):<18} "
              f"claims={','.join(c['id'] for c in claims)}")
    return 0


def cmd_plan(args) -> int:
    from fedrepro.workflow import plan

    root = repo_root()
    registry = Registry.load(root)
    if args.calibrate:
        rows = plan.calibrate(root, registry)
        print(f"{plan.CALIBRATION}: {len(rows)} measurements "
              f"({sum(r.source.startswith('sidecar') for r in rows)} from this clone's run sidecars)")
        return 0
    if args.check_against:
        checks = plan.check_against(registry, plan.measurements_for(root, registry), args.check_against)
        print(f"The plan against the runs under {args.check_against} (each estimated from every measurement but "
              f"its own)\n")
        print(plan.check_table(checks))
        return 0
    if args.gpu_speedup is None:
        args.gpu_speedup = plan.GPU_SPEEDUP
    if args.max_runtime_h is None:
        args.max_runtime_h = plan.configured_max_runtime_h(root)
    measurements = plan.measurements_for(root, registry)
    jobs = plan.target_runs(registry, args.target, args.scale)
    estimates = [plan.estimate_run(registry, measurements, p, e, c, args.scale, gpu_speedup=args.gpu_speedup)
                 for p, e, c in jobs]
    print(f"Cost plan: {args.target} at scale {args.scale}: {len(jobs)} run jobs "
          f"(renders, claims and data preparation are minutes and not modelled)\n")
    print(plan.plan_table(estimates))
    print(f"\nCPU core-h: the runner's CPU time on the calibration machine(s) (basis: the scales it was fitted on; "
          f"'extrapolated' where the paper's units exceed every measurement).  GPU-h = core-h / {args.gpu_speedup:g} "
          f"(plan:A-gpu-speedup), or the runner's declared FLOP at {plan.GPU_FLOPS / 1e12:g} TFLOP/s "
          f"(plan:A-gpu-rate).  Peak MB '≥': the largest measured peak, no measured growth.  Cluster requests "
          f"(paper scale): runtime = {plan.SAFETY:g} x wall h, mem_mb = {plan.MEMORY_SAFETY:g} x peak MB "
          f"(docs/cluster.md, 'Cost planning').")
    for note in sorted({n for e in estimates for n in e.notes}):
        print(f"note: {note}")
    over = plan.over_limit(registry, measurements, jobs, args.scale, args.max_runtime_h)
    if over:
        print(f"\n{len(over)} run job(s) over the time limit (cluster.max_runtime_h = {args.max_runtime_h:g} h; "
              f"one that is not split asks for the limit and would be stopped there):")
        for line in over:
            print(f"over the limit: {line}")
    return 0


_SHORT = {"reproduced": "reproduced", "consistent-fitted": "consistent (fitted)",
          "reproduced-qualitatively": "qualitatively", "not-reproduced": "not reproduced",
          "not-comparable": "not-comparable", "not-run": "not-run"}


def _one_scorecard_table(path: Path, registry: Registry) -> str:
    from fedrepro.scorecard.evaluate import VERDICTS
    from fedrepro.scorecard.pages import combine, paper_order, verdict_counts

    counts = verdict_counts(combine([path]), paper_order(registry))
    # consistent-fitted (judged under values read off the same artifact) is its own column, never summed into
    # reproduced
    columns = [v for v in VERDICTS if v in counts]
    lines = ["| paper | configuration | " + " | ".join(_SHORT[v] for v in columns) + " | total |",
             "|---|---|" + "---|" * (len(columns) + 1)]
    for _, row in counts.iterrows():
        lines.append(f"| {row.paper} | {row.configuration} | " + " | ".join(str(int(row[v])) for v in columns)
                     + f" | {int(row.total)} |")
    return "\n".join(lines)


def published_status_table(root: Path, registry: Registry) -> str:
    """Quick and paper-scale verdict counts side by side (`quick / paper` in each cell, `–` where a configuration
    has no published paper-scale claims), from published/; a row whose claims or runs are not `current`
    (`audit --published`) is marked stale."""
    from fedrepro.provenance.published import audit_published, published_claims_files, stale_artifacts
    from fedrepro.scorecard.evaluate import VERDICTS
    from fedrepro.scorecard.pages import combine, paper_order, verdict_counts

    frames, stale = {}, stale_artifacts(audit_published(root), root)
    for scale in ("quick", "paper"):
        files = published_claims_files(scale, root)
        if files:
            frames[scale] = combine(files)
    if "quick" not in frames:
        raise FileNotFoundError(f"{root / 'published' / 'quick'}: nothing published; build and publish with "
                                f"`snakemake --cores 2 all && python -m fedrepro publish --scale quick`")
    order = paper_order(registry)
    counts = {s: verdict_counts(f, order).set_index(["paper", "configuration"]) for s, f in frames.items()}
    keys = list(dict.fromkeys([*counts["quick"].index, *(counts["paper"].index if "paper" in counts else [])]))
    rank = {p: i for i, p in enumerate(order)}
    keys.sort(key=lambda k: rank.get(k[0], len(rank)))
    columns = [v for v in VERDICTS if any(v in c.columns for c in counts.values())] + ["total"]
    stale_rows = {(p, c) for s, p, a in stale for c in frames[s].loc[(frames[s]["paper"] == p)
                                                                     & (frames[s]["artifact"] == a), "configuration"]}

    def cell(scale, key, column):
        c = counts.get(scale)
        if c is None or key not in c.index:
            return "–"
        return str(int(c.loc[key].get(column, 0)))

    lines = ["| paper | configuration | " + " | ".join(_SHORT.get(v, v) for v in columns) + " |",
             "|---|---|" + "---|" * len(columns)]
    for key in keys:
        mark = " (stale)" if key in stale_rows else ""
        lines.append(f"| {key[0]} | {key[1]}{mark} | "
                     + " | ".join(f"{cell('quick', key, v)} / {cell('paper', key, v)}" for v in columns) + " |")
    return "\n".join(lines)


def cmd_status(args) -> int:
    """Verdict counts per paper and configuration: quick / paper side by side from published/ (the README's status
    table), or one scorecard (--results: this clone's results/<scale>/claims.csv; --claims FILE)."""
    root = Path(repo_root())
    registry = Registry.load(root)
    if args.claims or args.results:
        path = Path(args.claims or root / "results" / args.scale / "claims.csv")
        if not path.exists():
            raise FileNotFoundError(f"{path}: no scorecard; build one with `snakemake --cores 2 all "
                                    f"--config scale={args.scale}` or pass --claims FILE")
        print(_one_scorecard_table(path, registry))
        return 0
    print(published_status_table(root, registry))
    return 0


def cmd_publish(args) -> int:
    """Copy one scale's built artifacts, their runs and sidecars from results/ to published/ (verified first)."""
    from fedrepro.provenance.published import PublishError, publish

    root = Path(repo_root())
    try:
        written = publish(Registry.load(root), args.scale, root)
    except PublishError as exc:
        print(f"publish: {exc}", file=sys.stderr)
        return 2
    print(f"published/{args.scale}: {len(written)} files, each with its sidecar "
          f"(check them with `python -m fedrepro audit --published`)")
    return 0


def cmd_audit_published(args) -> int:
    from collections import Counter

    from fedrepro.provenance.published import audit_published

    root = Path(repo_root())
    results = audit_published(root, args.scale)
    if not results:
        print("audit --published: nothing under published/", file=sys.stderr)
        return 2
    for r in results:
        if r.state != "current" or args.verbose:
            print(f"{r.path}: {r.state}")
    states = Counter(r.state.split(":")[0] for r in results)
    print(f"{len(results)} published files: " + ", ".join(f"{n} {s}" for s, n in sorted(states.items())))
    return 1 if states.get("broken") else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fedrepro", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    a = sub.add_parser("audit", help="re-verify the provenance chain of an artifact, a claim or a file")
    a.add_argument("target", nargs="?", help="artifact (thesis:table5.1), claim (thesis:C5.2) or a path under results/")
    a.add_argument("--scale", choices=SCALES, help="default: the scale in config/config.yaml (with --published: all)")
    a.add_argument("--published", action="store_true",
                   help="re-hash every chain under published/ and say per file: current, or stale with the files "
                        "changed since it was made")
    a.add_argument("-v", "--verbose", action="store_true", help="with --published: list current files too")
    a.set_defaults(func=cmd_audit)
    ls = sub.add_parser("list", help="every artifact with its Snakemake target and claims")
    ls.set_defaults(func=cmd_list)
    pl = sub.add_parser("plan", help="estimated CPU-hours, GPU-hours, memory and disk of a target's runs at a scale")
    pl.add_argument("target", nargs="?", default="all", help="all (default), a paper, an artifact alias, or leaderboard (its board runs)")
    pl.add_argument("--scale", choices=SCALES, default="paper")
    pl.add_argument("--max-runtime-h", type=float, default=None,
                    help="the cluster's job time limit in hours (default: config/config.yaml cluster.max_runtime_h)")
    pl.add_argument("--gpu-speedup", type=float, default=None,
                    help="CPU cores one GPU replaces (default: fedrepro.workflow.plan.GPU_SPEEDUP, plan:A-gpu-speedup)")
    pl.add_argument("--check-against", metavar="FOLDER",
                    help="the plan's CPU seconds, peak memory and disk beside those measured by the run sidecars "
                         "under FOLDER (e.g. published/paper), each estimated from every measurement but its own")
    pl.add_argument("--calibrate", action="store_true",
                    help="rewrite config/calibration.csv from the run sidecars under results/ and published/")
    pl.set_defaults(func=cmd_plan)
    st = sub.add_parser("status", help="verdict counts per paper and configuration, quick / paper from published/ "
                                        "(the README's table), or of one scorecard (markdown table)")
    st.add_argument("--results", action="store_true", help="this clone's results/<scale>/claims.csv instead")
    st.add_argument("--scale", choices=SCALES, default="quick", help="with --results")
    st.add_argument("--claims", help="one claims.csv instead")
    st.set_defaults(func=cmd_status)
    pb = sub.add_parser("publish", help="copy a scale's built artifacts, runs and sidecars to published/<scale>/")
    pb.add_argument("--scale", choices=SCALES, required=True)
    pb.set_defaults(func=cmd_publish)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (ConfigError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
