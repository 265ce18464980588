"""Prompt templates of one's own (``llm_mesa.prompt_templates``): a checked TOML format, one line naming the fix
for every bad file, a hash of the file's bytes, and a sweep that keeps each file's text and refuses an edited one.

The core is game-agnostic: most of this file declares a prompt of its own (``GREETING``); the game commands are
held to the same errors, and a game the test registers carries a template parameter through a sweep.
"""

from __future__ import annotations

import json
import re

import pytest

from llm_mesa.cli import main
from llm_mesa.parameters import ParameterSet
from llm_mesa.prompt_templates import (
    Part,
    Template,
    TemplateError,
    Templates,
    load_template,
    pattern,
    template_files,
    texts_hash,
)

PARTS = {"rules": Part(("n", "prize"), ("n", "prize"), help="the players and the prize", examples={"prize": 0.5}),
         "state": Part(("round", "colour"), ("round", "colour|shade")),
         "reminder": Part(literal=True),
         "history.head": Part(("window",), ("window",))}
PLAIN = {"rules": "{n} players; £{prize:.2f} to win.", "state": "Round {round}. You hold {colour}.",
         "reminder": "Answer {as JSON}.", "history.head": "Last {window}:"}
GREETING = Templates(PARTS, {"plain": Template("plain", PLAIN, texts_hash(PLAIN))})


def write(tmp_path, text: str, name: str = "mine.toml"):
    path = tmp_path / name
    path.write_text(text)
    return f"file:{path}"


def test_a_file_sets_some_parts_and_its_base_gives_the_rest(tmp_path):
    value = write(tmp_path, 'rules = "With {n} others, £{prize:.2f} for all."\n[history]\nhead = "The last {window}:"\n')
    template = GREETING.load(value)
    assert template.texts == {**PLAIN, "rules": "With {n} others, £{prize:.2f} for all.", "history.head": "The last {window}:"}
    assert template.is_file and template.base == "plain" and template.source.startswith("rules = ")
    assert GREETING.load("plain").texts == PLAIN and not GREETING.load("plain").is_file
    assert GREETING("plain") == "plain" and GREETING(value) == value  # the parameter's type keeps the value


def test_the_hash_is_of_the_bytes_so_any_edit_is_a_new_prompt(tmp_path):
    value = write(tmp_path, 'state = "Round {round}: {colour}."\n')
    first = GREETING.load(value)
    assert first.hash != GREETING.load("plain").hash and len(first.hash) == 16
    write(tmp_path, 'state = "Round {round}: {colour}."\n# a comment\n')
    edited = GREETING.load(value)
    assert edited.texts == first.texts and edited.hash != first.hash  # the same texts, yet another file
    write(tmp_path, 'state = "Round {round}: {colour}."\n')
    assert GREETING.load(value).hash == first.hash  # back as it was: its calls replay again
    moved = write(tmp_path, 'state = "Round {round}: {colour}."\n', "elsewhere.toml")
    assert GREETING.load(moved).hash == first.hash and GREETING.load(moved).path != first.path


@pytest.mark.parametrize("text, fragment", [
    ('rules = "{n} players."', "part rules lacks {prize}: add it where the text should show it (the players and the prize)"),
    ('state = "Round {round}."', "part state lacks {colour} or {shade}"),
    ('state = "Round {round}, {colour}, {mood}."', "part state uses {mood}, which the game does not fill there; "
                                                   "use one of: {round}, {colour}"),
    ('rules = "{n} {prize:.2q}"', "part rules cannot be filled"),
    ('rules = "{n} {prize} {"', "Single '{' encountered"),
    ('rules = "{n} {prize.real}"', "{prize.real} is not a placeholder name"),
    ('rules = "{n} {prize!r}"', "is too elaborate"),
    ('rules = "{n} {}{prize}"', "{} is not a placeholder name"),
    ('intro = "hi"', "unknown part 'intro'; this game's prompt has: rules, state, reminder, history.head"),
    ('[history]\ntail = "x"', "unknown part 'history.tail'"),
    ('rules = 3', "part rules must be a text (in quotes), not int"),
    ('base = "fancy"\nrules = "{n} {prize}"', "base = 'fancy' is not a variant of this game; choose one of: plain"),
    ('base = "plain"', "sets no part of the prompt; set at least one of: rules, state"),
    ('rules = "unclosed', "not valid TOML"),
])
def test_a_bad_file_is_one_line_that_names_the_fix(tmp_path, text, fragment):
    value = write(tmp_path, text + "\n")
    with pytest.raises(TemplateError) as caught:
        GREETING.load(value)
    message = str(caught.value)
    assert fragment in message and "\n" not in message and str(tmp_path) in message, message


def test_unreadable_or_missing_files_and_unknown_names_are_one_line(tmp_path):
    (tmp_path / "folder.toml").mkdir()
    (tmp_path / "binary.toml").write_bytes(b"rules = \"\xff\"\n")
    for value, fragment in [(f"file:{tmp_path}/none.toml", f"no prompt file {tmp_path}/none.toml"),
                            (f"file:{tmp_path}/folder.toml", "is a folder, not a prompt template"),
                            (f"file:{tmp_path}/binary.toml", "not valid UTF-8"),
                            ("file:", "names no file; write file:PATH"),
                            ("fancy", "unknown prompt 'fancy'; choose one of: plain, or file:PATH")]:
        with pytest.raises(TemplateError, match=re.escape(fragment)):
            GREETING.load(value)
    with pytest.raises(TemplateError, match="names no file"):
        load_template("file:  ", GREETING.declared, PARTS)


