"""Untrusted text quoted into prompts: what one agent says reaches another only as data.

A message is written by another agent (an LLM, or a user's script); before it is
quoted into a prompt it is cut to a length, and everything that could act on the
reader rather than be read is neutralised: line and paragraph separators (U+2028,
U+2029, U+0085) and other control characters become spaces, bidirectional
overrides and isolates (which can make text read in another order than it is
stored) are dropped, and chat-template control tokens (``<start_of_turn>``,
``<|im_start|>``, ``[INST]``, DeepSeek's ``<｜User｜>``...: every family in
``TEMPLATE_TOKEN_FAMILIES``) are broken with a zero-width-free lookalike, so a
message can never open a new turn of the conversation. What was said and what was
delivered are both kept (content measures need both).
"""

from __future__ import annotations

import re
import unicodedata

#: bidirectional embeddings, overrides, isolates and marks
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")

# The characters a control token is made of, with the look-alikes that some tokenizers'
# normalisers (NFKC) fold into them: full-width < > | [ ] and DeepSeek's own U+FF5C bar.
_LT, _GT, _BAR, _LB, _RB = "[<\uff1c]", "[>\uff1e]", "[|\uff5c]", "[\\[\uff3b]", "[\\]\uff3d]"

#: every chat-template control-token family the model world uses: family -> (pattern, tokens it
#: must catch). The one list: ``TEMPLATE_TOKEN`` is built from it and each family has a test.
TEMPLATE_TOKEN_FAMILIES: dict[str, tuple[str, tuple[str, ...]]] = {
    # <|im_start|>, <|im_end|>, <|endoftext|> (Qwen, Yi, OpenAI); also Llama 3 and Phi below
    "chatml": (_LT + _BAR + r"[^|\uff5c<>\uff1c\uff1e]{1,40}" + _BAR + _GT,
               ("<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|im_sep|>")),
    # Llama 3: <|begin_of_text|>, <|start_header_id|>...; Llama 2: [INST], <<SYS>>, <s>
    "llama": (_LT + _BAR + r"(?:begin_of_text|end_of_text|start_header_id|end_header_id|eot_id|eom_id|python_tag)"
              + _BAR + _GT + "|" + _LB + r"/?INST" + _RB + "|" + _LT + "{2}/?SYS" + _GT + "{2}"
              + "|" + _LT + r"/?s" + _GT,
              ("<|begin_of_text|>", "<|start_header_id|>", "<|eot_id|>", "[INST]", "[/INST]", "<<SYS>>", "<</SYS>>",
               "<s>", "</s>")),
    # Gemma: <start_of_turn>, <end_of_turn>, <bos>, <eos>, <pad>, image tokens
    "gemma": (_LT + r"/?(?:start_of_turn|end_of_turn|bos|eos|pad|start_of_image|end_of_image|image_soft_token)" + _GT,
              ("<start_of_turn>", "<end_of_turn>", "<bos>", "<eos>", "<start_of_image>")),
    # Mistral's bracketed controls: [INST], [SYSTEM_PROMPT], [TOOL_CALLS], [AVAILABLE_TOOLS], [IMG]...
    "mistral": (_LB + r"/?(?:INST|SYSTEM_PROMPT|TOOL_CALLS|TOOL_RESULTS|TOOL_CONTENT|AVAILABLE_TOOLS|IMG|IMG_BREAK|"
                r"IMG_END|THINK|PREFIX|MIDDLE|SUFFIX)" + _RB,
                ("[INST]", "[/INST]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[TOOL_CALLS]", "[AVAILABLE_TOOLS]")),
    # DeepSeek's full-width bars and U+2581 word marks: <｜User｜>, <｜begin▁of▁sentence｜>, and <think>
    "deepseek": (_LT + "\uff5c" + r"[^<>\uff1c\uff1e\uff5c]{1,40}" + "\uff5c" + _GT + "|" + _LT + r"/?think" + _GT,
                 ("<\uff5cUser\uff5c>", "<\uff5cAssistant\uff5c>", "<\uff5cbegin\u2581of\u2581sentence\uff5c>",
                  "<\uff5cend\u2581of\u2581sentence\uff5c>", "<\uff5ctool\u2581calls\u2581begin\uff5c>", "<think>",
                  "</think>")),
    # Phi-3: <|user|>, <|assistant|>, <|system|>, <|end|> (ChatML-shaped: the first family catches them too)
    "phi": (_LT + _BAR + r"(?:user|assistant|system|end|endoftext)" + _BAR + _GT,
            ("<|user|>", "<|assistant|>", "<|system|>", "<|end|>")),
}

#: what chat templates of common models use to open and close turns (from ``TEMPLATE_TOKEN_FAMILIES``)
TEMPLATE_TOKEN = re.compile("|".join(f"(?:{pattern})" for pattern, _ in TEMPLATE_TOKEN_FAMILIES.values()),
                            re.IGNORECASE)


_DEFANG = str.maketrans({"<": "\u2039", "\uff1c": "\u2039", ">": "\u203a", "\uff1e": "\u203a", "|": "\u00a6",
                         "\uff5c": "\u00a6", "[": "(", "\uff3b": "(", "]": ")", "\uff3d": ")"})


def _defang(token: str) -> str:
    """A token's lookalike that no tokenizer reads as the control token (angle quotes, broken bars, parentheses)."""
    return token.translate(_DEFANG)


def neutralise(text: str, max_chars: int | None = None) -> str:
    """Text as it may be delivered into another agent's prompt.

    Line and paragraph separators and other control characters become spaces, bidirectional
    controls and zero-width format characters are dropped, and chat-template control tokens
    (every family in ``TEMPLATE_TOKEN_FAMILIES``) are broken, so a message can never open a new
    turn of the conversation.

    Args:
        text: What an agent (or a user's script) wrote.
        max_chars: Cut the result to this many characters (None: no cut).

    Returns:
        The text to quote into a prompt.
    """
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


__all__ = ["TEMPLATE_TOKEN_FAMILIES", "neutralise"]
