#!/usr/bin/env bash
# Set up, then run the test suite (the slow and real-model tests are left to .ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test
exec .venv/bin/python -m pytest -m "not slow and not realmodel" -q "$@"
