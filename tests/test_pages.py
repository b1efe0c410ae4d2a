"""The landing page's pieces, the assumption tables and the notebooks' 'Paper vs ours', on hand-made inputs."""

import copy

import pandas as pd
import pytest
from conftest import REPO

from fedrepro.artifact import paper_vs_ours_markdown
from fedrepro.registry.config import ConfigError
from fedrepro.registry.papers import Registry, _check_assumption_ids_unique, _check_assumptions
from fedrepro.scorecard.evaluate import COLUMNS
from fedrepro.scorecard.pages import (
    artifact_order,
    assumption_rows,
    assumptions_markdown,
    label_position,
    paper_order,
    table_body,
)

REGISTRY = Registry.load(REPO)


# ---- order: the papers' own ---------------------------------------------------------------------------------
def test_papers_in_the_order_of_their_texts():
    assert paper_order(REGISTRY) == ["gcca", "cvfl", "thesis", "adept"]


def test_label_positions_sort_chapters_numbers_roman_and_appendices():
    labels = ["Figure 4.1", "Table 5.1", "Figure 3.4", "Figure 3.2", "Fig. 10", "Fig. 9", "Table I", "Figure D.2",
              "Figure 3"]
    ranked = sorted(labels, key=lambda lab: (label_position(lab)[0], label_position(lab)[2]))
    assert ranked.index("Figure 3.2") < ranked.index("Figure 3.4") < ranked.index("Figure 4.1") \
        < ranked.index("Table 5.1")
    assert ranked.index("Fig. 9") < ranked.index("Fig. 10")
    assert ranked[-1] == "Figure D.2"                      # appendices after every numbered chapter
    assert label_position("Table I")[2] == (1,) and label_position("Table XIV")[2] == (14,)


def test_thesis_artifacts_run_chapters_3_4_5_and_figures_in_numeric_order():
    order = artifact_order(REGISTRY, "thesis")
    chapters = [REGISTRY.artifact("thesis", a)["label"].split()[1][0] for a in order]
    assert chapters == sorted(chapters), order
    labels = [REGISTRY.artifact("thesis", a)["label"] for a in order]
    assert labels.index("Figure 3.2") < labels.index("Figure 3.4") < labels.index("Figure 4.1")


def test_gcca_keeps_table_i_where_the_registry_puts_it_and_fig9_before_fig10():
    order = artifact_order(REGISTRY, "gcca")
    assert order.index("fig9") < order.index("fig10") < order.index("fig13")
    assert order.index("fig4") < order.index("table1") < order.index("fig5")


def test_every_artifact_is_placed_once():
    for paper in REGISTRY.papers:
        assert sorted(artifact_order(REGISTRY, paper)) == sorted(REGISTRY.papers[paper]["artifacts"])


# ---- table captions once ------------------------------------------------------------------------------------
CAPTION = "Total energy captured % averaged over samples and clients in the synthetic experiments."


def test_a_table_title_that_repeats_the_caption_is_dropped():
    md = f"Table 1: {CAPTION}\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
    subtitle, body = table_body(md, "Table 1", CAPTION)
    assert subtitle == "" and CAPTION not in body and "| a | b |" in body


def test_a_table_title_that_adds_something_is_kept_as_a_subtitle():
    md = "**Table 2** — target 0.66 (test F1)\n\n| a |\n|---|\n| 1 |\n"
    subtitle, body = table_body(md, "Table 2", "MIMIC-III: max test F1 and cost to reach the target F1.")
    assert subtitle == "target 0.66 (test F1)" and "Table 2" not in body
    subtitle, _ = table_body("# Table 5.1 — configuration `calibrated`, scale `quick`\n", "Table 5.1", CAPTION)
    assert subtitle == "configuration `calibrated`, scale `quick`"


def test_a_table_without_a_title_is_left_alone():
    md = "| a |\n|---|\n| 1 |\n"
    assert table_body(md, "Table 1", CAPTION) == ("", md)


# ---- assumptions: registry checks and tables ----------------------------------------------------------------
def _reg(assumptions):
    return {"paper": "p", "experiments": {"e": {"configurations": {"as-stated": {}, "calibrated": {}}}},
            "claims": [{"id": "C1"}, {"id": "C2"}], "assumptions": assumptions}


def test_an_alternative_must_name_an_existing_configuration():
    with pytest.raises(ConfigError, match=r"assumptions.p:A-1.alternatives.whole-run names configuration 'tuned'"):
        _check_assumptions(_reg({"p:A-1": {"statement": "s", "alternatives": {"whole-run": ["tuned"]}}}), "p.yaml")


