"""The game registry: how the core finds a game by name, and keeps one broken plugin from harming the rest.

Installed games are entry points of the group ``llm_mesa.games`` (found without
importing them, so one game's command never loads another); a game defined in a
script or notebook is given to ``register_game``. Every command, page and the
sweep engine asks here, and nowhere else, for a game.

Isolation, because a plugin is someone else's code: an entry point whose name
breaks the name rule, or whose name two distributions claim, is left out, and an
entry point that fails to load (its module missing or raising on import, its
object not a ``Game``, its parameters' defaults outside their own bounds) is
refused when it is loaded. Either way every other game works: commands that list
the games (``llm-mesa --help``, ``analyze``, ``serve``, the ``--game`` choices)
name each broken one in one warning line, and asking for it by name is one error
line (exit 2) that names the distribution and the entry point to fix.

The name rule (``GAME_NAME``), one for every path: lower-case letters and digits,
words joined by single hyphens or underscores, starting with a letter, at most 40
characters (``vote``, ``public-goods``, ``public_goods``); never the name of
one of the core's commands. A name is used as it is written: it is the game's
subcommand (``llm-mesa public-goods``), its ``--game`` value, its experiment
files' ``game =`` and its sweeps' label.
"""

from __future__ import annotations

import argparse
import functools
import re
import sys
import warnings
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from llm_mesa.errors import GameError, LlmMesaWarning, one_line
from llm_mesa.games import Game
from llm_mesa.parameters import ParameterError, ParameterSet

ENTRY_POINT_GROUP = "llm_mesa.games"
#: the one rule for a game's name (see the module docstring)
GAME_NAME = re.compile(r"[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*")
GAME_NAME_MAX = 40
#: names a game may not take: the core's own commands (``llm_mesa.cli.CORE_SUBCOMMANDS``) and help
RESERVED_NAMES = frozenset({"sweep", "serve", "local", "viz", "analyze", "report", "lab", "help", "fit", "card"})

_registered: dict[str, Game] = {}
_loaded: dict[tuple[str, str], Game] = {}  # (name, entry point value) -> the game it loaded
_failed: dict[tuple[str, str], GameError] = {}  # (name, entry point value) -> why it cannot be played
_warned: set[str] = set()


def name_problem(name: object) -> str | None:
    """Why ``name`` is not a game's name (``GAME_NAME``, not a core command's).

    Args:
        name: A proposed name.

    Returns:
        One line saying why not, or None when it is a game's name.
    """
    if not isinstance(name, str) or not name:
        return f"a game's name must be a text, not {name!r}"
    if len(name) > GAME_NAME_MAX or not GAME_NAME.fullmatch(name):
        return (f"{name!r} is not a game's name: use lower-case letters and digits, words joined by single '-' or "
                f"'_', starting with a letter, at most {GAME_NAME_MAX} characters (e.g. public-goods)")
    if name in RESERVED_NAMES:
        return f"{name!r} is the name of an llm-mesa command, not free for a game"
    return None


def _origin(ep: EntryPoint) -> str:
    """The entry point and the distribution that declares it, as a fix names them."""
    dist = getattr(ep, "dist", None)
    owner = f"distribution {dist.name} {dist.version}" if dist is not None else "an unknown distribution"
    return f"entry point {ep.name} = {ep.value} ({owner}, group {ENTRY_POINT_GROUP})"


@functools.lru_cache(maxsize=8)
def _scan(path: tuple[str, ...]) -> tuple[dict[str, EntryPoint], dict[str, str]]:
    """The installed games' entry points that may be loaded, and why the others may not (by name)."""
    claims: dict[str, list[EntryPoint]] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        same = claims.setdefault(ep.name, [])
        if all(other.value != ep.value for other in same):  # one distribution seen twice on the path is one claim
            same.append(ep)
    usable: dict[str, EntryPoint] = {}
    refused: dict[str, str] = {}
    for name, eps in claims.items():
        problem = name_problem(name)
        if problem is not None:
            refused[name] = f"the game of {_origin(eps[0])} is left out: {problem}; rename the entry point"
        elif len(eps) > 1:
            refused[name] = (f"the game name {name!r} is claimed by {len(eps)} entry points "
                             f"({'; '.join(_origin(ep) for ep in eps)}), so none of them is played; uninstall one "
                             "of the distributions or rename its entry point")
        else:
            usable[name] = eps[0]
    return usable, refused


