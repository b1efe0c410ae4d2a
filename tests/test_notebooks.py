"""Notebooks are thin jupytext percent files: one `parameters` cell whose defaults work by hand, no outputs."""

import jupytext
import pytest
from conftest import REPO

from fedrepro.registry.papers import Registry

REGISTRY = Registry.load(REPO)
ARTIFACTS = [(p, a) for p, a, _ in REGISTRY.artifacts()]
LEADERBOARD = REPO / "notebooks" / "leaderboard" / "leaderboard.py"   # the one notebook outside the papers' registries


def test_every_artifact_has_its_notebook_and_every_notebook_an_artifact():
    expected = {REPO / REGISTRY.notebook(p, a) for p, a in ARTIFACTS} | {LEADERBOARD}
    assert all(p.exists() for p in expected), sorted(str(p) for p in expected if not p.exists())
    stray = sorted(str(p) for p in (REPO / "notebooks").rglob("*") if p.is_file() and p not in expected)
    assert not stray, f"notebooks that no artifact names (generators, stored .ipynb): {stray}"


@pytest.mark.parametrize("paper,artifact", ARTIFACTS, ids=[f"{p}:{a}" for p, a in ARTIFACTS])
def test_parameters_cell_and_no_stored_outputs(paper, artifact):
    nb = jupytext.read(REPO / REGISTRY.notebook(paper, artifact))
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1, "exactly one cell tagged 'parameters'"
    assert 'scale = "quick"' in tagged[0].source, "defaults point at results/quick"
    assert f'open_artifact("{paper}", "{artifact}"' in "".join(c.source for c in nb.cells), \
        "the notebook opens its own artifact"
    assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code")
    assert nb.cells[0].cell_type == "markdown", "a markdown cell says what the paper shows and what we got"


def test_the_leaderboard_notebook_is_thin_too():
    nb = jupytext.read(LEADERBOARD)
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1 and 'scale = "quick"' in tagged[0].source
    assert "leaderboard(root, scale, outputs" in "".join(c.source for c in nb.cells)
    assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code")
    assert nb.cells[0].cell_type == "markdown"
