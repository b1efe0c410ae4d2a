"""README, 'Add your own compressor', followed literally: one new file, one line in each of two registries.

A user writes the unbiased random-k of docs/comm.md §8 (the code block is read from the doc), names the file with
`--config comm='{plugins: [...]}'`, adds it to thesis Fig. 4.1's and C-VFL Fig. 3's `methods:`, and builds both
figures at smoke scale.  The new compressor is in each figure's CSV, drawn with the fallback label and a colour
no paper method uses, and no file of the workflow other than the plugin and the two registries differs from the repository.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO, WORKFLOW_PARTS, snakemake

from fedrepro.plotting import color, label
from fedrepro.plotting.names import COLORS

NAME = "randk_unbiased"
PLUGIN = f"plugins/{NAME}.py"
# step 3: the lines a user adds (after the paper's last method of each mapping)
THESIS_LINE = f"          {NAME}: {{algorithm: compressed, compressor: {{name: {NAME}, k: 1}}}}\n"
CVFL_LINE = f"          {NAME}: {{compressor: {NAME}}}\n"
THESIS_ANCHOR = "          sign_topk: {algorithm: compressed, compressor: {name: sign_topk, k: 1}}\n"
CVFL_ANCHOR = "          topk: {compressor: cvfl_topk_columns, server: topk}\n"


def _doc_example() -> str:
    """The compressor of docs/comm.md §8, as printed there."""
    section = (REPO / "docs" / "comm.md").read_text().split("## 8. Add your own compressor", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def _add_after(path: Path, anchor: str, line: str, experiments: tuple[str, ...]) -> None:
    """`line` after `anchor` in the `methods:` of each named experiment (no experiment shares another's methods:
    a line added to one figure enters no other)."""
    out, experiment, done = [], None, set()
    for text in path.read_text().splitlines(keepends=True):
        if text.startswith("  ") and not text.startswith("   ") and text.rstrip().endswith(":"):
            experiment = text.strip()[:-1]
        out.append(text)
        if text == anchor and experiment in experiments and experiment not in done:
            out.append(line)
            done.add(experiment)
    assert done == set(experiments), (anchor, done)
    path.write_text("".join(out))


def _tree(root: Path) -> dict[str, str]:
    out = {}
    for part in WORKFLOW_PARTS:
        base = root / part
        files = [base] if base.is_file() else [p for p in base.rglob("*") if p.is_file()]
        for p in files:
            rel = p.relative_to(root).as_posix()
            if "__pycache__" not in rel and ".egg-info" not in rel:
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@pytest.mark.slow
def test_a_new_compressor_is_one_file_and_registry_lines(workdir):
    (workdir / "plugins").mkdir()
    (workdir / PLUGIN).write_text(_doc_example())                                       # step 1
    _add_after(workdir / "config/papers/thesis.yaml", THESIS_ANCHOR, THESIS_LINE, ("fig4_1",))   # step 3
    _add_after(workdir / "config/papers/cvfl.yaml", CVFL_ANCHOR, CVFL_LINE, ("mimic", "cifar10", "modelnet10"))
    snakemake("--cores", "1", "thesis_fig4_1", "cvfl_fig3", "--config", "scale=smoke",  # steps 2 and 4
              f"comm={{plugins: [{PLUGIN}]}}", cwd=workdir, timeout=1500)

    fig41 = pd.read_csv(workdir / "results/smoke/thesis/figures/fig4_1.csv")
    mine = fig41[fig41.scheme == NAME]
    assert set(mine.row) == {"curve", "summary"} and set(mine.feedback) == {"sample", "bandit"}
    assert mine[mine.row == "curve"]["gap"].notna().all()
    fig3 = pd.read_csv(workdir / "results/smoke/cvfl/figures/fig3.csv")
    mine = fig3[fig3.compressor == NAME]
    assert set(mine.dataset) == {"mimic", "cifar10", "modelnet10"} and set(mine.row) == {"curve", "summary"}
    # the paper's own compressors keep their ids; the new one is appended (comp_id = position in `methods:`)
    ids = fig3[fig3.row == "summary"].groupby("compressor").comp_id.first().to_dict()
    assert ids == {"none": 0, "scalar": 1, "vector": 2, "topk": 3, NAME: 4}
    assert label(NAME) == NAME and color(NAME) not in COLORS.values()                  # the fallback
    for png in ("results/smoke/thesis/figures/fig4_1.png", "results/smoke/cvfl/figures/fig3.png"):
        assert (workdir / png).stat().st_size > 10_000

    repo = _tree(REPO)
    changed = {k for k, v in _tree(workdir).items() if repo.get(k) != v}
    assert changed == {"config/papers/thesis.yaml", "config/papers/cvfl.yaml"}
    assert (workdir / PLUGIN).is_file() and not (REPO / PLUGIN).exists()


def test_a_misspelled_compressor_stops_the_run_before_any_job(workdir):
    """The registry check knows the plugin's name: a typo in a `methods:` line stops `snakemake -n` with the file,
    the key path and the close match, before the DAG is built."""
    (workdir / "plugins").mkdir()
    (workdir / PLUGIN).write_text(_doc_example())
    _add_after(workdir / "config/papers/thesis.yaml", THESIS_ANCHOR,
               THESIS_LINE.replace(f"name: {NAME}", "name: randk_unbiasd"), ("fig4_1",))
    proc = snakemake("-n", "thesis_fig4_1", "--config", "scale=smoke", f"comm={{plugins: [{PLUGIN}]}}", cwd=workdir,
                     check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert (f"config/papers/thesis.yaml: experiments.fig4_1.configurations.as-stated.methods.{NAME}.compressor: "
            f"unknown compressor 'randk_unbiasd'; did you mean {NAME}") in out, out[-3000:]
    assert "Job stats" not in out


@pytest.mark.slow
def test_a_plugin_is_code_of_the_runs_that_use_it_only(workdir):
    """Editing the plugin (a comment is enough) reruns the runs whose methods name its compressor, and no other:
    thesis Fig. 4.1 (its `methods:` has the new line) reruns, Fig. 4.2 (the same engine, no such line) and
    Table 5.1 do not."""
    (workdir / "plugins").mkdir()
    (workdir / PLUGIN).write_text(_doc_example())
    _add_after(workdir / "config/papers/thesis.yaml", THESIS_ANCHOR, THESIS_LINE, ("fig4_1",))
    runs = [f"results/smoke/thesis/runs/{e}/as-stated.csv" for e in ("fig4_1", "fig4_2", "table5_1")]
    plugin = f"comm={{plugins: [{PLUGIN}]}}"
    snakemake("--cores", "2", *runs, "--config", "scale=smoke", plugin, cwd=workdir, timeout=900)
    with (workdir / PLUGIN).open("a") as f:
        f.write("# a comment changes the file's digest\n")
    proc = snakemake("-n", *runs, "--config", "scale=smoke", plugin, cwd=workdir)
    out = proc.stdout + proc.stderr
    planned = set(re.findall(r"^\s*output: (\S+?),? ", out, re.M)) | set(re.findall(r"^\s*output: (\S+?)$", out, re.M))
    assert runs[0] in planned, out[-3000:]
    assert runs[1] not in planned and runs[2] not in planned, out[-3000:]
