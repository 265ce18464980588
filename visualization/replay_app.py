"""The replay viewer: scrub through a recorded game of any game, round by round.

Open it with ``llm-mesa viz --replay DIR`` (DIR written by ``llm-mesa GAME ... --out
DIR``), or ``solara run llm_mesa.visualization.replay_app`` and type the directory
into the page. The game is the one the run's manifest names; its view reads the
run's tables (``GameView.recording``): no endpoint is called. The round is drawn by
the same pieces as the live page, agent panel included; the sweep browser replays a
sweep's games with the same ``RecordingView``.
"""

from __future__ import annotations

import os

import solara

from llm_mesa.errors import LlmMesaError
from llm_mesa.registry import get_game
from llm_mesa.views import view_of
from llm_mesa.views.runs import REPLAY_DIR_ENV, Recording, run_directory

from .panels import RoundLabel, RoundPanel


@solara.component
def RoundScrubber(first_round: int, last_round: int, round_number: int, set_round,
                  classes=("llm-mesa-replay-slider",)):
    """A round slider with its value, and Previous / Next."""
    with solara.Column(classes=list(classes), gap="2px"):
        solara.Text(f"Round shown: {round_number} of {last_round}",
                    style={"font-size": "0.85em", "color": "#555", "margin-bottom": "30px"})
        solara.SliderInt("", value=min(max(round_number, first_round), last_round), min=first_round,
                         max=max(last_round, first_round), on_value=set_round, thumb_label=True)
        with solara.Row():
            solara.Button("Previous", on_click=lambda: set_round(max(first_round, round_number - 1)),
                          disabled=round_number <= first_round)
            solara.Button("Next", on_click=lambda: set_round(min(last_round, round_number + 1)),
                          disabled=round_number >= last_round)


@solara.component
def RecordingView(recording: Recording, scrubber_in_sidebar: bool = False):
    """A recording's round (slider, round line, banners, picture, charts, agent panel, messages)."""
    round_number, set_round = solara.use_state(recording.first_round)
    selected, set_selected = solara.use_state(0)
    shown = min(max(round_number, recording.first_round), recording.last_round)
    snapshot = solara.use_memo(lambda: recording.snapshot(shown, selected),
                               dependencies=[recording.key, shown, selected])
    charts = solara.use_memo(lambda: recording.view.charts(recording.rounds, current_round=shown,
                                                            last_round=recording.last_round),
                             dependencies=[recording.key, shown])
    if scrubber_in_sidebar:
        with solara.Sidebar():
            RoundScrubber(recording.first_round, recording.last_round, shown, set_round)
            solara.Text(recording.outline(), classes=["llm-mesa-replay-outline"])
    else:
        RoundScrubber(recording.first_round, recording.last_round, shown, set_round)
        solara.Text(recording.outline(), classes=["llm-mesa-replay-outline"])
    RoundLabel(snapshot.label, classes=("llm-mesa-replay-round",))
    RoundPanel(snapshot, charts, on_select=set_selected)


def open_recording(path: str) -> Recording | LlmMesaError | None:
    """The run at ``path`` with its game's view, or the one-line error that says why not."""
    if not path.strip():
        return None
    try:
        folder, manifest = run_directory(path)
        return view_of(get_game(str(manifest["kind"]))).recording(folder)
    except LlmMesaError as exc:
        return exc


@solara.component
def Page():
    """Choose a run directory, then scrub its rounds with the slider."""
    run_dir, set_run_dir = solara.use_state(os.environ.get(REPLAY_DIR_ENV, ""))
    loaded = solara.use_memo(lambda: open_recording(run_dir), dependencies=[run_dir])
    solara.Title("llm-mesa: replay")
    with solara.Sidebar():
        solara.Markdown("### Replay a recorded game")
        solara.InputText("Run directory (llm-mesa GAME ... --out DIR)", value=run_dir,
                         on_value=lambda v: set_run_dir(v.strip()), continuous_update=False,
                         classes=["llm-mesa-replay-dir"])
    with solara.Column(style={"padding": "8px 16px"}, classes=["llm-mesa-page"]):
        if loaded is None:
            solara.Info("Type the directory of a recorded game (llm-mesa GAME ... --out DIR) in the sidebar.")
        elif isinstance(loaded, LlmMesaError):
            solara.Error(str(loaded), classes=["llm-mesa-replay-error"])
        else:
            RecordingView(loaded, scrubber_in_sidebar=True).key(loaded.key)


__all__ = ["Page", "RecordingView", "RoundScrubber", "open_recording"]
