#!/usr/bin/env bash
# Create .venv and install fedrepro into it.  Usage: ./setup.sh [--dev]
#   --dev   also install the test tools (pytest, the SLURM executor plugin for the profile test)
set -euo pipefail
cd "$(dirname "$0")"
extra=""
[ "${1:-}" = "--dev" ] && extra="[dev]"
python3 -m venv .venv
# Resolve torch and torchvision from the package index only.  A local CPU-only torch wheel,
# offered through a pip find-links directory, has the same version number but is not the
# build torchvision was compiled against, and `import torchvision` would then fail.
empty_links=$(mktemp -d)
trap 'rm -rf "$empty_links"' EXIT
export PIP_FIND_LINKS="$empty_links"
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".${extra}"
.venv/bin/python -c "import torch, torchvision, torchvision.ops; print('fedrepro installed: torch', torch.__version__, 'torchvision', torchvision.__version__)"
