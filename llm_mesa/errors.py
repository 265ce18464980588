"""The one root of every error a user of llm-mesa can meet.

Every error that says what went wrong with the user's input, files, endpoint or
game derives from ``LlmMesaError``, whichever module (ours, a game's, a plugin's)
raises it. The command line turns one into a single line on stderr and its
``exit_status``: 2 for bad input (the default), 3 for a game made invalid by its
failed decisions, 4 for a sweep stopped by its budget. Anything else that escapes
is a bug and keeps its traceback.

It subclasses ``ValueError`` so that code written against the older per-module
errors (all ``ValueError`` subclasses) keeps catching them.
"""

from __future__ import annotations

#: exit statuses the command line gives
BAD_INPUT = 2
INVALID_GAME = 3
BUDGET_REACHED = 4


class LlmMesaError(ValueError):
    """An error whose message is one line that names the fix."""

    exit_status: int = BAD_INPUT


class InvalidGame(LlmMesaError):
    """A game that was played but is invalid (too many of its decisions failed)."""

    exit_status = INVALID_GAME


class GameError(LlmMesaError):
    """An unknown game or a game that cannot be played as asked; the message names the fix."""


class RunawayGame(InvalidGame):
    """A model still running past its game's step limit: it never stops (exit status 3)."""


class GameHookError(LlmMesaError):
    """A hook of a game's own (a table reader, a summary, an estimate, a seat's facts, ...) raised: the message
    names the game, the hook and what it raised, in one line, never a traceback deep in the game's code."""


class LlmMesaWarning(UserWarning):
    """Something the user should know that does not stop the command (the CLI prints it as one line)."""


def one_line(exc: BaseException) -> str:
    """The error's message on one line (a message with line breaks is joined)."""
    return " ".join(str(exc).split("\n")).strip() or type(exc).__name__


__all__ = ["BAD_INPUT", "BUDGET_REACHED", "INVALID_GAME", "GameError", "GameHookError", "InvalidGame", "LlmMesaError",
           "LlmMesaWarning", "RunawayGame", "one_line"]
