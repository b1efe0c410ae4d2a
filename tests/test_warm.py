"""Warm job starts (fedrepro.warm): a job handed to the server behaves as the same script run as its own process
(streams, argv, directory, environment, exit code, traceback); no server or changed sources mean a cold run; a
cancelled job's copy dies; the server leaves with its parent."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from fedrepro import warm

SRC = Path(warm.__file__).resolve().parents[1]

JOB = textwrap.dedent("""
    import os, sys
    from fedrepro.warm import handoff
    handoff()
    print("out", sys.argv[1:], os.getcwd(), os.environ.get("JOB_VALUE"), os.getpid(), "warmmod" in sys.modules,
          flush=True)
    print("err line", file=sys.stderr)
    if sys.argv[1] == "fail":
        raise RuntimeError("the job failed here")
    if sys.argv[1] == "sleep":
        open(sys.argv[2], "w").write(str(os.getpid()))
        import time; time.sleep(60)
    sys.exit(int(sys.argv[1]))
""")


@pytest.fixture
def server(tmp_path):
    """A server over a private 'repository' holding one module it preloads (warmmod)."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "warmmod.py").write_text("VALUE = 1\n")
    sock = str(tmp_path / "socket")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), str(root)])}
    proc = subprocess.Popen([sys.executable, "-m", "fedrepro.warm", "serve", sock, str(root), "warmmod"], env=env)
    deadline = time.monotonic() + 20
    while not os.path.exists(sock) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert os.path.exists(sock), "the server did not bind its socket"
    time.sleep(0.5)  # let it import warmmod (served jobs would otherwise just see it missing)
    yield sock, root, env
    proc.terminate()
    proc.wait(timeout=10)


