"""results/<scale>/report_summary.rst and the report's opening (workflow/report/workflow.rst) that includes it,
rendered as `snakemake --report` renders the workflow description: Jinja first, then docutils."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from docutils.core import publish_parts
from jinja2 import Environment

from fedrepro.registry.papers import Registry
from fedrepro.scorecard.report_summary import report_summary_rst, rst_text

REPO = Path(__file__).resolve().parents[1]


def claims() -> pd.DataFrame:
    rows = [("gcca", "C1", "fig3", "calibrated", "reproduced", ""),
            ("gcca", "C2", "fig3", "as-stated", "not-reproduced", "assumption: nu *as printed* (docs/gcca.md#a-10)"),
            ("thesis", "C3.5", "fig3_2", "as-stated", "not-comparable", "regime not reached at this scale: target_|x|")]
    return pd.DataFrame(rows, columns=["paper", "claim", "artifact", "configuration", "verdict", "reason"])


def html_of(rst: str) -> str:
    return publish_parts(rst, writer_name="html", settings_overrides={"report_level": 1})["html_body"]


def test_the_summary_is_an_rst_verdict_table_with_the_scale_note_and_the_stand_in_legend():
    rst = report_summary_rst(Registry.load(REPO), "quick", claims(), root=REPO)
    html = html_of(rst)
    assert "System Message" not in html
    table = html[html.index("<table"):html.index("</table>")]
    assert [h in table for h in ("paper", "configuration", "reproduced", "not-reproduced", "total")] == [True] * 5
    # one row per paper and configuration, in the papers' order (gcca before thesis)
    assert table.index("gcca") < table.index("calibrated") < table.index("thesis")
    assert "Scale" in html and "quick" in html and "Stand-in data" in html
    assert "gcca: 1 of 2 judged numbers reproduce at this scale" in html


def test_markup_in_text_is_escaped():
    assert rst_text("a *b* `c` d_ |e|\n f") == r"a \*b\* \`c\` d\_ \|e\| f"
    html = html_of(rst_text("a *b* `c` d_ |e|"))
    assert "System Message" not in html and "a *b* `c` d_ |e|" in html


def test_the_report_opens_with_the_summary_when_the_report_covers_the_scorecard(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)               # the report includes the file relative to the working directory
    Path("results/quick").mkdir(parents=True)
    Path("results/quick/report_summary.rst").write_text(report_summary_rst(Registry.load(REPO), "quick", claims(),
                                                                           root=REPO))
    template = (REPO / "workflow" / "report" / "workflow.rst").read_text()

    class Snakemake:
        config = {"scale": "quick"}

    class Record:                             # the fields of snakemake.report.FileRecord the template reads
        target = "report_summary.rst"
        path = Path("results/quick/report_summary.rst")

    env = Environment(trim_blocks=True, lstrip_blocks=True)      # as snakemake.report sets it up
    with_summary = html_of(env.from_string(template).render(snakemake=Snakemake, categories={}, files=[Record()]))
    without = html_of(env.from_string(template).render(snakemake=Snakemake, categories={}, files=[]))
    for html in (with_summary, without):
        assert "System Message" not in html and "Stand-in data" in html and "Scale" in html
    assert "<table" in with_summary and with_summary.index("<table") < with_summary.index("Stand-in data")
    assert "<table" not in without and "does not cover the scorecard job" in without
