"""The in-process render path (fedrepro.execute) against papermill's own executor (a kernel process): the same
notebook gives the same outputs, cell by cell."""

import base64
import os

import nbformat
import papermill
import pytest

from fedrepro.execute import NotebookExecutionError, execute_notebook

os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"


def _notebook(*sources, parameters="x = 1\nname = 'default'"):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell(parameters)
    cell.metadata["tags"] = ["parameters"]
    nb.cells = [nbformat.v4.new_markdown_cell("# title"), cell, *[nbformat.v4.new_code_cell(s) for s in sources]]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


CELLS = (
    "print('before', x)\nimport sys\nprint('to stderr', file=sys.stderr)",
    "from IPython.display import Markdown, display\ndisplay(Markdown(f'**{name}**'))\nprint('after')\nx * 21",
    # the inline backend named explicitly: the render job sets it by MPLBACKEND before matplotlib is imported, but
    # in the test process another test may have imported matplotlib with its default backend already
    "%matplotlib inline\nimport matplotlib.pyplot as plt\nfig, ax = plt.subplots(figsize=(2, 2))\nax.plot([0, 1], [1, 0])\nplt.close(fig)\nfig",
    "y = x + 1",
)


def _summary(nb):
    """Per code cell: (output_type, stream name or sorted mime types, text) of each output."""
    rows = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        outs = []
        for o in cell.outputs:
            if o.output_type == "stream":
                outs.append(("stream", o.name, o.text))
            elif o.output_type in ("display_data", "execute_result"):
                outs.append((o.output_type, tuple(sorted(o.data)), o.data.get("text/markdown", "")))
            else:
                outs.append((o.output_type, o.get("ename"), o.get("evalue")))
        rows.append(outs)
    return rows


def test_same_outputs_as_papermill_with_a_kernel_process(tmp_path):
    params = {"x": 2, "name": "ours"}
    ours = execute_notebook(_notebook(*CELLS), params, cwd=tmp_path)
    theirs = papermill.execute_notebook(_notebook(*CELLS), str(tmp_path / "pm.ipynb"), parameters=params,
                                        kernel_name="python3", progress_bar=False, cwd=str(tmp_path))
    assert _summary(ours) == _summary(theirs)
    assert [c.source for c in ours.cells] == [c.source for c in theirs.cells]  # papermill's injected cell
    injected = [c for c in ours.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1 and "x = 2" in injected[0].source
    counts = [c.execution_count for c in ours.cells if c.cell_type == "code"]
    assert counts == list(range(1, len(counts) + 1))
    assert _summary(ours)[3] == [("display_data", ("text/markdown", "text/plain"), "**ours**"),
                                 ("stream", "stdout", "after\n"), ("execute_result", ("text/plain",), "")]
    assert _summary(ours)[4][-1][:2] == ("execute_result", ("image/png", "text/plain"))
    nbformat.validate(ours)


def test_a_failing_cell_names_itself(tmp_path):
    nb = _notebook("a = 1", "def f():\n    return 1 / 0\nf()", "never = True")
    with pytest.raises(NotebookExecutionError) as err:
        execute_notebook(nb, {}, cwd=tmp_path)
    assert err.value.index == 4 and err.value.ename == "ZeroDivisionError"
    assert "cell 4 raised ZeroDivisionError" in str(err.value) and "return 1 / 0" in str(err.value)


def test_cwd_is_the_given_folder_and_restored(tmp_path):
    before = os.getcwd()
    nb = execute_notebook(_notebook("import os\nos.getcwd()"), {}, cwd=tmp_path)
    assert nb.cells[-1].outputs[0].data["text/plain"] == repr(str(tmp_path))
    assert os.getcwd() == before


def test_a_saved_figure_shows_its_png_file(tmp_path):
    """Artifact.save_figure's PNG is what the notebook shows, byte for byte (no third drawing)."""
    cell = (
        "%matplotlib inline\nimport matplotlib.pyplot as plt\n"
        "from fedrepro.plotting import save_figure\n"
        "from fedrepro.notebook import show_saved_png\n"
        "from pathlib import Path\n"
        "fig, ax = plt.subplots(figsize=(2, 2))\nax.plot([0, 1])\n"
        "save_figure(fig, 'f.pdf', 'f.png')\nplt.close(fig)\n"
        "fig._fedrepro_saved_png = Path('f.png').read_bytes()\nshow_saved_png()\nfig"
    )
    nb = execute_notebook(_notebook(cell), {}, cwd=tmp_path)
    shown = base64.b64decode(nb.cells[-1].outputs[-1].data["image/png"])
    assert shown == (tmp_path / "f.png").read_bytes()


def test_the_shared_html_exporter_writes_what_a_new_one_writes(tmp_path):
    """`export_html` keeps one exporter per process (a warm server compiles its templates once): every export,
    also after the warm-up's and another notebook's, is byte for byte a new `HTMLExporter`'s."""
    from nbconvert import HTMLExporter

    from fedrepro import warm
    from fedrepro.execute import export_html

    first = execute_notebook(_notebook(*CELLS), {"x": 2, "name": "first"}, cwd=tmp_path)
    second = execute_notebook(_notebook(*CELLS[:2]), {"x": 3, "name": "second"}, cwd=tmp_path)
    warm._export_once()
    for nb in (first, second, first):
        html = export_html(nb)
        assert html == HTMLExporter().from_notebook_node(nb)[0]
        assert "<img" in html if nb is first else "<img" not in html


def test_figures_show_when_the_inline_backend_was_selected_before_the_kernel(tmp_path):
    """A warm copy (fedrepro.warm) has matplotlib imported and selects the inline backend before the kernel exists;
    the executed notebook must still hold the figure as image/png (it held only "<Figure ...>" text before)."""
    import subprocess
    import sys

    script = f"""
import os, sys
os.environ.pop("MPLBACKEND", None)
import matplotlib, matplotlib.pyplot            # the warm server's preload (default backend)
os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
matplotlib.use(os.environ["MPLBACKEND"])        # what the render script does in a warm copy
assert "matplotlib_inline.backend_inline" in sys.modules
import nbformat
from fedrepro.execute import execute_notebook
nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
    "import matplotlib.pyplot as plt\\nfig, ax = plt.subplots()\\nax.plot([0, 1])\\nfig")])
out = execute_notebook(nb, {{}}, cwd={str(tmp_path)!r})
print("PNG" if any("image/png" in o.get("data", {{}}) for c in out.cells for o in c.outputs) else "NO PNG")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("PNG") and "NO PNG" not in done.stdout, done.stdout


def test_a_figure_the_host_left_open_does_not_appear(tmp_path):
    """The in-process kernel shares pyplot's figures with its host: one left open before (by a test, or by the
    notebook a warm copy rendered before) must not be shown after this notebook's first drawing cell."""
    import matplotlib.pyplot as plt

    clean = _summary(execute_notebook(_notebook(*CELLS), {"x": 2, "name": "ours"}, cwd=tmp_path))
    for backend in ("agg", "module://matplotlib_inline.backend_inline"):
        plt.switch_backend(backend)
        plt.subplots()                               # left open on purpose
        ours = execute_notebook(_notebook(*CELLS), {"x": 2, "name": "ours"}, cwd=tmp_path)
        assert _summary(ours) == clean, backend
        assert not plt.get_fignums()
