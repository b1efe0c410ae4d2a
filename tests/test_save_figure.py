"""plotting.save_figure: one layout pass for both files, the PNG as a plain savefig gives it, the PDF cropped alike.

The reference for each file is matplotlib's own ``fig.savefig`` of an identical, freshly drawn figure in the project
style (constrained layout, tight crop).
"""

from __future__ import annotations

import re

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg", force=True)  # a test process may have no display; the library itself never picks a backend

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.layout_engine import ConstrainedLayoutEngine  # noqa: E402

from fedrepro.plotting import save_figure  # noqa: E402
from fedrepro.plotting.style import STYLE  # noqa: E402


@pytest.fixture(autouse=True)
def project_style():
    with plt.style.context(STYLE):
        yield
    plt.close("all")


def three_panels():
    fig, axes = plt.subplots(1, 3, figsize=(8, 2.6))
    for k, ax in enumerate(axes):
        for m in range(4):
            ax.plot(np.arange(1, 101), np.exp(-np.arange(1, 101) / (20 + 10 * m)) + 0.01 * k, label=f"method {m}")
        ax.set(xscale="log", title=f"({'abc'[k]}) {2 + k} bits", xlabel="iterations", ylabel="test error")
    axes[-1].legend(loc="upper left", bbox_to_anchor=(1.02, 1))  # outside the axes: the crop must include it
    fig.suptitle("Figure 3 (a long suptitle that sets the width of the crop)")
    return fig


def media_box(pdf: bytes) -> np.ndarray:
    return np.array(re.search(rb"/MediaBox \[\s*([^\]]+)\]", pdf).group(1).split(), float)


def test_the_png_is_a_plain_savefig_and_the_pdf_crop_agrees(tmp_path):
    fig = three_panels()
    save_figure(fig, tmp_path / "f.pdf", tmp_path / "f.png")
    plain = three_panels()
    plain.savefig(tmp_path / "plain.png", format="png", metadata={"Software": None})
    plain = three_panels()
    plain.savefig(tmp_path / "plain.pdf", format="pdf", metadata={"CreationDate": None})

    assert (tmp_path / "f.png").read_bytes() == (tmp_path / "plain.png").read_bytes()
    ours, theirs = media_box((tmp_path / "f.pdf").read_bytes()), media_box((tmp_path / "plain.pdf").read_bytes())
    # the box is measured with Agg's text metrics instead of the PDF backend's: within a point or two
    np.testing.assert_allclose(ours, theirs, atol=2.0)


def test_the_layout_runs_once_and_the_engine_is_restored(tmp_path, monkeypatch):
    calls = []
    execute = ConstrainedLayoutEngine.execute
    monkeypatch.setattr(ConstrainedLayoutEngine, "execute", lambda self, fig: calls.append(1) or execute(self, fig))
    fig = three_panels()
    engine = fig.get_layout_engine()
    save_figure(fig, tmp_path / "f.pdf", tmp_path / "f.png")
    assert len(calls) == 1  # the PNG's; the PDF reuses it (two passes before)
    assert fig.get_layout_engine() is engine


def test_a_figure_without_a_layout_engine_is_saved_without_one_in_both_files(tmp_path, monkeypatch):
    """matplotlib's savefig restores "no engine" as the rc's default engine, so a plain PDF-then-PNG pair laid the
    PNG out with constrained layout and the PDF without; both files now show the figure as it was built."""
    calls = []
    execute = ConstrainedLayoutEngine.execute
    monkeypatch.setattr(ConstrainedLayoutEngine, "execute", lambda self, fig: calls.append(1) or execute(self, fig))

    def engineless():
        with plt.rc_context({"figure.constrained_layout.use": False}):
            fig = plt.figure(figsize=(3, 2))
        fig.add_subplot().plot([1, 2, 3])
        assert fig.get_layout_engine() is None
        return fig

    save_figure(engineless(), tmp_path / "f.pdf", tmp_path / "f.png")
    assert calls == []
    engineless().savefig(tmp_path / "plain.png", format="png", metadata={"Software": None})
    assert (tmp_path / "f.png").read_bytes() == (tmp_path / "plain.png").read_bytes()
    assert (tmp_path / "f.pdf").read_bytes().startswith(b"%PDF")


def test_a_stand_in_mark_on_some_panels_lies_on_those_panels_only(tmp_path):
    """A figure whose panels use different data (C-VFL Fig. 3: real CIFAR-10 beside stand-in MIMIC-III) gets the
    mark on the stand-in panels; True still marks the whole figure."""
    fig = three_panels()
    axes = fig.axes[:3]
    save_figure(fig, tmp_path / "a.pdf", tmp_path / "a.png", stand_in=[axes[0]], reencoded=[axes[1]])
    marks = {i: [t.get_text() for t in ax.texts] for i, ax in enumerate(axes)}
    assert marks == {0: ["STAND-IN DATA"], 1: ["RE-ENCODED JPEG"], 2: []}
    assert not [t for t in fig.texts if t.get_text() == "STAND-IN DATA"]
    whole = three_panels()
    save_figure(whole, tmp_path / "b.pdf", tmp_path / "b.png", stand_in=True)
    assert [t.get_text() for t in whole.texts if t.get_text() == "STAND-IN DATA"] == ["STAND-IN DATA"]
    assert not any(t.get_text() == "STAND-IN DATA" for ax in whole.axes for t in ax.texts)
