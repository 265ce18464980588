"""The game registry: how the core finds a game by name.

Installed games are entry points of the group ``llm_mesa.games`` (found without
importing them, so one game's command never loads another); a game defined in a
script or notebook is given to ``register_game``. Every command, page and the
sweep engine asks here, and nowhere else, for a game.
"""

from __future__ import annotations

import functools
import sys
from importlib.metadata import EntryPoint, entry_points

from llm_mesa.games import Game, GameError
from llm_mesa.parameters import ParameterSet

ENTRY_POINT_GROUP = "llm_mesa.games"

_registered: dict[str, Game] = {}
_loaded: dict[str, Game] = {}


def _entry_points() -> dict[str, EntryPoint]:
    """The installed games' entry points, read again only when ``sys.path`` changes."""
    return _entry_points_on(tuple(sys.path))


@functools.lru_cache(maxsize=8)
def _entry_points_on(path: tuple[str, ...]) -> dict[str, EntryPoint]:
    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in found and found[ep.name].value != ep.value:
            raise GameError(f"two games are registered as {ep.name!r} ({found[ep.name].value} and {ep.value}); "
                            "uninstall one of them or rename its entry point")
        found[ep.name] = ep
    return found


def register_game(game: Game) -> Game:
    """Make a game defined in a script or notebook available by name, as an installed one is."""
    if not isinstance(game, Game):
        raise GameError(f"register_game takes a Game instance, not {type(game).__name__}")
    if game.name in _registered or game.name in _entry_points():
        raise GameError(f"a game named {game.name!r} is registered already; give yours another name")
    _registered[_checked(game).name] = game
    return game


def unregister_game(name: str) -> None:
    """Forget a game given to ``register_game`` (tests, notebooks)."""
    _registered.pop(name, None)


def _checked(game: Game) -> Game:
    if not isinstance(game.name, str) or not game.name.isidentifier():
        raise GameError(f"a game's name must be a word (letters, digits, underscores), not {game.name!r}")
    if not isinstance(game.parameters, ParameterSet):
        raise GameError(f"the {game.name} game's parameters must be a ParameterSet")
    return game


def get_game(name: str) -> Game:
    """The game registered under ``name``."""
    if name in _registered:
        return _registered[name]
    if name in _loaded:
        return _loaded[name]
    found = _entry_points().get(name)
    if found is None:
        raise GameError(f"unknown game {name!r}; choose one of: {_known()}")
    game = found.load()
    game = game() if isinstance(game, type) else game
    if not isinstance(game, Game):
        raise GameError(f"the entry point {name!r} = {found.value} is not a llm_mesa.games.Game")
    if game.name != name:
        raise GameError(f"the entry point {name!r} loads a game named {game.name!r}; name the entry point as the game")
    _loaded[name] = _checked(game)
    return game


def game_names() -> list[str]:
    """The names of every installed or registered game, without importing any of them."""
    return sorted({*_entry_points(), *_registered})


def _known() -> str:
    return ", ".join(game_names()) or "none (install a game: pip install -e . installs the project's own)"


def default_game(given: str | None = None, *, option: str = "--game") -> Game:
    """The game asked for, or the only one installed; with several and none asked for, one line listing them."""
    if given:
        return get_game(given)
    names = game_names()
    if len(names) == 1:
        return get_game(names[0])
    raise GameError(f"several games are installed; choose one with {option} ({_known()})")


__all__ = ["ENTRY_POINT_GROUP", "default_game", "game_names", "get_game", "register_game", "unregister_game"]
