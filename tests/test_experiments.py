"""Experiment files: every shipped study loads, seeds pair across policies, bad keys are named."""

from pathlib import Path

import pytest

from llm_mesa.sweep.experiment import ExperimentError, derived_seed, load_experiment, parse_experiment

EXPERIMENTS = sorted((Path(__file__).resolve().parent.parent / "experiments").glob("*.toml"))


@pytest.mark.parametrize("path", EXPERIMENTS, ids=lambda p: p.stem)
def test_every_shipped_experiment_loads(path):
    experiment = load_experiment(path)
    assert experiment.games == len(experiment.conditions) * len(experiment.policies) * experiment.repetitions > 0
    assert experiment.description


def test_the_shipped_designs_have_the_studys_sizes():
    sizes = {p.stem: load_experiment(p) for p in EXPERIMENTS}
    assert sizes["consensus-study"].games == 11 * 30 * 6
    assert sizes["consensus-study-rules"].games == 11 * 30 * (6 + 4)  # the silent and the talking rules
    assert sizes["consensus-closed-model"].games == 6 * 30
    assert sizes["sign-study"].games == 2 * 3 * 5 * 3 * 2  # N x alpha x mode/memory x seeds x models
    assert sizes["sign-study"].conditions["schema-10|n=24,alpha=0.9"] == {
        "mode": "schema", "memory": 10, "n": 24, "alpha": 0.9, "max_rounds": 300}


def test_an_llm_study_and_its_rule_baseline_play_the_same_seeds():
    llm, rules = (load_experiment(p) for p in EXPERIMENTS if p.stem in ("consensus-study", "consensus-study-rules"))
    assert llm.seeds() == rules.seeds()
    by_name = {p.stem: load_experiment(p) for p in EXPERIMENTS}
    for synchronous, sequential in (("consensus-study", "consensus-study-sequential"),
                                    ("consensus-study-rules", "consensus-study-rules-sequential")):
        assert by_name[sequential].seeds() == by_name[synchronous].seeds()  # paired: update is not in the seeds
        assert {c["update"] for c in by_name[sequential].conditions.values()} == {"random-sequential"}
        assert by_name[sequential].policies == by_name[synchronous].policies
    sign, sign_rules = (load_experiment(p) for p in EXPERIMENTS if p.stem in ("sign-study", "sign-rules"))
    assert sign.seeds() == sign_rules.seeds()


def test_seeds_depend_on_condition_and_repetition_only():
    base = {"game": "consensus", "repetitions": 3, "conditions": ["ba-local", "ws-none"]}
    one = parse_experiment({**base, "policies": ["voter"]}).seeds()
    other_order = parse_experiment({**base, "conditions": ["ws-none", "ba-local"], "policies": ["mi-0.2"]}).seeds()
    more = parse_experiment({**base, "repetitions": 5, "conditions": ["cc-none", "ba-local", "ws-none"]}).seeds()
    assert one == other_order
    assert more["ba-local"][:3] == one["ba-local"] and more["ws-none"][:3] == one["ws-none"]
    assert len({s for seeds in more.values() for s in seeds}) == 15  # no two games share a seed
    assert derived_seed({"n": 36}, 0) != derived_seed({"n": 36}, 0, study_seed=1)


@pytest.mark.parametrize("data, fragment", [
    ({"repetitions": 3}, "game = \"NAME\""),
    ({"game": "chess", "repetitions": 3}, "unknown game 'chess'"),
    ({"game": "consensus"}, "repetitions = K"),
    ({"game": "consensus", "repetitions": 0}, "'repetitions' must be a positive whole number"),
    ({"game": "consensus", "repetitions": 10**7}, "above the limit"),
    ({"game": "consensus", "repetitions": 3, "colour": "red"}, "unknown key 'colour'"),
    ({"game": "consensus", "repetitions": 3, "axes": {"colour": ["red"]}}, "unknown key 'colour' in [axes]"),
    ({"game": "consensus", "repetitions": 3, "parameters": {"n": 1}}, "below its minimum"),
    ({"game": "consensus", "repetitions": 3, "axes": {"n": 36}}, "'n' in [axes] must be a non-empty list"),
    ({"game": "consensus", "repetitions": 3, "llm": {"modle": "x"}}, "unknown key 'modle' in [llm]"),
    ({"game": "consensus", "repetitions": 3, "budget": {"max_cost": -1}}, "'max_cost' in [budget] must be a positive"),
    ({"game": "consensus", "repetitions": 3, "budget": {"max_cost": float("nan")}}, "positive finite"),
    ({"game": "consensus", "repetitions": 3, "tables": ["frames"]}, "unknown table(s) frames"),
    ({"game": "consensus", "repetitions": 3, "conditions": ["ba-loca"]}, "unknown condition 'ba-loca'"),
    ({"game": "naming", "repetitions": 3, "axes": {"mode": ["nl"], "memory": [5]}}, None),
])
def test_a_bad_file_is_one_line_naming_the_key(data, fragment):
    if fragment is None:  # a cross-parameter conflict is found when the sweep checks its conditions
        parse_experiment(data)
        return
    with pytest.raises(ExperimentError) as info:
        parse_experiment(data)
    message = str(info.value)
    assert fragment in message and "\n" not in message


def test_a_file_that_is_not_toml_is_named(tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text("game = consensus\n")
    with pytest.raises(ExperimentError, match="not valid TOML"):
        load_experiment(path)
    with pytest.raises(ExperimentError, match="no experiment file"):
        load_experiment(tmp_path / "missing.toml")


def _inertia(spec: str) -> float:
    """The inertia a rule spec plays at (its registered default when the spec does not say)."""
    from llm_mesa.policy import make_policy

    return float(make_policy(spec.strip(), "consensus").inertia)


def test_every_talking_baseline_of_a_shipped_file_has_its_silent_comparator_at_the_same_inertia():
    """A talking rule is compared with the silent majority rule at its own inertia, never across inertias
    (relay's default is 0, majority-with-inertia's 0.2): in each file's policies, and within each mix."""
    import re

    talking = re.compile(r"^(relay|announce)\b")
    for path in [p for p in EXPERIMENTS if p.name.startswith("consensus-")]:
        experiment = load_experiment(path)
        specs = [part for spec in experiment.policies.values() for part in spec.split("+")
                 if not part.strip().startswith("llm")]
        silent = {_inertia(s) for s in specs if s.strip().startswith("majority-inertia")}
        for spec in experiment.policies.values():
            parts = [p.strip() for p in spec.split("+")]
            rules = [p for p in parts if not p.startswith("llm")]
            if len(rules) > 1:  # a mix of rules differs in who talks, not in inertia
                assert len({_inertia(p) for p in rules}) == 1, (path.name, spec)
            for part in rules:
                if talking.match(part):
                    assert _inertia(part) in silent, (path.name, part, sorted(silent))