def _entry_points() -> tuple[dict[str, EntryPoint], dict[str, str]]:
    """``_scan`` of the current ``sys.path`` (read again only when it changes)."""
    return _scan(tuple(sys.path))


def register_game(game: Game) -> Game:
    """Make a game defined in a script or notebook available by name, as an installed one is.

    Args:
        game: The game (a ``Game`` instance, ``MesaGame`` included).

    Returns:
        The game, so that ``GAME = register_game(MyGame())`` reads as a declaration.

    Raises:
        GameError: Not a ``Game``, a name taken already, or a name, parameters or default its own contract
            refuses (one line that names the fix).
    """
    if not isinstance(game, Game):
        raise GameError(f"register_game takes a Game instance, not {type(game).__name__}")
    usable, refused = _entry_points()
    if game.name in _registered or game.name in usable or game.name in refused:
        raise GameError(f"a game named {game.name!r} is registered already; give yours another name")
    _registered[_checked(game, "register_game").name] = game
    return game


def unregister_game(name: str) -> None:
    """Forget a game given to ``register_game`` (tests, notebooks); a name never registered is no error.

    Args:
        name: The game's name.
    """
    _registered.pop(name, None)


def _checked(game: Game, origin: str) -> Game:
    """The contract a game is held to when it is registered: its name, its parameters, their defaults."""
    problem = name_problem(game.name)
    if problem is not None:
        raise GameError(f"{origin}: {problem}")
    if not isinstance(game.parameters, ParameterSet):
        raise GameError(f"{origin}: the {game.name} game's parameters must be a ParameterSet")
    for parameter in game.parameters:
        try:
            parameter.convert(parameter.default)
        except ParameterError as exc:
            raise GameError(f"{origin}: the {game.name} game's parameter {parameter.name} has a default its own "
                            f"definition refuses ({one_line(exc)}); fix the default or the bounds") from None
    return game


def _load(name: str, ep: EntryPoint) -> Game:
    """The game an entry point names, or a ``GameError`` that names the entry point and what went wrong."""
    key = (name, ep.value)
    if key in _loaded:
        return _loaded[key]
    if key in _failed:
        raise _failed[key]
    try:
        try:
            game = ep.load()
            game = game() if isinstance(game, type) and issubclass(game, Game) else game
        except Exception as exc:  # noqa: BLE001  (someone else's code: whatever it raises, the rest must work)
            raise GameError(f"the game {name!r} cannot be loaded from {_origin(ep)}: "
                            f"{type(exc).__name__}: {one_line(exc)}; reinstall or uninstall that distribution") from None
        if not isinstance(game, Game):
            raise GameError(f"the game {name!r} cannot be played: {_origin(ep)} names a {type(game).__name__}, "
                            "not a llm_mesa.games.Game; point the entry point at the game's Game instance")
        if game.name != name:
            raise GameError(f"the game {name!r} cannot be played: {_origin(ep)} loads a game named {game.name!r}; "
                            "name the entry point as the game")
        _checked(game, _origin(ep))
    except GameError as exc:
        _failed[key] = exc
        raise
    _loaded[key] = game
    return game


def get_game(name: str) -> Game:
    """The game registered under ``name``, loaded from its entry point on first use.

    Args:
        name: The game's name.

    Returns:
        The game.

    Raises:
        GameError: An unknown name (the message lists the games), or a broken entry point (the message names its
            distribution and what to fix).
    """
    if name in _registered:
        return _registered[name]
    usable, refused = _entry_points()
    if name in refused:
        raise GameError(refused[name])
    found = usable.get(name)
    if found is None:
        raise GameError(f"unknown game {name!r}; choose one of: {_known()}")
    return _load(name, found)


def game_names(*, warn: bool = False) -> list[str]:
    """The names of every installed or registered game that may be played, without importing any of them.

    Args:
        warn: One warning line for each entry point left out, as commands that list the games give.

    Returns:
        The names, sorted.
    """
    usable, refused = _entry_points()
    if warn:
        for message in refused.values():
            _warn(message)
    return sorted({*usable, *_registered})


def refused_games() -> dict[str, str]:
    """The installed entry points left out by the name rule or a clash of names.

    Returns:
        Name -> why it is left out, in one line that names the fix.
    """
    return dict(_entry_points()[1])


