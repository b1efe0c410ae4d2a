"""The `src/fedrepro` files a job really imports, so editing one of them (and only those) reruns the job.

Snakemake tracks files, not imports.  Each run, render and claims job therefore declares as inputs the import
closure, within this package, of the module or script it executes: every `import fedrepro...` and
`from fedrepro... import ...` (also relative and function-local imports: a lazy import still runs), followed
recursively, plus the `__init__.py` of every package on the way (Python executes them on import).
Computed from the source text with `ast` at DAG-build time; nothing is imported.
"""

from __future__ import annotations

import ast
import hashlib
from functools import cache
from pathlib import Path

PACKAGE = "fedrepro"


def _module_file(src: Path, module: str) -> Path | None:
    """The file of a dotted module name under `src` (a module or a package's __init__), or None."""
    base = src.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _module_name(src: Path, path: Path) -> str:
    rel = path.relative_to(src).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


@cache
def _direct_imports(path: Path, src: Path) -> tuple[str, ...]:
    """The fedrepro modules one file imports (names that may be modules: `from a import b` gives a and a.b)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    here = _module_name(src, path) if path.is_relative_to(src) else ""
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                pkg = here.split(".") if is_package else here.split(".")[:-1]
                pkg = pkg[: len(pkg) - (node.level - 1)]
                base = ".".join(pkg + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            found.append(base)
            found += [f"{base}.{a.name}" for a in node.names if a.name != "*"]
    return tuple(m for m in dict.fromkeys(found) if m == PACKAGE or m.startswith(PACKAGE + "."))


def import_closure(src: str | Path, *, modules: tuple[str, ...] = (), files: tuple[str | Path, ...] = ()) -> list[Path]:
    """Every file under `src/fedrepro` that importing `modules`, or running `files` (scripts, notebooks), loads."""
    src = Path(src).resolve()
    todo: list[str] = list(modules)
    for f in files:
        todo += _direct_imports(Path(f).resolve(), src)
    seen: dict[str, Path] = {}
    while todo:
        module = todo.pop()
        for name in (*_parents(module), module):
            if name in seen:
                continue
            path = _module_file(src, name)
            if path is None:  # `from pkg import function`: the name is not a module
                continue
            seen[name] = path
            todo += _direct_imports(path, src)
    return sorted(set(seen.values()))


def closure_relpaths(root: str | Path, *, modules=(), files=()) -> list[str]:
    """`import_closure` as paths relative to the repository root (what Snakemake rules take as inputs)."""
    root = Path(root).resolve()
    paths = import_closure(root / "src", modules=tuple(modules), files=tuple(root / f for f in files))
    return [str(p.relative_to(root)) for p in paths]


def code_version(root: str | Path, relpaths) -> str:
    """One digest of the paths and bytes of `relpaths` (relative to `root`, or absolute): the version of the code a
    job runs. The workflow passes it to each job as `params.code`, so editing what a job imports changes a parameter
    and Snakemake reruns the job, while a bare `touch` changes nothing."""
    from fedrepro.provenance.hashing import sha256_file

    root = Path(root)
    h = hashlib.sha256()
    for rel in sorted(set(map(str, relpaths))):
        h.update(f"{rel}\0{sha256_file(root / rel)}\n".encode())
    return h.hexdigest()


def code_record(root: str | Path, *, files=(), modules=(), extra=()) -> dict:
    """What a job's sidecar records of the code that made it (key ``code``): one digest (`code_version`) of the
    entry points (the script, the notebook), their import closure and `extra` (plugins), the entry points and the
    sha256 of each of those files, so that `stale_files` can later
    name the modules that changed since (``python -m fedrepro audit --published``)."""
    from fedrepro.provenance.hashing import sha256_file

    root = Path(root)
    rels = sorted({*closure_relpaths(root, files=files, modules=modules), *map(str, files), *map(str, extra)})
    return {"sha256": code_version(root, rels),
            "entry": {"files": sorted(map(str, files)), "modules": sorted(modules), "extra": sorted(map(str, extra))},
            "files": {rel: sha256_file(root / rel) for rel in rels}}


def stale_files(root: str | Path, record: dict) -> list[str]:
    """The files by which today's code differs from a sidecar's `code_record`: changed, removed, or newly imported
    by the same entry points (an empty list: the code that made the file is the current code)."""
    from fedrepro.provenance.hashing import sha256_file

    root = Path(root)
    entry = record.get("entry") or {}
    present = [f for f in entry.get("files", []) if (root / f).is_file()]
    now = set(closure_relpaths(root, files=present, modules=tuple(entry.get("modules", ()))))
    now |= {f for f in (*entry.get("files", []), *entry.get("extra", [])) if (root / f).is_file()}
    then = record.get("files") or {}
    changed = [rel for rel, sha in then.items() if not (root / rel).is_file() or sha256_file(root / rel) != sha]
    return sorted({*changed, *(now - set(then))})
