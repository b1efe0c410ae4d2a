"""What every artifact notebook does before it draws: find its runs, its outputs and the registry's settings.

A notebook (`notebooks/<paper>/<artifact>.py`, jupytext percent format) has one `parameters` cell
(root, scale, configuration, run_files, outputs: the render rule fills them in) and then calls

    art = open_artifact("gcca", "fig3", root=root, scale=scale, configuration=configuration,
                        run_files=run_files, outputs=outputs)
    fig3(art)          # fedrepro.<family>.artifacts: draws, writes art.outputs, returns the figure/table

Opened by hand (every parameter None), it reads `results/<scale>/<paper>/runs/` and writes to a scratch
folder, never over the tracked outputs.  Per-artifact numbers (targets, savings, labels) come from the
registry's `parameters:` of the artifact, so the notebook and the pipeline can never disagree on them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path


def repo_root(start: str | Path | None = None) -> Path:
    """The directory holding the Snakefile, searched upwards from `start` (default: the working directory)."""
    here = Path(start or Path.cwd()).resolve()
    for p in (here, *here.parents):
        if (p / "Snakefile").exists() and (p / "config" / "papers").is_dir():
            return p
    raise FileNotFoundError(f"no fedrepro checkout (a Snakefile beside config/papers) above {here}")


def default_outputs(root: Path, scale: str, paper: str, artifact: str, kind: str) -> dict[str, str]:
    """Where an artifact goes when the notebook runs by hand: a scratch folder, never the tracked outputs."""
    base = root / "results" / scale / paper / "scratch" / artifact
    suffixes = ("csv", "md") if kind == "table" else ("csv", "pdf", "png")
    return {s: str(base.with_suffix("." + s)) for s in suffixes}


def data_status(root: str | Path, run_files) -> dict:
    """dataset -> 'real' | 'real-reencoded' | 'stand-in' over the runs' sidecars (what the artifact's own sidecar
    will say)."""
    from fedrepro.provenance.sidecar import inherited_data_status

    return inherited_data_status([Path(root) / f for f in run_files])


def uses_stand_in(root: str | Path, run_files) -> bool:
    """True when any input run was made from stand-in data: the figure must then carry the mark."""
    return any(v == "stand-in" for v in data_status(root, run_files).values())


@dataclass
class Artifact:
    """One artifact being drawn: where its runs are, where it writes, what the registry says about it."""

    root: Path
    paper: str
    name: str
    scale: str
    configuration: str           # the configuration asked for (config key `configuration`)
    run_files: list[str]
    outputs: dict[str, str]      # csv + (md | pdf, png)
    entry: dict = field(repr=False)
    registry: object = field(repr=False)

    # ---- what the registry says -----------------------------------------------------------------------
    @property
    def kind(self) -> str:
        return self.entry["kind"]

    @property
    def label(self) -> str:
        return self.entry["label"]

    @property
    def caption(self) -> str:
        return self.entry["caption"]

    @property
    def params(self) -> dict:
        """The artifact's `parameters:` in the registry (targets, the paper's savings, ...)."""
        return dict(self.entry.get("parameters") or {})

    @property
    def experiments(self) -> list[str]:
        return list(self.entry["experiments"])

    def run_params(self, experiment: str | None = None, configuration: str | None = None) -> dict:
        """The resolved parameters a run used (the registry at this scale): sizes for captions come from here."""
        experiment = experiment or self.experiments[0]
        configuration = configuration or self.shown
        return self.registry.params(self.paper, experiment, configuration, self.scale)

    def claims(self) -> list[dict]:
        return self.registry.claims(self.paper, self.name)

    # ---- the runs -----------------------------------------------------------------------------------
    @cached_property
    def runs(self):
        """Every run CSV of the artifact's experiments, concatenated (long format)."""
        import pandas as pd

        if not self.run_files:
            raise FileNotFoundError(f"{self.paper}:{self.name}: no run files under results/{self.scale}/{self.paper}/runs/; "
                                    f"build them with: snakemake --cores 2 {self.paper}_{self.name} --config scale={self.scale}")
        return pd.concat([pd.read_csv(self.root / f, low_memory=False) for f in self.run_files], ignore_index=True)

    def runs_of(self, experiment: str):
        """The runs of one experiment (a run CSV lives under runs/<experiment>/)."""
        import pandas as pd

        files = [f for f in self.run_files if Path(f).parent.name == experiment]
        return pd.concat([pd.read_csv(self.root / f, low_memory=False) for f in files], ignore_index=True)

    @property
    def configurations(self) -> list[str]:
        """The configurations present in the runs, in run order."""
        return list(dict.fromkeys(self.runs["configuration"]))

    @property
    def shown(self) -> str:
        """The configuration the figure or table shows: the one asked for if it ran, else the first."""
        configs = self.configurations
        return self.configuration if self.configuration in configs else configs[0]

    @cached_property
    def data_status(self) -> dict:
        return data_status(self.root, self.run_files)

    @property
    def stand_in(self) -> bool:
        return any(v == "stand-in" for v in self.data_status.values())

    @property
    def reencoded(self) -> bool:
        """Made from real images through a lossy codec (a JPEG copy of CIFAR-10): judged, with a lighter mark."""
        return any(v == "real-reencoded" for v in self.data_status.values())

    # ---- writing ------------------------------------------------------------------------------------
    def write_data(self, frame) -> None:
        """The numbers the artifact shows (claims are computed from this CSV)."""
        from fedrepro.io import write_csv

        write_csv(self.outputs["csv"], frame)

    def data_status_of(self, experiments) -> dict:
        """dataset -> data kind over the runs of `experiments` alone (what one panel of a figure was drawn from)."""
        experiments = set(experiments)
        return data_status(self.root, [f for f in self.run_files if Path(f).parent.name in experiments])

    def panel_marks(self, panels: Mapping | None = None) -> tuple:
        """(stand_in, reencoded) for `fedrepro.plotting.save_figure`: True/False for the whole figure, or the Axes
        to mark where the panels' data differ.  `panels`: Axes -> the experiments whose runs it draws (None: the
        whole figure, from every input run)."""
        if not panels:
            return self.stand_in, self.reencoded
        kinds = {ax: set(self.data_status_of(exps).values()) for ax, exps in panels.items()}
        stand_in = [ax for ax, k in kinds.items() if "stand-in" in k]
        reencoded = [ax for ax, k in kinds.items() if "real-reencoded" in k and ax not in stand_in]
        if len(stand_in) == len(kinds):          # every panel alike: one mark across the figure, as without panels
            return True, False
        if len(reencoded) == len(kinds):
            return False, True
        return stand_in, reencoded

    def save_figure(self, fig, panels: Mapping | None = None) -> None:
        """PDF + PNG, with the stand-in watermark when any input is a stand-in (else a lighter re-encoded mark when
        any input is a lossy copy of the real images).  With `panels` (Axes -> the experiments it draws), each
        panel carries the mark of its own runs' data instead: C-VFL Fig. 3's real CIFAR-10 panels stay unmarked
        beside its stand-in MIMIC-III and ModelNet10 panels.

        The figure is closed afterwards: the notebook shows it once, as the value the artifact function returns
        (the inline backend would otherwise also draw every open figure at the end of the cell), and it shows the
        PNG file just written, byte for byte, instead of drawing the figure a third time (`show_saved_png`)."""
        import matplotlib.pyplot as plt

        from fedrepro.plotting import save_figure

        stand_in, reencoded = self.panel_marks(panels)
        save_figure(fig, self.outputs["pdf"], self.outputs["png"], stand_in=stand_in, reencoded=reencoded)
        plt.close(fig)
        fig._fedrepro_saved_png = Path(self.outputs["png"]).read_bytes()
        show_saved_png()

    def write_markdown(self, text: str) -> None:
        from fedrepro.io import write_text

        write_text(self.outputs["md"], text.rstrip("\n") + "\n")

    # ---- paper vs ours ------------------------------------------------------------------------------
    def judge(self):
        """The artifact's claims judged on the CSV it wrote, by the code the render job writes the claims CSV with,
        so the notebook and the scorecard can never disagree (one row per claim number and configuration)."""
        import pandas as pd

        from fedrepro.scorecard.evaluate import artifact_configurations, evaluate_claims
        from fedrepro.scorecard.reasons import fitted_configurations

        csv = self.root / self.outputs["csv"]
        data = pd.read_csv(csv) if csv.exists() else None
        return evaluate_claims(self.claims(), data, paper=self.paper, artifact=self.name, scale=self.scale,
                               data_status=self.data_status,
                               configurations=artifact_configurations(self.registry, self.paper, self.name, self.scale),
                               fitted=fitted_configurations(self.registry, self.paper, self.name))

    def assumptions(self) -> dict:
        """The paper's registered assumptions (`assumptions:` of the registry): id -> entry."""
        return self.registry.assumptions(self.paper)

    def paper_vs_ours(self):
        """The notebook's closing section: each claim's paper value, ours, band and verdict, and for each failure
        the recorded reason (the claim's detail, the configuration, the assumptions it depends on, the artifact's
        `differs:` notes).  Call it after the artifact function has written the CSV."""
        from IPython.display import Markdown

        return Markdown(paper_vs_ours_markdown(self.judge(), scale=self.scale, assumptions=self.assumptions(),
                                               differs=list(self.params.get("differs") or [])))