def test_an_assumption_must_name_existing_claims_with_a_close_match():
    with pytest.raises(ConfigError, match=r"names 'C1a'.*did you mean C1"):
        _check_assumptions(_reg({"p:A-1": {"statement": "s", "alternatives": {"x": ["as-stated"]},
                                           "claims": ["C1a"]}}), "p.yaml")


def test_assumption_ids_are_unique_across_papers():
    a = {"paper": "a", "assumptions": {"x:A-1": {}}}
    b = {"paper": "b", "assumptions": {"x:A-1": {}}}
    with pytest.raises(ConfigError, match="x:A-1.*a.yaml.*b.yaml"):
        _check_assumption_ids_unique({"a": a, "b": b})


def test_the_schema_refuses_an_unnamespaced_id(tmp_path):
    from fedrepro.registry.config import load_yaml, validate

    schema = load_yaml(REPO / "workflow" / "schemas" / "paper.schema.yaml")
    reg = copy.deepcopy(REGISTRY.papers["gcca"])
    reg["assumptions"] = {"A-10": {"statement": "s", "alternatives": {"x": ["calibrated"]}}}
    with pytest.raises(ConfigError, match="A-10"):
        validate(reg, schema, "gcca.yaml")


def test_every_paper_registers_assumptions():
    for paper in REGISTRY.papers:
        assert REGISTRY.assumptions(paper), f"config/papers/{paper}.yaml has no assumptions: block"


class _Fake:
    """A registry with one paper, two configurations and two assumptions that share them."""

    def __init__(self):
        shared = {"literal": ["as-stated"], "spec": ["calibrated"]}
        self.papers = {"p": {"assumptions": {"p:A-1": {"statement": "one", "alternatives": shared,
                                                       "claims": ["T", "P"]},
                                             "p:A-2": {"statement": "two", "alternatives": dict(shared)}}}}

    def assumptions(self, paper):
        return self.papers[paper]["assumptions"]

    def claims(self, paper):
        return [{"id": "T", "statement": "table cells"}, {"id": "P", "statement": "a property"}]


def _claims(rows):
    frame = pd.DataFrame([dict(zip(["claim", "configuration", "verdict"], r)) for r in rows])
    for col in COLUMNS:
        frame[col] = frame[col] if col in frame else ""
    frame["paper"] = "p"
    return frame[COLUMNS]


def test_assumption_table_counts_cells_and_marks_what_is_not_judged():
    claims = _claims([("T[n=1,x]", "as-stated", "reproduced"), ("T[n=2,x]", "as-stated", "not-reproduced"),
                      ("T[n=1,x]", "calibrated", "reproduced"), ("T[n=2,x]", "calibrated", "reproduced"),
                      ("P", "as-stated", "not-reproduced")])
    rows = assumption_rows(_Fake(), "p", claims).set_index(["assumption", "claim", "alternative"])
    assert rows.loc[("p:A-1", "T", "literal"), "verdict"] == "1/2 reproduced, 1/2 not-reproduced"
    assert rows.loc[("p:A-1", "T", "spec"), "verdict"] == "2/2 reproduced"
    assert rows.loc[("p:A-1", "P", "literal"), "verdict"] == "not-reproduced"
    assert rows.loc[("p:A-1", "P", "spec"), "verdict"] == "not judged"
    # without `claims:` an assumption touches every claim judged under its configurations
    assert set(rows.loc["p:A-2"].index.get_level_values("claim")) == {"T", "P"}
    md = assumptions_markdown(_Fake(), "p", assumption_rows(_Fake(), "p", claims), "quick")
    assert "## p:A-1: one" in md and "| T | table cells | 1/2 reproduced" in md
    assert "same configurations as those of p:A-2" in md      # confounded alternatives are said to be


def test_real_registries_render_an_assumption_table_for_every_paper():
    claims = _claims([("C5.1[n1=100,x]", "calibrated", "reproduced")]).assign(paper="thesis")
    for paper in REGISTRY.papers:
        md = assumptions_markdown(REGISTRY, paper, assumption_rows(REGISTRY, paper, claims), "quick")
        assert md.count("\n## ") == len(REGISTRY.assumptions(paper))


