"""Scale of LLM agents: per-round wall time at 1,000 and 10,000 agents, client CPU a call, memory an agent.

Against ``latency_server.py`` (its own process: answers every completion after ``--latency``
seconds, reads no prompt), one consensus game of LLM agents (BA, no communication, nothing
recorded) is played in a child process per size, and reported:

1. each round's wall time over the latency (the first round included: it opens the
   connections), at a fixed ``--concurrency`` (default: as many as agents) and at ``auto``
   (the endpoint's default, whose limit issue 27's rule sets);
2. the client's CPU a call (the child's user + system CPU over the rounds / calls) with
   the kernel's part (system CPU) apart, the server's CPU a call, and so what bounds a
   round on this machine: the client's CPU, the server's, or neither (the latency);
3. memory an agent: the child's peak resident memory at two sizes, (RSS(N2) - RSS(N1)) / (N2 - N1);
4. where the client's CPU goes, per call (no network): prompt building, request encoding,
   answer parsing and decoding, bookkeeping (the rest of a call's CPU is the transport);
5. with ``--mesa-llm PYTHON`` (a venv with mesa-llm installed, never this project's), the
   same rounds played by mesa-llm's documented parallel path (``step_agents_parallel_sync``,
   what ``shuffle_do("step")`` runs under ``model.parallel_stepping = True``: every agent's
   ``astep`` gathered, each one ``ModuleLLM.agenerate`` call through litellm) at
   ``--mesa-llm-agents`` (default 100,1000). On Mesa 3.5 ``model.agents.shuffle_do`` does
   not reach it (``_HardKeyAgentSet`` has its own ``shuffle_do``; the game steps nothing),
   so the game calls it itself;
6. with ``--before DIR`` (an older checkout's source tree, put first on ``PYTHONPATH``), the
   client's CPU a call of that checkout, played the same way in the same run;
7. the first size's game as a whole process (``llm-mesa consensus``, interpreter to exit),
   best of ``--process-runs``: with the default options (recording on, ``--concurrency
   auto``) and with ``--concurrency N --no-record``, against the bound rounds x latency.

    python benchmarks/bench_scale.py                     # 1,000 and 10,000 agents, 5 rounds at 1 s
    python benchmarks/bench_scale.py --mesa-llm .venv-mesa-llm/bin/python --before /path/to/old/tree
    python benchmarks/bench_scale.py --quick             # CI: 200 and 1,000 agents, 3 rounds at 0.5 s
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = textwrap.dedent("""
    import json, os, resource, sys, time
    port, n, rounds, concurrency = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    from llm_mesa.llm import Endpoint
    from llm_mesa.models.consensus import ConsensusModel
    from llm_mesa.models.consensus.llm_policy import LLMConsensusPolicy
    endpoint = Endpoint(f"http://127.0.0.1:{port}/v1", "latency", timeout=120,
                        concurrency=int(concurrency) if concurrency.isdigit() else concurrency)
    model = ConsensusModel(n, "ba", policy=LLMConsensusPolicy(endpoint), communication="none",
                           max_rounds=rounds, baseline_permutations=0, rng=1)
    built = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    walls, cpu0 = [], os.times()
    for _ in range(rounds):
        started = time.perf_counter()
        model.step()
        walls.append(time.perf_counter() - started)
    cpu1 = os.times()
    usage = model.totals
    print(json.dumps({"walls": walls, "user_s": cpu1.user - cpu0.user, "sys_s": cpu1.system - cpu0.system,
                      "calls": usage["calls"], "failures": usage["failures"], "rss_built_kb": built,
                      "rss_peak_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
""")

MESA_LLM_CHILD = textwrap.dedent("""
    import os
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # litellm would fetch its model list from the internet
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-none")
    import asyncio, json, sys, time
    port, n, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    import litellm
    litellm.telemetry = False
    import mesa
    from mesa_llm import step_agents_parallel_sync
    from mesa_llm.llm_agent import LLMAgent
    from mesa_llm.reasoning.cot import CoTReasoning

    class Voter(LLMAgent):
        async def astep(self):
            answer = await self.llm.agenerate(prompt=f"You are node {self.unique_id}. Choose red or blue as JSON.")
            self.colour = json.loads(answer.choices[0].message.content)["colour"]

    class Game(mesa.Model):
        def __init__(self):
            super().__init__(rng=1)
            self.parallel_stepping = True  # mesa-llm's parallel path: shuffle_do("step") gathers every astep
            for _ in range(n):
                Voter(self, reasoning=CoTReasoning, llm_model="openai/latency", api_base=f"http://127.0.0.1:{port}/v1")

        def step(self):
            # what shuffle_do("step") runs under parallel_stepping; called directly, since on Mesa 3.5
            # model.agents is a _HardKeyAgentSet whose own shuffle_do bypasses mesa-llm's patch of AgentSet's
            step_agents_parallel_sync(list(self.agents))

    game = Game()
    walls, cpu0 = [], os.times()
    for _ in range(rounds):
        started = time.perf_counter()
        game.step()
        walls.append(time.perf_counter() - started)
    cpu1 = os.times()
    print(json.dumps({"walls": walls, "user_s": cpu1.user - cpu0.user, "sys_s": cpu1.system - cpu0.system,
                      "calls": n * rounds}))
""")


def start_server(latency: float, stats: Path) -> tuple[subprocess.Popen, int]:
    server = subprocess.Popen([sys.executable, str(HERE / "latency_server.py"), "--latency", str(latency),
                               "--stats", str(stats)], stdout=subprocess.PIPE, text=True)
    line = server.stdout.readline() if server.stdout else ""
    if not line.startswith("port "):
        server.kill()
        raise SystemExit(f"the latency server did not start ({line!r})")
    return server, int(line.split()[1])


def server_cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def child(python: str, code: str, args: list[str], env: dict[str, str] | None = None) -> dict:
    done = subprocess.run([python, "-c", code, *args], capture_output=True, text=True, timeout=3600, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{python} failed: {done.stderr[-1500:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def game_row(label: str, result: dict, n: int, latency: float, server_s: float) -> dict:
    calls = max(result["calls"], 1)
    walls = result["walls"]
    return {"run": label, "agents": n, "rounds": [round(w / latency, 3) for w in walls],
            "worst/latency": round(max(walls) / latency, 3), "first/latency": round(walls[0] / latency, 3),
            "client_ms_a_call": round(1e3 * (result["user_s"] + result["sys_s"]) / calls, 3),
            "kernel_ms_a_call": round(1e3 * result["sys_s"] / calls, 3),
            "server_ms_a_call": round(1e3 * server_s / calls, 3), "failures": result.get("failures", 0),
            "rss_peak_mb": round(result.get("rss_peak_kb", 0) / 1024, 1)}


def process_runs(port: int, n: int, rounds: int, latency: float, runs: int) -> list[str]:
    """Part 7: the game as a whole process, default options and a fixed limit, best of ``runs``."""
    command = str(Path(sys.executable).with_name("llm-mesa"))
    base = [command, "consensus", "--policy", "llm", "--base-url", f"http://127.0.0.1:{port}/v1", "--model", "latency",
            "--n", str(n), "--topology", "ba", "--comm", "none", "--max-rounds", str(rounds),
            "--baseline-permutations", "0", "--json"]
    lines = []
    for label, extra in (("default options (recording on, --concurrency auto)", []),
                         (f"--concurrency {n} --no-record", ["--concurrency", str(n), "--no-record"])):
        walls = []
        for _ in range(runs):
            with tempfile.TemporaryDirectory() as tmp:
                started = time.perf_counter()
                done = subprocess.run([*base, *extra], capture_output=True, text=True, cwd=tmp, timeout=1800)
                walls.append(time.perf_counter() - started)
            if done.returncode != 0:
                raise SystemExit(f"llm-mesa consensus failed: {done.stderr[-800:]}")
        lines.append(f"{n:,} agents x {rounds} rounds as a process, {label}: best {min(walls):.2f} s "
                     f"({', '.join(f'{w:.2f}' for w in walls)}) = {min(walls) / (rounds * latency):.3f}x the bound")
    return lines


def bound_of(row: dict, latency: float, cores: int) -> str:
    """What the round's time beyond the latency is: the client's CPU, the server's, or neither."""
    n = row["agents"]
    client, server = n * row["client_ms_a_call"] / 1e3, n * row["server_ms_a_call"] / 1e3
    extra = (max(row["rounds"][1:] or row["rounds"]) - 1) * latency
    if extra < 0.05 * latency:
        return "the latency (client and server keep up)"
    if client >= server:
        return f"the client's CPU ({client:.2f} s a round, {row['kernel_ms_a_call']} ms a call of it the kernel's)"
    return f"the server's CPU ({server:.2f} s a round)"


def stages(n: int) -> dict[str, float]:
    """Microseconds a call of each client stage, with no network (the median of 5 repeats)."""
    from llm_mesa.llm import Endpoint, client, transport, wire
    from llm_mesa.llm.types import LLMResult
    from llm_mesa.llm.usage import Usage
    from llm_mesa.models.consensus import ConsensusModel
    from llm_mesa.models.consensus.llm_policy import LLMConsensusPolicy, decode_answer

    sys.path.insert(0, str(HERE))
    import latency_server

    endpoint = Endpoint("http://127.0.0.1:9/v1", "latency")
    policy = LLMConsensusPolicy(endpoint)
    model = ConsensusModel(n, "ba", policy="stubborn", communication="none", max_rounds=10, rng=1)
    for agent in model.agents:
        agent.policy = policy
    observations = [agent.observe() for agent in model.agents]
    requests = [policy.request(o) for o in observations]
    body = latency_server.ANSWERS["red"].split(b"\r\n\r\n", 1)[1]
    answer = wire.parse_completion(body, True, "key")
    usage = Usage("llm")

    def bookkeeping() -> None:
        for _ in observations:
            usage.add_result(LLMResult(answer.text, "stop", 100, 10, 1.0, "m", "f", None, "", 1, False,
                                       "json_schema", 0.0, 0, "u"), endpoint)
            usage.add_outcome("ok")

    work = {
        "observation": lambda: [agent.observe() for agent in model.agents],
        "prompt": lambda: [policy.request(o) for o in observations],
        "request encoding": lambda: [transport.json_bytes(client._body(endpoint, r, "json_schema")) for r in requests],
        "answer parsing": lambda: [wire.parse_completion(body, True, "key") for _ in observations],
        "answer decoding": lambda: [decode_answer(answer.text, o) for o in observations],
        "bookkeeping": bookkeeping,
    }
    out = {}
    for name, run in work.items():
        times = []
        for _ in range(5):
            started = time.process_time()
            run()
            times.append(time.process_time() - started)
        out[name] = round(1e6 * statistics.median(times) / n, 1)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agents", help="comma-separated game sizes (default 1000,10000; quick 200,1000)")
    parser.add_argument("--rounds", type=int, help="rounds a game (default 5; quick 3)")
    parser.add_argument("--latency", type=float, help="seconds a call takes (default 1; quick 0.5)")
    parser.add_argument("--auto", action=argparse.BooleanOptionalAction, default=True,
                        help="also play each size at --concurrency auto")
    parser.add_argument("--mesa-llm", help="python of a venv with mesa-llm 0.3.2 installed (its own, never this one)")
    parser.add_argument("--mesa-llm-agents", default="100,1000")
    parser.add_argument("--before", help="an older checkout's source tree: its client CPU a call, the same way")
    parser.add_argument("--process-runs", type=int, help="whole-process runs of part 7 (default 2; quick 1; 0: none)")
    parser.add_argument("--quick", action="store_true", help="small CI run")
    args = parser.parse_args(argv)
    runs = args.process_runs if args.process_runs is not None else (1 if args.quick else 2)
    sizes = [int(s) for s in (args.agents or ("200,1000" if args.quick else "1000,10000")).split(",")]
    rounds = args.rounds or (3 if args.quick else 5)
    latency = args.latency if args.latency is not None else (0.5 if args.quick else 1.0)
    cores = os.cpu_count() or 1

    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        stats = Path(tmp) / "stats.json"
        server, port = start_server(latency, stats)
        try:
            plays = [(f"llm-mesa, --concurrency {n}", sys.executable, CHILD, [str(n)], str(n), None) for n in sizes]
            if args.auto:
                plays += [("llm-mesa, --concurrency auto", sys.executable, CHILD, [str(n)], "auto", None) for n in sizes]
            if args.before:
                env = {**os.environ, "PYTHONPATH": args.before}
                plays += [(f"before ({args.before}), --concurrency {n}", sys.executable, CHILD, [str(n)], str(n), env)
                          for n in sizes[:1]]
            if args.mesa_llm:
                plays += [("mesa-llm 0.3.2, parallel stepping", args.mesa_llm, MESA_LLM_CHILD, [m], None, None)
                          for m in args.mesa_llm_agents.split(",")]
            for label, python, code, (n,), concurrency, env in plays:
                before = server_cpu_s(server.pid)
                extra = [concurrency] if concurrency is not None else []
                result = child(python, code, [str(port), n, str(rounds), *extra], env)
                rows.append(game_row(label, result, int(n), latency, server_cpu_s(server.pid) - before))
            whole = process_runs(port, sizes[0], rounds, latency, runs) if runs else []
        finally:
            server.terminate()
            server.wait(10)
        served = json.loads(stats.read_text()) if stats.exists() else {}

    load = os.getloadavg()
    print(f"{rounds} rounds at {latency:g} s a call, BA, no communication, nothing recorded; {cores} CPUs, "
          f"load average {load[0]:.1f} / {load[1]:.1f} at the end; server peak in flight {served.get('peak_in_flight')}")
    print(f"{'run':<44} {'agents':>6} {'rounds / latency':<36} {'client ms':>9} {'kernel':>7} {'server':>7} {'RSS MB':>7}")
    for row in rows:
        print(f"{row['run']:<44} {row['agents']:>6} {' '.join(f'{r:.3f}' for r in row['rounds']):<36} "
              f"{row['client_ms_a_call']:>9.3f} {row['kernel_ms_a_call']:>7.3f} {row['server_ms_a_call']:>7.3f} "
              f"{row['rss_peak_mb']:>7.1f}" + (f"  ({row['failures']} failed)" if row["failures"] else ""))
    fixed = [r for r in rows if r["run"].startswith("llm-mesa, --concurrency") and "auto" not in r["run"]]
    for row in fixed:
        print(f"bound at {row['agents']:,} agents: {bound_of(row, latency, cores)}")
    if len(fixed) >= 2 and fixed[-1]["rss_peak_mb"] and fixed[0]["rss_peak_mb"]:
        per_agent = 1024 * (fixed[-1]["rss_peak_mb"] - fixed[0]["rss_peak_mb"]) / (fixed[-1]["agents"] - fixed[0]["agents"])
        print(f"memory an LLM agent: {per_agent:.1f} KB (peak RSS at {fixed[0]['agents']:,} and {fixed[-1]['agents']:,})")
    for line in whole:
        print(line)
    print("client CPU a call by stage, no network (us): "
          + ", ".join(f"{k} {v}" for k, v in stages(min(sizes[0], 1000)).items()))
    return 0


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_NOFILE, (resource.getrlimit(resource.RLIMIT_NOFILE)[1],) * 2)
    sys.exit(main())
