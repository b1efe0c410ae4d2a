"""Get a dataset's verified files: cache, then sources in order; credentialed folders; the manifest.

The manifest (results/downloads/<dataset>/manifest.json) is what later rules read: it says whether
the real files are there (status "real") or not ("unavailable", with every attempt and its error),
and lists each verified file with its path, size and hashes.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import tempfile
import time
from pathlib import Path

from fedrepro.data.download import HttpPolicy
from fedrepro.data.sources import FETCHERS, FetchContext
from fedrepro.data.verify import (
    PINS_FILE,
    ChecksumMismatch,
    check,
    expected_with_pin,
    format_problem,
    has_checksum,
    read_pins,
    write_pins,
)
from fedrepro.registry.datasets import Dataset
from fedrepro.runtime import process_alive

log = logging.getLogger("fedrepro.data")

MANIFEST = "manifest.json"
IMAGEFOLDER = "imagefolder"   # source kind: a known image set (fedrepro.data.imagesets) standing for the files
VERIFIED_CACHE = "verified-local.json"
ORIGINS = "origins.json"


class DataUnavailable(RuntimeError):
    """No source of a dataset worked and data.on_missing is `error`; the message says what to do."""


FETCH_PREFIX = ".fetch-"
_STALE_FOREIGN_S = 24 * 3600.0


def fetch_workdir(folder: Path) -> Path:
    """A private work folder beside the destination (same file system, so the final move is atomic), named
    after this host and process so that a later run can tell an interrupted fetch's leftovers from a live one."""
    tag = f"{FETCH_PREFIX}{socket.gethostname().replace('-', '_')}-{os.getpid()}-"
    return Path(tempfile.mkdtemp(prefix=tag, dir=folder))


    return True


def clean_interrupted_fetches(folder: Path) -> list[Path]:
    """Remove the work folders of fetches that were killed (a fetch of Fashion-MNIST leaves ~84 MB).

    A folder of a process on this host that no longer runs goes at once; one of another host (a shared cluster
    file system) only when untouched for a day; one of an older release (no host/pid in the name) at once.
    """
    removed = []
    host = socket.gethostname().replace("-", "_")
    for work in Path(folder).glob(FETCH_PREFIX + "*"):
        if not work.is_dir():
            continue
        parts = work.name[len(FETCH_PREFIX):].split("-")
        if len(parts) >= 3 and parts[1].isdigit():
            same_host = parts[0] == host
            stale = (not process_alive(int(parts[1]))) if same_host else \
                time.time() - work.stat().st_mtime > _STALE_FOREIGN_S
        else:
            stale = True
        if stale:
            shutil.rmtree(work, ignore_errors=True)
            removed.append(work)
            log.info("removed %s, left by an interrupted fetch", work)
    return removed


def _record(path: Path, info: dict, source: str) -> dict:
    return {"path": path.as_posix(), "size": info["size"], "sha256": info["sha256"], "md5": info["md5"], "source": source}


