"""From a message to a lexicon name: the Schema parser, the free-text decoder, the pipeline.

* Schema: the first non-empty line must be, in full, ``@say {name: Ck}`` optionally
  followed by ``| rationale`` (spaces are tolerated around the punctuation; the ``C``
  is upper case, as the schema shows it). Later lines are ignored: a raw completion
  keeps writing until ``max_new_tokens``, and penalising that would measure the stop
  condition, not the format.
* Free text (NL, NL-SW, and the Schema salvage): the message must name exactly one
  distinct lexicon name, as a whole word (``C12`` is never read as ``C1``), in either
  case (``c3`` names ``C3``). Names outside the lexicon (``C0``, ``C13`` with M = 12)
  are not names and are ignored. Two different names, or none, decode to ``None``.
* Schema pipeline: first reply parsed -> ``schema``; else one retry with the reminder,
  parsed -> ``retry``; else free-text decoding of the retry's reply (then of the first
  reply) -> ``salvage``; else ``None`` -> ``none``.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence

from .observation import Utterance, is_schema_mode

SCHEMA_LINE = re.compile(
    r"@say\s*\{\s*name\s*:\s*(C\d+)\s*\}\s*(?:\|\s*(?P<rationale>.*?))?\s*")
FREE_NAME = re.compile(r"\b[Cc](\d+)\b")


def _in_lexicon(index: int, lexicon_size: int) -> bool:
    return 1 <= index <= lexicon_size


def decode_schema(text: str | None, lexicon_size: int = 12) -> str | None:
    """The name of a reply whose first non-empty line is ``@say {name: Ck}`` [``| rationale``]."""
    if not text:
        return None
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        match = SCHEMA_LINE.fullmatch(line)
        if match is None:
            return None
        index = int(match.group(1)[1:])
        return f"C{index}" if _in_lexicon(index, lexicon_size) else None
    return None


def decode_free_text(text: str | None, lexicon_size: int = 12) -> str | None:
    """The one lexicon name a message names, or None when it names none or several."""
    if not text:
        return None
    names = {int(m) for m in FREE_NAME.findall(text) if _in_lexicon(int(m), lexicon_size)}
    if len(names) != 1:
        return None
    return f"C{names.pop()}"


def decode_single(mode: str, text: str, lexicon_size: int = 12) -> tuple[str | None, str]:
    """Decode an NL/NL-SW message (no retry): ``(name, "text")`` or ``(None, "none")``."""
    name = decode_free_text(text, lexicon_size)
    return name, ("text" if name else "none")


def salvage(replies: Sequence[str], lexicon_size: int = 12) -> str | None:
    """Free-text decoding after a failed retry: the latest reply first, then earlier ones."""
    for text in reversed(replies):
        name = decode_free_text(text, lexicon_size)
        if name:
            return name
    return None


def decode_with_retry(mode: str, first_reply: str, ask_again: Callable[[], str],
                      lexicon_size: int = 12) -> Utterance:
    """Run the decoding pipeline of ``mode`` for a speaker that answers at once."""
    replies = [first_reply]
    if not is_schema_mode(mode):
        name, outcome = decode_single(mode, first_reply, lexicon_size)
        return Utterance(name, outcome, replies)
    name = decode_schema(first_reply, lexicon_size)
    if name:
        return Utterance(name, "schema", replies)
    replies.append(ask_again())
    name = decode_schema(replies[-1], lexicon_size)
    if name:
        return Utterance(name, "retry", replies)
    name = salvage(replies, lexicon_size)
    return Utterance(name, "salvage" if name else "none", replies)


async def adecode_with_retry(mode: str, first_reply: str, ask_again: Callable[[], Awaitable[str]],
                             lexicon_size: int = 12) -> Utterance:
    """``decode_with_retry`` for a speaker whose reminder is a coroutine."""
    pending: list[str] = []
    # Same logic; the retry reply is fetched only when the schema failed.
    if is_schema_mode(mode) and not decode_schema(first_reply, lexicon_size):
        pending.append(await ask_again())
    return decode_with_retry(mode, first_reply, lambda: pending[0], lexicon_size)
