"""What a plain LLM game may import before its first call goes out: the import budget, by name.

A short game as a process is bound by what it does before round 1: Mesa with pandas, pyarrow
and scipy costs ~0.8 s on 2 cores, more than a 5-round game at 1 s a call may spend beyond its
rounds to stay within 1.15x of them. So round 1 goes out before Mesa is imported (the consensus
game's ``prefetch``), and this test names every package the process holds at that moment; a
new import on that path fails it, to be either justified here or moved behind round 1.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from llm_mesa.loopback import LoopbackServer

#: the third-party packages (top-level names) a plain LLM game has imported when its first call is sent
ALLOWED_BEFORE_ROUND_1 = {
    "llm_mesa",
    "numpy", "networkx",  # the graph and the game's set-up
    "openai", "httpx2", "httpcore2", "h11", "anyio", "sniffio", "idna", "truststore",  # the SDK and its HTTP stack
    "pydantic", "pydantic_core", "annotated_types", "typing_extensions", "typing_inspection",  # the SDK's types
    "aiohttp", "aiohappyeyeballs", "aiosignal", "attr", "frozenlist", "multidict", "propcache", "yarl",  # transport
    "uvloop", "orjson",  # the loop and the request encoder
    "certifi", "distro", "jiter", "charset_normalizer",  # what other versions of the SDK's stack bring
}
#: and what it must not have imported by then (named, so a failure says what came in)
HEAVY = {"mesa", "pandas", "pyarrow", "scipy", "statsmodels", "matplotlib", "solara", "altair", "formulaic",
         "firthmodels", "distributed", "dask", "tqdm", "sklearn"}

PROBE = textwrap.dedent("""
    import json, sys
    from llm_mesa.models.consensus import prefetch
    seen = {}
    start = prefetch.start
    def handed_over(*args, **kwargs):  # the moment round 1's calls are on the loop, before the model is built
        first = start(*args, **kwargs)
        if first is not None and "modules" not in seen:
            seen["modules"] = sorted({name.split(".")[0] for name in sys.modules})
        return first
    prefetch.start = handed_over
    from llm_mesa.cli import main
    status = main(sys.argv[1:])
    print(json.dumps({"status": status, "modules": seen.get("modules"),
                      "mesa_after": "mesa" in sys.modules}))
""")


def test_a_plain_llm_game_sends_round_1_before_importing_anything_heavy(tmp_path):
    with LoopbackServer(latency=0.3) as server:
        argv = ["consensus", "--policy", "llm", "--base-url", server.base_url, "--model", "rule:stubborn",
                "--n", "12", "--topology", "ba", "--max-rounds", "2", "--baseline-permutations", "0", "--no-record",
                "--json"]
        done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=120,
                              cwd=tmp_path)
        calls = server.stats()["answered"]
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["modules"] is not None, "round 1 was not sent before the model was built"
    assert report["status"] == 0 and report["mesa_after"]  # the game itself is a Mesa model, built meanwhile
    modules = set(report["modules"])
    assert not modules & HEAVY, f"imported before round 1: {sorted(modules & HEAVY)}"
    third_party = {m for m in modules if m not in sys.stdlib_module_names and not m.startswith("_")
                   and m not in ("cython_runtime", "__main__", "__mp_main__") and not m.startswith("__editable__")}
    assert third_party <= ALLOWED_BEFORE_ROUND_1, f"not in the budget: {sorted(third_party - ALLOWED_BEFORE_ROUND_1)}"
    assert calls == 12 * 2  # each agent's call of each round once: round 1's are not made twice


def test_a_game_round_1_was_sent_for_early_is_the_game_played_the_usual_way(tmp_path):
    """The early round 1 changes nothing: the same decisions, tables and calls as the model playing it itself."""
    from llm_mesa.llm import Endpoint
    from llm_mesa.models.consensus import ConsensusModel, prefetch
    from llm_mesa.models.consensus.llm_policy import LLMConsensusPolicy
    from llm_mesa.models.consensus.parameters import PARAMETERS

    with LoopbackServer(seed=4) as server:
        def policy():
            return LLMConsensusPolicy(Endpoint(server.base_url, "rule:majority-inertia"))

        parameters = PARAMETERS.validate({"n": 16, "topology": "ws", "communication": "local", "max_rounds": 4,
                                          "baseline_permutations": 0}, complete=True)
        parameters.pop("assign")
        shared = policy()  # as on the command line: the one policy sends round 1 and plays the game
        first = prefetch.start(parameters, shared, 7, max_game_tokens=10**6)
        assert first is not None
        early = ConsensusModel(policy=shared, rng=7, max_game_tokens=10**6, **parameters)
        early.adopt_first_round(first)
        early.run()
        assert early._first_round is None and server.stats()["answered"] == 16 * early.round  # round 1 not twice
        plain = ConsensusModel(policy=policy(), rng=7, max_game_tokens=10**6, **parameters).run()
    assert early.summary() == plain.summary()
    assert early.rounds_table().equals(plain.rounds_table()) and early.agents_table().equals(plain.agents_table())
    untimed = [[{k: v for k, v in row.items() if not k.endswith("_s")} for row in m.transcript] for m in (early, plain)]
    assert untimed[0] == untimed[1] and len(untimed[0]) == 16 * early.round  # latency, queue: the clock's
