"""What a page shows of SIGN, the naming game (``GameView``): agreement, names in use, decoding outcomes.

The game has no graph (pairs are drawn anew each round), so its page is its
charts, a status line (the leading name, this round's agreement), the round's
utterances and one agent's panel (name held, memory, what it said and how it was
decoded). The one thing kept here that the model does not tabulate is how many
agents hold each name after every round (``CountedNamingModel``), which the
"names in use" chart needs. Plain data only: the explorer draws it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import pandas as pd

from llm_mesa.views import Banner, GameView
from llm_mesa.views.agent_panel import decision_heading
from llm_mesa.views.charts import EMBED, VEGA_LITE, dashed_rows, line_spec, numeric_rounds, round_axis
from llm_mesa.views.controls import BUILTIN, ControlError

from .metrics import THRESHOLDS
from .model import NamingModel
from .observation import OUTCOMES, NamingConfigError, name_index
from .parameters import PARAMETERS

AGREEMENT_SERIES = {"agreement": "said this round (headline)", "held_share": "holding the most common name",
                    "agreement_latest": "latest name said by each agent"}
#: fixed colours per decoding outcome: the schema's successes green, failures warm
OUTCOME_COLOURS = {"schema": "#2ca02c", "retry": "#bcbd22", "salvage": "#ff7f0e", "text": "#1f77b4", "none": "#d62728"}
SPEAKERS = ("echo", "noisy:p=0.3", "minimal", "llm")
#: the stand-in's SIGN speaker that sometimes breaks the schema, so retries and salvages show
LOOPBACK_NAMING_MODEL = "naming:noisy?p=0.3"
HELD = "holds_"  # the rounds table's columns of agents holding each name


class CountedNamingModel(NamingModel):
    """``NamingModel`` that also counts the names held after each round (round 0: the start)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.names_held: list[Counter] = [Counter(agent.name for agent in self.players)]

    def step(self) -> None:
        super().step()
        self.names_held.append(Counter(agent.name for agent in self.players))


def _area_spec(rows: list[dict[str, Any]], field: str, order: list[str], colours: list[str] | None, title: Any,
               y_title: str, last_round: int, current_round: int | None, y_max: int | None = None) -> dict[str, Any]:
    """A stacked area per round (rows: round, ``field``, value), drawn linearly so the last round has width."""
    y: dict[str, Any] = {"field": "value", "type": "quantitative", "stack": "zero", "title": y_title}
    if y_max:
        y["scale"] = {"domain": [0, y_max], "nice": False}
    scale = {"domain": order, "range": colours} if colours else {"domain": order, "scheme": "tableau20"}
    one_round = len({r["round"] for r in rows}) <= 1  # an area over one round has no width: a stacked bar shows it
    x = round_axis(last_round)
    if one_round:  # the bar whole, not half of it cut at the axis's start
        x = {**x, "scale": {**x["scale"], "domain": [-0.5, max(int(last_round), 1)]}}
    layers: list[dict[str, Any]] = [{
        "mark": {"type": "bar", "width": 14} if one_round else {"type": "area", "interpolate": "linear"},
        "encoding": {"x": x, "y": y, "order": {"field": "order", "type": "quantitative"},
                     "color": {"field": field, "type": "nominal", "title": field, "sort": order, "scale": scale,
                               "legend": {"orient": "bottom", "columns": 6, "symbolType": "square"}},
                     "tooltip": [{"field": "round"}, {"field": field}, {"field": "value", "title": y_title}]}}]
    if current_round is not None:
        layers.append({"data": {"values": [{"round": int(current_round)}]},
                       "mark": {"type": "rule", "color": "#ff7f0e", "strokeWidth": 2, "strokeDash": [5, 3]},
                       "encoding": {"x": round_axis(last_round)}})
    return {"$schema": VEGA_LITE, "width": "container", "height": 160, "title": title, "data": {"values": rows},
            "autosize": {"type": "fit-x", "contains": "padding"}, "layer": layers, "usermeta": EMBED,
            "config": {"title": {"anchor": "start", "fontSize": 13}, "view": {"stroke": None}}}


def agreement_chart(rounds: pd.DataFrame, last_round: int, current_round: int | None = None,
                    dash: str | None = None) -> dict[str, Any]:
    """The three agreement measures per round on a 0-1 axis, the 50/60/70% thresholds dashed (any round, even 0)."""
    rows = [r for r in dashed_rows(rounds, AGREEMENT_SERIES, dash) if r["value"] is not None]
    spec = line_spec(rows, "Population agreement per round", "share of N", last_round=last_round, y_domain=(0, 1),
                     current_round=current_round, series=list(AGREEMENT_SERIES.values()), height=170,
                     subtitle="grey dashes: the 50/60/70% thresholds", dash=dash)
    spec["layer"].insert(0, {"data": {"values": [{"level": t} for t in THRESHOLDS]},
                             "mark": {"type": "rule", "color": "#999999", "strokeDash": [3, 3]},
                             "encoding": {"y": {"field": "level", "type": "quantitative"}}})
    lines = spec["layer"][1]["encoding"]
    lines["color"]["legend"] = {"orient": "bottom", "columns": 1, "labelLimit": 300}
    lines["strokeWidth"] = {"condition": {"test": f"datum.series == '{AGREEMENT_SERIES['agreement']}'", "value": 4},
                            "value": 1.8}  # the headline measure drawn thick (another may run on top of it)
    return spec


