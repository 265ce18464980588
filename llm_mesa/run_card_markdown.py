"""A run card (``run_card.gather``) as Markdown a paper can quote, and as HTML for the report.

Every text that came from outside (a model's name, a server's build, a path) is set as code:
Markdown then shows it as it is (no link, no emphasis, no HTML), and the report, which renders
this same Markdown, cannot be made to run anything by a server's answer. Tables are GitHub's
pipe tables (pandas' ``to_markdown`` needs ``tabulate``, which llm-mesa does not otherwise
need; a pipe table is a join).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from llm_mesa.llm.server_props import quantisation

__all__ = ["card_html", "card_markdown"]

#: the versions a card names first, in this order (the rest follow as the manifest lists them)
FIRST_VERSIONS = ("llm-mesa", "mesa", "openai", "python")
#: sampling settings shown as columns, in this order (others follow)
SAMPLING = ("temperature", "top_p", "max_tokens", "max_completion_tokens", "seed")


def code(value: Any) -> str:
    """``value`` as a Markdown code span: shown as it is, whatever it holds."""
    import re

    text = " ".join(str(value).split()).replace("|", "\\|")
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)  # longer than any run inside
    return f"{fence} {text} {fence}" if len(fence) > 1 else f"`{text}`"


def _number(value: Any, digits: int = 0) -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}" if isinstance(value, (int, float)) else str(value)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return out + ["| " + " | ".join(row) + " |" for row in rows]


def _when(value: Any) -> str:
    if isinstance(value, (int, float)):
        return datetime.fromtimestamp(value, UTC).isoformat(timespec="seconds")
    return str(value)


def _server_words(url: str, said: Mapping[str, Any] | None) -> str:
    """One line on what the server of ``url`` said of itself when the run started."""
    if not said:
        return f"- {code(url)}: the server said nothing of itself (no `GET /props` answer when the run started)"
    parts = []
    if said.get("stand_in"):
        parts.append("llm-mesa's stand-in server (`llm-mesa serve`), not a language model")
    if said.get("build"):
        parts.append(f"build {code(said['build'])}")
    if said.get("model_path"):
        name = str(said["model_path"]).replace("\\", "/").rsplit("/", 1)[-1]
        quant = quantisation(name)
        parts.append(f"model file {code(name)}" + (f" (quantisation {code(quant)}, from the file's name)" if quant else ""))
    if said.get("model_alias"):
        parts.append(f"model alias {code(said['model_alias'])}")
    if said.get("context"):
        parts.append(f"context {said['context']:,} tokens")
    if said.get("slots"):
        parts.append(f"{said['slots']} slot{'s' if said['slots'] != 1 else ''}")
    if said.get("chat_template_sha256"):
        parts.append(f"chat template SHA-256 {code(said['chat_template_sha256'])}")
    return f"- {code(url)}: " + "; ".join(parts)


def _served(row: Mapping[str, Any]) -> tuple[str, str]:
    served = row.get("served") or []
    if not served:
        return "not recorded", "not recorded"
    models = ", ".join(dict.fromkeys(code(s["model"]) for s in served if s.get("model"))) or "-"
    prints = ", ".join(dict.fromkeys(code(s["system_fingerprint"]) for s in served if s.get("system_fingerprint"))) or "none sent"
    return models, prints


def _versions(versions: Mapping[str, Any]) -> str:
    names = [*[n for n in FIRST_VERSIONS if n in versions], *[n for n in versions if n not in FIRST_VERSIONS]]
    shown = {"llm-mesa": "llm-mesa", "mesa": "Mesa", "openai": "openai", "python": "Python"}
    return ", ".join(f"{shown.get(n, n)} {versions[n]}" for n in names) or "not recorded"


def _heading(card: Mapping[str, Any]) -> list[str]:
    kind = card["kind"]
    what = f"A {card.get('game') or '?'} {kind}"
    count = f"{card['games']:,} of {card['games_planned']:,} games" if kind == "sweep" and card.get("games_planned") \
        else f"{card['games']:,} game{'s' if card['games'] != 1 else ''}"
    lines = [f"# Run card: {code(card['path'])}", "", f"{what}: {count}"
             + (f" in {card['conditions']} conditions" if kind == "sweep" else "") + f"; seeds: {card['seeds']}."]
    if card.get("seats") is not None:
        lines[-1] += f" People took {card['seats']} seat{'s' if card['seats'] != 1 else ''}."
    return lines


def _models(card: Mapping[str, Any]) -> list[str]:
    lines = ["", "## Models and servers", ""]
    if card["llm"]:
        rows = []
        for row in card["llm"]:
            models, prints = _served(row)
            rows.append([code(row["policy"]), ", ".join(code(u) for u in row["base_urls"]), code(row["model"]), models,
                         prints])
        lines += _table(["policy", "endpoint", "model asked for", "model as the server named it in its answers",
                         "system_fingerprint seen"], rows)
        if card.get("served_all"):
            lines += ["", "The run's answers named: " + ", ".join(
                f"{code(s.get('model'))} ({code(s.get('system_fingerprint'))})" for s in card["served_all"]) + "."]
        urls = list(dict.fromkeys(u for row in card["llm"] for u in row["base_urls"]))
        lines += ["", "What each server said of itself when the run started (`GET /props`, as llama.cpp's "
                      "llama-server answers it):", ""]
        lines += [_server_words(u, card["servers"].get(u)) for u in urls]
    else:
        lines.append("No LLM took part.")
    if card.get("rules"):
        lines += ["", "Rule policies: " + "; ".join(f"{code(k)} = {code(v)}" if k != v else code(k)
                                                      for k, v in card["rules"].items()) + "."]
    return lines


def _sampling(card: Mapping[str, Any]) -> list[str]:
    lines = ["", "## Sampling, seeds and prompts", ""]
    if card["llm"]:
        extra = list(dict.fromkeys(k for row in card["llm"] for k in row["sampling"] if k not in SAMPLING))
        names = [*[k for k in SAMPLING if any(k in row["sampling"] for row in card["llm"])], *extra]
        rows = [[code(row["policy"]), *[code(row["sampling"][k]) if k in row["sampling"] else "server default"
                                        for k in names],
                 code("/".join(str(v) for v in (row["dialect"], row["negotiated_dialect"]) if v) or "-"),
                 code(row["prompt_mode"]), _number(row["timeout"], 0), _number(row["max_attempts"]),
                 "-" if row["price"] is None else code(row["price"])] for row in card["llm"]]
        lines += _table(["policy", *names, "answer format (asked/negotiated)", "prompt mode", "timeout (s)",
                         "attempts", "price"], rows)
        lines.append("")
    lines.append(f"Seeds: {card['seeds']}.")
    variants = card.get("prompt_variants") or []
    lines.append("Prompt variants: " + (", ".join(code(v) for v in variants) if variants else "none (the game has one prompt)")
                 + ".")
    hashes = card.get("template_hashes") or []
    lines.append("Prompt template hashes: " + (", ".join(code(h) for h in hashes) if hashes else "none recorded") + ".")
    return lines


def _calls(card: Mapping[str, Any]) -> list[str]:
    lines = ["", "## Calls, tokens and cost", ""]
    rows = []
    for use in card["usage"]:
        prompt, cached = use.get("prompt_tokens"), use.get("cached_tokens")
        share = "-" if not prompt or cached is None else f"{cached / prompt:.1%} ({_number(cached)})"
        failed = "-" if use.get("failed_decisions") is None or not use.get("calls") else \
            f"{_number(use['failed_decisions'])} of {_number(use.get('decisions'))}"  # a rule's decisions never fail
        rows.append([code(use["policy"]), _number(use["games"]), _number(use.get("calls")), _number(prompt),
                     _number(use.get("completion_tokens")), share, _number(use.get("cost"), 4), failed,
                     _number(use.get("invalid_games"))])
    lines += _table(["policy", "games", "calls", "prompt tokens", "completion tokens",
                     "prompt tokens from the server's cache", "cost", "failed decisions", "invalid games"], rows)
    if card.get("calls_recorded") is not None:
        lines += ["", f"{card['calls_recorded']:,} calls recorded in {code(card['store'])} (replayed calls count as played)."]
    return lines


def _software(card: Mapping[str, Any]) -> list[str]:
    dates = card.get("dates") or {}
    started = [str(d) for d in dates.get("started") or []]
    lines = ["", "## Software and dates", "", f"Versions: {_versions(card.get('versions') or {})}."]
    if started and card["kind"] == "sweep":
        lines.append(f"Started {started[0]}" + (f"; resumed {', '.join(started[1:])}" if len(started) > 1 else "") + ".")
    elif started:
        lines.append(f"Played and written {started[0]}.")
    if dates.get("first_call") is not None:
        lines.append(f"Calls answered from {_when(dates['first_call'])} to {_when(dates['last_call'])} (UTC).")
    return lines


def card_markdown(card: Mapping[str, Any], level: int = 1) -> str:
    """The card as Markdown: heading, models and servers, sampling, seeds and prompts, calls, software and dates
    (``level``: the heading level of its title, its sections' one below)."""
    lines = [*_heading(card), *_models(card), *_sampling(card), *_calls(card), *_software(card)]
    deeper = "#" * (level - 1)
    return "\n".join(deeper + line if line.startswith("#") else line for line in lines) + "\n"


def card_html(card: Mapping[str, Any]) -> str:
    """The same card as HTML (Python-Markdown with its tables extension), for ``llm-mesa report`` (headed
    below the page's sections)."""
    import markdown

    return markdown.markdown(card_markdown(card, level=3), extensions=["tables"])
