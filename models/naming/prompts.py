"""The naming prompt (raw completion, no chat template): the authors' wording, its paraphrases, or a file.

The authors' prompt (``study``), verbatim: lines joined by newlines, ending in a newline so
the reply starts a line::

    You are agent {agent_id} in round {round_id}.
    Your current proposed name is {name}.
    Reply EXACTLY one line as: @say {name: {name}} | rationale.     (Schema)
    Reply EXACTLY one line proposing your name.                     (NL, NL-SW)

The Schema retry appends ``Follow EXACTLY one line: @say {name: Ck}`` (``Ck`` literally,
as the study wrote it) as a line of its own, newline included (``retry_suffix``): a raw
completion prompt that stopped mid-line would have the model continue the reminder
instead of answering on a fresh line.

The game's ``prompt`` parameter picks a variant (``--prompt terse``, ``--set
prompt=study,terse``) or a template file (``file:PATH``; docs/prompt-variants.md). Its parts
are ``str.format`` texts (``{{`` and ``}}`` for a brace as text): ``prompt`` (the first
reply's, with ``{instruction}`` where the mode's instruction goes), ``schema``, ``nl`` and
``retry``. Every variant keeps the facts (SPEC part B): the agent, the round, its current
name, one line, and in Schema mode the ``@say {name: ...}`` form with the current name; the
loopback stand-in reads each. ``TEMPLATE_HASH`` is the study's, as before variants existed
(every line and line end); it goes into the record/replay key and the manifest, so an
edited prompt never replays stale answers.
"""

from __future__ import annotations

import hashlib

from llm_mesa.prompt_templates import Part, Template, Templates, texts_hash

from .observation import NamingObservation, is_schema_mode

AGENT_LINE = "You are agent {agent_id} in round {round_id}."
NAME_LINE = "Your current proposed name is {name}."
SCHEMA_INSTRUCTION = "Reply EXACTLY one line as: @say {name: {name}} | rationale."
NL_INSTRUCTION = "Reply EXACTLY one line proposing your name."
RETRY_REMINDER = "Follow EXACTLY one line: @say {name: Ck}"

#: every prompt line of the study's, each ending in a newline (the first prompt's and the retry's)
TEMPLATE = "".join(line + "\n" for line in (AGENT_LINE, NAME_LINE, SCHEMA_INSTRUCTION, NL_INSTRUCTION,
                                            RETRY_REMINDER))
TEMPLATE_HASH = hashlib.sha256(TEMPLATE.encode("utf-8")).hexdigest()[:16]

#: the parts of the naming prompt a template file may set, and the facts each must carry
PARTS: dict[str, Part] = {
    "prompt": Part(("agent_id", "round_id", "name", "instruction"), ("agent_id", "round_id", "name", "instruction"),
                   help="the first reply's prompt: the agent, the round, its current name, then the mode's instruction",
                   examples={"agent_id": 3, "round_id": 7}),
    "schema": Part(("name",), ("name",), help="Schema mode's instruction: one line @say {name: NAME} with the current name"),
    "nl": Part(("name",), help="NL modes' instruction: one line that proposes the name"),
    "retry": Part(("agent_id", "round_id", "name"), help="the Schema retry's reminder line",
                  examples={"agent_id": 3, "round_id": 7}),
}

#: The variants: the authors' words, and paraphrases that keep every fact (a wording-robustness axis).
VARIANTS: dict[str, dict[str, str]] = {
    "study": {"prompt": f"{AGENT_LINE}\n{NAME_LINE}\n{{instruction}}\n",
              "schema": "Reply EXACTLY one line as: @say {{name: {name}}} | rationale.",
              "nl": NL_INSTRUCTION, "retry": "Follow EXACTLY one line: @say {{name: Ck}}"},
    "paraphrase": {"prompt": "You are player {agent_id}, and this is round {round_id}.\n"
                             "The name you currently propose is {name}.\n{instruction}\n",
                   "schema": "Answer with EXACTLY one line of the form: @say {{name: {name}}} | rationale.",
                   "nl": "Answer with EXACTLY one line that proposes your name.",
                   "retry": "Answer with EXACTLY one line: @say {{name: Ck}}"},
    "terse": {"prompt": "Agent {agent_id}, round {round_id}. Current name: {name}.\n{instruction}\n",
              "schema": "One line: @say {{name: {name}}} | rationale", "nl": "One line proposing your name.",
              "retry": "One line: @say {{name: Ck}}"},
}

#: the game's prompt templates (the study keeps the hash it had before variants existed)
TEMPLATES = Templates(PARTS, {name: Template(name, texts, TEMPLATE_HASH if name == "study" else texts_hash(texts))
                              for name, texts in VARIANTS.items()})


def template_of(observation: NamingObservation) -> Template:
    """The templates the observation's game names (its ``prompt``: a variant or a file)."""
    return TEMPLATES.load(observation.prompt)


def instruction(mode: str, name: str, template: Template | None = None) -> str:
    """The mode's instruction line (the schema line carries the agent's current name)."""
    texts = (template or TEMPLATES.declared["study"]).texts
    return texts["schema" if is_schema_mode(mode) else "nl"].format(name=name)


def build_prompt(observation: NamingObservation, template: Template | None = None) -> str:
    """The raw-completion prompt for one agent and round (ending in a newline, so the reply starts a line)."""
    template = template or template_of(observation)
    text = template.texts["prompt"].format(agent_id=observation.agent_id, round_id=observation.round,
                                           name=observation.name,
                                           instruction=instruction(observation.mode, observation.name, template))
    return text if text.endswith("\n") else text + "\n"


def retry_suffix(observation: NamingObservation | None = None, template: Template | None = None) -> str:
    """What the Schema retry appends to the prompt: the reminder line, ending in a newline."""
    if template is None:
        template = template_of(observation) if observation is not None else TEMPLATES.declared["study"]
    values = {"agent_id": "", "round_id": "", "name": ""} if observation is None else {
        "agent_id": observation.agent_id, "round_id": observation.round, "name": observation.name}
    return template.texts["retry"].format(**values).rstrip("\n") + "\n"
