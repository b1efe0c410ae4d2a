"""`python -m fedrepro status`: the README's status table, counted from a scorecard."""

import pandas as pd

from fedrepro.cli import main
from fedrepro.scorecard.evaluate import COLUMNS


def _claims(path, rows):
    frame = pd.DataFrame([{c: "" for c in COLUMNS} | r for r in rows], columns=COLUMNS)
    frame.to_csv(path, index=False)
    return path


def test_status_counts_verdicts_per_paper_and_configuration(tmp_path, capsys):
    rows = ([{"paper": "thesis", "configuration": "iid", "verdict": "reproduced"}] * 3
            + [{"paper": "thesis", "configuration": "iid", "verdict": "not-run"}]
            + [{"paper": "gcca", "configuration": "calibrated", "verdict": "reproduced-qualitatively"}] * 2)
    assert main(["status", "--claims", str(_claims(tmp_path / "claims.csv", rows))]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "| paper | configuration | reproduced | qualitatively | not-run | total |"
    # papers in the registry's order (gcca before thesis), counts from the rows, never typed by hand
    assert lines[2:] == ["| gcca | calibrated | 0 | 2 | 0 | 2 |", "| thesis | iid | 3 | 0 | 1 | 4 |"]


def test_status_without_a_scorecard_says_how_to_build_one(tmp_path, capsys):
    assert main(["status", "--claims", str(tmp_path / "missing.csv")]) == 2
    assert "snakemake --cores 2 all --config scale=quick" in capsys.readouterr().err


def test_status_counts_fitted_verdicts_apart_from_reproduced(tmp_path, capsys):
    rows = ([{"paper": "thesis", "configuration": "calibrated", "verdict": "consistent-fitted"}] * 2
            + [{"paper": "thesis", "configuration": "calibrated", "verdict": "reproduced"}])
    assert main(["status", "--claims", str(_claims(tmp_path / "claims.csv", rows))]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "| paper | configuration | reproduced | consistent (fitted) | total |"
    assert lines[2] == "| thesis | calibrated | 1 | 2 | 3 |"
