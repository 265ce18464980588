"""What a page shows of the colouring game (``GameView``): who is in conflict, and whether the colouring is proper.

The network is drawn in the agents' colours, the agents in conflict (a neighbour holds
their colour) as squares, those that changed colour this round ringed; the banner says where the game stands, as the consensus page
does: a proper colouring (and when), or how many links and agents are still in conflict,
and an unsolved end. Plain data only (the public ``llm_mesa`` API): the explorer draws it.
"""

from __future__ import annotations

from dataclasses import replace

from llm_mesa import Banner, GameView, NetworkPicture

LEGEND = {"fill": "colour now", "flagged": "in conflict (a neighbour holds its colour)",
          "plain": "no conflict", "groups": "same-colour groups", "marked": "changed colour this round"}


class ColouringView(GameView):
    """The colouring page: the banner of a proper colouring or of the conflicts left."""

    @property
    def title(self) -> str:
        return "llm-mesa: network colouring (Kearns, Suri and Montfort 2006)"

    def round_label(self, model) -> str:
        return f"Round {model.round} of {model.max_rounds}" + ("" if model.running else " (the game has ended)")

    def picture(self, model) -> NetworkPicture | None:
        picture = super().picture(model)
        if picture is None:
            return None
        state = model.colouring()
        flagged = [any(state[u] == state[v] for u in model.neighbours[v]) for v in range(model.n)]
        before = model.history[-2] if len(model.history) > 1 else state
        changed = tuple(v for v in range(model.n) if state[v] != before[v])
        return replace(picture, flagged=flagged, marked=changed, legend=LEGEND)

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


__all__ = ["ColouringView"]
