"""What a paper's methods section says of a run, gathered from what the run kept: ``llm-mesa card RUNS``.

Examples:
  llm-mesa card runs/qwen3b                 # a sweep's --out
  llm-mesa card runs/game1 runs/lab-42      # a game's --out, a lab session's folder
  llm-mesa card runs/qwen3b --json          # the same facts as one JSON object

Reporting guidelines for LLM research ask for the exact model, its configuration, the seeds
and the dates. A run keeps them, spread over its files; the card gathers them into Markdown a
paper can quote: each endpoint, the model as the server named it in its answers and the
``system_fingerprint`` values seen; what each server said of itself when the run started
(llama.cpp's ``GET /props``: build, model file, quantisation, context); the sampling settings,
seeds, prompt variants and template hashes; calls, tokens, cost, the share of prompt tokens
served from the server's cache and failed decisions; the versions of llm-mesa, Mesa, openai
and Python, and the dates. It reads files only (manifests, the games table or summary, the
recorded calls), so it works after the server is gone. ``llm-mesa report`` shows the same card.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from llm_mesa.errors import LlmMesaError

__all__ = ["CardError", "configure", "gather", "run"]

#: a summary row's columns that count an LLM's use, by what they mean (the first present is read)
USAGE_COLUMNS = {"calls": ("calls",), "prompt_tokens": ("prompt_tokens",), "completion_tokens": ("completion_tokens",),
                 "cached_tokens": ("cached_tokens", "cached_prompt_tokens"), "cost": ("cost",),
                 "decisions": ("decisions",), "failed_decisions": ("failed_decisions", "failures")}
#: the parameter that names a game's prompt variant, where a game has one
PROMPT_PARAMETER = "prompt"


class CardError(LlmMesaError):
    """RUNS is not a run the card can read; the message names the fix."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", metavar="RUNS",
                        help="a sweep's --out, a game's --out (llm-mesa GAME --out) or a lab session's folder")
    parser.add_argument("--json", action="store_true", help="print the facts as one JSON object instead of Markdown")


def run(args: argparse.Namespace) -> int:
    from llm_mesa.json_values import json_text
    from llm_mesa.run_card_markdown import card_markdown

    cards = [gather(path) for path in args.runs]  # every path read before anything is printed
    if args.json:
        print(json_text(cards[0] if len(cards) == 1 else cards, indent=2))
    else:
        print("\n\n".join(card_markdown(card) for card in cards))
    return 0


def gather(path: str | Path) -> dict[str, Any]:
    """The card's facts of the run at ``path`` (a sweep, a run folder or a lab session), JSON-ready."""
    out = Path(path)
    manifest_path = out.with_name(out.stem + ".manifest.json") if out.suffix == ".parquet" else out / "manifest.json"
    if not out.exists() and not manifest_path.exists():
        raise CardError(f"no run at {str(out)!r}; pass the --out folder of `llm-mesa sweep`, of `llm-mesa GAME` or of a "
                        "lab session")
    if not manifest_path.is_file():
        raise CardError(f"{str(out)!r} holds no manifest.json: it is not a run's output; pass the --out folder of "
                        "`llm-mesa sweep`, of `llm-mesa GAME` or of a lab session")
    manifest = _manifest(manifest_path)
    if str(manifest.get("kind", "")).endswith("-sweep"):
        return _sweep_card(out, manifest, manifest_path)
    return _run_card(out, manifest)


def _manifest(path: Path) -> dict[str, Any]:
    from llm_mesa.boundary import OutsideDataError, check_seal, read_json_file

    fix = "pass the folder a run wrote, as it wrote it"
    try:
        return check_seal(read_json_file(path, "a run's manifest (a JSON object)", fix=fix), path, "a run's manifest",
                          fix=fix)
    except OutsideDataError as exc:
        raise CardError(str(exc)) from None


