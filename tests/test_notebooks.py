"""Notebooks are stored without outputs and have a `parameters` cell whose defaults work by hand."""

import nbformat
import pytest
from conftest import REPO

from fedrepro.registry import Registry

NOTEBOOKS = sorted((REPO / "notebooks").rglob("*.ipynb"))


def test_every_registry_notebook_exists():
    registry = Registry.load(REPO)
    for paper, artifact, entry in registry.artifacts():
        assert (REPO / entry.get("notebook", registry.notebook(paper, artifact))).exists()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_parameters_cell_and_no_stored_outputs(path):
    nb = nbformat.read(path, as_version=4)
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1, "exactly one cell tagged 'parameters'"
    assert 'scale = "quick"' in tagged[0].source, "defaults point at results/quick"
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None, "stored without outputs"
