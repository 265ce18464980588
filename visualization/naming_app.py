"""The Solara explorer of SIGN, the schema-induced naming game, on Mesa's SolaraViz.

Run it with ``llm-mesa viz --game naming`` (which first makes the front-end
available offline), or ``solara run llm_mesa.visualization.naming_app`` once the
asset cache is filled.

It only draws: pairing, speaking, decoding, the update rule and every measure come
from ``llm_mesa.models.naming``. The one thing kept here is the count of each name
held after every round, which the model does not tabulate and the "names in use"
plot needs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import altair as alt
import pandas as pd
import solara
from mesa.visualization import SolaraViz
from mesa.visualization.utils import update_counter

from llm_mesa.models.naming.game import PARAMETERS
from llm_mesa.models.naming.model import NamingModel
from llm_mesa.models.naming.metrics import THRESHOLDS
from llm_mesa.models.naming.observation import MODES, OUTCOMES, NamingConfigError, name_index
from llm_mesa.visualization.builtin_endpoint import BUILTIN, resolve_endpoint

#: The loopback stand-in endpoint (``llm-mesa serve``): the default, so the page works offline.
LOOPBACK_ENDPOINT = BUILTIN
#: The loopback's SIGN speaker that sometimes breaks the schema, so retries and salvages show.
LOOPBACK_NAMING_MODEL = "naming:noisy?p=0.3"
SPEAKERS = ("echo", "noisy:p=0.3", "minimal", "llm")
AGREEMENT_SERIES = {
    "agreement": "said this round (headline)",
    "held_share": "holding the most common name",
    "agreement_latest": "latest name said by each agent",
}
#: Fixed colours per decoding outcome: the schema's successes green, failures warm.
OUTCOME_COLOURS = {"schema": "#2ca02c", "retry": "#bcbd22", "salvage": "#ff7f0e", "text": "#1f77b4",
                   "none": "#d62728"}
CHART_WIDTH = 380
SVG = {"embedOptions": {"renderer": "svg", "actions": False}}  # SVG: browser tests can count the marks


class ExplorerNamingModel(NamingModel):
    """NamingModel with the explorer's controls as keyword arguments.

    Translates controls (a speaker choice, an endpoint, a seed) into the model's
    arguments, and counts the names held after each round for the "names in use" plot.
    Mesa's Reset re-creates it from these keywords.
    """

    def __init__(self, n: int = 12, mode: str = "schema", memory: int = 5, alpha: float = 0.5,
                 pairing: str = "all", speaker: str = "echo", llm_endpoint: str = LOOPBACK_ENDPOINT,
                 llm_model: str = LOOPBACK_NAMING_MODEL, seed: int = 1, rounds: int = 300,
                 rng: int | None = None) -> None:
        memory = 0 if mode == "nl" else int(memory)  # NL has no memory by definition
        super().__init__(n=int(n), mode=mode, memory=memory, alpha=float(alpha), pairing=pairing,
                         speaker=build_speaker(speaker, llm_endpoint, llm_model), max_rounds=int(rounds),
                         rng=int(seed) if rng is None else rng)
        self.names_held: list[Counter] = [self._held()]

    def _held(self) -> Counter:
        return Counter(agent.name for agent in self.players)

    def step(self) -> None:
        super().step()
        self.names_held.append(self._held())


def build_speaker(choice: str, endpoint: str, model_name: str):
    """A registry spec for rule speakers; an LLM speaker at ``endpoint`` for ``llm``."""
    if choice.split(":")[0] != "llm":
        return choice
    from llm_mesa.models.naming.llm_speaker import LLMSpeaker, sign_endpoint

    if not model_name.strip():
        raise NamingConfigError("the LLM speaker needs a model name; e.g. naming:noisy?p=0.3 on the loopback")
    return LLMSpeaker(sign_endpoint(resolve_endpoint(endpoint), model_name.strip()))


def model_params() -> dict:
    """The controls of SolaraViz's "Model Parameters" card."""
    game = PARAMETERS.controls(
        ["n", "mode", "memory", "alpha", "pairing"],
        n={"min": 2, "max": 48, "step": 2},
        memory={"type": "SliderInt", "value": 5, "min": 0, "max": 10, "step": 1, "label": "Memory K (nl: always 0)"},
)
    return {
        **game,
        "speaker": {"type": "Select", "value": "echo", "values": list(SPEAKERS), "label": "Speaker"},
        "llm_endpoint": {"type": "InputText", "value": LOOPBACK_ENDPOINT, "label": "LLM endpoint (base URL, or loopback: the built-in stand-in)"},
        "llm_model": {"type": "InputText", "value": LOOPBACK_NAMING_MODEL, "label": "LLM model"},
        "seed": {"type": "SliderInt", "value": 1, "min": 0, "max": 999, "step": 1, "label": "Seed"},
        "rounds": {**PARAMETERS["max_rounds"].control_spec(), "min": 10, "max": 500, "step": 10, "label": "Rounds"},
    }


