"""The command-line reference from the parsers themselves: ``{llm-mesa-commands}``.

Each command's section is its ``--help``, as the parser prints it in a terminal 80
columns wide: ``llm-mesa`` itself, then every subcommand ``llm_mesa.cli.build_parser``
builds, the installed games' included. The text is made when the site is built, so it
cannot drift from what ``--help`` says. (sphinx-argparse was tried: it reads each
description as reStructuredText, and these are written for a terminal, with indented
examples it reflowed into quotations.)
"""

from __future__ import annotations

import argparse
import os
from contextlib import contextmanager

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

#: the terminal width the help is laid out for (argparse reads COLUMNS)
WIDTH = 80


@contextmanager
def columns(width: int):
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = saved


def command_helps(width: int = WIDTH) -> list[tuple[str, str, str]]:
    """``(command, one-line summary, --help text)`` for ``llm-mesa`` and each of its subcommands, in order."""
    from llm_mesa.cli import build_parser

    with columns(width):
        parser = build_parser()
        found = [("llm-mesa", parser.description or "", parser.format_help())]
        subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        summaries = {choice.dest: choice.help or "" for choice in subparsers._choices_actions}
        for name, sub in subparsers.choices.items():
            found.append((f"llm-mesa {name}", summaries.get(name, ""), sub.format_help()))
    return found


class CommandReference(SphinxDirective):
    """``{llm-mesa-commands}``: a section per command, its summary and its ``--help``."""

    def run(self) -> list[nodes.Node]:
        sections = []
        for command, summary, text in command_helps():
            section = nodes.section(ids=[nodes.make_id(command)], names=[nodes.fully_normalize_name(command)])
            section += nodes.title(command, "", nodes.literal(command, command))
            if summary:
                section += nodes.paragraph(summary, summary.rstrip(".") + ".")
            block = nodes.literal_block(text, text)
            block["language"] = "text"
            section += block
            self.state.document.note_implicit_target(section, section)
            sections.append(section)
        return sections


def setup(app: Sphinx) -> dict[str, object]:
    app.add_directive("llm-mesa-commands", CommandReference)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