def test_a_literal_part_keeps_its_braces_and_the_game_check_runs_on_files(tmp_path):
    def no_shouting(template: Template) -> None:
        if "!" in template.texts["state"]:
            raise TemplateError(f"prompt file {template.path}: do not shout")

    strict = Templates(PARTS, GREETING.declared, check=no_shouting)
    assert strict.load(write(tmp_path, 'reminder = "Answer {as JSON}, {{twice}}."\n')).texts["reminder"] == \
        "Answer {as JSON}, {{twice}}."
    with pytest.raises(TemplateError, match="do not shout"):
        strict.load(write(tmp_path, 'state = "Round {round}: {colour}!"\n', "loud.toml"))


def test_a_declared_variant_must_carry_every_fact_itself():
    with pytest.raises(TemplateError, match="part rules lacks {prize}"):
        Templates(PARTS, {"bad": Template("bad", {**PLAIN, "rules": "{n} players"}, "h")})
    with pytest.raises(ValueError, match="must give exactly the parts"):
        Templates(PARTS, {"bad": Template("bad", {"rules": PLAIN["rules"]}, "h")})


def test_a_dumped_variant_is_a_file_that_loads_back_to_the_same_texts(tmp_path):
    from llm_mesa.models.consensus.prompt_variants import TEMPLATES as CONSENSUS
    from llm_mesa.models.naming.prompts import TEMPLATES as NAMING

    for templates in (GREETING, CONSENSUS, NAMING):
        for name in templates.declared:
            value = write(tmp_path, templates.dump(name), f"{name}.toml")
            assert templates.load(value).texts == templates.declared[name].texts, name


def test_pattern_reads_back_what_a_template_filled():
    text = "Round {round} of {limit}: you hold {colour} ({colour} since round {round})."
    found = re.fullmatch(pattern(text, {"round": r"\d+", "limit": r"\d+"}),
                         text.format(round=7, limit=50, colour="blue"))
    assert found is not None and found.group("round") == "7" and found.group("colour") == "blue"
    assert re.fullmatch(pattern(text, {"round": r"\d+"}), "Round 7 of 50: you hold blue (red since round 7).") is None


def test_the_manifest_record_finds_every_template_parameter_of_a_grid(tmp_path):
    value = write(tmp_path, 'state = "Round {round}: {colour}."\n')
    parameters = ParameterSet.of(GREETING.parameter("greeting"), GREETING.parameter("farewell"))
    files = template_files(parameters, {"a": {"greeting": value, "farewell": "plain"}, "b": {"farewell": value}})
    assert list(files) == [value]
    assert files[value]["content"] == 'state = "Round {round}: {colour}."\n'
    assert files[value]["template_hash"] == GREETING.load(value).hash and len(files[value]["sha256"]) == 64


@pytest.mark.parametrize("game, option", [("consensus", "--prompt"), ("naming", "--prompt")])
def test_a_games_command_refuses_a_bad_prompt_in_one_line_with_status_2(tmp_path, capsys, game, option):
    (tmp_path / "bad.toml").write_text('state = "{prefrence}"\n' if game == "consensus" else 'prompt = "{agent}"\n')
    for value, fragment in [(f"file:{tmp_path}/missing.toml", "no prompt file"),
                            (f"file:{tmp_path}/bad.toml", "which the game does not fill there"),
                            ("shouty", "unknown prompt 'shouty'; choose one of: study, paraphrase, terse")]:
        try:
            status = main([game, option, value, "--max-rounds" if game == "consensus" else "--rounds", "1"])
        except SystemExit as exc:  # argparse's type check: the parameter's own message
            status = exc.code
        err = capsys.readouterr().err
        assert status == 2 and fragment in err and len(err.strip().splitlines()) == 1, err


def test_a_sweep_of_a_registered_game_keeps_its_template_files_and_refuses_an_edited_one(tmp_path, capsys):
    """Any game's template parameter goes through a sweep so: the manifest keeps the file's text and hash."""
    from conftest import EXTRA_GAME

    from llm_mesa import Policy, make_policy, register_policy
    from llm_mesa.registry import get_game, register_game, unregister_game
    from llm_mesa.sweep import read_sweep

    @register_policy("follow", "greeted", "the majority of three")
    class Follow(Policy):
        def decide(self, obs, rng):
            return obs.state

    tiny = type(get_game(EXTRA_GAME))

    class Greeted(tiny):
        name = "greeted"
        parameters = ParameterSet(tiny.parameters.parameters + (GREETING.parameter("greeting"),))

        def build(self, parameters, policy, seed):
            kept = {k: v for k, v in parameters.items() if k != "greeting"}
            return tiny.build(self, kept, make_policy(policy, self.name), seed)

    value = write(tmp_path, 'state = "Round {round}: {colour}."\n')
    register_game(Greeted())
    try:
        argv = ["sweep", "--game", "greeted", "--policies", "follow", "--seeds", "2", "--set", f"greeting=plain,{value}", "--quiet",
                "--out", str(tmp_path / "s")]
        assert main(argv) == 0, capsys.readouterr().err
        manifest = json.loads((tmp_path / "s" / "manifest.json").read_text())
        assert manifest["templates"][value]["content"] == 'state = "Round {round}: {colour}."\n'
        assert manifest["templates"][value]["template_hash"] == GREETING.load(value).hash
        assert set(read_sweep(tmp_path / "s")["condition"]) == {"greeting=plain", f"greeting={value}"}
        assert main(argv) == 0  # resumed with the same file: nothing to play
        write(tmp_path, 'state = "Round {round}, and {colour}."\n')
        capsys.readouterr()
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "changed since this sweep started; restore it" in err and len(err.strip().splitlines()) == 1, err
    finally:
        unregister_game("greeted")
