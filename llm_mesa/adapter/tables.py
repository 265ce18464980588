"""A Mesa model's tables and summary row, read from what the model keeps and what its decisions were.

* ``rounds``: the model's ``DataCollector`` model reporters, one row per step (0 the start: a model that collects
  only after each step has its start read by its reporters as the game begins), under
  their own names; a model with no DataCollector gets the decisions taken each step instead;
* ``agents``: each agent at the end of each step: its declared state, its cell (``x``, ``y`` on a
  grid; on a network the agent is named by its node), its answers that step, and the
  DataCollector's agent reporters where the model has any (Epstein's ``jail_sentence``);
* ``decisions``: every decision: the round, the agent, what it saw (``view_*``) and its answer,
  what ``llm-mesa fit`` weighs rules against;
* the summary row: the DataCollector's last values, the rounds played, the share of decisions that
  agree with the model's own rule (where its rule is certain), the depth of the turns (where
  decisions are taken at turns), and the game's own columns.
"""

from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING, Any

from llm_mesa.adapter.hooks import hooks_of

if TYPE_CHECKING:
    import pandas as pd

    from llm_mesa.adapter.game import MesaGame
    from llm_mesa.adapter.hooks import Hooks


def name_of(agent: Any, on_network: bool) -> Any:
    """An agent's name in the game's tables: one name everywhere, as its prompts and seats use it.

    Args:
        agent: A Mesa agent.
        on_network: Whether the model's agents sit one to a node of a network.

    Returns:
        Its node on a network, else its ``unique_id``.
    """
    cell = getattr(agent, "cell", None)
    return cell.coordinate if on_network and cell is not None else agent.unique_id


def snapshot(game: MesaGame, model: Any, hooks: Hooks) -> None:
    """Keep every agent's state and cell, and the decisions' counts, as the step ends (round 0: as the game starts),
    for the ``agents`` and ``rounds`` tables.

    Args:
        game: The game (its ``state``).
        model: Its model.
        hooks: The model's hooks, which keep the rows.
    """
    from llm_mesa.declared import network_nodes

    if not hasattr(hooks, "on_network"):
        hooks.on_network = bool(network_nodes(model))
        hooks.agent_rows, hooks.round_rows = [], []
        collector = getattr(model, "datacollector", None)
        hooks.start_row = None
        if collector is not None and not any(collector.model_vars.values()):  # it collects only after each step
            from llm_mesa.mesa_versions import report

            hooks.start_row = {name: report(reporter, model) for name, reporter in collector.model_reporters.items()}
    for agent in model.agents:
        row = {"round": hooks.round, "agent": name_of(agent, hooks.on_network), "state": game.state_of(agent)}
        coordinate = getattr(getattr(agent, "cell", None), "coordinate", None)
        if isinstance(coordinate, tuple) and len(coordinate) == 2:
            row["x"], row["y"] = coordinate
        hooks.agent_rows.append(row)
    # this round's decisions, the last records kept (a game's rounds only grow), in the order they were made
    made = list(itertools.takewhile(lambda r: r["round"] == hooks.round, reversed(hooks.records)))[::-1]
    counts = {f"{r['decision']}_{r['answer']}": 0 for r in made if r["answer"] is not None}
    for r in made:
        if r["answer"] is not None:
            counts[f"{r['decision']}_{r['answer']}"] += 1
    hooks.round_rows.append({"round": hooks.round, "decisions": len(made), **counts})


def rounds_table(model: Any) -> pd.DataFrame:
    """The ``rounds`` table: the DataCollector's model reporters, one row a step (0 the start), under their own
    names; for a model with no DataCollector, each step's decisions and answers counted."""
    import pandas as pd

    collector = getattr(model, "datacollector", None)
    if collector is None:
        return pd.DataFrame(hooks_of(model).round_rows).fillna(0)
    hooks = hooks_of(model)
    frame = collector.get_model_vars_dataframe().reset_index(drop=True)
    if hooks.start_row is not None:  # the start, read as its DataCollector reads a step, before the model's first row
        frame = pd.concat([pd.DataFrame([hooks.start_row]), frame], ignore_index=True)
    return frame.assign(round=range(len(frame)))[["round", *frame.columns]]


def agents_table(model: Any) -> pd.DataFrame:
    """The ``agents`` table: each agent at the end of each step, its state, cell and answers, with the
    DataCollector's agent reporters where the model has any."""
    import pandas as pd

    hooks = hooks_of(model)
    frame = pd.DataFrame(hooks.agent_rows)
    made = decisions_table(model)
    if len(made):
        answers = made.pivot_table(index=["round", "agent"], columns="decision", values="answer", aggfunc="last")
        answers.columns = [str(c) for c in answers.columns]
        frame = frame.merge(answers.reset_index(), on=["round", "agent"], how="left")
    collector = getattr(model, "datacollector", None)
    reported = collector.get_agent_vars_dataframe().reset_index() if collector is not None and \
        collector.agent_reporters else None
    if reported is not None and len(reported):
        reported = reported.rename(columns={reported.columns[0]: "round", reported.columns[1]: "agent"})
        reported["round"] = reported["round"].astype(int)
        if hooks.on_network:
            names = {a.unique_id: name_of(a, True) for a in model.agents}
            reported["agent"] = reported["agent"].map(names)
        own = [c for c in reported.columns if c not in frame.columns or c in ("round", "agent")]
        frame = frame.merge(reported[own], on=["round", "agent"], how="left")
    return frame


def decisions_table(model: Any) -> pd.DataFrame:
    """The ``decisions`` table: every decision's round, agent, name, what it saw (``view_*``) and its answer."""
    import pandas as pd

    hooks = hooks_of(model)
    frame = pd.DataFrame(hooks.records, columns=None if hooks.records else ["round", "agent", "decision", "answer"])
    if hooks.on_network and len(frame):
        names = {a.unique_id: name_of(a, True) for a in model.agents}
        frame["agent"] = frame["agent"].map(lambda v: names.get(v, v))
    return frame


def summary(game: MesaGame, model: Any) -> dict[str, Any]:
    """The finished game's summary row (``Extensions.summary``).

    Args:
        game: The game (its ``columns`` and decisions).
        model: Its model, played.

    Returns:
        The DataCollector's last values, ``rounds``, ``mesa_agreement`` (where the rule is certain), ``depth``
        (where decisions are taken at turns) and the game's own columns.
    """
    hooks = hooks_of(model)
    collector = getattr(model, "datacollector", None)
    row: dict[str, Any] = {"rounds": hooks.round}
    if collector is not None:
        row.update({name: _plain(values[-1]) for name, values in collector.model_vars.items() if values})
    row.update({name: _plain(column(model)) for name, column in game.columns.items()})
    if any(d.timing_of(model) == "turn" or callable(d.timing) for d in game.decisions):
        row["depth"] = hooks.depth
    if hooks.comparable or not hooks.decided:  # a rule that draws has no answer to agree with
        row["mesa_agreement"] = hooks.agreed / hooks.comparable if hooks.comparable else 1.0
    return row


def _plain(value: Any) -> Any:
    """A value a summary row keeps: numbers as Python numbers (an infinite ratio as None), else the value."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


__all__ = ["agents_table", "decisions_table", "name_of", "rounds_table", "snapshot", "summary"]
