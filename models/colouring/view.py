"""What a page shows of the colouring game (``GameView``): who is in conflict, and whether the colouring is proper.

The network is drawn in the agents' colours; a link whose two ends share a colour is a
conflict, drawn as a band in that colour; the agents in conflict (a neighbour holds their
colour) are squares; those that changed colour this round sit in a dashed black ring. The
banner says where the game stands: a proper colouring (and when), or how many links and
agents are still in conflict, and an unsolved end. In this game a same-colour group is not
an echo chamber but a knot of conflicts, so the page offers no chamber map and speaks of
conflicts throughout.

The page opens on a game that can solve: a 38-node cycle with three colours and some
inertia (the study's two colours on a cycle, with every agent answering its neighbours at
once, only oscillate); the study's settings are a click away. Controls that a network does
not use (chords and leaders beside preferential attachment, links per new node beside a cycle)
are hidden.
Plain data only (the public ``llm_mesa`` API): the explorer draws it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from llm_mesa import Banner, GameView, NetworkPicture

LEGEND = {"fill": "colour now", "flagged": "in conflict (a neighbour holds its colour)",
          "plain": "no conflict", "marked": "changed colour this round",
          "bands": "a conflict (both ends hold one colour)"}
#: the page's own starting values: a game that solves within a few rounds (the study's defaults only oscillate)
PAGE_DEFAULTS = {"k": 3, "inertia": 0.2}
#: which network uses which control (a control is shown only where it changes the game)
USED_BY = {"chords": ("cycle", "leader-cycle"), "leaders": ("leader-cycle",), "links": ("pa", "ba")}


class ColouringView(GameView):
    """The colouring page: conflicts drawn and counted, the banner of a proper colouring or of the conflicts left."""

    @property
    def title(self) -> str:
        return "llm-mesa: network colouring (Kearns, Suri and Montfort 2006)"

    def controls(self) -> dict[str, dict[str, Any]]:
        specs = super().controls()
        for name, value in PAGE_DEFAULTS.items():
            specs[name] = {**specs[name], "value": value}
        for name, topologies in USED_BY.items():
            specs[name] = {**specs[name], "when": {"topology": list(topologies)}}
        return specs

    def picture(self, model) -> NetworkPicture | None:
        picture = super().picture(model)
        if picture is None:
            return None
        state = model.colouring()
        flagged = [any(state[u] == state[v] for u in model.neighbours[v]) for v in range(model.n)]
        before = model.history[-2] if len(model.history) > 1 else state
        changed = tuple(v for v in range(model.n) if state[v] != before[v])
        caption = (f"{model.conflicts} conflict{'s' if model.conflicts != 1 else ''}, "
                   f"{sum(flagged)} of {model.n} agents in conflict")
        return replace(picture, flagged=flagged, marked=changed, legend=LEGEND, chambers=False, caption=caption)

    def charts(self, rounds, *, current_round=None, last_round=None, dash=None):
        hidden = ["solved"]  # the banner says whether, and when, the colouring is proper
        if rounds.attrs.get("llm") is False:  # no LLM agent: no failed LLM decision to chart
            hidden.append("failed")
        rounds = rounds.drop(columns=[c for c in hidden if c in rounds.columns])
        return super().charts(rounds, current_round=current_round, last_round=last_round, dash=dash)

    def banners(self, model) -> list[Banner]:
        out = [b for b in super().banners(model) if b.tag != "llm-mesa-ended"]  # the ending is said below
        t, n = model.round, model.n
        if model.solved:
            out.append(Banner("done", f"Proper colouring at round {t}: no two neighbours share a colour; every "
                                      f"player earns {model.payoff:g}.", "llm-mesa-colouring-status"))
            return out
        agents = model.agents_in_conflict()
        words = (f"{model.conflicts} conflict{'s' if model.conflicts != 1 else ''} (links whose ends share a colour), "
                 f"{agents} of {n} agents in conflict (■)")
        if model.running:
            out.append(Banner("info", f"Round {t}: {words}.", "llm-mesa-colouring-status"))
        else:
            out.append(Banner("warning", f"Unsolved at round {t}, the round limit: {words}; nobody is paid.",
                              "llm-mesa-colouring-status"))
        return out


__all__ = ["ColouringView", "PAGE_DEFAULTS", "USED_BY"]
