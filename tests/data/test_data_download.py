"""The real download code against a loopback HTTP server: nothing unverified lands where rules read."""

from __future__ import annotations

import errno
import gzip
import threading
import time

import pytest
from loopback import Behaviour, LoopbackServer, fast_policy, free_port, md5, server, sha256, url_dataset  # noqa: F401 (fixtures)

from fedrepro.data.acquire import acquire
from fedrepro.data.download import DownloadError, HttpPolicy, LocalFetchError, http_download
from fedrepro.data.verify import read_pins

PAYLOAD = bytes(range(256)) * 4096          # 1 MiB


def landed(dest):
    """Files a later rule could read (everything but the manifest, pins and hidden work folders)."""
    return sorted(p.name for p in dest.iterdir()
                  if not p.name.startswith(".") and p.name not in ("manifest.json", "pinned.sha256", "origins.json"))


def test_good_file_lands_verified(server, fast_policy, tmp_path):
    server.beh.files["a.bin"] = PAYLOAD
    ds = url_dataset(server.base, {"a.bin": {"size": len(PAYLOAD), "md5": md5(PAYLOAD), "sha256": sha256(PAYLOAD)}})
    m = acquire(ds, tmp_path, policy=fast_policy)
    assert m["status"] == "real" and m["files"]["a.bin"]["sha256"] == sha256(PAYLOAD)
    assert (tmp_path / "a.bin").read_bytes() == PAYLOAD
    assert not list(tmp_path.glob(".fetch-*"))
    # a second run re-verifies the cached file and does not download again (even without the old manifest)
    (tmp_path / "manifest.json").unlink()
    m2 = acquire(ds, tmp_path, policy=fast_policy)
    assert m2["files"]["a.bin"]["cached"] and m2["files"]["a.bin"]["source"] == "loopback"
    assert server.beh.hits["a.bin"] == 1


def test_wrong_checksum_is_discarded_and_reported(server, fast_policy, tmp_path):
    server.beh.files["a.bin"] = PAYLOAD
    wrong = "0" * 64
    ds = url_dataset(server.base, {"a.bin": {"sha256": wrong}})
    m = acquire(ds, tmp_path, policy=fast_policy)
    assert m["status"] == "unavailable" and landed(tmp_path) == []
    err = " ".join(a["error"] for a in m["attempts"])
    assert wrong in err and sha256(PAYLOAD) in err          # expected and actual hash both named


def test_mirror_checksum_of_compressed_file(server, fast_policy, tmp_path):
    gz = gzip.compress(PAYLOAD, mtime=0)
    server.beh.files["a.bin.gz"] = gz
    ds = url_dataset(server.base, {"a.bin": {"md5": md5(PAYLOAD)}})
    ds.entry["sources"][0]["files"]["a.bin"] = {"remote": "a.bin.gz", "decompress": "gzip", "md5": md5(gz), "size": len(gz)}
    assert acquire(ds, tmp_path, policy=fast_policy)["status"] == "real"
    assert (tmp_path / "a.bin").read_bytes() == PAYLOAD


def test_truncated_transfer_is_retried_then_rejected(server, fast_policy, tmp_path):
    server.beh.files["a.bin"] = PAYLOAD
    server.beh.truncate.add("a.bin")
    ds = url_dataset(server.base, {"a.bin": {"sha256": sha256(PAYLOAD)}})
    m = acquire(ds, tmp_path, policy=fast_policy)
    assert m["status"] == "unavailable" and landed(tmp_path) == []
    assert server.beh.hits["a.bin"] == fast_policy.retries + 1
    assert "truncated" in m["attempts"][0]["error"]


