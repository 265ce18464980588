#!/usr/bin/env bash
# Set up, then build the documentation site into docs/_build/html with warnings as errors.
# The notebooks are executed afresh (a cell that raises fails the build), and the built site
# is checked: nothing it loads comes from another machine (scripts/check_site.py).
# Extra arguments go to sphinx-build (e.g. -j 2).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh docs
venv="${LLM_MESA_VENV:-.venv}"
rm -rf docs/_build
"$venv/bin/python" -m sphinx -W --keep-going -b html docs docs/_build/html "$@"
"$venv/bin/python" scripts/check_site.py docs/_build/html --sources docs
