#!/usr/bin/env bash
# A game recorded under one Mesa replays exactly under another: record an LLM game on the
# loopback stand-in with RECORD_VENV's Mesa, replay it strictly (no server) with REPLAY_VENV's,
# and compare the two --json summaries. Usage: bash scripts/replay_across_mesa.sh RECORD_VENV REPLAY_VENV
# Not for the games on Mesa's own examples (schelling, boltzmann_wealth_model, pd_grid): they play what
# the installed Mesa's example plays from a seed, and Mesa 3.5 and 4 seed their examples differently, so a
# seed is another game on each version (tests/test_mesa_examples.py holds each to its own example).
set -euo pipefail
cd "$(dirname "$0")/.."
record_venv="${1:?record venv, e.g. .venv}"
replay_venv="${2:?replay venv, e.g. .venv-mesa4}"
work="$(mktemp -d)"
trap 'kill "${server:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
port=$("$record_venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$record_venv/bin/llm-mesa" serve --port "$port" >/dev/null 2>&1 &
server=$!
for _ in $(seq 100); do "$record_venv/bin/python" -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/v1/models')" 2>/dev/null && break; sleep 0.2; done
game=(consensus --topology ba --n 36 --seed 1 --comm local --max-rounds 10 --policy llm --model rule:majority-inertia
      --base-url "http://127.0.0.1:$port/v1" --json)
"$record_venv/bin/llm-mesa" "${game[@]}" --record "$work/calls.sqlite" > "$work/recorded.json"
kill "$server"; wait "$server" 2>/dev/null || true
"$replay_venv/bin/llm-mesa" "${game[@]}" --replay "$work/calls.sqlite" > "$work/replayed.json"  # the server is gone
"$replay_venv/bin/python" - "$work/recorded.json" "$work/replayed.json" "$record_venv" "$replay_venv" <<'PY'
import json, sys
recorded, replayed = (json.load(open(p)) for p in sys.argv[1:3])
replayed_calls = replayed.pop("replayed_calls", None)
recorded.pop("replayed_calls", None)
# timing fields (ending in _s, e.g. wall_s) are how long this run took, not what it played
differ = sorted(k for k in set(recorded) | set(replayed) if recorded.get(k) != replayed.get(k) and not k.endswith("_s"))
if differ or replayed_calls != recorded["calls"]:
    sys.exit(f"replay differs from the recording in: {differ or ['replayed_calls']}")
print(f"recorded with {sys.argv[3]}, replayed with {sys.argv[4]}: {recorded['calls']} calls, {recorded['rounds']} rounds, "
      f"identical summaries")
PY
