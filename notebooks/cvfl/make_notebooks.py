"""Generate notebooks/cvfl/<artifact>.ipynb (stored without outputs; one `parameters` cell).

Run from the repository root:  python notebooks/cvfl/make_notebooks.py
"""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent
ARTIFACTS = {
    "table2": ("table", "Table 2 — MIMIC-III, max test F1 and cost to F1 = 0.4"),
    "table3": ("table", "Table 3 — CIFAR-10, max accuracy and cost to 70%"),
    "table4": ("table", "Table 4 — ModelNet10, max accuracy and cost to 75%"),
    "table5": ("table", "Table 5 — MIMIC-III, time to F1 = 0.45 against Q and t_c"),
    "tabled1": ("table", "Table D.1 — MIMIC-III, cost to F1 = 0.4, Algorithm 2 (Q = 1) vs Algorithm 1"),
    "tablecost": ("table", "Cost check — the printed costs and times from the recovered formula"),
    "fig3": ("figure", "Figure 3 — C-VFL at b = 2 on three datasets"),
    "fig4": ("figure", "Figure 4 — ModelNet10 VQ, M = 4 vs M = 12"),
    "figd1": ("figure", "Figure D.1 — MIMIC-III by epochs"),
    "figd2": ("figure", "Figure D.2 — MIMIC-III by cost, panels by b"),
    "figd3": ("figure", "Figure D.3 — MIMIC-III by cost, panels by compressor"),
    "figd4": ("figure", "Figure D.4 — ModelNet10 by epochs"),
    "figd5": ("figure", "Figure D.5 — ModelNet10 by cost, panels by b"),
    "figd6": ("figure", "Figure D.6 — ModelNet10 by cost, panels by compressor"),
    "figd7": ("figure", "Figure D.7 — CIFAR-10"),
    "figd8": ("figure", "Figure D.8 — ImageNet-100, top-5 accuracy (target: 90% of no compression's max at every scale)"),
}

INTRO = """C-VFL (Castiglia et al., ICML 2022), spec `shared/specs/cvfl.md`; decisions in `docs/cvfl.md`.
Runs: `results/<scale>/cvfl/runs/<experiment>/as-stated.csv` (one row per run and evaluated epoch). Costs use the
paper's formula (`bits_table`, cvfl.md §3.5). At paper scale the targets are the paper's (F1 0.4 / 0.45, 70%, 75%);
at quick and smoke scale (stand-in data) they are relative (A-22): 90% of the uncompressed run's max (95% for
Table 5), computed from the runs, because the stand-ins' absolute levels mean nothing."""

PARAMS = '''# parameters
root = None            # repository root; None: searched upwards from the working directory
scale = "quick"
configuration = "as-stated"
run_files = None       # None: the runs the registry lists for this artifact
outputs = None         # None: a scratch folder under results/<scale>/cvfl/scratch/
label = "{label}"
caption = ""'''

LOAD = '''import json
from pathlib import Path

import pandas as pd
from IPython.display import Markdown, display

from fedrepro.cvfl.artifacts import make_artifact
from fedrepro.notebook import data_status, default_outputs, repo_root
from fedrepro.registry import Registry

root = Path(root) if root else repo_root()
if run_files is None:
    run_files = Registry.load(root).artifact_runs("cvfl", "{name}", scale)
if outputs is None:
    outputs = default_outputs(root, scale, "cvfl", "{name}", "{kind}")
runs = pd.concat([pd.read_csv(root / f) for f in run_files], ignore_index=True)
if configuration not in set(runs["configuration"]):   # C-VFL has one configuration, as-stated
    configuration = runs["configuration"].iloc[0]
runs = runs[runs["configuration"] == configuration]
status = data_status(root, run_files)
stand_in = any(v == "stand-in" for v in status.values())
target_fraction = None if scale == "paper" else 0.9
print("data:", status, "| runs:", len(runs), "rows | relative targets:", target_fraction)'''

# The cost check needs no data and no training: its one "run" is the formula applied to the spec's derived epochs.
INTRO_FOR = {"tablecost": """C-VFL (Castiglia et al., ICML 2022), spec `shared/specs/cvfl.md`; decisions in `docs/cvfl.md`.
No data and no training: `results/<scale>/cvfl/runs/cost_formula/as-stated.csv` holds, for every cost the paper
prints (Tables 2, 3, 4, D.1), Fig. 4's per-epoch costs and Table 5's times and speed-ups, the recovered formula
(cvfl.md §3.5) or time model (§4 item 9) at the spec's derived mean epochs (§3.6, §5), computed by
`fedrepro.cvfl.costcheck` through the functions every run uses, next to the printed number (read from the
registry's claims). The same at every scale."""}
LOAD_FOR = {"tablecost": LOAD[: LOAD.index("stand_in = ")] + 'print("data:", status, "| rows:", len(runs))'}
BUILD_FOR = {"tablecost": '''table, md = make_artifact("{name}", runs, outputs, label=label)
display(Markdown(md))'''}

BUILD = {"table": '''table, md = make_artifact("{name}", runs, outputs, target_fraction=target_fraction, label=label, stand_in=stand_in)
display(Markdown(md + ("\\n\\n*Stand-in data: not comparable with the paper.*" if stand_in else "")))''',
         "figure": '''fig, data = make_artifact("{name}", runs, outputs, target_fraction=target_fraction, label=label, stand_in=stand_in)
display(data[data.row == "summary"].drop(columns=[c for c in data.columns if data[data.row == "summary"][c].isna().all()]))
fig'''}

for name, (kind, title) in ARTIFACTS.items():
    nb = new_notebook()
    params = new_code_cell(PARAMS.format(label=title.split(" — ")[0]))
    params.metadata["tags"] = ["parameters"]
    build = BUILD_FOR.get(name, BUILD[kind])
    nb.cells = [new_markdown_cell(f"# C-VFL {title}\n\n{INTRO_FOR.get(name, INTRO)}"), params,
                new_code_cell(LOAD_FOR.get(name, LOAD).format(name=name, kind=kind)), new_code_cell(build.format(name=name))]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = HERE / f"{name}.ipynb"
    if path.exists():  # keep the stored cell ids, so that regenerating leaves unchanged notebooks unchanged
        old = nbformat.read(path, as_version=4)
        if len(old.cells) == len(nb.cells):
            for new, prev in zip(nb.cells, old.cells):
                if "id" in prev:
                    new["id"] = prev["id"]
    nbformat.write(nb, path)
print("wrote", len(ARTIFACTS), "notebooks")