def _history(manifest_path: Path) -> list[dict[str, Any]]:
    """Every start of a sweep (its manifest-history lines that read as objects), oldest first."""
    from llm_mesa.boundary import Malformed, loads_json

    log = manifest_path.with_name(manifest_path.stem.replace("manifest", "manifest-history") + ".jsonl")
    if not log.is_file():
        return []
    starts = []
    for line in log.read_text(errors="replace").splitlines():
        try:
            value = loads_json(line, finite=False)
        except Malformed:
            continue
        if isinstance(value, dict):
            starts.append(value)
    return starts


def _is_endpoint(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("base_url"), str) and "sampling_params" in value


#: keys of a manifest's tree that hold endpoints without saying which policy used them
_STRUCTURAL = frozenset({"endpoint", "endpoints", "population", "llm", ""})


def _walk(value: Any, label: str = "") -> Iterator[tuple[str, str, Any]]:
    """(key, the nearest policy label above it, value) for every entry of a manifest's tree (a list's
    items under the key "")."""
    items = value.items() if isinstance(value, dict) else (("", v) for v in value) if isinstance(value, list) else ()
    for key, item in items:
        key = str(key)
        yield key, label, item
        yield from _walk(item, label if key in _STRUCTURAL else key)


def _llm_row(label: str, endpoint: Mapping[str, Any]) -> dict[str, Any]:
    urls = [endpoint["base_url"], *[u for u in endpoint.get("base_urls") or [] if u != endpoint["base_url"]]] \
        if isinstance(endpoint.get("base_urls"), list) else [endpoint["base_url"]]
    return {"policy": label, "base_urls": urls, "model": str(endpoint.get("model")),
            "sampling": dict(endpoint.get("sampling_params") or {}),
            "dialect": endpoint.get("dialect"), "negotiated_dialect": endpoint.get("negotiated_dialect"),
            "prompt_mode": endpoint.get("prompt_mode"), "timeout": endpoint.get("timeout"),
            "max_attempts": endpoint.get("max_attempts"), "price": endpoint.get("price"), "served": []}


def _endpoints(manifest: Mapping[str, Any], default_label: str) -> list[dict[str, Any]]:
    """One row per distinct LLM endpoint a manifest names, labelled by the policy that used it."""
    rows: dict[tuple[str, str, str], dict[str, Any]] = {}
    for key, label, value in _walk(manifest):
        if _is_endpoint(value):
            identity = (value["base_url"], str(value.get("model")),
                        json.dumps(value.get("sampling_params"), sort_keys=True, default=str))
            name = (label if key in _STRUCTURAL else key) or default_label
            rows.setdefault(identity, _llm_row(name, value))
    return list(rows.values())


