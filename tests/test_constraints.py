"""The pinned set (constraints.txt): what setup.sh installs on a fresh clone.

It must pin every package fedrepro[dev] reaches, each within the range pyproject.toml declares, and an environment
that setup.sh installed from it must hold exactly those versions (docs/architecture.md, "The pinned set")."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pytest brings tomli
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
CONSTRAINTS = REPO / "constraints.txt"
MARKER = Path(sys.prefix) / "fedrepro-constraints.sha256"  # written by setup.sh when it installed from the pins
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;#]+)$")


def read_pins(text: str) -> dict[str, str]:
    pins = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        m = PIN.match(line.strip())
        assert m, f"constraints.txt line {n}: {line!r} is not `name==version` (rewrite it with ./setup.sh --relock)"
        name = canonicalize_name(m.group(1))
        assert name not in pins, f"constraints.txt line {n}: {m.group(1)} is pinned twice"
        pins[name] = m.group(2)
    return pins


@pytest.fixture(scope="module")
def pins() -> dict[str, str]:
    return read_pins(CONSTRAINTS.read_text())


def declared_requirements() -> list[tuple[str, Requirement]]:
    """Every requirement pyproject.toml declares: the runtime ones, each extra's and the build system's."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    reqs = [("dependencies", r) for r in project["project"]["dependencies"]]
    for extra, items in project["project"].get("optional-dependencies", {}).items():
        reqs += [(f"optional-dependencies.{extra}", r) for r in items]
    reqs += [("build-system.requires", r) for r in project["build-system"]["requires"]]
    return [(where, Requirement(r)) for where, r in reqs]


def test_the_pin_format_and_its_python_line():
    text = CONSTRAINTS.read_text()
    assert re.search(r"^# python: 3\.\d+$", text, re.M), "constraints.txt names no `# python: X.Y` (setup.sh reads it)"
    assert not re.search(r"==\S*\+", text), "a pin carries a local version label (setup.sh --relock strips them)"
    with pytest.raises(AssertionError, match="line 2"):
        read_pins("a==1\nb>=2\n")
    with pytest.raises(AssertionError, match="pinned twice"):
        read_pins("Foo_Bar==1\nfoo-bar==1\n")


def test_every_declared_requirement_is_pinned_inside_its_range(pins):
    for where, req in declared_requirements():
        name = canonicalize_name(req.name)
        assert name in pins, f"pyproject.toml {where}: {req} has no pin in constraints.txt; run ./setup.sh --relock"
        assert req.specifier.contains(pins[name], prereleases=True), (
            f"constraints.txt pins {req.name}=={pins[name]}, outside pyproject.toml {where}'s `{req}`; "
            "run ./setup.sh --relock (or change the range)")


def _closure(roots: list[Requirement]) -> dict[str, metadata.Distribution]:
    """The installed distributions these requirements reach, following each one's own requirements and extras."""
    env = default_environment()
    seen: dict[tuple[str, tuple[str, ...]], metadata.Distribution] = {}
    todo = [(r, set()) for r in roots]  # (a requirement, the extras its parent was installed with)
    while todo:
        req, parent_extras = todo.pop()
        # `extra == "dev"` holds only where the parent was asked for with that extra
        if req.marker is not None and not any(req.marker.evaluate({**env, "extra": e})
                                              for e in parent_extras | {""}):
            continue
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            continue  # not installed here (an optional extra this environment was set up without)
        key = (canonicalize_name(req.name), tuple(sorted(req.extras)))
        if key in seen:
            continue
        seen[key] = dist
        todo += [(Requirement(spec), set(req.extras)) for spec in dist.requires or []]
    return {name: dist for (name, _), dist in seen.items()}


def test_the_pinned_set_is_closed_over_what_fedrepro_installs(pins):
    """Every package installed because fedrepro[dev] needs it (directly or not) has a pin: nothing floats."""
    roots = [Requirement(f"fedrepro[{','.join(metadata.metadata('fedrepro').get_all('Provides-Extra') or [])}]")]
    reached = _closure(roots)
    reached.pop("fedrepro", None)
    assert len(reached) > 50, "the dependency walk found almost nothing: it is broken, not the pins"
    unpinned = sorted(name for name in reached if name not in pins)
    assert not unpinned, f"installed for fedrepro but not pinned: {unpinned}; run ./setup.sh --relock"


@pytest.mark.skipif(not MARKER.exists(), reason="this environment was not installed from constraints.txt by setup.sh")
def test_the_environment_holds_the_pinned_versions(pins):
    """setup.sh --dev (the README's test command, and CI) installed exactly the pinned set, from this constraints.txt."""
    assert MARKER.read_text().strip() == hashlib.sha256(CONSTRAINTS.read_bytes()).hexdigest(), (
        "constraints.txt changed since ./setup.sh installed this environment; rerun ./setup.sh --dev")
    installed = {canonicalize_name(d.metadata["Name"]): d.version for d in metadata.distributions()}
    differ = {name: (want, installed[name]) for name, want in pins.items()
              if name in installed and installed[name].split("+")[0] != want}
    assert not differ, f"installed versions differ from constraints.txt (pinned, installed): {differ}"


def test_setup_refuses_an_unknown_option():
    proc = subprocess.run(["bash", str(REPO / "setup.sh"), "--pinned"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "unknown option '--pinned'" in proc.stderr and "--unpinned" in proc.stderr


def test_the_installed_pytest_pair_applies_xdist_groups(tmp_path):
    """`--dist loadgroup` sends every test of one `xdist_group` to one worker (the smoke fixture is built once, the
    test cluster held by one worker): pytest-xdist marks such a test by a `@group` suffix of its node id, which pytest
    9.2 no longer reads back."""
    pytest.importorskip("xdist")
    (tmp_path / "conftest.py").write_text(
        "import pytest\n\n@pytest.hookimpl(tryfirst=True)\ndef pytest_collection_modifyitems(config, items):\n"
        "    for item in items:\n        if item.name.startswith('test_g'):\n"
        "            item.add_marker(pytest.mark.xdist_group('smoke'))\n")
    (tmp_path / "test_groups.py").write_text(
        "import os\n\ndef _worker(name):\n    open(name, 'w').write(os.environ['PYTEST_XDIST_WORKER'])\n\n"
        + "".join(f"def test_g{i}():\n    _worker('g{i}')\n\ndef test_x{i}():\n    _worker('x{i}')\n\n"
                  for i in range(4)))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist",
                           "loadgroup", "-rA"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    workers = {(tmp_path / f"g{i}").read_text() for i in range(4)}
    assert "test_g0@smoke" in proc.stdout and len(workers) == 1, (
        f"the xdist_group tests ran on {sorted(workers)}: this pytest/pytest-xdist pair ignores the groups "
        "(pytest>=9.2 with pytest-xdist 3.8); install the pinned set with ./setup.sh --dev")
