"""`llm-mesa analyze` over several sweeps and `llm-mesa report`: one self-contained page, a table per figure."""

from __future__ import annotations

import base64
import json
from html.parser import HTMLParser

import pytest

from llm_mesa.cli import main
from llm_mesa.loopback.server import LoopbackServer
from llm_mesa.sweep import run_sweep

CONDITIONS = {
    "ba-global": {"n": 12, "topology": "ba", "communication": "global"},
    "ba-local": {"n": 12, "topology": "ba", "communication": "local"},
    "ba-global-human": {"n": 12, "topology": "ba", "communication": "global", "label": "human"},
    "cc-none": {"n": 12, "topology": "caveman", "communication": "none"},
}
FAST = {"max_rounds": 15, "baseline_permutations": 50}
NAMING = {"nl": {"mode": "nl", "memory": 0}, "schema-5": {"mode": "schema", "memory": 5}}


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    out = {name: root / name for name in ("rules", "llm", "naming", "naming-llm")}
    run_sweep(CONDITIONS, "mi-0.2;voter", 3, out["rules"], model_options=FAST, tables=("agents",), game="consensus")
    run_sweep(NAMING, "echo;noisy:p=0.3", 3, out["naming"], game="naming", model_options={"n": 12, "max_rounds": 15},
              tables=("rounds",))
    with LoopbackServer(seed=1) as server:
        run_sweep({k: CONDITIONS[k] for k in ("ba-global", "cc-none")},
                  [f"llm:base_url={server.base_url},model=rule:majority-inertia"], 2, out["llm"], games_in_flight=4,
                  model_options={**FAST, "max_rounds": 8}, tables=("agents",), game="consensus")
        run_sweep(NAMING, [f"llm:base_url={server.base_url},model=naming:noisy?p=0.3"], 2, out["naming-llm"],
                  game="naming", games_in_flight=4, model_options={"n": 12, "max_rounds": 15}, tables=("rounds",))
    return out


