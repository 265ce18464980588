"""The ``llm-mesa`` command: one subcommand per use, each in its own module.

A subcommand module exposes ``configure(parser)`` (adds its options) and
``run(args) -> int`` (its exit status). Bad input raises ``LlmMesaError`` (any
subclass, from any module): one line on stderr and the error's exit status (2 for
bad input, 3 for an invalid game, 4 for a sweep stopped by its budget).
"""

from __future__ import annotations

import argparse
import atexit
import errno
import importlib
import os
import signal
import sys
import threading
import warnings
from typing import Any

from llm_mesa.errors import LlmMesaError, LlmMesaWarning, one_line

#: the core's own subcommands; each installed game adds its own (``command_of(Game)``)
CORE_SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "sweep": ("llm_mesa.sweep.cli", "run a parameter sweep of any game, appending results to Parquet"),
    "serve": ("llm_mesa.loopback.cli", "start the loopback OpenAI-compatible stand-in endpoint"),
    "local": ("llm_mesa.local_cli", "start a real small model (llama-server + Gemma 3 270M) on loopback"),
    "viz": ("llm_mesa.visualization.cli", "open the Solara explorer"),
    "lab": ("llm_mesa.visualization.lab_cli", "seat people in a game beside LLM and rule agents, a browser each"),
    "analyze": ("llm_mesa.analysis.cli", "the studies' statistics over a sweep's results"),
    "report": ("llm_mesa.analysis.report", "one self-contained HTML report with figures over sweeps' results"),
    "card": ("llm_mesa.run_card", "a run card a paper can quote: models, servers, sampling, seeds, tokens, versions"),
    "fit": ("llm_mesa.analysis.fit_cli", "which rule, with which parameters, plays like the agents of runs (and does it replay them)"),
}


def subcommands(describe: bool = False) -> dict[str, tuple[str, str]]:
    """Every subcommand: one per installed game (found through the game registry), then the core's.

    A game's entry is ``("game:NAME", help)``: its module is asked of the game when the
    subcommand is built (its own, or the core's generic one). Games are imported only to
    ``describe`` them (the top-level help), so one game's command never loads another's.
    """
    from llm_mesa.registry import game_names, installed_games

    if describe:  # the help lists what loads; a game that does not is one warning line
        games = {game.name: (f"game:{game.name}", f"play {game.summary or 'one game of ' + game.name}")
                 for game in installed_games()}
    else:
        games = {name: (f"game:{name}", f"play one game of {name}") for name in game_names()}
    return {**games, **CORE_SUBCOMMANDS}


def _subcommand_module(module_name: str):
    if module_name.startswith("game:"):
        from llm_mesa.game_cli import command_of
        from llm_mesa.registry import get_game

        return command_of(get_game(module_name[len("game:"):]))
    return importlib.import_module(module_name)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("llm-mesa")
    except PackageNotFoundError:
        return "unknown"


class UsageError(LlmMesaError):
    """Bad input; the message is one line that names the fix."""


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line that names the fix (and exit status 2), not the usage block."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; only the chosen subcommand's module is imported (fast start-up)."""
    parser = OneLineParser(prog="llm-mesa", description="Networks of LLM and rule agents on Mesa.")
    parser.add_argument("--version", action="version", version=f"llm-mesa {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module_name, help_text) in subcommands(describe=command is None).items():
        if command is not None and name != command:
            sub.add_parser(name, help=help_text)
            continue
        module = _subcommand_module(module_name)
        p = sub.add_parser(name, help=help_text, description=(module.__doc__ or help_text).strip(),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        module.configure(p)
        p.set_defaults(_run=module.run)
    return parser


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where the program is, so that it unwinds as from Ctrl-C."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _terminate(signum: int, frame: object) -> None:
    raise Terminated(signum)


#: signals that end a command as Ctrl-C does: what is half-written is removed on the way out
ENDING_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


def _catch_ending_signals() -> dict[int, Any]:
    """Make SIGTERM and SIGHUP unwind like SIGINT (the default kills the process mid-write, leaving staged
    folders and temporary files behind); returns the handlers to restore."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {signum: signal.signal(signum, _terminate) for signum in ENDING_SIGNALS}


def main(argv: list[str] | None = None) -> int:
    previous = _catch_ending_signals()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always", LlmMesaWarning)
            shown = warnings.showwarning

            def one_line_warning(message, category, *args, **kwargs):
                if issubclass(category, LlmMesaWarning):  # ours: one line, like an error
                    print(f"llm-mesa: warning: {one_line(message)}", file=sys.stderr)
                else:
                    shown(message, category, *args, **kwargs)

            warnings.showwarning = one_line_warning
            return _main(argv)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if sys.stdout is None:  # started with stdout closed (>&-): print nowhere rather than fail
        sys.stdout = open(os.devnull, "w")
    try:
        from llm_mesa.registry import forget_warnings, get_game, refused_games

        forget_warnings()  # each command names the broken games it lists once
        if argv and argv[0] not in CORE_SUBCOMMANDS and argv[0] in refused_games():
            get_game(argv[0])  # a game left out by the name rule or a clash: its one line, which names the fix
        command = argv[0] if argv and argv[0] in subcommands() else None
        parser = build_parser(command)
    except LlmMesaError as exc:  # a broken game installation: named, in one line
        print(f"llm-mesa: error: {one_line(exc)}", file=sys.stderr)
        return exc.exit_status
    args = parser.parse_args(argv)
    args._argv = list(argv)  # which options were written out (an experiment file fills in the rest)
    try:
        status = int(args._run(args) or 0)
        sys.stdout.flush()  # a full disk or a closed pipe shows here, where it can be answered
        return status
    except KeyboardInterrupt as exc:
        signum = exc.signum if isinstance(exc, Terminated) else signal.SIGINT
        print(f"llm-mesa: {'interrupted' if signum == signal.SIGINT else 'terminated'}", file=sys.stderr)
        return 128 + int(signum)
    except BrokenPipeError:  # output piped into e.g. `head`, which stopped reading
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EBADF, errno.EIO):
            raise
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing more to stdout, not even at exit
        print(f"llm-mesa {args.command}: error: cannot write the output ({os.strerror(exc.errno)}); "
              "free some space or write elsewhere (--out writes files)", file=sys.stderr)
        return 2
    except LlmMesaError as exc:  # whoever raised it: one line that names the fix, and its exit status
        print(f"llm-mesa {args.command}: error: {one_line(exc)}", file=sys.stderr)
        return exc.exit_status
    finally:
        checks = sys.modules.get("llm_mesa.llm.preflight_check")
        if checks is not None:  # a command's pre-flight verdicts are its own (main may run again in-process)
            checks.forget_scheduled()


def entry() -> None:
    """The ``llm-mesa`` command: ``main``, then an exit that skips the interpreter's teardown.

    Why: tearing down the modules an LLM game loads (numpy, pandas, scipy, the openai
    SDK's types) took about 0.35 s of every command, after its work was done. By the time
    ``main`` returns everything it wrote is closed; the exit handlers still run (stores
    commit their last rows, clients close, logs flush), then the process ends.
    """
    status = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):  # a closed pipe or stream: nothing more to say
            pass
    atexit._run_exitfuncs()
    os._exit(status)


if __name__ == "__main__":
    entry()
