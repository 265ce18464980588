"""The Solara explorer of SIGN, the schema-induced naming game: one game per visitor.

Run it with ``llm-mesa viz --game naming`` (which first makes the front-end
available offline), or ``solara run llm_mesa.visualization.naming_app`` once the
asset cache is filled.

It only draws: pairing, speaking, decoding, the update rule and every measure come
from ``llm_mesa.models.naming``. The one thing kept here is the count of each name
held after every round, which the model does not tabulate and the "names in use"
plot needs.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pandas as pd
import solara

from llm_mesa.llm.endpoint import EndpointError
from llm_mesa.models.naming.model import NamingModel
from llm_mesa.models.naming.observation import NamingConfigError
from llm_mesa.models.naming.parameters import PARAMETERS
from llm_mesa.parameters import ParameterError

from . import naming_charts
from .builtin_endpoint import BUILTIN, resolve_endpoint
from .charts import VegaChart
from .consensus_game import check_endpoint_text
from .controls import GENERAL, ControlError, ControlPanel, ErrorNote, GameButtons, use_session
from .naming_charts import AGREEMENT_SERIES, agreement_frame, outcomes_chart, outcomes_frame

#: The loopback stand-in endpoint (``llm-mesa serve``): the default, so the page works offline.
LOOPBACK_ENDPOINT = BUILTIN
#: The loopback's SIGN speaker that sometimes breaks the schema, so retries and salvages show.
LOOPBACK_NAMING_MODEL = "naming:noisy?p=0.3"
SPEAKERS = ("echo", "noisy:p=0.3", "minimal", "llm")
TITLE = "llm-mesa: naming game (SIGN)"


class ExplorerNamingModel(NamingModel):
    """NamingModel with the explorer's controls as keyword arguments.

    Translates controls (a speaker choice, an endpoint, a seed) into the model's
    arguments, and counts the names held after each round for the "names in use" plot.
    """

    def __init__(self, n: int = 12, mode: str = "schema", memory: int = 5, alpha: float = 0.5,
                 pairing: str = "all", speaker: str = "echo", llm_endpoint: str = LOOPBACK_ENDPOINT,
                 llm_model: str = LOOPBACK_NAMING_MODEL, seed: int = 1, rounds: int = 300,
                 rng: int | None = None, check_endpoint: bool = False) -> None:
        memory = 0 if mode == "nl" else int(memory)  # NL has no memory by definition
        super().__init__(n=int(n), mode=mode, memory=memory, alpha=float(alpha), pairing=pairing,
                         speaker=build_speaker(speaker, llm_endpoint, llm_model, check=check_endpoint),
                         max_rounds=int(rounds), rng=int(seed) if rng is None else rng)
        self.names_held: list[Counter] = [self._held()]

    def _held(self) -> Counter:
        return Counter(agent.name for agent in self.players)

    def step(self) -> None:
        super().step()
        self.names_held.append(self._held())


def build_speaker(choice: str, endpoint: str, model_name: str, *, check: bool = False):
    """A registry spec for rule speakers; an LLM speaker at ``endpoint`` for ``llm`` (asked first when ``check``)."""
    if choice.split(":")[0] != "llm":
        return choice
    from llm_mesa.llm.client import preflight
    from llm_mesa.models.naming.llm_speaker import LLMSpeaker, sign_endpoint

    if not (model_name or "").strip():
        raise NamingConfigError("the LLM speaker needs a model name; e.g. naming:noisy?p=0.3 on the loopback")
    target = sign_endpoint(resolve_endpoint(endpoint), model_name.strip())
    if check:
        preflight(target)
    return LLMSpeaker(target)


def model_params() -> dict:
    """The page's controls: the game's own parameters, then speaker, endpoint and seed."""
    game = PARAMETERS.controls(
        ["n", "mode", "memory", "alpha", "pairing"],
        n={"min": 2, "max": 48, "step": 2},
        memory={"type": "SliderInt", "value": 5, "min": 0, "max": 10, "step": 1, "label": "Memory K (nl: always 0)"})
    return {
        **game,
        "speaker": {"type": "Select", "value": "echo", "values": list(SPEAKERS), "label": "Speaker"},
        "llm_endpoint": {"type": "InputText", "value": LOOPBACK_ENDPOINT,
                         "label": "LLM endpoint (base URL, or loopback: the built-in stand-in)"},
        "llm_model": {"type": "InputText", "value": LOOPBACK_NAMING_MODEL, "label": "LLM model"},
        "seed": {"type": "InputInt", "value": 1, "min": 0, "label": "Seed"},
        "rounds": {**PARAMETERS["max_rounds"].control_spec(), "min": 10, "max": 500, "step": 10, "label": "Rounds"},
    }


def build_model(values: dict[str, Any]) -> ExplorerNamingModel:
    """A game from control values, every error reported against its control; the endpoint asked first."""
    for name, parameter in (("n", "n"), ("mode", "mode"), ("alpha", "alpha"), ("pairing", "pairing"),
                            ("rounds", "max_rounds")):
        try:
            PARAMETERS[parameter].convert(values[name])
        except ParameterError as exc:
            raise ControlError(name, str(exc)) from None
    seed = values.get("seed")
    if not isinstance(seed, int) or seed < 0:
        raise ControlError("seed", f"the seed must be a whole number >= 0 (got {seed!r})")
    if values.get("speaker") == "llm":
        check_endpoint_text(values["llm_endpoint"])
        if not str(values.get("llm_model", "")).strip():
            raise ControlError("llm_model", f"the LLM model name is empty: name the model the endpoint serves "
                                            f"(on {BUILTIN}: {LOOPBACK_NAMING_MODEL})")
    try:
        return ExplorerNamingModel(**values, check_endpoint=True)
    except EndpointError as exc:
        raise ControlError("llm_endpoint", str(exc).replace("--base-url ", "")) from None
    except (NamingConfigError, ValueError) as exc:
        text = str(exc)
        control = next((c for c in ("memory", "alpha", "mode", "pairing", "speaker") if c in text.lower()), GENERAL)
        raise ControlError(control, text) from None


# --- what the views read from a game -------------------------------------------------


def names_frame(model: ExplorerNamingModel) -> pd.DataFrame:
    """Long table (round, name, agents): how many agents hold each name after each round."""
    rows = [{"round": r, "name": name, "agents": count}
            for r, held in enumerate(model.names_held) for name, count in held.items()]
    return pd.DataFrame(rows, columns=["round", "name", "agents"])


def agreement_chart(model: NamingModel):
    return naming_charts.agreement_chart(model)


def names_chart(model: ExplorerNamingModel):
    return naming_charts.names_chart(names_frame(model), list(model.lexicon), model.n, model.steps)


def status_line(model: NamingModel) -> tuple[str, str]:
    """(kind, text): the leading name and this round's agreement."""
    if model.steps == 0:
        return "info", "Press Step or Play to run rounds."
    row = model.round_stats
    text = (f"Agreement {row['agreement']:.2f} (most said: {row['top_said'] or 'none'}); "
            f"{row['held_share']:.0%} hold {row['top_held']}; "
            f"{row['distinct_held']} name{'' if row['distinct_held'] == 1 else 's'} in use.")
    if row["held_share"] == 1.0:
        return "success", f"Consensus: every agent holds {row['top_held']}. " + text
    return "info", text


