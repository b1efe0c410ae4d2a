"""A build's jobs put their large buffers on transparent huge pages (fedrepro.runtime.huge_page_environment, set by
the Snakefile); what the user set wins; and the variables really move torch's buffers onto huge pages."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fedrepro.runtime import huge_page_environment, huge_pages_on

THP_MODE = Path("/sys/kernel/mm/transparent_hugepage/enabled")


def test_an_empty_environment_gets_both_variables():
    env = huge_page_environment({})
    assert env == {"THP_MEM_ALLOC_ENABLE": "1", "GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}
    assert huge_pages_on(env) and not huge_pages_on({})


def test_other_glibc_tunables_are_kept():
    env = huge_page_environment({"GLIBC_TUNABLES": "glibc.malloc.arena_max=2:glibc.malloc.tcache_count=0"})
    assert env["GLIBC_TUNABLES"] == "glibc.malloc.arena_max=2:glibc.malloc.tcache_count=0:glibc.malloc.hugetlb=1"


@pytest.mark.parametrize("user", [
    {"THP_MEM_ALLOC_ENABLE": "0", "GLIBC_TUNABLES": "glibc.malloc.hugetlb=0"},
    {"THP_MEM_ALLOC_ENABLE": "0", "GLIBC_TUNABLES": "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=0"},
])
def test_what_the_user_set_wins(user):
    assert huge_page_environment(user) == {}
    assert not huge_pages_on(user)


def test_setting_it_twice_changes_nothing():
    env = huge_page_environment({"GLIBC_TUNABLES": "glibc.malloc.arena_max=2"})
    assert huge_page_environment({"GLIBC_TUNABLES": "glibc.malloc.arena_max=2", **env}) == {}


TOUCH = """
import torch
def huge_kb():
    return next(int(l.split()[1]) for l in open("/proc/self/smaps_rollup") if l.startswith("AnonHugePages:"))
before = huge_kb()
x = torch.ones(16 * 2**20)          # 64 MB of float32, written
print(huge_kb() - before)
"""


@pytest.mark.skipif(not THP_MODE.exists() or "[never]" in THP_MODE.read_text() or sys.platform != "linux",
                    reason="needs Linux with transparent huge pages not switched off")
def test_the_variables_put_a_torch_buffer_on_huge_pages():
    """The kernel's own count (AnonHugePages) of a process that allocates and writes 64 MB through torch. Without the
    variables torch asks for none (unless the kernel gives them to every process: THP mode `always`)."""
    plain = {k: v for k, v in os.environ.items() if k not in ("THP_MEM_ALLOC_ENABLE", "GLIBC_TUNABLES")}

    def huge_kb(env):
        out = subprocess.run([sys.executable, "-c", TOUCH], env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr[-2000:]
        return int(out.stdout.split()[-1])

    assert huge_kb({**plain, **huge_page_environment(plain)}) >= 32 * 1024
    if "[madvise]" in THP_MODE.read_text():
        assert huge_kb(plain) == 0


def test_a_build_starts_its_jobs_with_huge_pages(smoke_run):
    """Every run and render job of the smoke build (warm copies and cold processes alike) says so in its log."""
    logs = [p for p in (smoke_run / "results/smoke").glob("*/logs/*/**/*.log")
            if re.search(r"rule \w+ started on", p.read_text())]
    assert logs
    without = [str(p) for p in logs if "huge pages for large buffers" not in p.read_text()]
    assert not without, without[:5]
