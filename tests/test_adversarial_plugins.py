"""One broken plugin harms no other game: each row installs a broken game beside the healthy ones.

A game that fails to load (its module missing or raising on import, its object not a ``Game``,
its defaults outside their own bounds), a name the rule refuses, or a name two distributions
claim: commands that list the games name it in one warning line and work; every other game
plays; asking for the broken one is one error line (exit 2) naming the distribution and the
entry point. Then the one name rule, applied on every path, for a hyphenated game.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import EXTRA_GAME

from llm_mesa.cli import CORE_SUBCOMMANDS, main
from llm_mesa.games import GameError
from llm_mesa.registry import RESERVED_NAMES, game_names, get_game, name_problem, register_game, unregister_game

GOOD_GAME = '''
from llm_mesa.games import Game
from llm_mesa.parameters import Parameter, ParameterSet
import tinyvote

class Renamed(type(tinyvote.GAME)):
    name = {name!r}
    parameters = {parameters}

GAME = Renamed()
'''

#: (id, entry point name, entry point value, module name -> source, what the warning and the error must name)
BROKEN = [
    ("a missing module", "ghost", "no_such_module_r27:GAME", {}, "ModuleNotFoundError"),
    ("a module raising on import", "boom", "boom_r27:GAME", {"boom_r27": "raise RuntimeError('kaboom at import')"},
     "kaboom at import"),
    ("an object that is not a Game", "notgame", "notgame_r27:GAME", {"notgame_r27": "GAME = 42"}, "not a llm_mesa"),
    ("a class that is not a Game", "klass", "klass_r27:GAME", {"klass_r27": "class GAME:\n    pass"}, "not a llm_mesa"),
    ("a game named other than its entry point", "alias", "alias_r27:GAME",
     {"alias_r27": GOOD_GAME.format(name="other", parameters="tinyvote.GAME.parameters")}, "loads a game named"),
    ("a default outside its own bounds", "badbounds", "badbounds_r27:GAME",
     {"badbounds_r27": GOOD_GAME.format(name="badbounds", parameters=(
         "ParameterSet.of(Parameter('n', int, 2, 'agents', low=3, high=10), *list(tinyvote.GAME.parameters)[1:])"))},
     "parameter n has a default its own definition refuses"),
    ("parameters that are not a ParameterSet", "badparams", "badparams_r27:GAME",
     {"badparams_r27": GOOD_GAME.format(name="badparams", parameters="('n',)")}, "must be a ParameterSet"),
    ("a name the rule refuses", "Bad.Name", "tinyvote:GAME", {}, "is not a game's name"),
    ("the name of a core command", "sweep", "tinyvote:GAME", {}, "is the name of an llm-mesa command"),
    ("a name two distributions claim", EXTRA_GAME, "os:path", {}, "claimed by 2 entry points"),
]


def install_broken(site: Path, name: str, value: str, modules: dict[str, str]) -> Path:
    """A distribution ``broken-plugin`` in ``site`` whose one game entry point is ``name = value``."""
    site.mkdir(parents=True)
    for module, source in modules.items():
        (site / f"{module}.py").write_text(source)
    info = site / "broken_plugin-0.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 0.3\n")
    (info / "entry_points.txt").write_text(f"[llm_mesa.games]\n{name} = {value}\n")
    return site


@pytest.fixture
def broken(request, tmp_path, monkeypatch):
    _, name, value, modules, says = request.param
    site = install_broken(tmp_path / "site", name, value, modules)
    monkeypatch.syspath_prepend(str(site))
    yield name, says
    for module in modules:
        sys.modules.pop(module, None)


def run(capsys, *argv) -> tuple[int, str, str]:
    try:
        status = main([str(a) for a in argv])
    except SystemExit as exit_:  # --help
        status = exit_.code
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def warnings_in(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("llm-mesa: warning:")]


@pytest.mark.parametrize("broken", BROKEN, ids=[row[0] for row in BROKEN], indirect=True)
def test_a_broken_game_is_one_warning_where_games_are_listed_and_one_error_when_asked_for(broken, capsys, tmp_path):
    name, says = broken
    healthy = "consensus" if name == EXTRA_GAME else EXTRA_GAME
    for listing in (["--help"], ["analyze", "--help"], ["sweep", "--help"]):
        status, out, err = run(capsys, *listing)
        assert status == 0 and "Traceback" not in err, (listing, err)
        if listing != ["sweep", "--help"] or name in ("Bad.Name", "sweep", EXTRA_GAME):  # sweep lists names only
            shown = warnings_in(err)
            assert len(shown) == 1 and says in shown[0] and "broken-plugin 0.3" in shown[0], (listing, err)
            assert f"{name} = " in shown[0]  # the entry point
        assert listing == ["analyze", "--help"] or healthy in out  # analyze lists only games with options
    # every other game plays
    status, out, err = run(capsys, healthy, *(["--n", 8, "--max-rounds", 2] if healthy == EXTRA_GAME else
                                              ["--n", 8, "--topology", "caveman", "--max-rounds", 1,
                                               "--baseline-permutations", 0]), "--json")
    assert status == 0 and json.loads(out)["game" if healthy == EXTRA_GAME else "rounds"], err
    status, out, err = run(capsys, "sweep", "--game", healthy, "--seeds", 1, "--set", "max_rounds=1", "--quiet",
                           "--out", tmp_path / "healthy")
    assert status == 0, err
    # asking for it: one line, exit 2, naming the distribution and the entry point
    for asked in ([name, "--help"], ["sweep", "--game", name, "--seeds", 1, "--out", tmp_path / "x"],
                  ["viz", "--game", name], ["lab", "--game", name, "--seats", 1]):
        status, out, err = run(capsys, *asked)
        if name in CORE_SUBCOMMANDS and asked == [name, "--help"]:  # the core's command keeps its name
            assert status == 0 and "usage: llm-mesa sweep" in out, err
            continue
        lines = [line for line in err.strip().splitlines() if not line.startswith("llm-mesa: warning:")]
        assert status == 2 and len(lines) == 1 and "Traceback" not in err, (asked, err)
        assert says in lines[0] and "broken-plugin 0.3" in lines[0] and f"{name} = " in lines[0], lines[0]
    with pytest.raises(GameError, match="broken-plugin 0.3"):
        get_game(name)


def test_serve_lists_the_healthy_games_behaviours_beside_a_broken_game(tmp_path, monkeypatch):
    import warnings

    from llm_mesa.loopback import behaviours

    site = install_broken(tmp_path / "site", "boom", "boom_r27b:GAME", {"boom_r27b": "raise ImportError('nope')"})
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(behaviours, "_games_loaded", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        listed = behaviours.listed_behaviours()
    assert any(name.startswith("rule:") for name in listed)  # the consensus game's stand-in behaviours
    assert [str(w.message) for w in caught if "boom" in str(w.message)] != []
    sys.modules.pop("boom_r27b", None)


def test_the_reserved_names_are_the_core_commands():
    assert set(CORE_SUBCOMMANDS) <= RESERVED_NAMES


#: (name, why it is refused: None = a game's name)
NAMES = [("consensus", None), ("public-goods", None), ("public_goods", None), ("g2", None), ("a-b_c3", None),
         ("Public", "lower-case"), ("2games", "starting with a letter"), ("a--b", "single"), ("a-", "single"),
         ("has space", "lower-case"), ("x" * 41, "at most 40"), ("", "a text"), ("report", "llm-mesa command"),
         ("naïve", "lower-case")]


@pytest.mark.parametrize("name, why", NAMES, ids=[n or "empty" for n, _ in NAMES])
def test_one_name_rule(name, why):
    problem = name_problem(name)
    assert (problem is None) if why is None else (why in problem)


@pytest.fixture
def hyphenated():
    from llm_mesa import Policy, make_policy, register_policy

    @register_policy("stay", "public-goods", "keeps its state")
    class Stay(Policy):
        def decide(self, obs, rng):
            return obs.state

    class PublicGoods(type(get_game(EXTRA_GAME))):
        name = "public-goods"

        def build(self, parameters, policy, seed):
            return super().build(parameters, make_policy(policy, self.name), seed)

    register_game(PublicGoods())
    yield "public-goods"
    unregister_game("public-goods")


def test_a_hyphenated_game_is_one_name_on_every_path(hyphenated, capsys, tmp_path):
    assert hyphenated in game_names()
    status, out, err = run(capsys, "--help")
    assert status == 0 and hyphenated in out, err
    status, out, err = run(capsys, "sweep", "--help")
    assert status == 0 and hyphenated in out, err
    status, out, err = run(capsys, hyphenated, "--n", 6, "--max-rounds", 2, "--json")
    assert status == 0 and json.loads(out)["game"] == hyphenated, err
    status, out, err = run(capsys, "sweep", "--game", hyphenated, "--seeds", 2, "--set", "max_rounds=2",
                           "--quiet", "--out", tmp_path / "s")
    assert status == 0, err
    status, out, err = run(capsys, "analyze", tmp_path / "s", "--json")
    assert status == 0 and json.loads(out)["game"] == hyphenated, err


def test_register_game_holds_a_script_to_the_same_rule():
    class Dotted(type(get_game(EXTRA_GAME))):
        name = "my.game"

    with pytest.raises(GameError, match="is not a game's name"):
        register_game(Dotted())
    assert "my.game" not in game_names()
