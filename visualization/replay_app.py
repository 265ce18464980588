"""The replay viewer: scrub through a recorded consensus game, round by round.

Open it with ``llm-mesa viz --replay DIR`` (DIR written by ``llm-mesa consensus
--out DIR``), or ``solara run llm_mesa.visualization.replay_app`` and type the
directory into the page. It reads the run's tables only: no endpoint is called and
no game is played; the network is drawn by the same code as the live explorer.
"""

from __future__ import annotations

import os

import pandas as pd
import solara

from .network_view import LLM_PLOTS, ROUND_PLOTS, round_chart, status_banner
from .replay import REPLAY_DIR_ENV, RecordedGame, ReplayError

#: The replay has the page to itself: a larger picture than the live view's grid cell.
PICTURE = {"size": (8.6, 4.4), "dpi": 90}
TRANSCRIPT_COLUMNS = ("agent", "colour_before", "colour", "outcome", "reason", "message", "message_to", "failed")


def _plot_frame(game: RecordedGame, columns: dict[str, str]) -> pd.DataFrame:
    present = [c for c in columns if c in game.rounds.columns]
    return game.rounds[["round", *present]].astype({c: float for c in present})


@solara.component
def RoundView(game: RecordedGame, round_number: int):
    """The network, status and measures at one recorded round."""
    row = game.round_row(round_number)
    colours = game.colours_at(round_number)
    with solara.Column(classes=["llm-mesa-network"]):
        solara.Text(f"Round {round_number} of {game.last_round}", classes=["llm-mesa-replay-round"],
                    style={"font-weight": "bold", "font-size": "1.1em"})
        status_banner(round_number, colours, bool(row.get("pseudo_equilibrium", False)),
                      game.flippers_at(round_number), float(row["local_agreement"]))
        solara.FigureMatplotlib(game.figure_at(round_number, **PICTURE), format="png",
                                dependencies=[str(game.path), round_number])
    with solara.Column(classes=["llm-mesa-plots"]):
        solara.FigureAltair(round_chart(_plot_frame(game, ROUND_PLOTS), ROUND_PLOTS,
                                        "per round (orange dashes: the round shown)", current_round=round_number))
    if game.transcript is not None or float(game.rounds.get("calls", pd.Series([0])).sum()) > 0:
        solara.FigureAltair(round_chart(_plot_frame(game, LLM_PLOTS), LLM_PLOTS, "LLM calls per round",
                                        current_round=round_number))
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
            with solara.Column(classes=["llm-mesa-replay-slider"], style={"padding-top": "34px"}):
                solara.SliderInt("Round", value=min(round_number, loaded.last_round), min=0,
                                 max=loaded.last_round, on_value=set_round, thumb_label="always")
            with solara.Row():
                solara.Button("Previous", on_click=lambda: set_round(max(0, round_number - 1)),
                              disabled=round_number <= 0)
                solara.Button("Next", on_click=lambda: set_round(min(loaded.last_round, round_number + 1)),
                              disabled=round_number >= loaded.last_round)
            solara.Text(loaded.outcome_line())
    with solara.Column(style={"padding": "12px"}):
        solara.Markdown("## llm-mesa: replay of a recorded consensus game")
        if loaded is None:
            solara.Info("Type the directory of a recorded game (llm-mesa consensus ... --out DIR) in the sidebar.")
        elif isinstance(loaded, ReplayError):
            solara.Error(str(loaded), classes=["llm-mesa-replay-error"])
        else:
            RoundView(loaded, min(round_number, loaded.last_round))


__all__ = ["Page", "RoundView"]
