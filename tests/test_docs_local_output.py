"""The output block docs/real-llm-offline.md shows for ``llm-mesa local`` is what the command prints, line for line.

The command needs llama.cpp's server (the ``local`` extra, built once in about 10 minutes),
so here the servers are stand-ins with the same face (a base URL, a model name, a process
id) and the command's own ``run`` prints what it prints; each line of the documented block
must match the printed line in its place, numbers (ports, pids) aside.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import threading
from pathlib import Path

from llm_mesa import local_cli

DOC = Path(__file__).resolve().parents[1] / "docs" / "real-llm-offline.md"


class StandIn:
    """What ``llm-mesa local`` reads of a server: its URL, its model, its process, that it runs."""

    ports = iter((40631, 41277, 40700, 40701))
    pids = iter((48211, 48212, 48213, 48214))

    def __init__(self, port: int = 0, **options) -> None:
        self.base_url = f"http://127.0.0.1:{next(self.ports)}/v1"
        self.model = "gemma3-270m"
        self.process = argparse.Namespace(pid=next(self.pids), returncode=None)
        self.running = True

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.running = False


def documented_output() -> list[str]:
    text = DOC.read_text()
    block = re.search(r"\.venv/bin/llm-mesa local .*?```\n+```text\n(.*?)```", text, re.S)
    assert block, "the document shows no output of llm-mesa local"
    return block.group(1).strip().splitlines()


def shape(line: str) -> str:
    return re.sub(r"\d+", "N", line)


def test_the_documented_output_of_llm_mesa_local_is_every_line_it_prints(monkeypatch, capsys):
    monkeypatch.setattr(local_cli, "LocalModelServer", StandIn)
    parser = argparse.ArgumentParser()
    local_cli.configure(parser)
    args = parser.parse_args(["--servers", "2"])
    threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()  # Ctrl-C, once it serves
    assert local_cli.run(args) == 0
    printed = capsys.readouterr().out.strip().splitlines()
    assert [shape(line) for line in printed] == [shape(line) for line in documented_output()]
