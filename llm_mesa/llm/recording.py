"""Recording options of the command line: one set of options and one default everywhere.

Every command that may call an LLM offers the same four options:

* ``--record FILE``: record every call (failures included) to this SQLite file; the
  default is ``llm-mesa-calls.sqlite`` in the working directory, so a command line
  records unless told not to; a file that holds calls already is replayed for what it
  holds (a game's command run again replays, as a sweep's rerun does);
* ``--no-record``: record nothing;
* ``--replay FILE``: replay the calls recorded in FILE exactly, with zero endpoint calls
  (a call never recorded is an error);
* ``--replay-fill``: with ``--replay``, a call missing from FILE goes to the endpoint
  and is recorded there (how a crashed run resumes, paying only for what it lacks).

The library's default differs on purpose: a policy or a model built in a script
records nothing unless it is given a store explicitly (``store=ResponseStore(path)``),
so that a script never writes a file it did not ask for. ``store_from_args`` is the
bridge: it turns the options into that explicit store (or None).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from llm_mesa.llm.store import ResponseStore, StoreError

#: where a command line records its calls when given no --record FILE
DEFAULT_RECORD = "llm-mesa-calls.sqlite"

OPTIONS = ("record", "no_record", "replay", "replay_fill")


def add_recording_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup, *,
                            default_shown: str = DEFAULT_RECORD) -> argparse._ArgumentGroup:
    """Add ``--record FILE``, ``--no-record``, ``--replay FILE`` and ``--replay-fill``.

    ``args.record`` stays None unless given (so that a conflict with ``--replay`` or
    ``--no-record`` can be told apart from the default); ``store_from_args`` applies
    the default. ``default_shown`` is the default the help names (a command whose
    default store lives elsewhere, e.g. a sweep's output directory, says so).
    """
    group = parser.add_argument_group("recording of LLM calls") if isinstance(parser, argparse.ArgumentParser) \
        else parser
    group.add_argument("--record", metavar="FILE", default=None,
                       help=f"SQLite file every LLM call is recorded to (default {default_shown})")
    group.add_argument("--no-record", action="store_true", help="do not record LLM calls")
    group.add_argument("--replay", metavar="FILE",
                       help="replay the calls recorded in FILE with zero endpoint calls (a miss is an error)")
    group.add_argument("--replay-fill", action="store_true",
                       help="with --replay: a call missing from FILE goes to the endpoint and is recorded there")
    return group


def recording_requested(args: argparse.Namespace) -> bool:
    """True when any recording option was given on the command line."""
    return any(getattr(args, name, None) for name in OPTIONS)


def recording_from_args(args: argparse.Namespace, default: str | None = DEFAULT_RECORD) -> tuple[str | None, str]:
    """``(path, mode)`` the options ask for; mode is record, replay, replay-fill or off (path None).

    Raises ``StoreError`` (one line that names the fix) for options that contradict each other.
    """
    record, replay = getattr(args, "record", None), getattr(args, "replay", None)
    no_record, fill = bool(getattr(args, "no_record", False)), bool(getattr(args, "replay_fill", False))
    if fill and not replay:
        raise StoreError("--replay-fill needs --replay FILE")
    if record and replay:
        raise StoreError("--record and --replay exclude each other; pick one "
                         "(--replay FILE --replay-fill records the missing calls into FILE)")
    if no_record and (record or replay):
        raise StoreError(f"--no-record excludes {'--record' if record else '--replay'}; pick one")
    if replay:
        return str(replay), "replay-fill" if fill else "replay"
    if no_record:
        return None, "off"
    return (str(record) if record else default), "record"


def game_recording(args: argparse.Namespace) -> tuple[str | None, str]:
    """``recording_from_args`` for one game's command: recording into a file that exists already
    replays what it holds and records only what it lacks (``replay-fill``), as a sweep's rerun does.

    So the same command run twice plays the first run's game again from its answers, with no call
    for them, instead of refusing; a recorded answer is never replaced (another game's calls, with
    their own keys, are recorded beside them).
    """
    path, mode = recording_from_args(args)
    if mode == "record" and path is not None and Path(path).exists():
        return path, "replay-fill"
    return path, mode


def store_from_args(args: argparse.Namespace) -> ResponseStore | None:
    """The ``ResponseStore`` one game's recording options describe (None with ``--no-record``).

    Records to ``DEFAULT_RECORD`` when no option is given, replaying what the file already holds
    (``game_recording``). A strict replay of a file that does not exist is refused here, before any call.
    """
    path, mode = game_recording(args)
    if path is None:
        return None
    return ResponseStore(Path(path), mode)


__all__ = ["DEFAULT_RECORD", "add_recording_arguments", "game_recording", "recording_from_args", "recording_requested",
           "store_from_args"]