def _servers(manifests: list[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """What each server said of itself (``servers`` of the endpoints), the latest start's word first."""
    said: dict[str, dict[str, Any]] = {}
    for manifest in reversed(manifests):
        for key, _, value in _walk(manifest):
            if key == "servers" and isinstance(value, dict):
                for url, description in value.items():
                    if isinstance(description, dict) and description:
                        said.setdefault(str(url), dict(description))
    return said


def _served_in_manifest(manifest: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The models and fingerprints a run's answers named, as its manifest keeps them (``served_by``)."""
    seen: Counter[tuple[Any, Any]] = Counter()
    counted = False
    for key, _, value in _walk(manifest):
        if key == "served_by" and isinstance(value, list):
            for entry in value:
                if isinstance(entry, dict):
                    calls = entry.get("calls")
                    counted |= isinstance(calls, int)
                    seen[(entry.get("model"), entry.get("system_fingerprint"))] += calls if isinstance(calls, int) else 0
    return [{"model": m, "system_fingerprint": f, "calls": n if counted else None} for (m, f), n in sorted(seen.items(), key=str)]


def _store_path(out: Path, manifest: Mapping[str, Any]) -> Path | None:
    """The recorded calls of a sweep: where its manifest says, else beside it."""
    named = ((manifest.get("store") or {}).get("path")) if isinstance(manifest.get("store"), dict) else None
    default = out.with_name(out.stem + ".calls.sqlite") if out.suffix == ".parquet" else out / "calls.sqlite"
    candidates = [Path(named)] if named and Path(named).is_absolute() else \
        [default, *([Path(named), out.parent / named] if named else [])]
    return next((p for p in candidates if p.is_file()), None)


def _store_facts(store: Path | None) -> dict[str, Any]:
    """From the recorded calls: per asked model and sampling, the models and fingerprints that answered;
    the template hashes asked with; the first and last call's times."""
    if store is None:
        return {}
    from llm_mesa.llm.store import ResponseStore, StoreError

    try:
        reader = ResponseStore(store, "replay")
        try:
            rows = reader.rows()
        finally:
            reader.close()
    except StoreError:
        return {}
    served: dict[tuple[str, str], Counter[tuple[Any, Any]]] = {}
    dialects: dict[tuple[str, str], set[str]] = {}
    hashes: set[str] = set()
    times = []
    for row in rows:
        request, response = row.get("request") or {}, row.get("response") or {}
        key = (str(request.get("model")), json.dumps(request.get("sampling") or {}, sort_keys=True, default=str))
        if response.get("model") or response.get("system_fingerprint"):
            served.setdefault(key, Counter())[(response.get("model"), response.get("system_fingerprint"))] += 1
        if isinstance(response.get("dialect"), str):
            dialects.setdefault(key, set()).add(response["dialect"])
        if request.get("template_hash"):
            hashes.add(str(request["template_hash"]))
        if isinstance(row.get("created"), (int, float)):
            times.append(float(row["created"]))
    return {"served": served, "dialects": dialects, "template_hashes": sorted(hashes), "calls_recorded": len(rows),
            "first_call": min(times) if times else None, "last_call": max(times) if times else None}


def _usage(frame: Any) -> dict[str, Any]:
    """A games table's (or one summary row's) LLM use, summed: calls, tokens, cached tokens, cost, decisions."""
    import pandas as pd

    out: dict[str, Any] = {"games": len(frame)}
    for name, columns in USAGE_COLUMNS.items():
        column = next((c for c in columns if c in frame.columns), None)
        out[name] = None if column is None else float(pd.to_numeric(frame[column], errors="coerce").fillna(0).sum())
    if "invalid" in frame.columns:
        out["invalid_games"] = int(frame["invalid"].fillna(False).astype(bool).sum())
    return out


def seeds_words(seeds: Any) -> str:
    """A sweep's seeds in words: a range, a list, or how many each condition derived."""
    if isinstance(seeds, dict):
        counts = sorted({len(v) for v in seeds.values()})
        return f"derived per condition from the experiment's seed ({'/'.join(map(str, counts))} a condition)"
    if isinstance(seeds, list) and seeds:
        if seeds == list(range(seeds[0], seeds[0] + len(seeds))) and len(seeds) > 2:
            return f"{seeds[0]}-{seeds[-1]}, the same for every condition and policy"
        return ", ".join(map(str, seeds)) + ", the same for every condition and policy"
    return "not recorded"


def _template_hashes(tree: Mapping[str, Any]) -> set[str]:
    """The template hashes a run's manifest names (its columns' types left out)."""
    found = set()
    for key, _, value in _walk({k: v for k, v in tree.items() if k != "layout"}):
        if key in ("prompt_template_hash", "template_hash") and isinstance(value, str) and value:
            found.add(value)
        elif key == "prompt_template_hashes" and isinstance(value, list):
            found.update(str(v) for v in value if v)
    return found


def _defaults(game: Any) -> dict[str, Any]:
    """The parameters' defaults of the game named ``game`` ({} when it is not installed)."""
    from llm_mesa import registry

    try:
        return registry.get_game(str(game)).parameters.defaults()
    except LlmMesaError:
        return {}


def _sweep_card(out: Path, manifest: dict[str, Any], manifest_path: Path) -> dict[str, Any]:
    from llm_mesa.sweep import read_sweep

    grid = manifest.get("grid") or {}
    games = read_sweep(out) if (out.exists() or Path(str(out) + ".parts").exists()) else None
    store = _store_path(out, manifest)
    facts = _store_facts(store)
    llm = _endpoints({"endpoints": manifest.get("endpoints") or {}}, "llm")
    for row in llm:
        key = (row["model"], json.dumps(row["sampling"], sort_keys=True, default=str))
        row["served"] = [{"model": m, "system_fingerprint": f, "calls": n}
                         for (m, f), n in sorted((facts.get("served") or {}).get(key, Counter()).items(), key=str)]
        if not row["negotiated_dialect"] and (facts.get("dialects") or {}).get(key):
            row["negotiated_dialect"] = ", ".join(sorted(facts["dialects"][key]))  # what the answers were read as
    policies = grid.get("policies") or {}
    usage = []
    for label in policies:
        mine = games[games["policy"].astype(str) == label] if games is not None and len(games) else None
        if mine is not None and len(mine):
            usage.append({"policy": label, **_usage(mine)})
    hashes = set(facts.get("template_hashes") or [])
    if games is not None and "prompt_template_hash" in games.columns:
        hashes |= set(games["prompt_template_hash"].dropna().astype(str))
    default = _defaults(manifest.get("game")).get(PROMPT_PARAMETER)
    variants = sorted({str(c.get(PROMPT_PARAMETER, default)) for c in (grid.get("conditions") or {}).values()
                       if isinstance(c, dict) and (PROMPT_PARAMETER in c or default is not None)})
    starts = _history(manifest_path) or [manifest]
    return {"path": str(out), "kind": "sweep", "game": manifest.get("game"),
            "games": 0 if games is None else len(games), "games_planned": manifest.get("games_total"),
            "conditions": len(grid.get("conditions") or {}), "seeds": seeds_words(grid.get("seeds")),
            "llm": llm, "rules": {k: v for k, v in policies.items() if isinstance(v, str)},
            "servers": _servers([*starts, manifest]), "usage": usage,
            "prompt_variants": variants, "template_hashes": sorted(hashes),
            "versions": dict(manifest.get("versions") or {}),
            "dates": {"started": [s.get("created") for s in starts if s.get("created")],
                      "first_call": facts.get("first_call"), "last_call": facts.get("last_call")},
            "store": None if store is None else str(store), "calls_recorded": facts.get("calls_recorded")}


def _run_card(out: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    import pandas as pd

    summary_path = out / "summary.json"
    summary = _manifest(summary_path) if summary_path.is_file() else dict(manifest.get("summary") or {})
    parameters = dict(manifest.get("parameters") or {})
    policy = str(manifest.get("policy") or summary.get("policy") or parameters.get("policy") or "llm")
    llm = _endpoints(manifest, policy)
    served = _served_in_manifest(manifest)
    for row in llm:
        row["served"] = served if len(llm) == 1 else []
    lab = manifest.get("lab") if isinstance(manifest.get("lab"), dict) else None
    variant = manifest.get("prompt_variant") or parameters.get(PROMPT_PARAMETER, _defaults(manifest.get("kind")).get(PROMPT_PARAMETER))
    seed = manifest.get("seed", summary.get("seed", parameters.get("seed")))
    row = pd.DataFrame([{k: v for k, v in summary.items() if not isinstance(v, (list, dict))}])
    return {"path": str(out), "kind": "lab session" if lab else "run", "game": manifest.get("kind") or summary.get("game"),
            "games": 1, "games_planned": 1, "conditions": 1, "seeds": "not recorded" if seed is None else str(seed),
            "llm": llm, "rules": {} if llm else {policy: policy}, "served_all": served if len(llm) > 1 else [],
            "servers": _servers([manifest]), "usage": [{"policy": policy, **_usage(row)}],
            "prompt_variants": [] if variant is None else [str(variant)],
            "template_hashes": sorted(_template_hashes(manifest)),
            "versions": dict(manifest.get("versions") or {}),
            "dates": {"started": [manifest["created"]] if manifest.get("created") else [], "first_call": None,
                      "last_call": None},
            "store": ((manifest.get("store") or (lab or {}).get("store") or {}) or {}).get("path"),
            "seats": len(lab.get("seats") or []) if lab else None, "calls_recorded": None}


if __name__ == "__main__":
    from llm_mesa.cli import main

    sys.exit(main(["card", *sys.argv[1:]]))
