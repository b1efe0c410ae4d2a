"""From verified files (or, failing those, the declared stand-in) to results/data/<dataset>/<output>.npz.

Real, re-encoded (a known lossy image set, fedrepro.data.imagesets) and stand-in outputs have the same file names
and array layout; what differs is recorded in the npz (`data_status`, `standin_generator`) and, for provenance,
in the sidecar's `data` map.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fedrepro.data import standins
from fedrepro.data.acquire import DataUnavailable, unavailable_message
from fedrepro.data.download import HttpPolicy
from fedrepro.data.formats import save_npz
from fedrepro.registry.datasets import Dataset

log = logging.getLogger("fedrepro.data")

REAL, REENCODED, STANDIN = "real", "real-reencoded", "stand-in"


@dataclass
class Prepared:
    status: str                       # "real" | "real-reencoded" (a lossy copy of the real images) | "stand-in"
    outputs: list
    extra: dict = field(default_factory=dict)


def _files(manifest: dict) -> dict:
    return {name: Path(rec["path"]) for name, rec in manifest["files"].items()}


def prepare_real(ds: Dataset, manifest: dict, out_dir: Path) -> dict:
    """Dispatch on prepare.kind; returns the arrays of the (single) output npz."""
    p = ds.prepare
    files = _files(manifest)
    kind = p["kind"]
    if manifest.get("image_set"):
        from fedrepro.data.imagesets import prepare_imageset

        src = next(s for s in ds.sources if s["name"] == manifest["image_set"]["source"])
        return prepare_imageset(next(iter(files.values())), src["layout"])
    if kind == "idx":
        from fedrepro.data.images import prepare_idx

        return prepare_idx(files)
    if kind == "cifar10":
        from fedrepro.data.images import prepare_cifar10

        return prepare_cifar10(files["cifar-10-python.tar.gz"], p["members"])
    if kind == "modelnet_views":
        from fedrepro.data.images import prepare_modelnet_views

        return prepare_modelnet_views(next(iter(files.values())), p["classes"], p["views"], p["image_size"])
    if kind == "mimic3_ihm":
        from fedrepro.data.mimic import prepare_mimic3_ihm

        return prepare_mimic3_ihm(files, Path(manifest["location"]), p.get("hours", 48), p.get("timestep", 1.0))
    if kind == "imagenet":
        from fedrepro.data.images import prepare_imagenet

        return prepare_imagenet(files, out_dir, p.get("classes"))
    if kind == "europarl":
        from fedrepro.data.text import align_europarl

        return align_europarl(files, p["languages"])
    if kind == "desynpuf":
        from fedrepro.data.ehr import prepare_desynpuf

        opts = {k: p[k] for k in ("diagnosis_columns", "hcpcs_columns", "top_diagnoses", "top_hcpcs", "min_group_size") if k in p}
        return prepare_desynpuf(files, **opts)
    raise ValueError(f"config/datasets.yaml: datasets.{ds.name}.prepare.kind {kind!r} has no implementation")


def make_standin(ds: Dataset, out_dir: Path, downloads_dir: Path, policy: HttpPolicy = HttpPolicy()) -> tuple[dict, dict]:
    """The declared stand-in's arrays, and what went into them (for the sidecar)."""
    spec = ds.standin
    gen, params = spec["generator"], dict(spec["params"])
    info = {"generator": gen, "params": params}
    if gen in ("digits_images", "prototype_images", "digits_multiview", "synthmimic", "cooccurrence_views"):
        kw = dict(params)
        if gen == "prototype_images":
            kw["name"] = ds.name                          # different datasets, different templates
        return getattr(standins, gen)(**kw), info
    if gen == "prototype_folder":
        classes = ds.prepare.get("classes") or [f"standin{c:04d}" for c in range(params["n_classes"])]
        imgs = standins.prototype_images(shape=params["shape"], n_classes=len(classes),
                                         n_train=params["n_train_per_class"] * len(classes),
                                         n_test=params["n_val_per_class"] * len(classes),
                                         signal=params.get("signal", 0.5), name=ds.name)
        from fedrepro.data.images import folder_index

        root = out_dir / "images"
        paths, labels, splits = [], [], []
        for k, split in ((0, "train"), (1, "test")):
            rel = standins.write_png_folder(root, imgs[f"x_{split}"], imgs[f"y_{split}"], classes,
                                            "train" if k == 0 else "val")
            paths += rel
            labels += imgs[f"y_{split}"].tolist()
            splits += [k] * len(rel)
        return folder_index(paths, labels, splits, classes), info
    if gen == "django_parallel":
        from fedrepro.data.text import django_parallel_texts, parallel_arrays

        langs = params["languages"]
        try:
            wheel = _cached_package_file(params["package"], downloads_dir / "standin", policy)
            texts = django_parallel_texts(wheel, langs)
            info["source"] = f"PyPI package {params['package']['name']}=={params['package']['version']}"
        except Exception as exc:  # noqa: BLE001 - any failure here means: use the synthetic fallback
            log.warning("Django catalogs unavailable (%s); using the synthetic parallel corpus", exc)
            texts = standins.synthetic_parallel(langs, **{k: v for k, v in params["fallback"].items()})
            info["source"] = "synthetic fallback"
        n = len(texts[langs[0]])
        split = np.zeros(n, dtype=np.int8)
        split[n - n // 5:] = 1                          # the last fifth (rows are in a fixed order) is test
        return parallel_arrays(texts, split), info
    raise ValueError(f"config/datasets.yaml: datasets.{ds.name}.standin.generator {gen!r} has no implementation")


def _cached_package_file(pkg: dict, cache: Path, policy: HttpPolicy) -> Path:
    """A registry artifact a stand-in is built from: fetched once, verified, kept so reruns are offline."""
    import shutil

    from fedrepro.data.acquire import clean_interrupted_fetches, fetch_workdir
    from fedrepro.data.sources import download_pypi
    from fedrepro.data.verify import ChecksumMismatch, check

    final = cache / pkg["filename"]
    if final.exists():
        try:
            check(final, {"sha256": pkg["sha256"]})
            return final
        except ChecksumMismatch:
            final.unlink()
    cache.mkdir(parents=True, exist_ok=True)
    clean_interrupted_fetches(cache)
    work = fetch_workdir(cache)
    try:
        path = download_pypi(pkg["name"], pkg["version"], pkg["filename"], work, policy)
        check(path, {"sha256": pkg["sha256"]}, f"PyPI package {pkg['name']}=={pkg['version']}")
        path.replace(final)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return final


class RawFileChanged(RuntimeError):
    """A raw file differs from what its manifest recorded when it was verified; never prepared from."""


def recheck_raw_files(manifest: dict, downloads_dir: str | Path | None = None) -> None:
    """Re-verify every file the manifest vouches for before its bytes are trusted.

    Downloaded files are re-hashed (sha256 and size against the manifest).  Credentialed files (kept in the
    user's folder, up to ~150 GB) are compared by size and mtime with the stamp of their last full
    verification (verified-local.json), and re-hashed only when no stamp is there.
    """
    fetched = manifest.get("dataset", "?")
    repair = (f"run `snakemake --cores 1 results/downloads/{fetched}/manifest.json --forcerun data_fetch` (it "
              f"re-verifies the cached files, removes the changed one and fetches it again), or delete "
              f"results/downloads/{fetched}/ and rerun")
    stamps = {}
    if downloads_dir is not None:
        from fedrepro.data.acquire import VERIFIED_CACHE

        cache = Path(downloads_dir) / VERIFIED_CACHE
        if cache.exists():
            import json

            stamps = json.loads(cache.read_text())
    if manifest.get("image_set"):
        from fedrepro.data.imagesets import set_hashes

        for name, rec in manifest["files"].items():
            path = Path(rec["path"])
            actual = set_hashes(path) if path.exists() else {"sha256": "(missing)"}
            if actual["sha256"] != rec["sha256"]:
                raise RawFileChanged(f"{path} (image set {name} of {fetched}) changed since it was verified: sha256 "
                                     f"{actual['sha256']}, the manifest recorded {rec['sha256']}; {repair}")
        return
    for name, rec in manifest.get("files", {}).items():
        path = Path(rec["path"])
        if not path.is_file():
            raise RawFileChanged(f"{path} ({fetched}/{name}) is missing although the manifest lists it; {repair}")
        st = path.stat()
        if st.st_size != rec["size"]:
            raise RawFileChanged(f"{path} ({fetched}/{name}) has {st.st_size} bytes, the manifest recorded "
                                 f"{rec['size']} when it was verified; {repair}")
        hit = stamps.get(path.as_posix())
        if rec.get("source") == "user-folder" and hit and hit["stamp"].get("size") == st.st_size \
                and hit["stamp"].get("mtime_ns") == st.st_mtime_ns and hit["info"].get("sha256") == rec["sha256"]:
            continue
        from fedrepro.provenance.hashing import sha256_file

        actual = sha256_file(path)
        if actual != rec["sha256"]:
            raise RawFileChanged(f"{path} ({fetched}/{name}) changed since it was verified: sha256 {actual}, the "
                                 f"manifest recorded {rec['sha256']}; {repair}")


def standin_reason(manifest: dict, output: Path) -> dict:
    """Why the real data was not used (the failed attempts, shortened) and the command that tries it again: the
    sidecar's `extra.stand_in`, which the landing page and `python -m fedrepro status` show."""
    attempts = manifest.get("attempts", [])
    why = "; ".join(f"{a['source']}: {a['error']}" for a in attempts[:3])
    more = f" (+{len(attempts) - 3} more attempts in the manifest)" if len(attempts) > 3 else ""
    # the target before --forcerun, whose list of rules would swallow it; the fetch reruns, then this preparation
    return {"reason": f"the real data could not be obtained: {why or 'no source tried'}{more}",
            "retry": f"snakemake --cores 1 {output.as_posix()} --forcerun data_fetch"}


def prepare(ds: Dataset, manifest: dict, out_dir: str | Path, *, on_missing: str = "standin",
            downloads_dir: str | Path | None = None, policy: HttpPolicy = HttpPolicy(),
            scale: str | None = None) -> Prepared:
    """Write results/data/<dataset>/<output>: real data when the manifest says so, else the stand-in
    (data.on_missing: standin) or a DataUnavailable error naming what to do (data.on_missing: error)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    output = out_dir / ds.outputs[0]
    import shutil

    shutil.rmtree(out_dir / "images", ignore_errors=True)      # image-folder datasets: no files of an earlier run
    if manifest["status"] in (REAL, REENCODED):
        recheck_raw_files(manifest, downloads_dir)
        arrays = prepare_real(ds, manifest, out_dir)
        status, extra = manifest["status"], {"source": sorted({r["source"] for r in manifest["files"].values()})}
        if manifest.get("image_set"):
            extra["image_set"] = manifest["image_set"]
    elif on_missing == "error":
        raise DataUnavailable(unavailable_message(ds, manifest, scale=scale))
    else:
        log.warning("%s: no verified real data (%d failed attempts); using the declared stand-in %s",
                    ds.name, len(manifest.get("attempts", [])), ds.standin["generator"])
        arrays, extra = make_standin(ds, out_dir, Path(downloads_dir or out_dir), policy)
        extra["stand_in"] = standin_reason(manifest, output)
        status = STANDIN
        arrays["standin_generator"] = np.array(ds.standin["generator"])
    if "path_blob" in arrays:
        # an image-folder dataset: the index names files no sidecar covers; record a digest per folder
        from fedrepro.provenance.folders import FIELD, folder_digests

        extra[FIELD] = folder_digests(out_dir / str(arrays["root"]), out_dir)
    arrays["data_status"] = np.array(status)
    arrays["dataset"] = np.array(ds.name)
    save_npz(output, arrays)
    log.info("%s: wrote %s (%s)", ds.name, output, status)
    return Prepared(status=status, outputs=[output], extra=extra)
