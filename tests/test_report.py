"""`snakemake --report` of a smoke build: every caption renders without a docutils error, the artifacts are listed
in the paper's order (Fig. 2 before Fig. 10), and the report opens with the scale note and the stand-in legend."""

from __future__ import annotations

import re

import pytest
from conftest import snakemake

TARGETS = ("gcca_fig2", "gcca_fig10")   # gcca Fig. 2's caption has |Delta| (an rst substitution if not escaped)


@pytest.mark.slow
def test_the_smoke_report_renders_every_caption_cleanly_in_the_papers_order(workdir):
    snakemake("--cores", "2", *TARGETS, "--config", "scale=smoke", cwd=workdir, timeout=1200)
    snakemake("--report", "report.html", *TARGETS, "--config", "scale=smoke", cwd=workdir, timeout=600)
    html = (workdir / "report.html").read_text()
    errors = [m for m in ("System Message", "ERROR/", "WARNING/") if m in html]
    assert not errors, [html[max(0, html.find(e) - 300):html.find(e) + 300] for e in errors]
    assert "Delta(j,k)" in html                                       # the caption itself, not an error block
    subcategories = re.findall(r"\d\d Fig\. \d+", html)
    assert "01 Fig. 2" in subcategories and sorted(set(subcategories)) == ["01 Fig. 2", "10 Fig. 10"]
    assert "1. gcca" in html
    for opening in ("Scale", "Stand-in data", "Verdicts"):
        assert opening in html


@pytest.mark.slow
def test_the_report_of_a_whole_build_opens_with_the_verdict_table(smoke_run, tmp_path):
    """Built with the scorecard, the report opens with its summary: the verdict counts per paper and configuration,
    the scale note and the stand-in legend (results/smoke/report_summary.rst, included by workflow.rst)."""
    report = tmp_path / "report.html"
    snakemake("--report", str(report), "--config", "scale=smoke", cwd=smoke_run, timeout=600)
    html = report.read_text()
    errors = [m for m in ("System Message", "ERROR/", "WARNING/") if m in html]
    assert not errors, [html[max(0, html.find(e) - 300):html.find(e) + 300] for e in errors]
    assert "Verdicts at scale" in html and "does not cover the scorecard job" not in html
    start = html.index("Verdicts at scale")
    opening = html[start:html.index("Stand-in data", start)]
    assert "<table" in opening and "configuration" in opening and "total" in opening
    for paper in ("gcca", "cvfl", "thesis", "adept"):
        assert f"<td>{paper}</td>" in opening
    assert "0. verdicts" in html