def names_chart(rounds: pd.DataFrame, lexicon: list[str], n: int, last_round: int,
                current_round: int | None = None) -> dict[str, Any]:
    """Agents holding each name after each round (the rounds table's ``held_NAME`` columns)."""
    order = sorted(lexicon, key=name_index)
    rows = [{"round": int(r["round"]), "name": name, "value": int(r.get(HELD + name, 0) or 0), "order": i}
            for r in rounds.to_dict("records") for i, name in enumerate(order)]
    return _area_spec(rows, "name", order, None, "Names in use: agents holding each name after the round",
                      "agents holding it", last_round, current_round, y_max=n)


def outcomes_chart(rounds: pd.DataFrame, last_round: int, current_round: int | None = None) -> dict[str, Any]:
    """How each round's utterances were decoded, stacked."""
    rows = [{"round": int(r["round"]), "outcome": o, "value": int(r.get(f"outcome_{o}") or 0), "order": i}
            for r in rounds.to_dict("records") if r["round"] > 0 for i, o in enumerate(OUTCOMES)]
    title = {"text": "Decoding outcomes per round", "subtitle": ["schema: first reply parsed; retry: after the reminder;",
                                                                   "salvage: free-text fallback; text: NL reply; none: no name"]}
    return _area_spec(rows, "outcome", list(OUTCOMES), [OUTCOME_COLOURS[o] for o in OUTCOMES], title, "utterances",
                      last_round, current_round)


