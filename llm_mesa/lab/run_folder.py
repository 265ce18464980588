"""A lab's game as a run folder: the game's own tables, summary and manifest, with its people marked.

The folder is what ``llm-mesa GAME --out DIR`` writes for the game (``llm_mesa.declared.run_tables``),
so ``llm-mesa viz --replay DIR`` and every reader of run folders open it as they open any
game, and besides:

* every per-agent table (one with an ``agent`` or ``node`` column) says who decided for
  each agent: ``policy`` (the agent's policy spec, ``human`` for a seat), ``label``
  (``human``, ``llm`` or ``rule``) and ``seat`` (its number, empty for the others); one
  per agent and round adds ``response_s`` (the seconds the seat's answer took) and
  ``timeout`` (the seat missed the deadline: the game's default action was played);
* ``seats``: one row per seat decision (seat, agent, round, turn, the answer as the JSON a
  model would have sent, seconds taken, timeout);
* the summary row adds ``seats``, ``seat_agents``, ``answers`` and ``timeouts`` (missed
  answers: never failed LLM decisions, never a reason for the invalid verdict);
* the manifest adds ``lab``: the seats and their agents, the deadline, the store, and the
  command that replays the game without the people. No token is ever written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from llm_mesa import declared, play
from llm_mesa.games import agent_names
from llm_mesa.lab.seat import SeatPolicy

if TYPE_CHECKING:
    from llm_mesa.lab.session import LabSession

SEATS_COLUMNS = ["seat", "agent", "round", "activation", "answer", "response_s", "timeout"]


def who_decides(session: LabSession) -> pd.DataFrame:
    """One row per agent: its name in the tables, its policy spec, its label, its seat (if any)."""
    rows = []
    for agent, name in agent_names(session.model).items():
        policy = getattr(agent, "policy", None)
        seat = policy.seat.number if isinstance(policy, SeatPolicy) else None
        label = "human" if seat is not None else "llm" if getattr(policy, "is_async", False) else "rule"
        spec = policy.spec() if callable(getattr(policy, "spec", None)) else str(policy)
        rows.append({"name": name, "policy": spec, "label": label, "seat": seat})
    frame = pd.DataFrame(rows, columns=["name", "policy", "label", "seat"])
    frame["seat"] = frame["seat"].astype("Int64")
    return frame


def seats_table(session: LabSession) -> pd.DataFrame:
    """One row per seat decision, in the order of the game (round, turn, seat), whoever answered first."""
    frame = pd.DataFrame([vars(a) for a in session.answers], columns=SEATS_COLUMNS)
    frame = frame.sort_values(["round", "activation", "seat"], na_position="first", kind="stable", ignore_index=True)
    return frame.astype({"seat": "Int64", "round": "Int64", "activation": "Int64", "answer": "string",
                         "response_s": "float64", "timeout": "boolean"})


def marked(frame: pd.DataFrame, who: pd.DataFrame, answers: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with who decided for each of its agents, and per round the seats' response times and timeouts."""
    column = next((c for c in ("agent", "node") if c in frame.columns), None)
    if column is None:
        return frame
    out = frame.copy()
    by_name = who.set_index("name")
    for name in ("policy", "label", "seat"):
        if name not in out.columns:
            values = out[column].map(by_name[name])
            out[name] = values.astype("Int64") if name == "seat" else values.astype("string")
    if "round" in out.columns:
        per_round = (answers.groupby(["round", "agent"], sort=False)
                     .agg(response_s=("response_s", "last"), timeout=("timeout", "any")).reset_index())
        per_round = per_round.rename(columns={"agent": column})
        if per_round[column].dtype != out[column].dtype:
            per_round[column] = per_round[column].astype(out[column].dtype, errors="ignore")
        per_round["round"] = per_round["round"].astype(out["round"].dtype, errors="ignore")
        out = out.merge(per_round, on=["round", column], how="left")
        out["timeout"] = out["timeout"].astype("boolean").fillna(False)
    return out


def lab_tables(session: LabSession) -> dict[str, pd.DataFrame]:
    """The run folder's tables: the game's own, marked, and ``seats``."""
    who = who_decides(session)
    answers = seats_table(session)
    tables = {name: marked(frame, who, answers) for name, frame in declared.run_tables(session.game, session.model).items()}
    tables["seats"] = answers
    return tables


def lab_summary(session: LabSession, spec: str) -> dict[str, Any]:
    """The game's summary row with the lab's columns (and, for LLM agents, their use and the core's verdict)."""
    game, model = session.game, session.model
    row = play.finish(game, model, session.parameters, session.llm_policies).row  # the one pipeline's end
    open_seats = session.open_seats()
    row.update(seats=len(open_seats), seat_agents=[s.agent for s in open_seats],
               answers=sum(not a.timeout for a in session.answers), timeouts=session.timeouts)
    return {"game": game.name, **row, "policy": spec, "seed": session.seed}


def lab_manifest_part(session: LabSession, replay: str) -> dict[str, Any]:
    """The manifest's ``lab`` entry: seats, agents, deadline, store, the replay command (no token)."""
    store = session.store
    return {"seats": [{"seat": s.number, "agent": s.agent, "opened": s.joined, "closed": s.closed,
                       "timeouts": s.timeouts} for s in session.seats],
            "deadline_s": session.deadline, "store": None if store is None else store.manifest(), "replay": replay}


__all__ = ["SEATS_COLUMNS", "lab_manifest_part", "lab_summary", "lab_tables", "marked", "seats_table", "who_decides"]