def acquire(ds: Dataset, dest: str | Path, *, policy: HttpPolicy = HttpPolicy(),
            credentials: dict | None = None, images: dict | None = None) -> dict:
    """Make every file of `ds` present and verified; return the manifest (also written to dest/manifest.json).

    When the official files cannot be had, an `imagefolder` source (a known image set at the path
    `images[<key>]`, config data.images) may stand for them: the manifest then names the set and its data kind."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    if ds.credential:
        manifest = _acquire_local(ds, dest, credentials or {})
    else:
        manifest = _acquire_download(ds, dest, policy)
        if manifest["status"] == "unavailable":
            manifest = _acquire_imageset(ds, manifest, images or {})
    from fedrepro.io import write_json

    write_json(dest / MANIFEST, manifest)
    return manifest


def _pin_advice(ds: Dataset, name: str, spec, pins) -> str:
    if has_checksum(spec) or name not in pins:
        return ""
    return (f" (the expected hash is the pin recorded at the first download in results/downloads/{ds.name}/"
            f"{PINS_FILE}; if these bytes are the right ones, delete the line for {name} there)")


def _acquire_download(ds: Dataset, dest: Path, policy: HttpPolicy) -> dict:
    clean_interrupted_fetches(dest)
    pins = read_pins(dest)
    files, attempts = {}, []
    # Which source each verified file came from.  Not the manifest: Snakemake deletes a rule's outputs
    # before rerunning it, and this record must outlive that.
    origins_path = dest / ORIGINS
    old = json.loads(origins_path.read_text()) if origins_path.exists() else {}
    # 1. what is already in place (a previous run, or files a user put there by hand) is re-verified
    for name, spec in ds.files.items():
        path = dest / name
        if not path.exists():
            continue
        exp = expected_with_pin(spec, name, pins)
        try:
            info = check(path, exp, f"{ds.name}/{name}")
        except ChecksumMismatch as exc:
            log.warning("removing %s: %s", path, exc)
            attempts.append({"source": "cache", "file": name, "error": str(exc) + " (file removed)"})
            path.unlink()
            continue
        if not has_checksum(spec):
            # read whole before (re)trusting its pin: a pin made from a cut-off file (older releases pinned
            # after sniffing the first bytes only) is dropped together with the file
            if (why := format_problem(path, name)) is not None:
                log.warning("removing %s: %s%s; trying the sources again", path, why,
                            " (its pin dropped)" if name in pins else "")
                attempts.append({"source": "cache", "file": name, "error": f"{why} (file removed"
                                 + (", its pin dropped)" if name in pins else ")")})
                path.unlink()
                pins.pop(name, None)
                continue
            pins[name] = info["sha256"]
        # keep where the bytes originally came from (same hash as recorded then), else say "cache"
        prev = old.get(name, {})
        origin = prev.get("source", "cache") if prev.get("sha256") == info["sha256"] else "cache"
        files[name] = {**_record(path, info, origin), "cached": True}
    # 2. each source in order, for the files still missing (image sets stand for the files, not among them)
    for src in ds.sources:
        if src["kind"] == IMAGEFOLDER:
            continue
        missing = [n for n in ds.files if n not in files]
        if not missing:
            break
        work = fetch_workdir(dest)
        try:
            ctx = FetchContext(workdir=work, policy=policy)
            got = FETCHERS[src["kind"]](src, missing, ctx)
            attempts += ctx.errors
            for name, tmp in got.items():
                exp = expected_with_pin(ds.files[name], name, pins)
                try:
                    info = check(tmp, exp, f"{ds.name}/{name} from {src['name']}")
                except ChecksumMismatch as exc:
                    log.error("discarding %s from %s: %s", name, src["name"], exc)
                    attempts.append({"source": src["name"], "file": name, "error": str(exc) + " (file discarded)"
                                     + _pin_advice(ds, name, ds.files[name], pins)})
                    tmp.unlink(missing_ok=True)
                    continue
                if not has_checksum(exp):
                    # no published checksum: the file is read whole (archives listed and decompressed, zips
                    # CRC-checked, npz loaded, CSVs parsed) before its hash is pinned as the trusted one
                    if (why := format_problem(tmp, name)) is not None:
                        attempts.append({"source": src["name"], "file": name, "error": why + " (file discarded)"})
                        tmp.unlink(missing_ok=True)
                        continue
                    pins[name] = info["sha256"]
                    log.info("pinned sha256 %s for %s (no published checksum)", info["sha256"], name)
                final = dest / name
                final.parent.mkdir(parents=True, exist_ok=True)
                os.replace(tmp, final)          # only now does the file appear where rules read
                files[name] = _record(final, info, src["name"])
        finally:
            shutil.rmtree(work, ignore_errors=True)
    if pins:
        write_pins(dest, {n: d for n, d in pins.items() if n in ds.files})
    if files:
        from fedrepro.io import write_json

        write_json(origins_path, {n: {"sha256": r["sha256"], "source": r["source"]} for n, r in files.items()})
    missing = [n for n in ds.files if n not in files]
    return {"dataset": ds.name, "status": "unavailable" if missing else "real", "location": dest.as_posix(),
            "files": dict(sorted(files.items())), "missing": missing, "attempts": attempts}


def _acquire_imageset(ds: Dataset, manifest: dict, images: dict) -> dict:
    """The first `imagefolder` source whose configured path is a known set; else `manifest` plus the attempts."""
    from fedrepro.data.imagesets import ImageSetError, identify

    attempts = list(manifest["attempts"])
    for src in ds.sources:
        if src["kind"] != IMAGEFOLDER:
            continue
        where = images.get(src["key"])
        if not where:
            attempts.append({"source": src["name"], "file": "*", "error": f"data.images.{src['key']} is not set"})
            continue
        path = Path(where).expanduser()
        try:
            name, spec, actual = identify(path, src["sets"], f"{ds.name} image set ({src['name']})")
        except (ImageSetError, ChecksumMismatch, OSError) as exc:
            attempts.append({"source": src["name"], "file": "*", "error": str(exc)})
            continue
        record = {"path": path.as_posix(), "size": actual["size"], "sha256": actual["sha256"], "source": src["name"]}
        log.info("%s: using image set %s (%s) at %s", ds.name, name, spec["data"], path)
        return {"dataset": ds.name, "status": spec["data"], "location": path.as_posix(), "files": {name: record},
                "missing": [], "attempts": attempts,
                "image_set": {"source": src["name"], "set": name, "data": spec["data"], "note": spec.get("note", "")}}
    return {**manifest, "attempts": attempts}


def data_kind(manifest: dict) -> str:
    """What the prepared data will be: real, real-reencoded (a known lossy image set) or stand-in."""
    return "stand-in" if manifest["status"] == "unavailable" else manifest["status"]


def raw_inputs(manifest: dict) -> list[str]:
    """The downloaded files a manifest vouches for (under results/downloads), for the fetch step's sidecar
    `inputs`, so that `audit` and `verify_inputs` reach the raw bytes.  Credentialed files stay where the user
    keeps them and are re-verified by size and mtime instead (hashing ~150 GB of ImageNet per audit is not useful);
    an image set (possibly a folder of 60,000 files) stays where it is and is re-hashed by the prepare step.
    """
    return [rec["path"] for rec in manifest.get("files", {}).values()
            if rec.get("source") != "user-folder" and not manifest.get("image_set")]


def _acquire_local(ds: Dataset, dest: Path, credentials: dict) -> dict:
    """Credentialed data: verified where the user keeps it (never copied: licences forbid redistribution)."""
    key = ds.credential["key"]
    folder = credentials.get(key)
    base = {"dataset": ds.name, "credential_key": f"data.credentials.{key}", "files": {}, "missing": list(ds.files)}
    if not folder:
        return {**base, "status": "unavailable", "location": None,
                "attempts": [{"source": "user-folder", "file": "*", "error": credential_message(ds, None)}]}
    folder = Path(folder).expanduser()
    absent = [n for n in ds.files if not (folder / n).is_file()]
    if absent:
        return {**base, "status": "unavailable", "location": folder.as_posix(), "missing": absent,
                "attempts": [{"source": "user-folder", "file": ", ".join(absent),
                              "error": credential_message(ds, folder, absent)}]}
    pins = read_pins(dest)
    cache_path = dest / VERIFIED_CACHE
    cache = json.loads(cache_path.read_text()) if cache_path.exists() else {}
    files, attempts = {}, []
    for name, spec in ds.files.items():
        path = folder / name
        st = path.stat()
        exp = expected_with_pin(spec, name, pins)
        stamp = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "expected": exp}
        hit = cache.get(path.as_posix())
        if hit and hit["stamp"] == stamp:
            # hashing ~150 GB of ImageNet again only because a rule reran is pointless; size, mtime and the
            # expected hashes are unchanged since the last full verification
            info = hit["info"]
        else:
            try:
                info = check(path, exp, f"{ds.name}: {path}")
            except ChecksumMismatch as exc:
                attempts.append({"source": "user-folder", "file": name, "error": str(exc)})
                continue
            if not has_checksum(exp) and (why := format_problem(path, name)) is not None:
                attempts.append({"source": "user-folder", "file": name, "error": f"{path}: {why}"})
                continue
            cache[path.as_posix()] = {"stamp": stamp, "info": info}
        if not has_checksum(exp):
            pins[name] = info["sha256"]
        files[name] = _record(path, info, "user-folder")
    from fedrepro.io import write_json

    write_json(cache_path, cache)
    if pins:
        write_pins(dest, pins)
    missing = [n for n in ds.files if n not in files]
    return {**base, "status": "unavailable" if missing else "real", "location": folder.as_posix(),
            "files": files, "missing": missing, "attempts": attempts}


def credential_message(ds: Dataset, folder: Path | None, absent=None, *, scale: str | None = None,
                       root: str | Path = ".") -> str:
    from fedrepro.registry.config import setting_advice

    cred = ds.credential
    key = f"data.credentials.{cred['key']}"
    if folder is None:
        head = f"{ds.name} is credentialed and {key} is not set."
    else:
        head = f"{ds.name}: {key} = {folder} lacks {', '.join(absent or [])}."
    return (f"{head} Obtain {cred['obtain']}. Then {setting_advice(key, '/path/to/folder', scale=scale, root=root)}, "
            f"where /path/to/folder is {cred['folder']}.")


def unavailable_message(ds: Dataset, manifest: dict, *, scale: str | None = None, root: str | Path = ".") -> str:
    """The error text for data.on_missing: error: every attempt, then what to do.

    The advice works at `scale` (the command line beats config/scales/paper.yaml, which sets on_missing: error;
    config/config.yaml does not)."""
    from fedrepro.registry.config import setting_advice

    lines = [f"dataset {ds.name!r} ({ds.entry['title']}) is not available and data.on_missing is 'error'."]
    for a in manifest.get("attempts", []):
        lines.append(f"  - {a['source']} [{a['file']}]: {a['error']}")
    if ds.credential:
        lines.append("What to do: " + credential_message(ds, None if not manifest.get("location") else Path(manifest["location"]),
                                                        manifest.get("missing"), scale=scale, root=root))
    else:
        lines.append(f"What to do: run with access to one of the sources above, or put the files "
                     f"{', '.join(manifest.get('missing', []))} into results/downloads/{ds.name}/ (they are verified "
                     f"against config/datasets.yaml). To use the declared stand-in ({ds.standin['generator']}) "
                     f"instead, {setting_advice('data.on_missing', 'standin', scale=scale, root=root)}.")
    return "\n".join(lines)