# --- what the views read from a game -------------------------------------------------


def agreement_frame(model: NamingModel) -> pd.DataFrame:
    """Long table (round, series, value) of the agreement measures, one row per round and series."""
    rounds = model.rounds_frame()
    long = rounds.melt(id_vars="round", value_vars=list(AGREEMENT_SERIES), var_name="series", value_name="value")
    long["series"] = long["series"].map(AGREEMENT_SERIES)
    return long.astype({"round": int, "value": float})


def names_frame(model: ExplorerNamingModel) -> pd.DataFrame:
    """Long table (round, name, agents): how many agents hold each name after each round."""
    rows = [{"round": r, "name": name, "agents": count}
            for r, held in enumerate(model.names_held) for name, count in held.items()]
    return pd.DataFrame(rows, columns=["round", "name", "agents"])


def outcomes_frame(model: NamingModel) -> pd.DataFrame:
    """Long table (round, outcome, utterances) of how each round's messages were decoded."""
    rounds = model.rounds_frame()[["round", *(f"outcome_{o}" for o in OUTCOMES)]]
    long = rounds.melt(id_vars="round", value_vars=[f"outcome_{o}" for o in OUTCOMES],
                       var_name="outcome", value_name="utterances")
    long["outcome"] = long["outcome"].str.removeprefix("outcome_")
    return long.astype({"round": int, "utterances": int})


def _round_axis(model: NamingModel) -> alt.X:
    return alt.X("round:Q", title="round", scale=alt.Scale(domain=[0, max(model.steps, 1)]),
                 axis=alt.Axis(format="d", tickMinStep=1))


