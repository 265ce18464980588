#!/usr/bin/env bash
# Set up, then play the default demo: the network consensus game on a 36-node
# Barabási–Albert graph with majority-with-inertia agents, and the same game with
# LLM agents against the bundled loopback endpoint (a stand-in, not a model).
set -euo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp)
bash scripts/setup.sh test >"$log" 2>&1 || { cat "$log"; exit 1; }
rm -f "$log"
echo "== rule agents =="
.venv/bin/llm-mesa consensus --topology ba --n 36 --policy majority-inertia --seed 1
echo
echo "== LLM agents against the loopback stand-in endpoint (local communication) =="
port=$(.venv/bin/python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
.venv/bin/llm-mesa serve --port "$port" >/dev/null 2>&1 &
server=$!
trap 'kill $server 2>/dev/null' EXIT
for _ in $(seq 50); do .venv/bin/python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/v1/models')" 2>/dev/null && break; sleep 0.2; done
rm -f runs/demo-calls.sqlite  # a rerun would replay the recording: this demo calls afresh
.venv/bin/llm-mesa consensus --topology ba --n 36 --seed 1 --comm local --max-rounds 10 \
    --policy llm --base-url "http://127.0.0.1:$port/v1" --model "rule:majority-inertia" \
    --record runs/demo-calls.sqlite