def installed_games() -> list[Game]:
    """Every game that loads, for commands that list every game's help, options or stand-in behaviours.

    Returns:
        The games, in name order; one that does not load is left out with one warning line.
    """
    games = []
    for name in game_names(warn=True):
        try:
            games.append(get_game(name))
        except GameError as exc:
            _warn(str(exc))
    return games


def _warn(message: str) -> None:
    if message not in _warned:  # once per command (``forget_warnings``), however often the games are listed
        _warned.add(message)
        warnings.warn(message, LlmMesaWarning, stacklevel=3)


def forget_warnings() -> None:
    """Let the next command warn again of the broken games (the command line calls it as each command starts)."""
    _warned.clear()


def game_argument(name: str) -> str:
    """``--game``'s type on every command.

    Args:
        name: What the user typed.

    Returns:
        The name, when a game of that name may be played.

    Raises:
        argparse.ArgumentTypeError: Why not, in one line (for an entry point left out: which distribution and
            entry point, and the rule it broke).
    """
    if name in game_names():
        return name
    refused = refused_games()
    raise argparse.ArgumentTypeError(refused.get(name) or f"unknown game {name!r}; choose one of: {_known()}")


def _known() -> str:
    return ", ".join(game_names()) or "none (install a game: pip install -e . installs the project's own)"


def default_game(given: str | None = None, *, option: str = "--game") -> Game:
    """The game asked for, or the only one installed.

    Args:
        given: The game's name, if one was given.
        option: The option that names a game, for the error.

    Returns:
        The game.

    Raises:
        GameError: Several games and none asked for (the message lists them), or an unknown name.
    """
    if given:
        return get_game(given)
    names = game_names()
    if len(names) == 1:
        return get_game(names[0])
    raise GameError(f"several games are installed; choose one with {option} ({_known()})")


def available_policies(game: str | Game | None = None) -> dict[str, str]:
    """The policies a game offers, by name, the game loaded first.

    Args:
        game: A ``Game`` or a game's name; None: every game that loads.

    Returns:
        Policy name -> its one-line summary, sorted by name.
    """
    from llm_mesa import declared
    from llm_mesa.policy import policies_of

    games = [game] if game is not None else installed_games()
    names: dict[str, str] = {}
    for found in games:
        found = get_game(found) if isinstance(found, str) else found
        declared.load_policies(found)
        names.update(policies_of(found))
    return dict(sorted(names.items()))


def make_policy(spec: Any, game: str | Game, **overrides: Any) -> Any:
    """A policy of a game from its spec, the game loaded first.

    Args:
        spec: ``NAME[:key=value,...]``, or a policy (passed through).
        game: A ``Game`` or a game's name.
        **overrides: Keyword arguments that win over the spec's.

    Returns:
        The policy.

    Raises:
        PolicyError: An unknown policy or parameter (the message lists those there are).
    """
    from llm_mesa import declared
    from llm_mesa.policy import Policy
    from llm_mesa.policy import make_policy as build

    if isinstance(spec, Policy):
        return spec
    found = get_game(game) if isinstance(game, str) else game
    declared.load_policies(found, spec)
    return build(spec, found, **overrides)


def game_behaviours() -> dict[str, Any]:
    """The stand-in server's behaviours every game that loads declares. The loopback asks here: the registry knows
    no server.

    Returns:
        Kind -> factory (a game whose ``llm.behaviours`` is a module has it imported, and its module registers its
        own); a game that fails to load is one warning line, and the others serve.
    """
    from llm_mesa import declared

    found: dict[str, Any] = {}
    for game in installed_games():
        try:
            found.update(declared.behaviours(game))
        except Exception as exc:  # noqa: BLE001  (someone else's module: it must not stop the others)
            _warn(f"the {game.name} game's stand-in behaviours cannot be loaded: {type(exc).__name__}: {one_line(exc)}")
    return found


__all__ = ["ENTRY_POINT_GROUP", "GAME_NAME", "RESERVED_NAMES", "available_policies", "default_game", "forget_warnings",
           "game_argument", "game_behaviours", "game_names", "get_game", "installed_games", "make_policy", "name_problem",
           "refused_games", "register_game", "unregister_game"]
