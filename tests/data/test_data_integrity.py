"""Downloads and caches verified end to end: whole-file format checks before pinning, the overall deadline,
leftovers of interrupted fetches, the raw files in the fetch sidecar, and prepare re-hashing the raw files."""

from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
import tarfile
import time
import zipfile

import numpy as np
import pytest
from loopback import fast_policy, server, sha256, url_dataset  # noqa: F401 (fixtures)

from fedrepro.data.acquire import FETCH_PREFIX, acquire, fetch_workdir, raw_inputs
from fedrepro.data.download import DownloadError, HttpPolicy, http_download
from fedrepro.data.formats import idx_images_bytes, idx_labels_bytes, load_npz
from fedrepro.data.prepare import RawFileChanged, prepare
from fedrepro.data.verify import format_problem, read_pins


def _tgz(n_members: int = 4) -> bytes:
    """A gzip'd tar of incompressible members, so half of it is a recognisably cut-off archive."""
    rng = np.random.default_rng(0)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for i in range(n_members):
            data = rng.integers(0, 256, 64 * 1024, dtype=np.uint8).tobytes()
            info = tarfile.TarInfo(f"corpus/part{i}.txt")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_truncated_unchecksummed_download_is_not_pinned(server, fast_policy, tmp_path):
    """Half a .tgz without Content-Length ends cleanly on the wire: only reading it whole shows it is cut off."""
    good = _tgz()
    server.beh.files["de-en.tgz"] = good
    server.beh.no_length.add("de-en.tgz")
    server.beh.truncate.add("de-en.tgz")
    ds = url_dataset(server.base, {"de-en.tgz": {}})               # no published checksum
    m = acquire(ds, tmp_path, policy=fast_policy)
    assert m["status"] == "unavailable" and read_pins(tmp_path) == {}
    assert not (tmp_path / "de-en.tgz").exists()
    assert "not a complete tar archive" in m["attempts"][0]["error"]
    # the server recovers: the whole file is accepted and its hash pinned (the cut-off one never was)
    server.beh.truncate.discard("de-en.tgz")
    m = acquire(ds, tmp_path, policy=fast_policy)
    assert m["status"] == "real" and read_pins(tmp_path) == {"de-en.tgz": sha256(good)}


