"""The layout, held by machine: imports point one way, the LLM layer names no game, modules stay small.

games -> core -> llm; the explorer -> games and core; the CLI shell -> games (through the
registry). Never the core -> a game or the explorer, the LLM layer or the loopback server
-> a game, a game -> the explorer.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 450
GAMES = sorted(p.name for p in (ROOT / "models").iterdir() if (p / "game.py").exists())


def python_files(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def imported_modules(path: Path, package: str) -> set[str]:
    """Absolute names of every module ``path`` imports (relative imports resolved)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(
                r"llm_mesa\.[\w.]+", node.value):
            names.add(node.value)  # importlib.import_module("llm_mesa.x") and lazy-import tables
    return names


def package_of(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[0] in ("models", "visualization"):
        parts = ["llm_mesa", *parts]
    if parts[-1] == "__init__":
        parts = parts[:-1]
        return ".".join(parts)
    return ".".join(parts[:-1])


def crossings(folder: str, forbidden: tuple[str, ...], allowed_files: tuple[str, ...] = ()) -> list[str]:
    found = []
    for path in python_files(folder):
        rel = str(path.relative_to(ROOT))
        if rel in allowed_files:
            continue
        for module in imported_modules(path, package_of(path)):
            if module.startswith(forbidden):
                found.append(f"{rel} imports {module}")
    return sorted(set(found))


def test_the_core_imports_no_game_and_no_explorer():
    """Only the CLI shell may know the games, and it finds them through the registry."""
    assert crossings("llm_mesa", ("llm_mesa.models", "llm_mesa.visualization", "models", "visualization"),
                     allowed_files=("llm_mesa/cli.py",)) == []


def test_the_cli_shell_names_no_game_module():
    """Even the shell reaches games only through ``llm_mesa.games`` (entry points)."""
    assert [m for m in imported_modules(ROOT / "llm_mesa/cli.py", "llm_mesa") if m.startswith("llm_mesa.models")] == []


#: what the game contract may not import: commands, pages, the sweep engine, analysis, the explorer
ABOVE_THE_CONTRACT = ("llm_mesa.cli", "llm_mesa.game_cli", "llm_mesa.views", "llm_mesa.sweep", "llm_mesa.analysis",
                      "llm_mesa.visualization", "llm_mesa.loopback", "llm_mesa.registry", "llm_mesa.local_cli")


def test_the_game_contract_sits_at_the_bottom_of_the_house():
    """``games.py`` and its value types import no command, page, sweep or analysis module (not even lazily):
    the defaults of a game's extensions live in the modules that use them, as functions of a ``Game``."""
    for module in ("games.py", "game_types.py"):
        found = sorted(m for m in imported_modules(ROOT / "llm_mesa" / module, "llm_mesa") if m.startswith(ABOVE_THE_CONTRACT))
        assert found == [], module


def test_every_package_is_installed():
    """A package missing from pyproject's list works in an editable install and is absent from a wheel."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {package_of(init) for folder in ("llm_mesa", "models", "visualization")
             for init in (ROOT / folder).rglob("__init__.py")}
    assert found - listed == set()


def test_the_page_modules_live_together():
    """What pages draw of a game is one package, ``llm_mesa.views``; no page module lies loose in the core."""
    assert sorted(p.name for p in (ROOT / "llm_mesa").glob("view*.py")) == []
    assert (ROOT / "llm_mesa" / "views" / "__init__.py").exists()


def test_a_game_imports_no_explorer():
    assert crossings("models", ("llm_mesa.visualization", "visualization")) == []


def test_a_game_imports_no_other_game():
    for game in GAMES:
        others = tuple(f"llm_mesa.models.{g}" for g in GAMES if g != game)
        assert crossings(f"models/{game}", others) == []


#: the parameters the core itself defines for the games built on it (a Mesa model's step limit, its cap on agents)
CORE_PARAMETERS = {m for p in (ROOT / "llm_mesa").rglob("*.py")
                   for m in re.findall(r'Parameter\("([a-z_]+)"', p.read_text())}


def game_words() -> re.Pattern[str]:
    """The tree's games' names and their parameters' many-word names (``max_rounds``), as whole words."""
    from llm_mesa.registry import get_game

    words = set(GAMES) | {p.name for g in GAMES for p in get_game(g).parameters if "_" in p.name}
    words -= CORE_PARAMETERS  # the core's own, which it gives games (the Mesa adapter's step limit)
    return re.compile(r"\b(" + "|".join(sorted(words)) + r")\b", re.IGNORECASE)


@pytest.mark.parametrize("folder", ["llm_mesa"])
def test_the_core_names_no_game_and_no_games_parameter(folder):
    """Not in an import, a string or a comment: the core asks the game (``llm_mesa.games.Game``)."""
    words = game_words()
    mentions = [f"{p.relative_to(ROOT)}:{i}: {line.strip()}"
                for p in python_files(folder) for i, line in enumerate(p.read_text().splitlines(), 1)
                if words.search(line)]
    assert mentions == []


def test_the_word_check_sees_a_mention():
    assert game_words().search("    kwargs.get('baseline_permutations')") and game_words().search("# the Consensus game")


def test_every_game_in_the_tree_is_registered_and_whole_in_its_folder():
    """The tree's own games (others may be installed beside them) name only modules of their folder."""
    from llm_mesa.registry import game_names, get_game

    assert set(GAMES) <= set(game_names())
    for name in GAMES:
        game = get_game(name)
        targets = (game.llm.policy, game.llm.behaviours, game.llm.estimate, *vars(game.extensions).values())
        modules = [game.policies.module, *(m for m, _ in game.policies.lazy.values()),
                   *(target.partition(":")[0] for target in targets if isinstance(target, str))]
        for module in filter(None, modules):
            assert module.startswith(f"llm_mesa.models.{name}."), module
            assert (ROOT / "models" / name / (module.rsplit(".", 1)[1] + ".py")).exists(), module


def test_no_module_is_over_the_size_limit():
    long = [f"{p.relative_to(ROOT)}: {n}" for folder in ("llm_mesa", "models", "visualization")
            for p in python_files(folder) if (n := len(p.read_text().splitlines())) > MAX_LINES]
    assert long == []


def test_the_checker_sees_a_crossing(tmp_path):
    """The import check can fail: a core module importing a game is caught."""
    bad = tmp_path / "bad.py"
    bad.write_text("from llm_mesa.models.consensus import ConsensusModel\nfrom ..models import naming\n")
    found = imported_modules(bad, "llm_mesa.sweep")
    assert "llm_mesa.models.consensus" in found and "llm_mesa.models" in found


def test_ruff_is_clean():
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--quiet", str(ROOT)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_rule_only_game_and_the_help_import_neither_openai_nor_solara():
    code = ("import sys; from llm_mesa.cli import main\n"
            "from llm_mesa.models.consensus import ConsensusModel\n"
            "ConsensusModel(12, 'ba', rng=1, baseline_permutations=10).run()\n"
            "try:\n    main(['consensus', '--help'])\nexcept SystemExit:\n    pass\n"
            "bad = [m for m in ('openai', 'solara', 'aiohttp') if m in sys.modules]\n"
            "sys.stderr.write(repr(bad)); sys.exit(1 if bad else 0)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]


#: the core's public API: these modules and the names in their ``__all__``
PUBLIC_MODULES = ("llm_mesa", "llm_mesa.llm", "llm_mesa.loopback", "llm_mesa.analysis", "llm_mesa.sweep")


def non_public_uses(path: Path, own: str, package: str) -> list[str]:
    """What ``path`` (a module of ``package``) takes from llm_mesa beyond its public API and its game ``own``.

    A name imported from a public module must be in that module's ``__all__`` and not
    start with an underscore; any other llm_mesa module (another game, the explorer, a core
    module not exported) is refused, in an import or in a module-name string.
    """
    import importlib

    public = {m: set(importlib.import_module(m).__all__) for m in PUBLIC_MODULES}
    tree = ast.parse(path.read_text(), filename=str(path))
    found, bound = [], set()

    def allowed_module(module: str) -> bool:
        return module in public or module == own or module.startswith(own + ".")

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")
                module = ".".join(base[: len(base) - node.level + 1] + ([node.module] if node.module else []))
            if not module.startswith("llm_mesa"):
                continue
            if not allowed_module(module):
                found.append(f"from {module} import ...")
            elif module in public:
                for alias in node.names:
                    bound.add(alias.asname or alias.name)
                    if alias.name.startswith("_") or alias.name not in public[module]:
                        found.append(f"from {module} import {alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("llm_mesa") and not allowed_module(alias.name):
                    found.append(f"import {alias.name}")
                elif alias.name in public:
                    bound.add(alias.asname or alias.name)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(r"llm_mesa(\.\w+)+(:\w+)?",
                                                                                              node.value):
            if not allowed_module(node.value.partition(":")[0]):
                found.append(f"the module name {node.value!r}")
    for node in ast.walk(tree):  # a private member reached through a public name (llm_mesa._EXPORTS)
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            found.append(f"{node.value.id}.{node.attr}")
    return found


def test_the_colouring_game_uses_only_the_public_api():
    """The proof that a game needs nothing private: models/colouring imports only what llm_mesa exports."""
    files = python_files("models/colouring")
    assert len(files) >= 8
    uses = {str(p.relative_to(ROOT)): non_public_uses(p, "llm_mesa.models.colouring", package_of(p)) for p in files}
    assert {f: u for f, u in uses.items() if u} == {}


def test_the_public_api_check_catches_a_private_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import importlib\nimport llm_mesa\nimport llm_mesa.sweep.engine\n"
                   "from llm_mesa import Game, _EXPORTS\nfrom llm_mesa.graphs import TOPOLOGIES\n"
                   "from llm_mesa.llm import ask, answers\nfrom llm_mesa.models.consensus import GAME\n"
                   "from llm_mesa.visualization import app\nfrom .policies import View\n"
                   "importlib.import_module('llm_mesa.llm.store')\nPOLICY = 'llm_mesa.models.colouring.llm_policy:game_policy'\n"
                   "print(llm_mesa._EXPORTS)\n")
    found = non_public_uses(bad, "llm_mesa.models.colouring", "llm_mesa.models.colouring")
    assert sorted(found) == sorted([
        "import llm_mesa.sweep.engine", "from llm_mesa import _EXPORTS", "from llm_mesa.graphs import ...",
        "from llm_mesa.llm import answers", "from llm_mesa.models.consensus import ...",
        "from llm_mesa.visualization import ...", "the module name 'llm_mesa.llm.store'", "llm_mesa._EXPORTS"])


#: the page that draws the layout for readers; the block below its "Layout" heading is held here
ARCHITECTURE = ROOT / "docs" / "architecture.md"


def layout_paths(page: str) -> set[str]:
    """The paths the page's layout block names: a folder at the line's start, its files and folders indented under it."""
    block = re.search(r"^## Layout\n.*?^```\n(.*?)^```", page, re.S | re.M)
    assert block, "the architecture page has no layout block under '## Layout'"
    paths, folder = set(), ""
    for line in block.group(1).splitlines():
        found = re.match(r"^( *)(\S+)", line)
        if not found or not found.group(2).endswith(("/", ".py")):
            continue
        indent, name = found.groups()
        folder = name if not indent else folder
        paths.add(name if not indent else folder + name)
    return paths


def test_the_architecture_pages_layout_names_what_exists_and_every_package():
    """What readers are shown of the tree is the tree: each path named exists, and no package of the core or a game is missing."""
    paths = layout_paths(ARCHITECTURE.read_text())
    assert sorted(p for p in paths if not (ROOT / p).exists()) == []
    packages = {f"{init.parent.relative_to(ROOT)}/" for folder in ("llm_mesa", "models") for init in (ROOT / folder).glob("*/__init__.py")}
    assert sorted(packages - paths) == []


def test_the_layout_check_sees_a_stale_block():
    page = "# A\n\n## Layout\n\nThe tree.\n\n```\nllm_mesa/   core\n  gone.py   removed\n  views/    pages\nREADME.md\n```\n"
    assert layout_paths(page) == {"llm_mesa/", "llm_mesa/gone.py", "llm_mesa/views/"}
    assert not (ROOT / "llm_mesa/gone.py").exists()
