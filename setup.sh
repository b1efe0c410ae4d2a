#!/usr/bin/env bash
# Create .venv and install fedrepro into it.  Usage: ./setup.sh [--dev] [--unpinned | --relock]
#   --dev       also install the test tools (pytest, ruff, snakefmt, the SLURM executor plugin for the profile test)
#   --unpinned  resolve every dependency from pyproject.toml's ranges instead of the tested set in constraints.txt
#   --relock    install unpinned (with --dev), then rewrite constraints.txt from what was installed
set -euo pipefail
cd "$(dirname "$0")"
extra=""
mode=pinned
for arg in "$@"; do
  case "$arg" in
    --dev) extra="[dev]" ;;
    --unpinned) mode=unpinned ;;
    --relock) mode=relock; extra="[dev]" ;;
    *) echo "setup.sh: unknown option '$arg' (use --dev, --unpinned or --relock)" >&2; exit 2 ;;
  esac
done
# --relock starts from an empty environment, so that the new set holds nothing a user or an older set left behind
if [ "$mode" = relock ]; then python3 -m venv --clear .venv; else python3 -m venv .venv; fi
# Resolve torch and torchvision from the package index only.  A local CPU-only torch wheel,
# offered through a pip find-links directory, has the same version number but is not the
# build torchvision was compiled against, and `import torchvision` would then fail.
empty_links=$(mktemp -d)
trap 'rm -rf "$empty_links"' EXIT
export PIP_FIND_LINKS="$empty_links"

# constraints.txt is the set the tests last passed with (docs/architecture.md, "The pinned set"): every package
# at one version, so a fresh clone installs what CI tested, whatever the index has released since.  It was made
# on the Python named in its `# python:` line; other Pythons resolve from pyproject.toml's ranges.
pins=()
locked_python=$(sed -n 's/^# python: *//p' constraints.txt 2>/dev/null || true)
this_python=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
if [ "$mode" = pinned ] && [ "$locked_python" != "$this_python" ]; then
  echo "setup.sh: constraints.txt pins the versions tested on Python $locked_python; this is Python $this_python," \
       "so the dependencies resolve from pyproject.toml's ranges (./setup.sh --unpinned does the same)." >&2
  mode=unpinned
fi
[ "$mode" = pinned ] && pins=(--constraint constraints.txt)

# pip itself and the build tools, in the environment (for the record) and in the editable install's isolated build
# environment (pip >= 25.3: --build-constraint)
.venv/bin/python -m pip install --quiet --upgrade "${pins[@]}" pip setuptools wheel
[ "$mode" = pinned ] && pins+=(--build-constraint constraints.txt)
if ! .venv/bin/python -m pip install --quiet "${pins[@]}" -e ".${extra}"; then
  if [ "$mode" = pinned ]; then
    echo "setup.sh: the pinned versions of constraints.txt could not be installed here (see pip's message above)." \
         "Run ./setup.sh --unpinned${extra:+ --dev} to resolve from pyproject.toml's ranges instead; the sidecars" \
         "record the versions every result was made with." >&2
  fi
  exit 1
fi
.venv/bin/python -c "import torch, torchvision, torchvision.ops; print('fedrepro installed: torch', torch.__version__, 'torchvision', torchvision.__version__)"

# which set .venv holds, for tests/test_constraints.py: the sha256 of the constraints.txt it was installed with
record_pins() {
  .venv/bin/python -c 'import hashlib; print(hashlib.sha256(open("constraints.txt", "rb").read()).hexdigest())' \
    > .venv/fedrepro-constraints.sha256
}
rm -f .venv/fedrepro-constraints.sha256
[ "$mode" = pinned ] && record_pins

if [ "$mode" = relock ]; then
  {
    echo "# The tested set: every package fedrepro[dev] installs, at the version the tests last passed with."
    echo "# setup.sh installs exactly these (pip --constraint); ./setup.sh --relock rewrites this file from a fresh"
    echo "# unpinned install, after which the README's test command must pass before it is committed."
    echo "# python: $this_python"
    # no local version labels (torch's "+cu130"): `==2.13.0` matches them, and other platforms' builds too
    .venv/bin/python -m pip freeze --all --exclude-editable | sed 's/+[A-Za-z0-9.]*$//' | LC_ALL=C sort -f
  } > constraints.txt.tmp
  mv constraints.txt.tmp constraints.txt
  record_pins
  echo "setup.sh: wrote constraints.txt ($(grep -c '==' constraints.txt) packages); run the tests before committing it"
fi