def show_saved_png() -> None:
    """In a notebook, show a figure that `Artifact.save_figure` wrote as its PNG file instead of drawing it again.

    Drawing is most of a render's time (a PDF, a PNG, then the inline backend's own PNG, each with a layout pass);
    the third draw is saved, and the notebook shows exactly the artifact's PNG.  Other figures draw as usual."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None:
        return
    import base64

    from matplotlib.figure import Figure

    formatter = shell.display_formatter.formatters["image/png"]
    draw = formatter.lookup_by_type(Figure) if Figure in formatter else None
    if draw is None or getattr(draw, "_fedrepro", False):
        return

    def saved_or_drawn(fig, **kwargs):
        saved = getattr(fig, "_fedrepro_saved_png", None)
        return base64.b64encode(saved).decode("ascii") if saved is not None else draw(fig, **kwargs)

    saved_or_drawn._fedrepro = True
    formatter.for_type(Figure, saved_or_drawn)


FAILED = ("not-reproduced", "reproduced-qualitatively", "not-run")
_DOC_PREFIX = "../../../../"   # from results/<scale>/<paper>/notebooks/ to the repository root


def claim_base(claim_id: str) -> str:
    """'C5.1[n1=100,...,phase1]' -> 'C5.1': the registry claim a scorecard row belongs to."""
    return claim_id.split("[", 1)[0]


def claim_assumptions(assumptions: dict, claim_id: str, configuration: str) -> list[str]:
    """The assumptions a claim depends on: those whose `claims:` name it; one without `claims:` touches every
    claim judged under its configurations."""
    base = claim_base(claim_id)
    return [a for a, entry in assumptions.items()
            if (base in entry["claims"] if entry.get("claims") else
                any(configuration in configs for configs in entry["alternatives"].values()))]


def paper_vs_ours_markdown(table, *, scale: str, assumptions: dict | None = None, differs: list[str] | None = None,
                           shown_rows: int = 3) -> str:
    """Markdown of 'Paper vs ours' from scorecard rows (`fedrepro.scorecard.evaluate.evaluate_claims`)."""
    import pandas as pd

    from fedrepro.plotting.tables import markdown_table
    from fedrepro.scorecard.reasons import linked_markdown

    assumptions, differs = assumptions or {}, differs or []
    out = ["### Paper vs ours", ""]
    if table.empty:
        return "\n".join(out + ["This artifact has no registered claims."]) + "\n"
    counts = ", ".join(f"{n} {v}" for v, n in table["verdict"].value_counts().items())
    out += [f"The scorecard's verdicts at scale `{scale}` ({counts}), computed from the CSV this notebook just wrote "
            "by the claims job's own code (`fedrepro.scorecard.evaluate`).", ""]
    reasons = table["reason"] if "reason" in table else table["detail"]
    shown = table.assign(why=[r or d if v != "reproduced" else "" for v, r, d in
                              zip(table["verdict"], reasons, table["detail"])])
    shown = shown[["claim", "configuration", "paper_value", "our_value", "band", "verdict", "why"]]
    out += [markdown_table(shown.rename(columns={"paper_value": "paper", "our_value": "ours"})), ""]
    failed = table[table["verdict"].isin(FAILED)]
    if not failed.empty:
        out += ["#### Claims that miss the paper, and why", ""]
        groups = failed.assign(base=failed["claim"].map(claim_base)).groupby(["base", "configuration"], sort=False)
        for (base, config), rows in groups:
            total = int(((table["claim"].map(claim_base) == base) & (table["configuration"] == config)).sum())
            head = f"- **{base}** (configuration `{config}`"
            head += f", {len(rows)} of {total} numbers)" if total > 1 else ")"
            out.append(f"{head}: {rows['statement'].iloc[0]}")
            causes = [r for r in dict.fromkeys(rows["reason"]) if r] if "reason" in rows else []
            out += [f"  - **why**: {linked_markdown(r, _DOC_PREFIX)}" for r in causes]
            if not causes:
                out.append("  - **why**: no cause recorded yet (registry key `miss:` of this claim)")
            evidence = [f"`{r.claim}` {r.verdict}: {r.detail}" if total > 1 else f"{r.verdict}: {r.detail}"
                        for r in rows.head(shown_rows).itertuples()]
            more = [f"… and {len(rows) - shown_rows} more"] if len(rows) > shown_rows else []
            out += [f"  - evidence: {d}" for d in evidence + more]
            for a in claim_assumptions(assumptions, base, config):
                entry = assumptions[a]
                alts = "; ".join(f"{alt}: {', '.join(f'`{c}`' for c in configs)}"
                                 for alt, configs in entry["alternatives"].items())
                out.append(f"  - depends on assumption **{a}** ({entry['statement']}; alternatives: {alts})")
        out.append("")
    reasons = table["reason"].astype(str) if "reason" in table else pd.Series([], dtype=str)
    regime = table[reasons.str.startswith("regime not reached")]
    if not regime.empty:
        out += ["#### Claims this run cannot judge", "",
                "Below the regime these claims need, a verdict would say nothing about the paper; they are "
                "`not-comparable` here:", ""]
        out += [f"- **{b}** (configuration `{c}`): {r}" for (b, c), r in
                regime.assign(base=regime["claim"].map(claim_base)).groupby(["base", "configuration"], sort=False)
                ["reason"].first().items()]
        out.append("")
    fitted = table[table["verdict"] == "consistent-fitted"]
    if not fitted.empty:
        out += ["#### Agreement under fitted values", "",
                f"{len(fitted)} numbers agree with the paper under a configuration whose values were read off this "
                "same artifact: a consistency check, counted apart from `reproduced` "
                f"({'; '.join(dict.fromkeys(fitted['reason']))}).", ""]
    if differs:
        out += ["#### Recorded reasons (the registry's `differs:` for this artifact)", "",
                *(f"- {r}" for r in differs), ""]
    return "\n".join(out) + "\n"


def open_artifact(paper: str, artifact: str, *, root=None, scale: str = "quick", configuration: str = "calibrated",
                  run_files=None, outputs=None) -> Artifact:
    """The notebook's one entry point: parameters in (None when opened by hand), an `Artifact` out."""
    from fedrepro.registry.papers import Registry

    root = Path(root) if root else repo_root()
    registry = Registry.load(root, check=False)  # the workflow checked it before any job ran
    entry = registry.artifact(paper, artifact)
    if run_files is None:
        run_files = [f for f in registry.artifact_runs(paper, artifact, scale) if (root / f).exists()]
    if outputs is None:
        outputs = default_outputs(root, scale, paper, artifact, entry["kind"])
    return Artifact(root=root, paper=paper, name=artifact, scale=scale, configuration=configuration,
                    run_files=list(run_files), outputs=dict(outputs), entry=entry, registry=registry)
