"""The loopback behaviour registry: games register what they answer, the core names no game.

The core imports each installed game's ``llm.behaviours`` module the first time behaviours
are listed or built; a behaviour registered from anywhere (here: this test) is served
like the built-in ones.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys

import openai
import pytest
from openai import AsyncOpenAI

from llm_mesa.loopback import LoopbackServer, listed_behaviours, register_behaviour
from llm_mesa.loopback.behaviours import Behaviour, PromptView, probability_param
from llm_mesa.registry import game_names, get_game


class Shout(Behaviour):
    """Shouts the last user message back (test-only)."""

    kind = "test:shout"

    def __init__(self, params: dict[str, str], model: str):
        self.times = int(params.pop("times", "1"))

    def answer(self, prompt: PromptView, rng) -> str:
        return " ".join([prompt.last_user.upper()] * self.times)


class Pick(Behaviour):
    """Answers the name after its prefix, with a probability parameter (test-only)."""

    def __init__(self, rest: str, params: dict[str, str], model: str):
        self.rest = rest
        self.kind = f"test-pick:{rest}"
        self.p = probability_param(params, "p", 0.5, model)

    def answer(self, prompt: PromptView, rng) -> str:
        return f"{self.rest} {self.p:g}"


register_behaviour("test:shout", Shout, params="times")
register_behaviour("test-pick:", Pick, "picks what follows the prefix", params="p",
                   listing=lambda: {"test-pick:a": "picks a", "test-pick:b": "picks b"})


async def ask(server: LoopbackServer, model: str, text: str = "hello") -> str:
    async with AsyncOpenAI(base_url=server.base_url, api_key="none", max_retries=0) as client:
        response = await client.chat.completions.create(model=model, messages=[{"role": "user", "content": text}])
    return response.choices[0].message.content


def test_a_registered_behaviour_and_prefix_are_served_and_listed():
    with LoopbackServer() as server:
        assert asyncio.run(ask(server, "test:shout?times=2", "hi")) == "HI HI"
        assert asyncio.run(ask(server, "test-pick:zebra?p=0.25&latency=0")) == "zebra 0.25"
        with pytest.raises(openai.BadRequestError, match="takes: times"):
            asyncio.run(ask(server, "test:shout?volume=11"))
        with pytest.raises(openai.NotFoundError, match="no behaviour"):
            asyncio.run(ask(server, "test-pick:"))
        assert server.stats()["by_behaviour"] == {"test:shout": 1, "test-pick:zebra": 1}
    listed = listed_behaviours()
    assert listed["test:shout"].startswith("Shouts the last user message")
    assert {"test-pick:a", "test-pick:b"} <= set(listed) and "test-pick:" not in listed
    assert list(listed)[-3:] == ["fixed", "scripted", "echo"]  # the core's own come last


def test_every_installed_game_registers_its_behaviours_through_the_registry():
    listed = listed_behaviours()
    assert {"rule:majority-inertia", "rule:voter", "random", "naming:echo", "naming:noisy",
            "naming:babble"} <= set(listed)
    for name in game_names():
        declared = get_game(name).llm.behaviours
        assert declared is not None, name
        if isinstance(declared, str):  # a module that registers its own when imported
            assert declared in sys.modules, name
        else:  # behaviours as values: each one listed under its own name
            assert set(declared) <= set(listed), name


def test_the_games_behaviours_are_imported_lazily():
    """Importing the loopback server imports no game; listing behaviours imports every installed game's."""
    code = ("import sys\n"
            "from llm_mesa.registry import game_names, get_game\n"
            "from llm_mesa.loopback import LoopbackServer, listed_behaviours\n"
            "before = sorted(m for m in sys.modules if m.startswith('llm_mesa.models'))\n"
            "listed = listed_behaviours()\n"
            "modules = {b for g in game_names() if isinstance(b := get_game(g).llm.behaviours, str)}\n"
            "print(before, all(m in sys.modules for m in modules), len(modules) > 0, 'rule:voter' in listed)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[] True True True"
