"""The one place a page reads an agent's state and name: every picture, panel and replay asks here.

A page fills a node or a cell by an agent's *state* and calls the agent by its *name*.
Both are read here and nowhere else, so that a game whose agents keep their state
elsewhere (an unchanged Mesa model's ``wealth``, ``type`` or ``move``) is drawn by
changing this one function, not every page.

The name is the one the game's tables use (``llm_mesa.games.agent_names``): a network's
node, else Mesa's ``unique_id``. The agent panel, the pictures' tooltips, the observation
and the tables then all count agents one way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: the attribute a page reads an agent's state from, unless the view (or the game) says another
STATE_ATTRIBUTE = "state"


def state_of(holder: Any, agent: Any) -> Any:
    """What a page fills ``agent``'s node or cell by (None: no agent there).

    Args:
        holder: The game's view (or the game): the game's declared ``Extensions.state`` reads the state (a Mesa
            model's agents keep theirs as they like); else the view's ``state_attribute`` names the agent's
            attribute that holds it (default ``state``).
        agent: An agent, or None.

    Returns:
        The agent's state, or None.
    """
    if agent is None:
        return None
    game = getattr(holder, "game", holder)
    declared = getattr(getattr(game, "extensions", None), "state", None)
    if declared is not None:
        from llm_mesa.game_hooks import call

        return call(game, "state", declared, game, agent)
    attribute = getattr(holder, "state_attribute", None) or STATE_ATTRIBUTE
    return getattr(agent, attribute, None)


def names_of(model: Any, agents: Sequence[Any], nodes: Sequence[Any] | None = None) -> list[Any]:
    """Each of ``agents`` by its name in the game's tables; an empty network node (None) by the node."""
    from llm_mesa.declared import agent_names

    named = agent_names(model)
    out = []
    for i, agent in enumerate(agents):
        if agent is not None and agent in named:
            out.append(named[agent])
        else:
            out.append(nodes[i] if nodes is not None and i < len(nodes) else getattr(agent, "unique_id", i))
    return out


__all__ = ["STATE_ATTRIBUTE", "names_of", "state_of"]
