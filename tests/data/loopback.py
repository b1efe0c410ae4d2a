"""Helpers and fixtures for the data-layer tests: a loopback HTTP server (no internet), synthetic registry entries.

No conftest.py here on purpose: tests/conftest.py is imported as `conftest` by other tests, and a second
conftest.py would shadow it.  Test modules import the fixtures they use from this module.
"""

from __future__ import annotations

import hashlib
import http.server
import socket
import threading
import time
from pathlib import Path

import pytest

from fedrepro.data.download import HttpPolicy, reset_down_hosts
from fedrepro.registry.datasets import Dataset

REPO = Path(__file__).resolve().parents[2]
MAX_SERVER_LIFETIME_S = 30.0      # every server shuts itself down after this, whatever the test does


class Behaviour:
    """What the server does per path: serve bytes, truncate, stall, or serve an HTML page."""

    def __init__(self):
        self.files: dict = {}        # path -> bytes
        self.truncate: set = set()   # paths sent with a full Content-Length but only half the body
        self.slow: dict = {}         # path -> seconds to wait before answering
        self.html: set = set()
        self.no_length: set = set()  # paths sent without Content-Length (the end is the connection's close)
        self.trickle: dict = {}      # path -> (bytes, seconds): send that many bytes, wait, repeat
        self.hits: dict = {}


def _handler(beh: Behaviour):
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):      # keep test output clean
            pass

        def do_GET(self):
            path = self.path.lstrip("/")
            beh.hits[path] = beh.hits.get(path, 0) + 1
            if path in beh.slow:
                time.sleep(beh.slow[path])
            if path not in beh.files:
                self.send_error(404)
                return
            body = beh.files[path]
            self.send_response(200)
            self.send_header("Content-Type", "text/html" if path in beh.html else "application/octet-stream")
            if path not in beh.no_length:
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            sent = body[: len(body) // 2] if path in beh.truncate else body
            try:
                if path in beh.trickle:
                    size, pause = beh.trickle[path]
                    for i in range(0, len(sent), size):
                        self.wfile.write(sent[i:i + size])
                        self.wfile.flush()
                        time.sleep(pause)
                else:
                    self.wfile.write(sent)
            except (BrokenPipeError, ConnectionResetError):
                pass
            if path in beh.truncate:
                self.close_connection = True

    return Handler


class LoopbackServer:
    """http.server on 127.0.0.1 with an ephemeral port, in a daemon thread, bounded in time."""

    def __init__(self, beh: Behaviour, port: int = 0):
        self.beh = beh
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), _handler(beh))
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.watchdog = threading.Timer(MAX_SERVER_LIFETIME_S, self.stop)
        self.watchdog.daemon = True

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def start(self):
        self.thread.start()
        self.watchdog.start()
        return self

    def stop(self):
        self.watchdog.cancel()
        self.httpd.shutdown()
        self.httpd.server_close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def md5(b: bytes) -> str:
    return hashlib.md5(b).hexdigest()


def sha256(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def url_dataset(base: str, files: dict, name: str = "toy", remote_checks: dict | None = None,
                extra_sources: list | None = None) -> Dataset:
    """A registry entry with one url source serving `files` {name: expected checks} from `base`."""
    remote_checks = remote_checks or {}
    entry = {
        "title": "toy", "homepage": "-", "citation": "-", "licence": "-", "access": "open", "used_by": {},
        "files": files,
        "sources": [{"name": "loopback", "kind": "url", "base": base,
                     "files": {n: {"remote": n, **remote_checks.get(n, {})} for n in files}}] + (extra_sources or []),
        "prepare": {"kind": "idx", "outputs": [f"{name}.npz"]},
        "standin": {"generator": "digits_images", "params": {}, "keeps": "-", "differs": "-"},
    }
    return Dataset(name, entry)


@pytest.fixture
def server():
    reset_down_hosts()
    srv = LoopbackServer(Behaviour()).start()
    yield srv
    srv.stop()
    reset_down_hosts()


@pytest.fixture
def fast_policy():
    return HttpPolicy(timeout_s=0.5, retries=2, backoff_s=0.05)
