"""HTTP(S)/file downloads with timeouts, an overall deadline, retries and truncation checks (stdlib urllib only).

`timeout_s` bounds each connect and each read; `deadline_s` bounds a whole fetch of one URL, retries included,
so a server that trickles a few bytes at a time cannot keep a fetch alive for hours.

A download always goes to a caller-chosen temporary path; moving it into place after the checksum
matches is the caller's job (fedrepro.data.acquire), so nothing unverified ever sits where a rule reads.
"""

from __future__ import annotations

import errno
import http.client
import logging
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("fedrepro.data")

_CHUNK = 1 << 20
USER_AGENT = "fedrepro-data/0.1 (+python-urllib)"

# Hosts whose name did not resolve, or that refused every retry, in this process: later files skip them
# instead of paying the retries again (an offline machine otherwise waits retries x files x mirrors).
_DOWN_HOSTS: dict = {}


class LocalFetchError(RuntimeError):
    """A fetch failed for a reason on this machine (disk full, no permission, interrupted): another source would
    fail the same way and a stand-in would hide it, so the fetch stops with the reason and what to do."""


# errno values that say "this machine", not "that server": writing the download, not reaching it
LOCAL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EROFS, errno.EMFILE,
                          errno.ENFILE, errno.EINTR, errno.EFBIG})


def local_failure(exc: BaseException, what: str) -> LocalFetchError | None:
    """`exc` as a LocalFetchError naming the reason and the fix, or None when it may be the source's fault."""
    if not isinstance(exc, OSError) or exc.errno not in LOCAL_ERRNOS:
        return None
    where = f" ({exc.filename})" if exc.filename else ""
    fix = {errno.ENOSPC: "free disk space there", errno.EDQUOT: "free space within your disk quota",
           errno.EFBIG: "raise the file size limit (ulimit -f)", errno.EINTR: "rerun the fetch"}.get(
        exc.errno, "fix the permissions of results/downloads/ (or of the temporary folder)")
    return LocalFetchError(f"{what}: failed on this machine, not at the source: {exc.strerror or exc}{where}; "
                           f"{fix}, then rerun the same snakemake command (no stand-in was made)")


class DownloadError(RuntimeError):
    """A URL could not be fetched completely.  `retriable` says whether trying again could help."""

    def __init__(self, url: str, reason: str, retriable: bool = True):
        self.url, self.reason, self.retriable = url, reason, retriable
        super().__init__(f"{url}: {reason}")


@dataclass(frozen=True)
class HttpPolicy:
    """data.timeout_s / data.retries / data.deadline_s of config/config.yaml; backoff doubles after each try."""

    timeout_s: float = 60.0
    retries: int = 2
    backoff_s: float = 1.0
    deadline_s: float = 4 * 3600.0     # one URL, every try included: ~1.6 GB at 120 kB/s still fits

    @classmethod
    def from_config(cls, data_cfg: dict | None) -> HttpPolicy:
        data_cfg = data_cfg or {}
        return cls(timeout_s=float(data_cfg.get("timeout_s", 60)), retries=int(data_cfg.get("retries", 2)),
                   deadline_s=float(data_cfg.get("deadline_s", cls.deadline_s)))


def reset_down_hosts() -> None:
    _DOWN_HOSTS.clear()


def _host(url: str) -> str:
    return urllib.parse.urlsplit(url).netloc


def _classify(url: str, exc: BaseException) -> DownloadError:
    if isinstance(exc, DownloadError):
        return exc
    if isinstance(exc, urllib.error.HTTPError):
        # 4xx (except 408/429) will not change on retry: move on to the next source at once.
        retriable = exc.code >= 500 or exc.code in (408, 429)
        return DownloadError(url, f"HTTP {exc.code} {exc.reason}", retriable)
    if isinstance(exc, urllib.error.URLError):
        reason = exc.reason
        if isinstance(reason, socket.gaierror):
            return DownloadError(url, f"host name does not resolve ({reason}); offline?", retriable=False)
        if isinstance(reason, (TimeoutError, socket.timeout)):
            return DownloadError(url, "timed out", True)
        return DownloadError(url, f"cannot connect ({reason})", True)
    if isinstance(exc, (TimeoutError, socket.timeout)):
        return DownloadError(url, "timed out while reading", True)
    if isinstance(exc, http.client.IncompleteRead):
        return DownloadError(url, f"truncated transfer ({len(exc.partial)} bytes read, {exc.expected} more expected)", True)
    if isinstance(exc, (ConnectionError, http.client.HTTPException, OSError)):
        return DownloadError(url, f"connection failed ({exc!r})", True)
    raise exc


