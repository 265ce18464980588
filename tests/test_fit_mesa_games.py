"""``llm-mesa fit`` on the games of Mesa's examples, through the adapter's own declarations alone.

Each game's ``decisions`` table (kept with ``--tables agents``) records what an agent saw and answered; the ``mesa``
rule's likelihood is the rule each ``Decision`` declares. Theory: the model's own rule explains its own runs
exactly (log-likelihood 0), the ``random`` baseline's runs are best explained by ``random``, and every fitted
log-likelihood and AIC is finite (a rule that gives an observed answer no chance gets a trembling hand).
"""

from __future__ import annotations

import json
import math

import pytest

from llm_mesa.cli import main

GRIDS = {"schelling": ["--set", "width=10", "--set", "height=10"],
         "pd_grid": ["--set", "width=6", "--set", "height=6", "--set", "activation_order=Simultaneous"],
         "virus_on_network": ["--set", "num_nodes=20", "--set", "initial_outbreak_size=4"]}


def fits(capsys, tmp_path, game: str) -> list[dict]:
    out = tmp_path / game
    assert main(["sweep", "--game", game, "--policies", "mesa;random", "--seeds", "3", *GRIDS[game], "--set",
                 "max_rounds=3", "--tables", "agents", "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["fit", str(out), "--no-check", "--json"]) == 0
    return json.loads(capsys.readouterr().out)["fits"]


@pytest.mark.parametrize("game", ["schelling", "pd_grid"])
def test_the_models_own_rule_explains_its_runs_and_random_explains_random(game, capsys, tmp_path):
    found = fits(capsys, tmp_path, game)
    assert all(math.isfinite(f["log_likelihood"]) and math.isfinite(f["aic"]) for f in found)
    best = {f["policy"]: min((g for g in found if g["policy"] == f["policy"]), key=lambda g: g["aic"])["rule"]
            for f in found}
    assert best == {"mesa": "mesa", "random": "random"}
    own = next(f for f in found if f["policy"] == "mesa" and f["rule"] == "mesa")
    assert own["log_likelihood"] == pytest.approx(0.0, abs=1e-9) and own["decisions"] > 0


def test_a_rule_that_draws_is_weighed_by_its_chances(capsys, tmp_path):
    """virus_on_network's rule checks with chance virus_check_frequency: its likelihood of the random baseline's
    answers is that chance's product, finite; its own runs record no answer (the model drew it)."""
    found = fits(capsys, tmp_path, "virus_on_network")
    assert {f["policy"] for f in found} == {"random"}
    rule = next(f for f in found if f["rule"] == "mesa")
    coin = next(f for f in found if f["rule"] == "random")
    assert math.isfinite(rule["log_likelihood"]) and coin["log_likelihood"] == pytest.approx(-coin["decisions"] * math.log(2))