def test_second_source_used_after_first_fails(server, fast_policy, tmp_path):
    server.beh.files["good/a.bin"] = PAYLOAD
    server.beh.files["bad/a.bin"] = b"corrupted" + PAYLOAD[9:]
    ds = url_dataset(server.base + "bad/", {"a.bin": {"sha256": sha256(PAYLOAD)}},
                     extra_sources=[{"name": "mirror", "kind": "url", "base": server.base + "good/",
                                     "files": {"a.bin": {"remote": "a.bin"}}}])
    m = acquire(ds, tmp_path, policy=fast_policy)
    assert m["status"] == "real" and m["files"]["a.bin"]["source"] == "mirror"
    assert m["attempts"][0]["source"] == "loopback"


def test_server_down_then_up_is_retried(tmp_path):
    port = free_port()
    beh = Behaviour()
    beh.files["a.bin"] = PAYLOAD
    holder = {}

    def start_later():
        time.sleep(0.4)
        holder["srv"] = LoopbackServer(beh, port=port).start()

    t = threading.Thread(target=start_later, daemon=True)
    t.start()
    try:
        policy = HttpPolicy(timeout_s=1.0, retries=4, backoff_s=0.2)   # tries at 0, 0.2, 0.6, 1.4 s
        n = http_download(f"http://127.0.0.1:{port}/a.bin", tmp_path / "a.part", policy)
        assert n == len(PAYLOAD) and (tmp_path / "a.part").read_bytes() == PAYLOAD
    finally:
        t.join(5)
        if "srv" in holder:
            holder["srv"].stop()


def test_slow_server_times_out(server, tmp_path):
    server.beh.files["a.bin"] = PAYLOAD
    server.beh.slow["a.bin"] = 1.5
    policy = HttpPolicy(timeout_s=0.3, retries=1, backoff_s=0.05)
    t0 = time.monotonic()
    with pytest.raises(DownloadError, match="timed out"):
        http_download(server.base + "a.bin", tmp_path / "a.part", policy)
    assert time.monotonic() - t0 < 3.0
    assert not (tmp_path / "a.part").exists()


def test_404_is_not_retried(server, fast_policy, tmp_path):
    with pytest.raises(DownloadError, match="HTTP 404") as exc:
        http_download(server.base + "missing.bin", tmp_path / "x", fast_policy)
    assert not exc.value.retriable and server.beh.hits["missing.bin"] == 1


def test_html_page_instead_of_file_is_rejected(server, fast_policy, tmp_path):
    server.beh.files["a.tar"] = b"<html>please log in</html>"
    server.beh.html.add("a.tar")
    ds = url_dataset(server.base, {"a.tar": {}})                 # no checksum: would be pinned
    m = acquire(ds, tmp_path, policy=fast_policy)
    assert m["status"] == "unavailable" and "HTML" in m["attempts"][0]["error"]
    assert read_pins(tmp_path) == {} and landed(tmp_path) == []


def _tgz(payload: bytes) -> bytes:
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        info = tarfile.TarInfo("payload.bin")
        info.size = len(payload)
        tf.addfile(info, io.BytesIO(payload))
    return buf.getvalue()


def test_unpublished_checksum_is_pinned_then_enforced(server, fast_policy, tmp_path):
    data = _tgz(PAYLOAD)
    server.beh.files["c.tgz"] = data
    ds = url_dataset(server.base, {"c.tgz": {}})
    assert acquire(ds, tmp_path, policy=fast_policy)["status"] == "real"
    assert read_pins(tmp_path) == {"c.tgz": sha256(data)}
    # the server now serves different bytes; after the local copy is gone the pin rejects them
    (tmp_path / "c.tgz").unlink()
    server.beh.files["c.tgz"] = _tgz(PAYLOAD[::-1])
    m = acquire(ds, tmp_path, policy=fast_policy)
    assert m["status"] == "unavailable" and sha256(data) in m["attempts"][0]["error"]
    assert "pinned.sha256" in m["attempts"][0]["error"]               # where the pin is, if the new bytes are right
    assert landed(tmp_path) == []