def _past(url: str, deadline: float, deadline_s: float, received: int | None = None) -> None:
    if time.monotonic() >= deadline:
        got = f" after {received} bytes" if received is not None else ""
        raise DownloadError(url, f"overall deadline of {deadline_s:g} s (data.deadline_s) passed{got}; the server is "
                            "too slow or stalls", retriable=False)


def _fetch_once(url: str, dest: Path, timeout_s: float, expected_size: int | None,
                deadline: float = float("inf"), deadline_s: float = float("inf")) -> int:
    req = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    # no single connect or read may outlast the deadline either
    timeout = max(0.01, min(timeout_s, deadline - time.monotonic()))
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        ctype = (resp.headers.get("Content-Type") or "").lower()
        # A login or "confirm download" page instead of the file (e.g. Google Drive, PhysioNet).
        if ctype.startswith("text/html") and not url.lower().endswith((".html", ".htm", "/")):
            raise DownloadError(url, f"server sent an HTML page (Content-Type {ctype}), not the file; "
                                "a login or confirmation page?", retriable=False)
        length = resp.headers.get("Content-Length")
        length = int(length) if length is not None and length.isdigit() else None
        received = 0
        with open(dest, "wb") as f:
            # read1 returns what one socket read gave, so the deadline is checked however slowly bytes arrive
            # (read(n) would block until n bytes came)
            while chunk := resp.read1(_CHUNK):
                f.write(chunk)
                received += len(chunk)
                _past(url, deadline, deadline_s, received)
    if length is not None and received != length:
        raise DownloadError(url, f"truncated transfer: {received} of {length} bytes", True)
    if expected_size is not None and received != expected_size:
        raise DownloadError(url, f"size {received} bytes, expected {expected_size}", True)
    return received


def http_download(url: str, dest: str | Path, policy: HttpPolicy = HttpPolicy(),
                  expected_size: int | None = None) -> int:
    """Fetch `url` into `dest` (a temporary path), retrying transient failures.  Returns the byte count.

    Raises DownloadError after `policy.retries` extra tries, or at once for errors a retry cannot fix
    (HTTP 4xx, unresolvable host, an HTML page instead of the file), or when `policy.deadline_s` has passed
    since the first try began.  On failure `dest` is removed.
    """
    dest = Path(dest)
    deadline = time.monotonic() + policy.deadline_s
    host = _host(url)
    if host in _DOWN_HOSTS:
        raise DownloadError(url, f"skipped: {host} failed earlier in this run ({_DOWN_HOSTS[host]})", retriable=False)
    last: DownloadError | None = None
    for attempt in range(policy.retries + 1):
        if attempt:
            delay = policy.backoff_s * 2 ** (attempt - 1)
            log.info("retry %d/%d of %s in %.1f s (%s)", attempt, policy.retries, url, delay, last.reason)
            time.sleep(max(0.0, min(delay, deadline - time.monotonic())))
        try:
            _past(url, deadline, policy.deadline_s)
            return _fetch_once(url, dest, policy.timeout_s, expected_size, deadline, policy.deadline_s)
        except BaseException as exc:  # noqa: BLE001 - classified, re-raised if unknown
            dest.unlink(missing_ok=True)
            if (local := local_failure(exc, f"downloading {url} to {dest}")) is not None:
                raise local from exc
            last = _classify(url, exc)
            if not last.retriable:
                break
    assert last is not None
    if "does not resolve" in last.reason or "cannot connect" in last.reason:
        _DOWN_HOSTS[host] = last.reason
    raise last
