"""The smoke-scale landing page in a real browser: headless Chromium (Debian's `chromium`), driven over the
DevTools protocol (tests/headless.py; flags in docs/architecture.md, 'The landing page').

Checks: every image loads (naturalWidth > 0), every link resolves (a local file that exists, or an anchor on the
page), the page is laid out as promised (papers in their own order, no raw Markdown, captions once, no blank
configuration), and a screenshot is kept as a test artifact (its path is printed; run with -s or -rP to see it).
"""

from pathlib import Path
from urllib.parse import unquote, urlparse

import pandas as pd
import pytest
from conftest import REPO
from headless import Browser, install_chromium

from fedrepro.registry.papers import Registry
from fedrepro.scorecard.pages import artifact_order

REGISTRY = Registry.load(REPO)

PAGE_FACTS = """(() => ({
  images: [...document.images].map(i => ({src: i.src, width: i.naturalWidth, complete: i.complete})),
  links: [...document.querySelectorAll('a[href]')].map(a => a.href),
  ids: [...document.querySelectorAll('[id]')].map(e => e.id),
  sections: [...document.querySelectorAll('h2[id], div.art[id]')].map(e => e.id),
  text: document.body.innerText,
  configurations: [...document.querySelectorAll('td.config')].map(c => c.textContent),
}))()"""


@pytest.fixture(scope="module")
def browser():
    executable, why = install_chromium()
    if not executable:
        pytest.skip(f"headless Chromium is not installed and cannot be installed here: {why}")
    b = Browser(executable)
    yield b
    b.close()


@pytest.fixture(scope="module")
def landing(smoke_run, browser, tmp_path_factory):
    """The smoke page loaded in Chromium: (facts read from the DOM, screenshot paths)."""
    page = smoke_run / "results" / "smoke" / "index.html"
    browser.open(page.as_uri())
    facts = browser.evaluate(PAGE_FACTS)
    shots = tmp_path_factory.mktemp("landing-page")
    top = browser.screenshot(shots / "index-top.png", full_page=False)
    full = browser.screenshot(shots / "index-full.png")
    print(f"\nscreenshots of the smoke landing page: {top} and {full}")
    return facts, (top, full), page


def test_every_image_loads(landing):
    facts, _, _ = landing
    figures = [a for _, a, e in REGISTRY.artifacts(scale="smoke") if e["kind"] == "figure"]
    board = [i for i in facts["images"] if i["src"].endswith("/results/smoke/leaderboard.png")]
    assert len(board) == 1, "the leaderboard's figure"
    assert len(facts["images"]) == len(figures) + 1, "one image per figure artifact, and the leaderboard's"
    broken = [i["src"] for i in facts["images"] if not (i["complete"] and i["width"] > 0)]
    assert not broken, f"images that did not load: {broken}"


def test_every_link_resolves(landing):
    facts, _, page = landing
    ids, bad = set(facts["ids"]), []
    for href in facts["links"]:
        url = urlparse(href)
        if url.scheme != "file":
            bad.append(f"{href} (not a local file: the page must open from the file system)")
        elif not Path(unquote(url.path)).exists():
            bad.append(f"{href} (no such file)")
        elif url.fragment and Path(unquote(url.path)) == page and url.fragment not in ids:
            bad.append(f"{href} (no element with id {url.fragment!r})")
    assert not bad, "\n".join(bad)


def test_papers_and_artifacts_in_the_papers_order(landing):
    facts, _, _ = landing
    sections = facts["sections"]
    papers = [s for s in sections if s in REGISTRY.papers]
    assert papers == ["gcca", "cvfl", "thesis", "adept"]
    for paper in papers:
        shown = [s.split("-", 1)[1] for s in sections if s.startswith(paper + "-")]
        assert shown == artifact_order(REGISTRY, paper, "smoke")
    thesis = [REGISTRY.artifact("thesis", a)["label"] for a in artifact_order(REGISTRY, "thesis", "smoke")]
    assert thesis.index("Figure 3.2") < thesis.index("Figure 3.4") < thesis.index("Figure 4.1") \
        < thesis.index("Table 5.1")


def test_the_page_reads_as_promised(landing, smoke_run):
    facts, _, _ = landing
    text = facts["text"]
    for paper, reg in REGISTRY.papers.items():
        assert reg["title"] in text, f"the introduction names {paper}'s work"
    for heading in ("Introduction", "Scale smoke", "Stand-in data", "Verdicts per paper and configuration"):
        assert heading in text
    assert "**" not in text, "raw Markdown on the page"
    words = " ".join(text.split())          # HTML collapses runs of white space
    for paper, artifact, entry in REGISTRY.artifacts(scale="smoke"):
        caption = " ".join(entry["caption"].split())
        assert words.count(caption) == 1, f"{paper}:{artifact}: the caption is printed once"
    assert facts["configurations"] and all(c.strip() for c in facts["configurations"]), "a blank configuration cell"
    claims = pd.read_csv(smoke_run / "results" / "smoke" / "claims.csv", dtype=str, keep_default_na=False)
    assert (claims["configuration"] != "").all()


def test_the_assumption_tables_are_linked_and_rendered(landing, smoke_run):
    facts, _, _ = landing
    for paper in REGISTRY.papers:
        md = smoke_run / "results" / "smoke" / paper / "tables" / "assumptions.md"
        assert md.exists() and (md.with_suffix(".csv")).exists()
        assert any(unquote(urlparse(h).path) == str(md) for h in facts["links"])
        for aid in REGISTRY.assumptions(paper):
            assert f"## {aid}:" in md.read_text()


def test_the_screenshot_shows_a_page(landing):
    from pictures import blank_fraction

    _, (top, full), _ = landing
    assert top.stat().st_size > 10_000 and full.stat().st_size > top.stat().st_size
    assert blank_fraction(top) < 0.97