# ---- the notebooks' closing section -------------------------------------------------------------------------
def test_paper_vs_ours_gives_each_failure_its_reason_configuration_and_assumption():
    table = _claims([("C1", "as-stated", "not-reproduced"), ("C2", "as-stated", "reproduced")])
    table["detail"] = ["fails at 1/1 rows: x=3", "1/1 rows hold"]
    table["statement"] = ["x below 2", "y holds"]
    table["paper_value"], table["our_value"], table["band"] = "2", "3", "holds"
    assumptions = {"p:A-1": {"statement": "how x is tuned", "alternatives": {"rule": ["as-stated"]},
                             "claims": ["C1"]}}
    md = paper_vs_ours_markdown(table, scale="quick", assumptions=assumptions, differs=["x is tuned on 10 %"])
    assert "| C1 | as-stated | 2 | 3 | holds | not-reproduced | fails at 1/1 rows: x=3 |" in md
    assert "| C2 | as-stated | 2 | 3 | holds | reproduced |  |" in md
    why = md.split("#### ")[1]
    assert "**C1** (configuration `as-stated`)" in why and "fails at 1/1 rows: x=3" in why
    assert "assumption **p:A-1** (how x is tuned; alternatives: rule: `as-stated`)" in why
    assert "C2" not in why
    assert md.rstrip().endswith("- x is tuned on 10 %")


def test_paper_vs_ours_agrees_with_the_claims_job(tmp_path):
    """The notebook judges with the claims job's code: same rows as `evaluate_claims` on the same CSV."""
    from fedrepro.artifact import Artifact
    from fedrepro.scorecard.evaluate import evaluate_claims
    from fedrepro.scorecard.reasons import fitted_configurations

    entry = REGISTRY.artifact("thesis", "table5_1")
    csv = tmp_path / "table5_1.csv"
    grid = [(n, db) for n in (100, 200, 300, 1000) for db in (1, 5, 10, 50)]   # every cell a claim may select
    pd.DataFrame({"configuration": "calibrated", "n1": [n for n, _ in grid], "n2": [n for n, _ in grid],
                  "db": [db for _, db in grid], "phase1": [1.0 + 0.01 * i for i in range(len(grid))],
                  "phase2": [1.0 + 0.02 * i for i in range(len(grid))],
                  "scratch": [10.0 / (1 + i) for i in range(len(grid))]}).to_csv(csv, index=False)
    art = Artifact(root=tmp_path, paper="thesis", name="table5_1", scale="quick", configuration="calibrated",
                   run_files=[], outputs={"csv": str(csv), "md": str(tmp_path / "t.md")}, entry=entry,
                   registry=REGISTRY)
    art.__dict__["data_status"] = {}
    ours = art.judge()
    job = evaluate_claims(REGISTRY.claims("thesis", "table5_1"), pd.read_csv(csv), paper="thesis",
                          artifact="table5_1", scale="quick", data_status={},
                          configurations=["as-stated", "calibrated"],
                          fitted=fitted_configurations(REGISTRY, "thesis", "table5_1"))
    pd.testing.assert_frame_equal(ours, job)
    assert "consistent-fitted" in set(job["verdict"])      # `calibrated` reads c_u and sigma_test off Table 5.1
    assert "### Paper vs ours" in art.paper_vs_ours().data


def test_every_executed_notebook_ends_with_paper_vs_ours(smoke_run):
    """The smoke build: the last cell of each executed notebook shows the verdicts the scorecard shows."""
    import json

    claims = pd.read_csv(smoke_run / "results" / "smoke" / "claims.csv", dtype=str, keep_default_na=False)
    for paper, artifact, _ in REGISTRY.artifacts(scale="smoke"):
        nb = json.loads((smoke_run / REGISTRY.artifact_files(paper, artifact, "smoke")["ipynb"]).read_text())
        last = nb["cells"][-1]
        assert "art.paper_vs_ours()" in "".join(last["source"]), f"{paper}:{artifact}"
        shown = "".join("".join(o.get("data", {}).get("text/markdown", "")) for o in last["outputs"])
        assert shown.startswith("### Paper vs ours"), f"{paper}:{artifact}"
        for row in claims[(claims["paper"] == paper) & (claims["artifact"] == artifact)].itertuples():
            assert f"| {row.claim} | {row.configuration} |" in shown and row.verdict in shown, (paper, row.claim)


def test_a_dataset_is_labelled_by_the_kind_its_build_used():
    """CIFAR-10 built from the re-encoded real images reads "real images, re-encoded JPEG", never its declared
    stand-in's text (issue: the landing page called it synthetic colour templates)."""
    from fedrepro.scorecard.pages import _datasets, _used_text

    entry = _datasets(REPO)["cifar10"]
    differs = (entry.get("standin") or {}).get("differs", "")
    assert differs and differs not in _used_text("real-reencoded", entry)
    assert "re-encoded JPEG" in _used_text("real-reencoded", entry)
    assert _used_text("stand-in", entry) == f"stand-in: {differs}"
