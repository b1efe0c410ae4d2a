"""Code dependencies derived from imports: what a job's module really loads, and nothing else."""

from pathlib import Path

from fedrepro.workflow.codedeps import closure_relpaths, code_version, import_closure


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    src = tmp_path / "src"
    for rel, text in files.items():
        path = src / "fedrepro" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return src


def _names(paths, src):
    return sorted(str(p.relative_to(src / "fedrepro")) for p in paths)


def test_closure_follows_absolute_relative_and_local_imports(tmp_path):
    src = _package(tmp_path, {
        "__init__.py": "",
        "a/__init__.py": "",
        "a/runner.py": "from fedrepro.a import helper\nfrom . import sibling\n\ndef run():\n    import fedrepro.b.deep\n",
        "a/helper.py": "",
        "a/sibling.py": "from fedrepro.pkg.impl import exported_name\n",
        "a/unrelated.py": "import fedrepro.c\n",
        "b/__init__.py": "",
        "b/deep.py": "",
        "c.py": "",
        "pkg/__init__.py": "",
        "pkg/impl.py": "",
        "pkg/other.py": "",
    })
    got = _names(import_closure(src, modules=("fedrepro.a.runner",)), src)
    assert got == ["__init__.py", "a/__init__.py", "a/helper.py", "a/runner.py", "a/sibling.py", "b/__init__.py",
                   "b/deep.py", "pkg/__init__.py", "pkg/impl.py"]


def test_closure_of_a_script_and_of_the_real_workflow_jobs():
    root = Path(__file__).resolve().parents[1]
    run = closure_relpaths(root, files=("workflow/scripts/run.py",), modules=("fedrepro.transfer.table5_1",))
    assert "src/fedrepro/transfer/representation.py" in run and "src/fedrepro/runner.py" in run
    assert not any("/gcca/" in f or "/cvfl/" in f or "/plotting/" in f for f in run), run
    prepare = closure_relpaths(root, files=("workflow/scripts/data_prepare.py",))
    assert "src/fedrepro/data/prepare.py" in prepare
    assert "src/fedrepro/data/imagefolder.py" not in prepare and "src/fedrepro/data/loaders.py" not in prepare
    render = closure_relpaths(root, files=("workflow/scripts/render_artifact.py", "notebooks/thesis/table5_1.py"))
    assert "src/fedrepro/artifact.py" in render and "src/fedrepro/transfer/artifacts.py" in render


def test_code_version_follows_the_bytes_not_the_timestamps(tmp_path):
    """A job's `params.code`: the same for the same paths and bytes (in any order, after a bare touch), different
    after an edit, after the edit is undone the same again, and different when a file joins the closure."""
    import os

    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("x = 1\n")
    b.write_text("y = 2\n")
    first = code_version(tmp_path, ["a.py", "b.py"])
    assert code_version(tmp_path, ["b.py", "a.py"]) == first
    os.utime(a, (1e9, 1e9))                          # a bare touch (here: back in time) changes nothing
    assert code_version(tmp_path, ["a.py", "b.py"]) == first
    a.write_text("x = 10\n")
    edited = code_version(tmp_path, ["a.py", "b.py"])
    assert edited != first
    a.write_text("x = 1\n")
    assert code_version(tmp_path, ["a.py", "b.py"]) == first
    assert code_version(tmp_path, ["a.py"]) != first
    b.rename(tmp_path / "c.py")                      # same bytes under another path: another closure
    assert code_version(tmp_path, ["a.py", "c.py"]) != first
