"""The replay viewer: scrub through a recorded consensus game, round by round.

Open it with ``llm-mesa viz --replay DIR`` (DIR written by ``llm-mesa consensus
--out DIR``), or ``solara run llm_mesa.visualization.replay_app`` and type the
directory into the page. It reads the run's tables only: no endpoint is called and
no game is played; the network is drawn by the same code as the live explorer.
The sweep browser replays a sweep's games with the same ``ReplayView``.
"""

from __future__ import annotations

import os

import pandas as pd
import solara

from .charts import VegaChart, consensus_charts, llm_charts
from .network_view import NetworkPanel
from .replay import REPLAY_DIR_ENV, RecordedGame, ReplayError

TRANSCRIPT_COLUMNS = ("agent", "colour_before", "colour", "outcome", "reason", "message", "message_to", "failed")


def _plot_frame(game: RecordedGame) -> pd.DataFrame:
    numeric = [c for c in game.rounds.columns
               if c not in ("round", "flippers", "largest_component_colour", "condition", "policy", "seed")
               and pd.api.types.is_numeric_dtype(game.rounds[c])]
    frame = game.rounds[["round", *numeric]].astype({c: float for c in numeric})
    return frame.sort_values("round")


@solara.component
def RoundView(game: RecordedGame, round_number: int, label_class: str = "llm-mesa-replay-round"):
    """The network, status and measures at one recorded round."""
    selected, set_selected = solara.use_state(0)
    colours = game.colours_at(round_number)
    rounds = solara.use_memo(lambda: _plot_frame(game), dependencies=[str(game.path), len(game.rounds)])
    solara.Text(f"Round {round_number} of {game.last_round}", classes=[label_class],
                style={"font-weight": "bold", "font-size": "1.1em"})
    with solara.Columns([3, 2], style={"align-items": "flex-start"}):
        NetworkPanel(game.state_at(round_number, game.details_at(round_number)), selected=selected,
                     on_select=set_selected)
        with solara.Column(classes=["llm-mesa-plots"], style={"min-width": "0"}):
            for cls, spec in consensus_charts(rounds, len(colours), current_round=round_number,
                                              last_round=game.last_round):
                VegaChart(spec, classes=[cls])
            if game.transcript is not None or float(rounds.get("calls", pd.Series([0.0])).sum()) > 0:
                for cls, spec in llm_charts(rounds, current_round=round_number):
                    VegaChart(spec, classes=[cls])
    messages = game.messages_at(round_number)
    solara.Text(f"Messages in round {round_number}: {len(messages)}", style={"font-weight": "bold"})
    if len(messages):
        solara.DataFrame(messages.assign(to=messages["to"].map(lambda v: "neighbours/all" if pd.isna(v) else v)),
                         items_per_page=8)
    decisions = game.transcript_at(round_number)
    if decisions is not None and round_number > 0:
        solara.Text(f"LLM decisions that made round {round_number}: {len(decisions)}", style={"font-weight": "bold"})
        if len(decisions):
            shown = decisions[[c for c in TRANSCRIPT_COLUMNS if c in decisions.columns]].rename(
                columns={"colour_before": "held", "colour": "chose"})
            shown.insert(3, "holds now", [colours[int(v)] for v in decisions["agent"]])
            solara.DataFrame(shown, items_per_page=8)


@solara.component
def RoundScrubber(last_round: int, round_number: int, set_round, classes=("llm-mesa-replay-slider",)):
    """A round slider with its value, and Previous / Next."""
    with solara.Column(classes=list(classes), gap="2px"):
        solara.Text(f"Round shown: {round_number} of {last_round}",
                    style={"font-size": "0.85em", "color": "#555", "margin-bottom": "30px"})
        solara.SliderInt("", value=min(round_number, last_round), min=0, max=max(last_round, 0),
                         on_value=set_round, thumb_label=True)
        with solara.Row():
            solara.Button("Previous", on_click=lambda: set_round(max(0, round_number - 1)), disabled=round_number <= 0)
            solara.Button("Next", on_click=lambda: set_round(min(last_round, round_number + 1)),
                          disabled=round_number >= last_round)


@solara.component
def Page():
    """Choose a run directory, then scrub its rounds with the slider."""
    run_dir, set_run_dir = solara.use_state(os.environ.get(REPLAY_DIR_ENV, ""))
    round_number, set_round = solara.use_state(0)

    def load():
        if not run_dir.strip():
            return None
        try:
            return RecordedGame.load(run_dir)
        except ReplayError as exc:
            return exc

    loaded = solara.use_memo(load, dependencies=[run_dir])
    solara.Title("llm-mesa: replay")
    with solara.Sidebar():
        solara.Markdown("### Replay a recorded game")
        solara.InputText("Run directory (llm-mesa consensus --out DIR)", value=run_dir,
                         on_value=lambda v: (set_run_dir(v.strip()), set_round(0)), continuous_update=False,
                         classes=["llm-mesa-replay-dir"])
        if isinstance(loaded, RecordedGame):
            RoundScrubber(loaded.last_round, min(round_number, loaded.last_round), set_round)
            solara.Text(loaded.outcome_line())
    with solara.Column(style={"padding": "8px 16px"}):
        if loaded is None:
            solara.Info("Type the directory of a recorded game (llm-mesa consensus ... --out DIR) in the sidebar.")
        elif isinstance(loaded, ReplayError):
            solara.Error(str(loaded), classes=["llm-mesa-replay-error"])
        else:
            RoundView(loaded, min(round_number, loaded.last_round))


__all__ = ["Page", "RoundScrubber", "RoundView"]
