"""The authors' prompt (raw completion, no chat template), verbatim, and its hash.

Lines, joined by newlines, the prompt ending in a newline so the reply starts a line:

    You are agent {agent_id} in round {round_id}.
    Your current proposed name is {name}.
    Reply EXACTLY one line as: @say {name: {name}} | rationale.     (Schema)
    Reply EXACTLY one line proposing your name.                     (NL, NL-SW)

The Schema retry appends ``Follow EXACTLY one line: @say {name: Ck}`` (``Ck`` literally,
as the study wrote it) as a line of its own, newline included (``retry_suffix``): a raw
completion prompt that stopped mid-line would have the model continue the reminder
instead of answering on a fresh line. The loopback stand-in parses these lines, so keep
them as they are. ``TEMPLATE_HASH`` covers every line and the line ends; it goes into the
record/replay key and the manifest, so an edited prompt never replays stale answers.
"""

from __future__ import annotations

import hashlib

from .observation import NamingObservation, is_schema_mode

AGENT_LINE = "You are agent {agent_id} in round {round_id}."
NAME_LINE = "Your current proposed name is {name}."
SCHEMA_INSTRUCTION = "Reply EXACTLY one line as: @say {name: {name}} | rationale."
NL_INSTRUCTION = "Reply EXACTLY one line proposing your name."
RETRY_REMINDER = "Follow EXACTLY one line: @say {name: Ck}"

#: every prompt line, each ending in a newline (the first prompt's and the retry's)
TEMPLATE = "".join(line + "\n" for line in (AGENT_LINE, NAME_LINE, SCHEMA_INSTRUCTION, NL_INSTRUCTION,
                                            RETRY_REMINDER))
TEMPLATE_HASH = hashlib.sha256(TEMPLATE.encode("utf-8")).hexdigest()[:16]


def _fill(line: str, **values: object) -> str:
    # str.format cannot be used: the schema line's braces are literal text.
    for key, value in values.items():
        line = line.replace("{" + key + "}", str(value))
    return line


def instruction(mode: str, name: str) -> str:
    """The mode's instruction line (the schema line carries the agent's current name)."""
    if is_schema_mode(mode):
        return SCHEMA_INSTRUCTION.replace("{name: {name}}", "{name: " + name + "}")
    return NL_INSTRUCTION


def build_prompt(observation: NamingObservation) -> str:
    """The raw-completion prompt for one agent and round."""
    return "\n".join([
        _fill(AGENT_LINE, agent_id=observation.agent_id, round_id=observation.round),
        _fill(NAME_LINE, name=observation.name),
        instruction(observation.mode, observation.name),
    ]) + "\n"


def retry_suffix() -> str:
    """What the Schema retry appends to the prompt: the reminder line, ending in a newline."""
    return RETRY_REMINDER + "\n"
