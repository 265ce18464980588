"""Untrusted text quoted into prompts: what one agent says reaches another only as data.

A message is written by another agent (an LLM, or a user's script); before it is
quoted into a prompt it is cut to a length, and everything that could act on the
reader rather than be read is neutralised: line and paragraph separators (U+2028,
U+2029, U+0085) and other control characters become spaces, bidirectional
overrides and isolates (which can make text read in another order than it is
stored) are dropped, and chat-template control tokens (``<start_of_turn>``,
``<|im_start|>``, ``[INST]``...) are broken with a zero-width-free lookalike, so a
message can never open a new turn of the conversation. What was said and what was
delivered are both kept (content measures need both).
"""

from __future__ import annotations

import re
import unicodedata

#: bidirectional embeddings, overrides, isolates and marks
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")
#: what chat templates of common models use to open and close turns
TEMPLATE_TOKEN = re.compile(
    r"<\|[^|<>]{1,40}\|>"                                   # <|im_start|>, <|eot_id|>, <|start_header_id|>
    r"|</?(?:start_of_turn|end_of_turn|s|bos|eos|pad)>"     # Gemma, Llama 2, SentencePiece
    r"|\[/?INST\]|<<SYS>>|<</SYS>>",                        # Llama 2 / Mistral instructions
    re.IGNORECASE)


def _defang(token: str) -> str:
    """A token's lookalike that no tokenizer reads as the control token (angle quotes, no pipes)."""
    return token.replace("<", "\u2039").replace(">", "\u203a").replace("|", "\u00a6").replace("[", "(").replace("]", ")")


def neutralise(text: str, max_chars: int | None = None) -> str:
    """``text`` as it may be delivered into another agent's prompt (see the module doc)."""
    out = []
    for ch in text:
        if ch in BIDI_CONTROLS:
            continue
        category = unicodedata.category(ch)
        if ch in "\u2028\u2029\u0085" or category in ("Cc", "Zl", "Zp"):
            out.append(" ")
        elif category == "Cf" and ch not in ("\u200d",):  # other format characters (zero-width tricks), not ZWJ
            continue
        else:
            out.append(ch)
    cleaned = TEMPLATE_TOKEN.sub(lambda m: _defang(m.group(0)), "".join(out))
    return cleaned[:max_chars] if max_chars is not None else cleaned


__all__ = ["neutralise"]