def test_corrupted_cache_is_removed_and_refetched(server, fast_policy, tmp_path):
    server.beh.files["a.bin"] = PAYLOAD
    (tmp_path / "a.bin").write_bytes(b"garbage")
    ds = url_dataset(server.base, {"a.bin": {"sha256": sha256(PAYLOAD)}})
    m = acquire(ds, tmp_path, policy=fast_policy)
    assert m["status"] == "real" and m["files"]["a.bin"]["source"] == "loopback"
    assert m["attempts"][0]["source"] == "cache" and "removed" in m["attempts"][0]["error"]


def test_unresolvable_host_fails_fast_and_is_remembered(tmp_path):
    from fedrepro.data.download import reset_down_hosts

    reset_down_hosts()
    policy = HttpPolicy(timeout_s=1, retries=3, backoff_s=1.0)
    t0 = time.monotonic()
    for name in ("a", "b"):
        with pytest.raises(DownloadError):
            http_download(f"http://fedrepro-no-such-host.invalid/{name}", tmp_path / name, policy)
    assert time.monotonic() - t0 < 5.0
    reset_down_hosts()


class _FullDisk:
    """A file whose writes fail as on a full disk."""

    def __init__(self, path, mode="rb"):
        self.path = path

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def write(self, data):
        raise OSError(errno.ENOSPC, "No space left on device", str(self.path))


def test_full_disk_stops_the_fetch_instead_of_making_a_stand_in(server, fast_policy, tmp_path, monkeypatch):
    """ENOSPC while writing is this machine's problem: no other source is tried, nothing is recorded as
    unavailable (which would turn the dataset into its stand-in for good), the error names the reason."""
    import fedrepro.data.download as download

    server.beh.files["a/a.bin"] = PAYLOAD
    server.beh.files["b/a.bin"] = PAYLOAD
    ds = url_dataset(server.base + "a/", {"a.bin": {"sha256": sha256(PAYLOAD)}},
                     extra_sources=[{"name": "mirror", "kind": "url", "base": server.base + "b/",
                                     "files": {"a.bin": {"remote": "a.bin"}}}])
    monkeypatch.setattr(download, "open", _FullDisk, raising=False)
    with pytest.raises(LocalFetchError, match="No space left on device.*free disk space") as err:
        acquire(ds, tmp_path, policy=fast_policy)
    assert "no stand-in was made" in str(err.value)
    assert server.beh.hits == {"a/a.bin": 1}                          # no retry, no second source
    assert not (tmp_path / "manifest.json").exists() and not list(tmp_path.glob(".fetch-*"))


def test_stand_in_for_an_unreachable_source_says_why_and_how_to_retry(fast_policy, tmp_path):
    from fedrepro.data.prepare import prepare

    ds = url_dataset(f"http://127.0.0.1:{free_port()}/", {"a.bin": {"sha256": sha256(PAYLOAD)}})
    manifest = acquire(ds, tmp_path / "downloads", policy=fast_policy)
    out = tmp_path / "results" / "data" / "toy"
    result = prepare(ds, manifest, out, on_missing="standin", downloads_dir=tmp_path / "downloads")
    assert result.status == "stand-in"
    stand_in = result.extra["stand_in"]
    assert "loopback: " in stand_in["reason"] and "cannot connect" in stand_in["reason"]
    assert stand_in["retry"] == f"snakemake --cores 1 {out.as_posix()}/toy.npz --forcerun data_fetch"


@pytest.mark.slow
def test_the_retry_command_of_a_stand_in_runs_as_written():
    """The command the sidecar gives, as a dry run in this checkout: it reruns the fetch and then the preparation."""
    import shlex
    import subprocess
    import sys
    from pathlib import Path

    from loopback import REPO

    from fedrepro.data.prepare import standin_reason

    cmd = shlex.split(standin_reason({"attempts": []}, Path("results/data/mnist/mnist.npz"))["retry"])
    snakemake = str(Path(sys.executable).with_name("snakemake"))
    res = subprocess.run([snakemake, "-n", *cmd[1:], "--config", "scale=smoke"], cwd=REPO, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "data_fetch" in res.stdout and "data_prepare" in res.stdout
