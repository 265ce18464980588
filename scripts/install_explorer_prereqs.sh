#!/usr/bin/env bash
# What the explorer's browser test needs on a fresh Debian machine (run as root):
# Debian's Chromium (Playwright's own browser download cannot reach its host here),
# npm (to cache Solara's front-end from the npm registry), and the filled cache.
# Idempotent: installed packages and a complete cache are left alone.
set -euo pipefail
PYTHON="${PYTHON:-python}"
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium chromium-driver)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if ((${#missing[@]})); then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi
"$PYTHON" -m llm_mesa.visualization.assets fill
