"""What a page shows of a game's model, as plain data: the seam between games and the explorer.

The explorer (and Mesa's own ``SolaraViz`` through llm-mesa's components) asks a
game's ``GameView`` (``Game.view()``) for everything it draws: the controls, a model
built from their values, the network picture of a round, the per-round table and
its charts, one agent's details, and a banner. A game never imports the explorer:
it describes, the explorer draws. The defaults here work for any game whose model
keeps its agents on a Mesa ``Network`` space (``mesa.discrete_space.Network``) and
records its rounds with a ``DataCollector``; a game improves on them by subclassing
``GameView`` and giving it in ``Game.extensions.view``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from llm_mesa.errors import LlmMesaError

if TYPE_CHECKING:
    import networkx as nx
    import pandas as pd
    from mesa import Model

    from llm_mesa.games import Game

#: the category colours of agents' states, in order (matplotlib's tab10)
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf")


class ControlError(LlmMesaError):
    """A control value that cannot make a game; ``control`` names the control at fault."""

    def __init__(self, control: str, message: str) -> None:
        super().__init__(message)
        self.control = control


@dataclass(frozen=True)
class NetworkPicture:
    """One round of a game on a graph, as a page draws it.

    ``state``: each node's category (its fill; ``palette`` maps categories to colours);
    ``ring``: an optional second category per node (drawn as its ring, e.g. a
    preference); ``flagged``: nodes drawn as squares (e.g. an agent whose
    neighbourhood disagrees); ``marked``: nodes drawn as ringed diamonds (e.g.
    flippers); ``details``: each node's tooltip rows.
    """

    graph: nx.Graph
    layout: Mapping[Any, Sequence[float]]
    state: Sequence[str]
    round_number: int
    palette: Mapping[str, str] = field(default_factory=dict)
    ring: Sequence[str] | None = None
    flagged: Sequence[bool] | None = None
    marked: tuple[int, ...] = ()
    details: Sequence[Mapping[str, Any]] | None = field(default=None, compare=False)
    key: Any = None


@dataclass(frozen=True)
class Banner:
    """A one-line status above the picture: ``kind`` is ``done``, ``warning`` or ``info``."""

    kind: str
    text: str


class GameView:
    """The default view of a game: controls from its parameters, its model's network and rounds."""

    def __init__(self, game: Game) -> None:
        self.game = game

    def build(self, parameters: Mapping[str, Any], policy: Any, seed: int) -> Model:
        """A model of the game (the explorer's Reset)."""
        return self.game.build(self.game.parameters.validate(parameters, complete=True), policy, seed)

    def rounds(self, model: Model) -> pd.DataFrame:
        """The per-round table the charts are drawn from (round 0 the start)."""
        return self.game.table(model, "rounds")


__all__ = ["Banner", "ControlError", "GameView", "NetworkPicture", "PALETTE"]