class Page(HTMLParser):
    """Every element with its attributes, and for each panel its images and tables."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.panels: list[dict[str, int]] = []
        self.depth = 0
        self.panel_depth: int | None = None

    def handle_starttag(self, tag, attrs):
        attributes = {k: v or "" for k, v in attrs}
        self.elements.append((tag, attributes))
        if tag == "div":
            self.depth += 1
            if "panel" in attributes.get("class", "").split():
                self.panel_depth = self.depth
                self.panels.append({"img": 0, "svg": 0, "table": 0})
        if self.panel_depth is not None and tag in ("img", "svg", "table"):
            self.panels[-1][tag] += 1

    def handle_endtag(self, tag):
        if tag == "div":
            if self.panel_depth == self.depth:
                self.panel_depth = None
            self.depth -= 1


def parse(path) -> Page:
    page = Page()
    page.feed(path.read_text())
    return page


def check_self_contained(page: Page) -> None:
    assert not [t for t, _ in page.elements if t in ("script", "iframe", "object", "embed", "link")]
    for tag, attributes in page.elements:
        for name in ("src", "href", "srcset", "data", "poster"):
            value = attributes.get(name, "")
            assert not value.lower().startswith(("http:", "https:", "//")), f"<{tag} {name}={value[:80]}>"
    for tag, attributes in page.elements:
        if tag == "img":
            assert attributes["src"].startswith("data:image/svg+xml;base64,")
            svg = base64.b64decode(attributes["src"].split(",", 1)[1]).decode()
            assert "<svg" in svg and "<image" not in svg and "@import" not in svg and "url(http" not in svg


def test_analyze_takes_an_llm_sweep_beside_its_rule_baselines(sweeps, capsys):
    assert main(["analyze", str(sweeps["rules"]), str(sweeps["llm"]), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["models"] == ["mi-0.2", "voter", "rule:majority-inertia"]  # rule configurations, then the LLM's name
    assert report["sweeps"] == [str(sweeps["rules"]), str(sweeps["llm"])]
    assert report["games"] == 4 * 2 * 3 + 2 * 2
    cells = {(r["condition"], r["model"]): r["games"] for r in report["consensus"]}
    assert cells[("ba-global", "rule:majority-inertia")] == 2 and cells[("ba-global", "voter")] == 3
    assert set(report["majority_following"]["per_model"]) == set(report["models"])
    label = report["paper_models"]["models"]["label"]  # LLM vs human label, human as the baseline, per model
    assert set(label["per_model"]) == set(report["models"])
    assert "label = human" in label["per_model"]["rule:majority-inertia"]["skipped"]  # played the LLM label only
    for fit in label["per_model"].values():
        if "terms" in fit:
            assert "label[T.llm]" in fit["terms"] and "p_bonferroni" in fit["terms"]["label[T.llm]"]
    assert main(["analyze", str(sweeps["rules"]), str(sweeps["llm"])]) == 0
    header = capsys.readouterr().out.split("consensus (successes / games):\n")[1].splitlines()[0].split()
    assert header == ["mi-0.2", "voter", "rule:majority-inertia", "all"]


def test_sweeps_of_different_games_are_refused_in_one_line(sweeps, capsys):
    assert main(["analyze", str(sweeps["rules"]), str(sweeps["naming"])]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "different games" in err


def test_analyze_out_refuses_to_overwrite_without_force(sweeps, tmp_path, capsys):
    target = tmp_path / "analysis.json"
    target.write_text("keep me")
    assert main(["analyze", str(sweeps["naming"]), "--json", "--out", str(target)]) == 2
    assert "--force" in capsys.readouterr().err and target.read_text() == "keep me"
    assert main(["analyze", str(sweeps["naming"]), "--json", "--out", str(target), "--force"]) == 0
    assert json.loads(target.read_text())["game"] == "naming"


def test_report_over_both_games_is_self_contained_with_a_table_per_figure(sweeps, tmp_path, capsys):
    out = tmp_path / "report.html"
    args = ["report", *(str(sweeps[k]) for k in ("rules", "llm", "naming", "naming-llm")), "--out", str(out)]
    assert main(args) == 0
    assert "figures" in capsys.readouterr().out
    page = parse(out)
    check_self_contained(page)
    assert len(page.panels) >= 15
    for panel in page.panels:  # a figure in every panel, each beside its table
        assert panel["img"] == 1 and panel["table"] >= 1, panel
    text = out.read_text()
    for heading in ("Consensus rate per condition and model", "Majority following", "Largest same-colour component",
                    "Stubbornness against consensus", "Message effects", "Firth model: Communication within BA",
                    "Agreement per round", "Agreement against cumulative completion tokens", "Decoding outcomes",
                    "Final agreement per mode beside the study", "published (SPEC)", "Runs: manifests summarised"):
        assert heading in text, heading
    assert "59/360" in text and "0.556" in text  # Qwen 2.5 3B's published successes; SIGN's Schema agreement
    # the manifests: the LLM's name, its prompt template hash, token totals
    from llm_mesa.models.consensus.prompt import ConsensusPrompt
    from llm_mesa.models.naming.prompts import TEMPLATE_HASH

    assert "rule:majority-inertia" in text and ConsensusPrompt().template_hash in text and TEMPLATE_HASH in text
    assert main(args) == 2  # the file exists now
    assert "--force" in capsys.readouterr().err
    assert main([*args, "--force"]) == 0


def test_a_report_is_drawn_where_every_test_must_be_skipped(tmp_path, capsys):
    sweep = tmp_path / "stubborn"  # never agrees; no agents table
    run_sweep({k: CONDITIONS[k] for k in ("ba-local", "cc-none")}, "stubborn", 3, sweep,
              model_options={"max_rounds": 3, "baseline_permutations": 20}, game="consensus")
    out = tmp_path / "r.html"
    assert main(["report", str(sweep), "--out", str(out)]) == 0
    page = parse(out)
    check_self_contained(page)
    assert all(p["img"] == 1 and p["table"] >= 1 for p in page.panels)
    assert out.read_text().count('class="skipped"') >= 5


@pytest.mark.parametrize("case", ["missing", "not-html", "no-folder"])
def test_report_bad_input_is_one_line_and_exit_2(sweeps, tmp_path, capsys, case):
    sweep, out = str(sweeps["naming"]), str(tmp_path / "r.html")
    if case == "missing":
        sweep = str(tmp_path / "nowhere")
    elif case == "not-html":
        out = str(tmp_path / "r.txt")
    else:
        out = str(tmp_path / "no" / "r.html")
    assert main(["report", sweep, "--out", out]) == 2
    err = capsys.readouterr().err
    assert err.startswith("llm-mesa report: error:") and len(err.strip().splitlines()) == 1