def _job(tmp_path, env, *args, warm_socket=None, wait=True):
    script = tmp_path / "job.py"
    script.write_text(JOB)
    workdir = tmp_path / "workdir"
    workdir.mkdir(exist_ok=True)
    env = {**env, "JOB_VALUE": "v42"}
    env.pop(warm.ENV, None)
    if warm_socket:
        env[warm.ENV] = warm_socket
    proc = subprocess.Popen([sys.executable, str(script), *args], cwd=workdir, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    if not wait:
        return proc
    out, err = proc.communicate(timeout=60)
    return proc.pid, proc.returncode, out, err


def _fields(out):
    line = next(x for x in out.splitlines() if x.startswith("out "))
    return line.split()


def test_a_warm_job_sees_its_own_streams_argv_directory_environment_and_exit_code(tmp_path, server):
    sock, root, env = server
    pid, code, out, err = _job(tmp_path, env, "3", warm_socket=sock)
    fields = _fields(out)
    assert code == 3
    assert fields[1:3] == ["['3']", str(tmp_path / "workdir")] and fields[3] == "v42"
    assert int(fields[4]) != pid, "the script ran in the job's own process, not in a copy"
    assert fields[5] == "True", "the copy should have inherited the preloaded module"
    assert "err line" in err


def test_without_a_server_the_job_runs_in_its_own_process(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    for socket_path in (None, str(tmp_path / "no-such-socket")):
        pid, code, out, _ = _job(tmp_path, env, "0", warm_socket=socket_path)
        assert code == 0 and int(_fields(out)[4]) == pid


def test_a_failing_job_exits_1_with_its_traceback(tmp_path, server):
    sock, _, env = server
    pid, code, out, err = _job(tmp_path, env, "fail", warm_socket=sock)
    assert code == 1
    assert "RuntimeError: the job failed here" in err and "Traceback" in err
    assert int(_fields(out)[4]) != pid


def test_a_changed_source_sends_the_job_back_to_run_cold(tmp_path, server):
    sock, root, env = server
    pid, code, out, _ = _job(tmp_path, env, "0", warm_socket=sock)
    assert int(_fields(out)[4]) != pid
    (root / "warmmod.py").write_text("VALUE = 2  # edited during the build\n")
    pid, code, out, _ = _job(tmp_path, env, "0", warm_socket=sock)
    assert code == 0 and int(_fields(out)[4]) == pid, "a copy would have run the old warmmod"


def test_a_cancelled_job_takes_its_copy_with_it(tmp_path, server):
    sock, _, env = server
    pid_file = tmp_path / "copy.pid"
    proc = _job(tmp_path, env, "sleep", str(pid_file), warm_socket=sock, wait=False)
    deadline = time.monotonic() + 30
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline, "the copy never started"
        time.sleep(0.05)
    copy = int(pid_file.read_text())
    assert copy != proc.pid
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=10)
    deadline = time.monotonic() + 10
    while _alive(copy):
        assert time.monotonic() < deadline, "the copy outlived its cancelled job"
        time.sleep(0.05)


CACHE_JOB = textwrap.dedent("""
    import hashlib, os, sys
    from fedrepro.warm import handoff
    handoff()
    from fedrepro import config
    from fedrepro.provenance import sidecar
    key = hashlib.sha256(open(sys.argv[1], "rb").read()).digest()
    print("cache", os.getpid(), key in config._PARSED, sidecar._package_versions.cache_info().currsize,
          config.load_yaml(sys.argv[1])["experiments"]["e"]["T"], flush=True)
""")


def test_copies_inherit_the_parsed_registries_and_versions_but_never_a_stale_parse(tmp_path):
    """After its preload the server has parsed config/ and looked up the package versions; a copy finds both
    cached, and a registry edited afterwards is parsed afresh (its bytes are another key)."""
    root = tmp_path / "repo"
    (root / "config" / "papers").mkdir(parents=True)
    registry = root / "config" / "papers" / "p.yaml"
    registry.write_text("paper: p\nexperiments: {e: {T: 10}}\n")
    script = tmp_path / "cache_job.py"
    script.write_text(CACHE_JOB)
    sock = str(tmp_path / "socket")
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    server = subprocess.Popen([sys.executable, "-m", "fedrepro.warm", "serve", sock, str(root), "json"], env=env)
    try:
        job_env = {**env, warm.ENV: sock}
        deadline = time.monotonic() + 120
        fields = ["(the server never opened its socket)"]
        while True:   # jobs that arrive during the preload get what is loaded so far
            if os.path.exists(sock):
                run = subprocess.run([sys.executable, str(script), str(registry)], env=job_env, capture_output=True,
                                     text=True, timeout=60)
                fields = next(x for x in run.stdout.splitlines() if x.startswith("cache ")).split()
                if fields[2:4] == ["True", "1"]:
                    break
            assert time.monotonic() < deadline, f"no copy ever found the caches filled: {fields}"
            time.sleep(0.2)
        assert fields[4] == "10"
        registry.write_text("paper: p\nexperiments: {e: {T: 20}}\n")   # edited during the build
        run = subprocess.run([sys.executable, str(script), str(registry)], env=job_env, capture_output=True,
                             text=True, timeout=60)
        fields = next(x for x in run.stdout.splitlines() if x.startswith("cache ")).split()
        assert fields[2] == "False" and fields[4] == "20", "a copy must not reuse the parse of other bytes"
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_the_server_leaves_with_its_parent(tmp_path):
    sock = tmp_path / "socket"
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    # a parent that starts the server and exits at once
    parent = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        import subprocess, sys, time, os
        p = subprocess.Popen([sys.executable, "-m", "fedrepro.warm", "serve", {str(sock)!r}, ".", "json"])
        while not os.path.exists({str(sock)!r}): time.sleep(0.02)
        print(p.pid)
    """)], env=env, capture_output=True, text=True, timeout=60)
    server_pid = int(parent.stdout.split()[-1])
    deadline = time.monotonic() + 10
    while _alive(server_pid):
        assert time.monotonic() < deadline, "the server outlived the build that started it"
        time.sleep(0.05)
    assert not sock.exists()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by its parent) counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (FileNotFoundError, IndexError):
        return False
