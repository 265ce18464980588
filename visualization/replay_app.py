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
import time

import solara
import solara.lab

from llm_mesa.errors import LlmMesaError
from llm_mesa.registry import get_game
from llm_mesa.views import view_of
from llm_mesa.views.runs import REPLAY_DIR_ENV, Recording, run_directory

from .panels import RoundLabel, RoundPanel

#: seconds between two rounds while a replay plays (as the live page's Play)
PLAY_INTERVAL = 0.3


@solara.component
def RoundScrubber(first_round: int, last_round: int, shown: solara.Reactive[int],
                  classes=("llm-mesa-replay-slider",)):
    """A round slider with its value, Previous / Next, and Play / Pause (one round each ``PLAY_INTERVAL``).

    Every button reads the round shown, so each is enabled exactly while it can move it:
    Play and Next until the last round, Previous from the second.
    """
    playing = solara.use_reactive(False)
    round_number = min(max(shown.value, first_round), last_round)

    def set_round(value) -> None:
        shown.set(min(max(int(value), first_round), last_round))

    def play_loop() -> None:
        while playing.value and shown.value < last_round:
            time.sleep(PLAY_INTERVAL)
            if playing.value:
                set_round(shown.value + 1)
        playing.set(False)

    solara.lab.use_task(play_loop, dependencies=[playing.value], prefer_threaded=True)
    with solara.Column(classes=list(classes), gap="2px"):
        solara.Text(f"Round shown: {round_number} of {last_round}",
                    style={"font-size": "0.85em", "color": "#555", "margin-bottom": "30px"})
        solara.SliderInt("", value=round_number, min=first_round, max=max(last_round, first_round),
                         on_value=set_round, thumb_label=True)
        with solara.Row(classes=["llm-mesa-replay-buttons"]):
            solara.Button("Previous", on_click=lambda: set_round(round_number - 1),
                          disabled=playing.value or round_number <= first_round, classes=["llm-mesa-previous"])
            solara.Button("Next", on_click=lambda: set_round(round_number + 1),
                          disabled=playing.value or round_number >= last_round, classes=["llm-mesa-next"])
            if playing.value:
                solara.Button("Pause", on_click=lambda: playing.set(False), classes=["llm-mesa-pause"])
            else:
                solara.Button("Play", on_click=lambda: playing.set(True), disabled=round_number >= last_round,
                              color="primary", classes=["llm-mesa-play"])


@solara.component
def RecordingView(recording: Recording, scrubber_in_sidebar: bool = False):
    """A recording's round (slider, round line, banners, picture, charts, agent panel, messages)."""
    shown_round = solara.use_reactive(recording.first_round)
    selected, set_selected = solara.use_state(0)
    shown = min(max(shown_round.value, recording.first_round), recording.last_round)
    snapshot = solara.use_memo(lambda: recording.snapshot(shown, selected),
                               dependencies=[recording.key, shown, selected])
    charts = solara.use_memo(lambda: recording.view.charts(recording.rounds, current_round=shown,
                                                            last_round=recording.last_round),
                             dependencies=[recording.key, shown])
    if scrubber_in_sidebar:
        with solara.Sidebar():
            RoundScrubber(recording.first_round, recording.last_round, shown_round)
            solara.Text(recording.outline(), classes=["llm-mesa-replay-outline"])
    else:
        RoundScrubber(recording.first_round, recording.last_round, shown_round)
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
    """Choose a run directory, then scrub its rounds with the slider.

    A directory that cannot be opened says why above the game shown, which stays:
    a mistyped path never takes the game away.
    """
    run_dir, set_run_dir = solara.use_state(os.environ.get(REPLAY_DIR_ENV, ""))
    loaded = solara.use_memo(lambda: open_recording(run_dir), dependencies=[run_dir])
    kept = solara.use_ref(None)  # the last recording that opened, and its directory
    if isinstance(loaded, Recording):
        kept.current = (run_dir, loaded)
    solara.Title("llm-mesa: replay")
    with solara.Sidebar():
        solara.Markdown("### Replay a recorded game")
        solara.InputText("Run directory (llm-mesa GAME ... --out DIR)", value=run_dir,
                         on_value=lambda v: set_run_dir(v.strip()), continuous_update=False,
                         classes=["llm-mesa-replay-dir"])
    with solara.Column(style={"padding": "8px 16px"}, classes=["llm-mesa-page"]):
        if isinstance(loaded, LlmMesaError):
            still = f" The game shown is still the one in {kept.current[0]}." if kept.current is not None else ""
            solara.Error(str(loaded) + still, classes=["llm-mesa-replay-error"])
        if kept.current is None:
            if loaded is None:
                solara.Info("Type the directory of a recorded game (llm-mesa GAME ... --out DIR) in the sidebar.")
        else:
            RecordingView(kept.current[1], scrubber_in_sidebar=True).key(kept.current[1].key)


__all__ = ["Page", "RecordingView", "RoundScrubber", "open_recording"]