class NamingView(GameView):
    """SIGN's page: speakers (rules or an LLM), agreement, names in use and decoding outcomes."""

    policy_control = "speaker"

    @property
    def title(self) -> str:
        return "llm-mesa: naming game (SIGN)"

    def controls(self) -> dict[str, dict[str, Any]]:
        game = PARAMETERS.controls(["n", "mode", "alpha", "pairing"], n={"min": 2, "max": 48, "step": 1})
        return {
            **game,
            "memory": {"type": "SliderInt", "value": 5, "min": 0, "max": 10, "step": 1, "label": "Memory K (nl: always 0)"},
            "speaker": {"type": "Select", "value": "echo", "values": list(SPEAKERS), "label": "Speaker"},
            "llm_endpoint": {"type": "InputText", "value": BUILTIN,
                             "label": "LLM endpoint (base URL, or loopback: the built-in stand-in)"},
            "llm_model": {"type": "InputText", "value": LOOPBACK_NAMING_MODEL, "label": "LLM model"},
            "seed": {"type": "InputInt", "value": 1, "min": 0, "label": "Seed"},
            "max_rounds": {**PARAMETERS["max_rounds"].control_spec(), "min": 10, "max": 500, "step": 10, "label": "Rounds"},
        }

    def policy_choices(self) -> list[str]:
        return list(SPEAKERS)

    def loopback_model(self) -> str:
        return LOOPBACK_NAMING_MODEL

    def check(self, values: Mapping[str, Any]) -> dict[str, Any]:
        checked = super().check(values)
        if checked.get("mode") == "nl":
            checked["memory"] = 0  # NL has no memory by definition
        return checked

    def build(self, parameters: Mapping[str, Any], policy: Any, seed: int) -> CountedNamingModel:
        try:
            return CountedNamingModel(speaker=policy, rng=int(seed), **parameters)
        except NamingConfigError as exc:
            text = str(exc)
            control = next((c for c in ("memory", "alpha", "mode", "pairing", "speaker") if c in text.lower()), "_general")
            raise ControlError(control, text) from None

    # --- one round -----------------------------------------------------------------------
    def round_number(self, model) -> int:
        held = getattr(model, "names_held", None)
        return len(held) - 1 if held is not None else len(model.rounds_frame())

    def round_label(self, model) -> str:
        return f"Round {self.round_number(model)} of {model.max_rounds}"

    def rounds(self, model) -> pd.DataFrame:
        """Rounds 1..t of the model's table, a round 0 of the start, and the agents holding each name."""
        frame = numeric_rounds(model.rounds_frame())
        held = getattr(model, "names_held", None)
        if held is None:
            return frame
        counts = pd.DataFrame([{"round": r, **{HELD + k: v for k, v in c.items()}} for r, c in enumerate(held)])
        frame = counts.merge(frame, on="round", how="left") if len(frame) else counts
        frame = frame.fillna({c: 0 for c in frame.columns if c.startswith(HELD)})
        frame.loc[frame["round"] == 0, "held_share"] = max(held[0].values()) / model.n  # the start, before anyone spoke
        frame.attrs.update(lexicon=list(model.lexicon), n=model.n)
        return frame

    def charts(self, rounds, *, current_round=None, last_round=None, dash=None):
        last = int(rounds["round"].max()) if last_round is None and len(rounds) else int(last_round or 0)
        charts = []
        charts.append(("llm-mesa-naming-agreement", agreement_chart(rounds, last, current_round, dash)))
        if dash is not None:  # stacked areas do not overlay: two populations compare on their agreement
            return charts
        if rounds.attrs.get("lexicon"):
            charts.append(("llm-mesa-naming-names", names_chart(rounds, rounds.attrs["lexicon"], rounds.attrs["n"], last,
                                                                current_round)))
        if any(f"outcome_{o}" in rounds.columns for o in OUTCOMES):
            charts.append(("llm-mesa-naming-outcomes", outcomes_chart(rounds, last, current_round)))
        return charts

    def picture(self, model):
        return None  # pairs are drawn anew each round: no graph to draw

    def agents(self, model) -> list[Any]:
        return list(model.players)

    def agent_rows(self, model, index: int) -> dict[str, str]:
        """The player at ``index``, called by its id as its prompt, the tables and the utterances call it."""
        agent = model.players[index]
        said = agent.utterance
        t = self.round_number(model)
        rows = {"agent": str(agent.unique_id), "holds": agent.name, "memory": ", ".join(agent.memory) or "-",
                "speaker": agent.speaker.spec()}
        if t > 0:
            heading = decision_heading(t)
            rows.update({f"{heading} · partner": str(agent.partner.unique_id) if agent.partner else "-",
                         f"{heading} · said": (said.name or "-") if said else "-",
                         f"{heading} · decoded by": said.outcome if said else "-",
                         f"{heading} · reply": (said.replies or ["-"])[-1] if said else "-"})
        return rows

    def banners(self, model) -> list[Banner]:
        out = []
        t = self.round_number(model)
        row = model.round_stats
        if t == 0:
            return [Banner("info", "Press Step or Play to run rounds.", "llm-mesa-naming-status")]
        failures = int(row.get("failures") or 0)
        if failures:
            out.append(Banner("error", f"Round {t}: {failures} of {int(row.get('utterances') or 0)} utterances failed "
                                       "(the LLM call or its reading).", "llm-mesa-failures"))
        text = (f"Agreement {row['agreement']:.2f} (most said: {row['top_said'] or 'none'}); {row['held_share']:.0%} hold "
                f"{row['top_held']}; {row['distinct_held']} name{'' if row['distinct_held'] == 1 else 's'} in use.")
        if row["held_share"] == 1.0:
            out.append(Banner("done", f"Consensus: every agent holds {row['top_held']}. " + text, "llm-mesa-naming-status"))
        else:
            out.append(Banner("info", text, "llm-mesa-naming-status"))
        if model.totals.calls:
            out.append(Banner("info", f"LLM: {model.totals.calls:,} calls, {model.totals.prompt_tokens:,} prompt + "
                                      f"{model.totals.completion_tokens:,} completion tokens, "
                                      f"{model.totals.failures} failed calls", "llm-mesa-llm-totals"))
        return out

    def messages(self, model) -> pd.DataFrame:
        said = [{"agent": a.unique_id, "held": a.name, "said": a.utterance.name or "-", "decoded by": a.utterance.outcome,
                 "reply": (a.utterance.replies or ["-"])[-1]} for a in model.players if a.utterance is not None]
        return pd.DataFrame(said, columns=["agent", "held", "said", "decoded by", "reply"])

    def snapshot(self, model, selected: int = 0):
        from dataclasses import replace

        return replace(super().snapshot(model, selected), messages_title="Utterances")

    # --- sweeps ----------------------------------------------------------------------------
    def sweep_table(self, games: pd.DataFrame) -> pd.DataFrame:
        if games.empty:
            return pd.DataFrame()
        grouped = games.groupby(["condition", "policy"], sort=False)
        return pd.DataFrame({
            "games": grouped.size(),
            "agreement_final (mean)": grouped["agreement_final"].mean().round(3),
            "sd": grouped["agreement_final"].std(ddof=1).round(3),
            "reached 50%": grouped["rounds_to_50"].count(),
        }).reset_index()

    def sweep_measures(self, games: pd.DataFrame) -> list[str]:
        found = super().sweep_measures(games)
        first = [c for c in ("agreement_final", "rounds_to_50") if c in found]
        return first + [c for c in found if c not in first and c not in ("n", "max_rounds", "memory")]


__all__ = ["AGREEMENT_SERIES", "CountedNamingModel", "NamingView", "agreement_chart", "names_chart", "outcomes_chart"]