def test_pin_of_a_cut_off_file_from_an_older_release_is_dropped(server, fast_policy, tmp_path):
    good = _tgz()
    half = good[: len(good) // 2]
    (tmp_path / "de-en.tgz").write_bytes(half)
    (tmp_path / "pinned.sha256").write_text(f"{sha256(half)}  de-en.tgz\n")
    server.beh.files["de-en.tgz"] = good
    m = acquire(url_dataset(server.base, {"de-en.tgz": {}}), tmp_path, policy=fast_policy)
    assert m["status"] == "real" and (tmp_path / "de-en.tgz").read_bytes() == good
    assert read_pins(tmp_path) == {"de-en.tgz": sha256(good)}
    assert "pin dropped" in m["attempts"][0]["error"]


def _tar(n_members: int = 200) -> bytes:
    """A plain tar (ModelNet10's renders come as one) of small members."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for i in range(n_members):
            data = bytes([i % 256]) * 1000
            info = tarfile.TarInfo(f"views/obj{i:03d}.png")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _cut_at_member(whole: bytes, keep: int) -> bytes:
    """The first `keep` members of a plain tar, cut at the 512-byte block where the next header starts."""
    with tarfile.open(fileobj=io.BytesIO(whole)) as tf:
        return whole[: tf.getmembers()[keep].offset]


def test_plain_tar_cut_at_a_block_boundary_is_not_pinned_and_the_next_source_is_tried(server, fast_policy, tmp_path):
    """A server stops after 100 of 200 members, at a 512-byte boundary, with no Content-Length: tarfile lists the
    100 members without complaint, so only the missing end-of-archive block shows the cut."""
    good = _tar()
    cut = _cut_at_member(good, 100)
    assert len(cut) % 512 == 0
    server.beh.files["cut/modelnet10.tar"] = cut
    server.beh.no_length.add("cut/modelnet10.tar")
    server.beh.files["good/modelnet10.tar"] = good
    ds = url_dataset(server.base + "cut/", {"modelnet10.tar": {}},
                     extra_sources=[{"name": "mirror", "kind": "url", "base": server.base + "good/",
                                     "files": {"modelnet10.tar": {"remote": "modelnet10.tar"}}}])
    m = acquire(ds, tmp_path, policy=fast_policy)
    assert m["status"] == "real" and m["files"]["modelnet10.tar"]["source"] == "mirror"
    assert "not a complete tar archive" in m["attempts"][0]["error"] and "after 100 members" in m["attempts"][0]["error"]
    assert read_pins(tmp_path) == {"modelnet10.tar": sha256(good)}
    assert (tmp_path / "modelnet10.tar").read_bytes() == good


def test_pinned_cut_plain_tar_in_the_cache_is_dropped_and_fetched_again(server, fast_policy, tmp_path):
    good = _tar()
    cut = _cut_at_member(good, 100)
    (tmp_path / "modelnet10.tar").write_bytes(cut)                   # pinned by a release that did not check
    (tmp_path / "pinned.sha256").write_text(f"{sha256(cut)}  modelnet10.tar\n")
    server.beh.files["modelnet10.tar"] = good
    m = acquire(url_dataset(server.base, {"modelnet10.tar": {}}), tmp_path, policy=fast_policy)
    assert "pin dropped" in m["attempts"][0]["error"] and "not a complete tar archive" in m["attempts"][0]["error"]
    assert m["status"] == "real" and (tmp_path / "modelnet10.tar").read_bytes() == good
    assert read_pins(tmp_path) == {"modelnet10.tar": sha256(good)}


@pytest.mark.parametrize("name", ["a.zip", "a.npz", "a.csv", "a.gz", "a.tar"])
def test_format_check_reads_the_whole_file(name, tmp_path):
    path = tmp_path / name
    if name.endswith((".zip", ".npz")):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
            np.lib.format.write_array(zf.open("x.npy", "w"), np.arange(50_000.0))
        whole = buf.getvalue()
    elif name.endswith(".csv"):
        whole = ("a,b,c\n" + "".join(f"{i},{i * 2},{i * 3}\n" for i in range(2000))).encode()
    elif name.endswith(".gz"):
        import gzip

        whole = gzip.compress(np.random.default_rng(1).bytes(100_000))
    else:
        whole = _tgz()
        import gzip

        whole = gzip.decompress(whole)
    path.write_bytes(whole)
    assert format_problem(path) is None
    cut = whole[: len(whole) // 2]
    if name.endswith(".csv"):
        cut = cut[: cut.rindex(b"\n") + 3]                        # cut inside a row (its first field)
    path.write_bytes(cut)
    assert format_problem(path) is not None, name


def test_trickling_server_fails_at_the_overall_deadline(server, tmp_path):
    """64 bytes every 0.5 s never trips the 2 s read timeout; the 1.5 s deadline stops it, without retries."""
    server.beh.files["slow.bin"] = bytes(1 << 20)
    server.beh.no_length.add("slow.bin")
    server.beh.trickle["slow.bin"] = (64, 0.5)
    policy = HttpPolicy(timeout_s=2.0, retries=3, backoff_s=0.05, deadline_s=1.5)
    t0 = time.monotonic()
    with pytest.raises(DownloadError, match="deadline of 1.5 s") as err:
        http_download(server.base + "slow.bin", tmp_path / "slow.part", policy)
    elapsed = time.monotonic() - t0
    assert 1.5 <= elapsed < 1.5 + policy.timeout_s, elapsed
    assert not err.value.retriable and server.beh.hits["slow.bin"] == 1
    assert not (tmp_path / "slow.part").exists()


def test_deadline_comes_from_the_config():
    assert HttpPolicy.from_config({"deadline_s": 30}).deadline_s == 30.0
    assert HttpPolicy.from_config({}).deadline_s == HttpPolicy().deadline_s


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_interrupted_fetches_are_cleaned_by_the_next_run(server, fast_policy, tmp_path):
    host = socket.gethostname().replace("-", "_")
    dead = tmp_path / f"{FETCH_PREFIX}{host}-{_dead_pid()}-abc"       # a fetch killed with -9
    legacy = tmp_path / f"{FETCH_PREFIX}k2j4h1"                      # left by an older release
    live = fetch_workdir(tmp_path)                                  # this very process: in use
    for folder in (dead, legacy, live):
        folder.mkdir(exist_ok=True)
        (folder / "t10k-images-idx3-ubyte.download").write_bytes(bytes(1000))
    server.beh.files["a.bin"] = b"x" * 100
    acquire(url_dataset(server.base, {"a.bin": {"sha256": sha256(b"x" * 100)}}), tmp_path, policy=fast_policy)
    assert not dead.exists() and not legacy.exists() and live.exists()
    assert sorted(p.name for p in tmp_path.glob(FETCH_PREFIX + "*")) == [live.name]


# ---- a flipped byte in a cached raw file --------------------------------------------------------------

def _idx_files(n: int = 50) -> dict:
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
    y = rng.integers(0, 10, n, dtype=np.uint8)
    return {"train-images-idx3-ubyte": idx_images_bytes(x), "train-labels-idx1-ubyte": idx_labels_bytes(y),
            "t10k-images-idx3-ubyte": idx_images_bytes(x[:10]), "t10k-labels-idx1-ubyte": idx_labels_bytes(y[:10])}


def test_flipped_byte_in_a_cached_raw_file_is_caught_by_prepare(server, fast_policy, tmp_path):
    files = _idx_files()
    server.beh.files.update(files)
    ds = url_dataset(server.base, {n: {"sha256": sha256(b)} for n, b in files.items()})
    downloads, out = tmp_path / "downloads", tmp_path / "data"
    manifest = acquire(ds, downloads, policy=fast_policy)
    assert manifest["status"] == "real"
    assert sorted(raw_inputs(manifest)) == sorted((downloads / n).as_posix() for n in files)
    labels = downloads / "train-labels-idx1-ubyte"
    raw = bytearray(labels.read_bytes())
    raw[8] = (raw[8] + 1) % 10                                      # one label changed, same size
    labels.write_bytes(bytes(raw))
    with pytest.raises(RawFileChanged) as err:
        prepare(ds, manifest, out, downloads_dir=downloads)
    msg = str(err.value)
    assert str(labels) in msg and sha256(bytes(raw)) in msg and sha256(files["train-labels-idx1-ubyte"]) in msg
    assert "--forcerun data_fetch" in msg and not (out / "toy.npz").exists()
    # the advice: re-running the fetch re-verifies the cache, replaces the changed file, and prepare succeeds
    manifest = acquire(ds, downloads, policy=fast_policy)
    assert manifest["status"] == "real" and labels.read_bytes() == files["train-labels-idx1-ubyte"]
    result = prepare(ds, manifest, out, downloads_dir=downloads)
    assert result.status == "real"
    assert np.array_equal(load_npz(out / "toy.npz")["y_train"], np.frombuffer(files["train-labels-idx1-ubyte"],
                                                                                np.uint8, offset=8))


def test_cached_file_changed_in_size_is_caught_too(server, fast_policy, tmp_path):
    files = _idx_files()
    server.beh.files.update(files)
    ds = url_dataset(server.base, {n: {"sha256": sha256(b)} for n, b in files.items()})
    manifest = acquire(ds, tmp_path / "dl", policy=fast_policy)
    with open(tmp_path / "dl" / "t10k-labels-idx1-ubyte", "ab") as f:
        f.write(b"\0")
    with pytest.raises(RawFileChanged, match="bytes, the manifest recorded"):
        prepare(ds, manifest, tmp_path / "data", downloads_dir=tmp_path / "dl")
    assert os.path.exists(tmp_path / "dl" / "t10k-labels-idx1-ubyte")      # nothing deleted behind the user's back


def _prepare_job(manifest, out_dir, log):
    """The `snakemake` object Snakemake's script directive hands workflow/scripts/data_prepare.py."""
    from types import SimpleNamespace

    class Named(list):                     # Snakemake's input/output: a list whose items also have names
        def __init__(self, **named):
            super().__init__(named.values())
            self.__dict__.update(named)

    return SimpleNamespace(
        input=Named(manifest=str(manifest)), output=Named(npz=str(out_dir / "mnist.npz")),
        log=[str(log)], wildcards=SimpleNamespace(dataset="mnist"), threads=1, rule="data_prepare",
        params=SimpleNamespace(cfg={"dataset": "mnist", "on_missing": "standin"}),
        config={"scale": "smoke", "data": {}})


def test_raw_file_and_manifest_edited_together_stop_the_prepare_job(tmp_path, monkeypatch):
    """A changed raw file whose new sha256 is written into manifest.json: the manifest no longer matches its own
    sidecar, so the prepare job stops before reading anything, naming the manifest and the refetch command."""
    import json
    import runpy

    from loopback import REPO

    from fedrepro.provenance.sidecar import write_sidecars
    from fedrepro.provenance.verify import InputDrift

    downloads, out = tmp_path / "downloads" / "mnist", tmp_path / "data" / "mnist"
    downloads.mkdir(parents=True)
    files = {}
    for name, data in _idx_files().items():
        (downloads / name).write_bytes(data)
        files[name] = {"path": (downloads / name).as_posix(), "size": len(data), "sha256": sha256(data),
                       "md5": "-", "source": "loopback"}
    manifest = downloads / "manifest.json"
    manifest.write_text(json.dumps({"dataset": "mnist", "status": "real", "location": downloads.as_posix(),
                                    "files": files, "missing": [], "attempts": []}))
    write_sidecars([manifest], rule="data_fetch", inputs=[r["path"] for r in files.values()], data={"mnist": "real"})
    labels = downloads / "train-labels-idx1-ubyte"
    raw = bytearray(labels.read_bytes())
    raw[8] = (raw[8] + 1) % 10
    labels.write_bytes(bytes(raw))
    record = json.loads(manifest.read_text())
    record["files"][labels.name]["sha256"] = sha256(bytes(raw))          # the manifest "agrees" with the change
    manifest.write_text(json.dumps(record))
    monkeypatch.chdir(REPO)
    with pytest.raises(InputDrift) as err:
        runpy.run_path(str(REPO / "workflow/scripts/data_prepare.py"),
                       init_globals={"snakemake": _prepare_job(manifest, out, tmp_path / "prepare.log")})
    msg = str(err.value)
    assert str(manifest) in msg and f"snakemake --cores 1 {manifest} --forcerun data_fetch" in msg
    assert not (out / "mnist.npz").exists()
