"""Every example command in README.md and docs/*.md that starts with `snakemake` or `python -m fedrepro` parses:
Snakemake commands as a dry run at smoke scale, `python -m fedrepro` commands by their own argument parser.  An
option quoted alone (`--config data='{on_missing: standin}'`) is checked as a dry run of the smoke `all` with it."""

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
# commands that need what a test machine lacks: credentials, paper data, a cluster, another checkout
NEEDS_MORE = re.compile(r"--profile|credentials|scale=paper|slurm|--cluster|/path/to|<|\[|…|\.\.\.|key=value")
# not build commands (a report, a lock, the linter) or an option quoted alone
NOT_A_BUILD = re.compile(r"--report|--unlock|--lint|--forcerun$")


def _commands() -> list[tuple[str, str]]:
    found = []
    for doc in DOCS:
        text = doc.read_text()
        blocks = re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.S)
        lines = [ln for b in blocks for ln in b.replace("\\\n", " ").splitlines()]
        lines += re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.S))
        for line in lines:
            cmd = line.split("#")[0].strip().lstrip("$ ").strip()
            if re.match(r"--config \S", cmd):
                cmd = f"snakemake all {cmd} scale=smoke"
            if re.match(r"(snakemake|python -m fedrepro)(\s|$)", cmd) and not NEEDS_MORE.search(cmd) \
                    and not NOT_A_BUILD.search(cmd):
                found.append((f"{doc.relative_to(REPO)}", cmd))
    return sorted(set(found))


COMMANDS = _commands()


def _check(cmd: str) -> subprocess.CompletedProcess:
    words = shlex.split(cmd)
    if words[0] == "snakemake":
        snakemake = str(Path(sys.executable).with_name("snakemake"))
        args = [snakemake, "-n", *words[1:]]
        if "--config" not in words:          # the documented scale where one is given, else the smallest
            args += ["--config", "scale=smoke"]
        return subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=300)
    # python -m fedrepro <subcommand> ...: the subcommand's own parser, without running it
    return subprocess.run([sys.executable, "-m", "fedrepro", *words[3:4], "--help"], cwd=REPO, capture_output=True,
                          text=True, timeout=120, env={"PYTHONPATH": str(REPO / "src"), "PATH": ""})


@pytest.mark.slow
@pytest.mark.parametrize("where,cmd", COMMANDS, ids=[c for _, c in COMMANDS])
def test_documented_command_is_valid(where, cmd):
    res = _check(cmd)
    assert res.returncode == 0, f"{where}: `{cmd}` fails:\n{(res.stderr or res.stdout)[-1500:]}"


def test_the_docs_have_commands_to_check():
    assert len(COMMANDS) > 5 and any(c.startswith("snakemake") for _, c in COMMANDS)