def agreement_chart(model: NamingModel) -> alt.TopLevelMixin:
    data = agreement_frame(model)
    lines = alt.Chart(data).mark_line(point=True).encode(
        x=_round_axis(model), y=alt.Y("value:Q", title="share of N", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("series:N", title=None, sort=list(AGREEMENT_SERIES.values()),
                        legend=alt.Legend(orient="bottom", columns=1, labelLimit=300)),
        tooltip=["round", "series", alt.Tooltip("value:Q", format=".3f")])
    marks = alt.Chart(pd.DataFrame({"level": list(THRESHOLDS)})).mark_rule(
        color="#999999", strokeDash=[3, 3]).encode(y="level:Q")
    return (alt.layer(marks, lines).properties(
        width=CHART_WIDTH, height=170,
        title=alt.Title("Population agreement per round", subtitle="dashed: the 50/60/70% thresholds"))
        .properties(usermeta=SVG))


def names_chart(model: ExplorerNamingModel) -> alt.TopLevelMixin:
    data = names_frame(model)
    order = sorted(model.lexicon, key=name_index)
    return (alt.Chart(data).mark_area(interpolate="step-after").encode(
        x=_round_axis(model), y=alt.Y("agents:Q", stack="zero", title="agents holding it",
                                      scale=alt.Scale(domain=[0, model.n])),
        color=alt.Color("name:N", title="name", sort=order, scale=alt.Scale(domain=order, scheme="tableau20"),
                        legend=alt.Legend(orient="bottom", columns=6, symbolType="square")),
        order=alt.Order("name_order:Q"),
        tooltip=["round", "name", "agents"])
        .transform_calculate(name_order="toNumber(slice(datum.name, 1))")
        .properties(width=CHART_WIDTH, height=170, title="Names in use: agents holding each name after the round")
        .properties(usermeta=SVG))


def outcomes_chart(model: NamingModel) -> alt.TopLevelMixin:
    data = outcomes_frame(model)
    return (alt.Chart(data).mark_area(interpolate="step-after").encode(
        x=_round_axis(model), y=alt.Y("utterances:Q", stack="zero", title="utterances"),
        color=alt.Color("outcome:N", title="decoded by", sort=list(OUTCOMES),
                        scale=alt.Scale(domain=list(OUTCOMES), range=[OUTCOME_COLOURS[o] for o in OUTCOMES]),
                        legend=alt.Legend(orient="bottom", columns=5, symbolType="square")),
        order=alt.Order("outcome_order:Q"),
        tooltip=["round", "outcome", "utterances"])
        .transform_calculate(outcome_order=f"indexof({list(OUTCOMES)!r}, datum.outcome)")
        .properties(width=CHART_WIDTH, height=150,
                    title=alt.Title("Decoding outcomes per round",
                                    subtitle=["schema: first reply parsed; retry: after the reminder;",
                                              "salvage: free-text fallback; text: NL reply; none: no name"]))
        .properties(usermeta=SVG))


# --- the views -------------------------------------------------------------------------


def StatusView(model):
    """Round counter, the leading name and this round's agreement."""
    with solara.Column(classes=["llm-mesa-naming-status"]):
        solara.Text(f"Round {model.steps} of {model.max_rounds}", classes=["llm-mesa-naming-round"],
                    style={"font-weight": "bold", "font-size": "1.1em"})
        speakers = ", ".join(sorted({a.speaker.spec() for a in model.players}))
        solara.Text(f"{model.n} agents, mode {model.mode}, K={model.memory_size}, alpha={model.alpha}, "
                    f"pairing {model.pairing}, speakers {speakers}")
        if model.steps == 0:
            solara.Info("Press Step or Play to run rounds.", dense=True)
            return
        row = model.round_stats
        text = (f"Agreement {row['agreement']:.2f} (most said: {row['top_said'] or 'none'}); "
                f"{row['held_share']:.0%} hold {row['top_held']}; "
                f"{row['distinct_held']} name{'' if row['distinct_held'] == 1 else 's'} in use.")
        if row["held_share"] == 1.0:
            solara.Success(f"Consensus: every agent holds {row['top_held']}. " + text, dense=True)
        else:
            solara.Info(text, dense=True)
        if model.totals.calls:
            solara.Text(f"LLM: {model.totals.calls:,} calls, {model.totals.prompt_tokens:,} prompt + "
                        f"{model.totals.completion_tokens:,} completion tokens, "
                        f"{model.totals.failures} failed calls")


@solara.component
def UtterancesView(model):
    """What each speaker said last round, and how the decoder read it."""
    update_counter.get()
    said = [{"agent": a.unique_id, "held": a.name, "said": a.utterance.name or "-",
             "decoded by": a.utterance.outcome, "reply": (a.utterance.replies or ["-"])[-1]}
            for a in model.players if a.utterance is not None]
    with solara.Column(classes=["llm-mesa-naming-utterances"]):
        solara.Text(f"Round {model.steps}: {len(said)} utterances", style={"font-weight": "bold"})
        if said:
            solara.DataFrame(pd.DataFrame(said), items_per_page=6)


def AgreementView(model):
    with solara.Column(classes=["llm-mesa-naming-agreement"]):
        solara.FigureAltair(agreement_chart(model))


def NamesView(model):
    with solara.Column(classes=["llm-mesa-naming-names"]):
        solara.FigureAltair(names_chart(model))


def OutcomesView(model):
    with solara.Column(classes=["llm-mesa-naming-outcomes"]):
        solara.FigureAltair(outcomes_chart(model))


def build_page(model=None, params: dict | None = None):
    """SolaraViz over a naming game."""
    if model is None:
        model, params = ExplorerNamingModel(), model_params()
    return SolaraViz(
        model,
        components=[StatusView, AgreementView, NamesView, OutcomesView, UtterancesView],
        model_params=params or {},
        name="llm-mesa: naming game (SIGN)",
        play_interval=150,
    )


page = build_page()


__all__: Sequence[str] = ("ExplorerNamingModel", "agreement_chart", "build_page", "build_speaker",
                          "model_params", "names_chart", "outcomes_chart", "page")
