#!/usr/bin/env bash
# Set up, then run the test suite (the slow and real-model tests are left to .ci/run).
# LLM_MESA_VENV and LLM_MESA_MESA run it in another venv with another Mesa (see scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test
exec "${LLM_MESA_VENV:-.venv}/bin/python" -m pytest -m "not slow and not realmodel" -q "$@"