@solara.component
def GameView(model: ExplorerNamingModel, version: int, lock=None):
    """The running game, read under the session's lock (Play steps in a thread)."""
    with lock if lock is not None else contextlib.nullcontext():
        speakers = ", ".join(sorted({a.speaker.spec() for a in model.players}))
        solara.Text(f"{model.n} agents, mode {model.mode}, K={model.memory_size}, alpha={model.alpha}, "
                    f"pairing {model.pairing}, speakers {speakers}")
        kind, text = status_line(model)
        (solara.Success if kind == "success" else solara.Info)(text, dense=True, classes=["llm-mesa-naming-status"])
        failures = int(model.round_stats.get("failures") or 0) if model.steps else 0
        if failures:
            said = int(model.round_stats.get("utterances") or 0)
            solara.Error(f"Round {model.steps}: {failures} of {said} utterances failed (the LLM call or its reading).",
                         dense=True, classes=["llm-mesa-failures"])
        if model.totals.calls:
            solara.Text(f"LLM: {model.totals.calls:,} calls, {model.totals.prompt_tokens:,} prompt + "
                        f"{model.totals.completion_tokens:,} completion tokens, {model.totals.failures} failed calls")
        with solara.Columns([1, 1], style={"align-items": "flex-start"}):
            with solara.Column(style={"min-width": "0"}):
                VegaChart(agreement_chart(model).to_dict(), classes=["llm-mesa-naming-agreement"])
                VegaChart(names_chart(model).to_dict(), classes=["llm-mesa-naming-names"])
            with solara.Column(style={"min-width": "0"}):
                VegaChart(outcomes_chart(model).to_dict(), classes=["llm-mesa-naming-outcomes"])
                said = [{"agent": a.unique_id, "held": a.name, "said": a.utterance.name or "-",
                         "decoded by": a.utterance.outcome, "reply": (a.utterance.replies or ["-"])[-1]}
                        for a in model.players if a.utterance is not None]
                with solara.Column(classes=["llm-mesa-naming-utterances"]):
                    solara.Text(f"Round {model.steps}: {len(said)} utterances", style={"font-weight": "bold"})
                    if said:
                        solara.DataFrame(pd.DataFrame(said), items_per_page=6)


@solara.component
def Page():
    specs = solara.use_memo(model_params, dependencies=[])
    session, values, version = use_session(build_model, specs)
    model = session.game
    solara.Title(TITLE)
    with solara.Sidebar():
        solara.Markdown("### Naming game")
        ControlPanel(specs, values, session.applied, session.errors)
    with solara.Column(style={"padding": "8px 16px"}):
        with solara.Row(style={"align-items": "center", "flex-wrap": "wrap"}):
            with session.lock:
                label = f"Round {model.steps} of {model.max_rounds}" if model is not None else "Round 0"
            solara.Text(label, classes=["llm-mesa-naming-round"],
                        style={"font-weight": "bold", "font-size": "1.15em", "margin-right": "12px"})
            GameButtons(session, values, version, interval=0.15)
        ErrorNote(session)
        if model is not None:
            GameView(model, version.value, session.lock)


__all__: Sequence[str] = ("AGREEMENT_SERIES", "ExplorerNamingModel", "Page", "agreement_chart", "agreement_frame",
                          "build_model", "build_speaker", "model_params", "names_chart", "names_frame",
                          "outcomes_chart", "outcomes_frame")
