"""Every subcommand answered as an adversarial user would feed it: one line naming the fix, exit 2, nothing written.

One row per bad input: the arguments ({tmp} is a fresh folder), and a fragment of the one
error line. After each row no traceback was printed and nothing was written: not the run,
not a store, not a sweep directory. Calls run the CLI's main(argv) in-process (fast); rows
that would need a server fail before any call is made.
"""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout

import pytest

from llm_mesa.cli import main

ROWS = [
    (["consensus", "--n", "1000000000"], "argument --n: n=1000000000 is above its maximum 1e+07; numbe"),
    (["consensus", "--n", "-3"], "argument --n: n=-3 is below its minimum 2; number of agents "),
    (["consensus", "--n", "abc"], "argument --n: n='abc' is not a whole number >= 2 and <= 1e+0"),
    (["consensus", "--n", "2.5"], "argument --n: n='2.5' is not a whole number >= 2 and <= 1e+0"),
    (["consensus", "--max-rounds", "1000000000"], "argument --max-rounds: max_rounds=1000000000 is above its ma"),
    (["consensus", "--max-rounds", "0"], "argument --max-rounds: max_rounds=0 is below its minimum 1; "),
    (["consensus", "--seed", "-1"], "the seed must be a non-negative integer (got -1)"),
    (["consensus", "--seed", "x"], "argument --seed: invalid int value: 'x'"),
    (["consensus", "--topology", "hex"], "argument --topology: unknown topology 'hex'; choose one of: "),
    (["consensus", "--comm", "radio"], "argument --comm: unknown communication 'radio'; choose one o"),
    (["consensus", "--dm"], "private messages need communication local or global; add --c"),
    (["consensus", "--label", "robots"], "argument --label: unknown label 'robots'; choose one of: llm"),
    (["consensus", "--preferences", "minority", "--minority", "-1"], "argument --minority: minority=-1 is below its minimum 0; hub"),
    (["consensus", "--preferences", "minority", "--minority", "99"], "minority of 99 is impossible with N=36; choose 0 <= --minori"),
    (["consensus", "--preferences", "explicit"], "explicit preferences need a colour for every node"),
    (["consensus", "--initial", "rainbow"], "argument --initial: unknown initial 'rainbow'; choose one of"),
    (["consensus", "--baseline-permutations", "-1"], "argument --baseline-permutations: baseline_permutations=-1 i"),
    (["consensus", "--baseline-permutations", "10000000"], "argument --baseline-permutations: baseline_permutations=1000"),
    (["consensus", "--policy", ""], "unknown consensus policy ''; choose one of: announce, llm, majority-in"),
    (["consensus", "--policy", "oracle"], "unknown consensus policy 'oracle'; choose one of: announce, llm, major"),
    (["consensus", "--policy", "majority-inertia:inertia=2"], "inertia=2.0 must lie in [0, 1]"),
    (["consensus", "--policy", "majority-inertia:inertia=-0.1"], "inertia=-0.1 must lie in [0, 1]"),
    (["consensus", "--policy", "majority-inertia:frob=1"], "unknown parameter(s) frob of consensus policy 'majority-iner"),
    (["consensus", "--policy", "majority-inertia:inertia"], "policy parameter 'inertia' in 'majority-inertia:inertia' nee"),
    (["consensus", "--policy", "voter:x=1"], "unknown parameter(s) x of consensus policy 'voter'; it takes"),
    (["consensus", "--policy", "echo"], "unknown consensus policy 'echo'; choose one of: announce, llm, majorit"),
    (["consensus", "--assign", "hubs:x=stubborn"], "bad agent selector 'hubs:x'; use hubs:K, random:K, nodes:1,2"),
    (["consensus", "--assign", "hubs:99=stubborn"], "selector 'hubs:99' asks for 99 of 36 agents"),
    (["consensus", "--assign", "nodes:99=stubborn"], "selector 'nodes:99' names nodes outside 0..35: [99]"),
    (["consensus", "--assign", "nodes:a,b=stubborn"], "bad agent selector 'nodes:a,b'; use hubs:K, random:K, nodes:"),
    (["consensus", "--assign", "corner=stubborn"], "bad agent selector 'corner'; use hubs:K, random:K, nodes:1,2"),
    (["consensus", "--assign", "red=oracle"], "unknown consensus policy 'oracle'; choose one of: announce, llm, major"),
    (["consensus", "--assign", "random:-1=voter"], "selector 'random:-1' asks for -1 of 36 agents"),
    (["consensus", "--graph", "{tmp}/nonexistent"], "cannot read graph file '{tmp}/nonexistent' ([Errno 2] No such fil"),
    (["consensus", "--graph", "/etc"], "cannot read graph file '/etc' ([Errno 21] Is a directory: '/"),
    (["consensus", "--out", ""], "--out is empty; give the directory to write the run to, e.g."),
    (["consensus", "--out", "/proc/x"], "cannot write in '/proc' (No such file or directory); choose "),
    (["consensus", "--out", "/etc/passwd"], "'/etc/passwd' already exists and is not empty; choose a new "),
    (["consensus", "--policy", "llm"], "no endpoint given; pass --base-url (e.g. http://127.0.0.1:80"),
    (["consensus", "--policy", "llm", "--base-url", "ftp://x/v1", "--model", "m"], "base URL 'ftp://x/v1' is not an http(s) URL; pass e.g. --bas"),
    (["consensus", "--policy", "llm", "--base-url", "http://127.0.0.1:9/v1"], "no model given; pass --model NAME or set LLM_MESA_MODEL"),
    (["consensus", "--policy", "llm", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--temperature", "3"], "temperature 3.0 is outside [0, 2]"),
    (["consensus", "--policy", "llm", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--top-p", "0"], "top-p 0.0 is outside (0, 1]"),
    (["consensus", "--policy", "llm", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--concurrency", "0"], "concurrency must be auto or a positive whole number, got 0"),
    (["consensus", "--policy", "llm", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--timeout", "0"], "timeout must be a positive number of seconds, got 0.0"),
    (["consensus", "--policy", "llm", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--timeout", "nan"], "timeout must be a positive number of seconds, got nan"),
    (["consensus", "--policy", "llm", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--max-attempts", "0"], "max_attempts must be a positive integer, got 0"),
    (["consensus", "--policy", "llm", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--max-tokens-per-call", "0"], "max_tokens must be a positive integer, got 0"),
    (["consensus", "--policy", "llm", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--max-tokens-per-call", "5", "--max-completion-tokens", "5"], "--max-tokens-per-call and --max-completion-tokens exclude ea"),
    (["consensus", "--policy", "llm", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--extra-body", "{bad"], "--extra-body is not valid JSON (Expecting property name encl"),
    (["consensus", "--policy", "llm", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--extra-body", "[1]"], "--extra-body must be a JSON object, e.g. '{\"repetition_penal"),
    (["consensus", "--policy", "llm", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--extra-body", "{\"messages\":[]}"], "--extra-body may not set messages: the project sets it (and "),
    (["consensus", "--policy", "llm", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--dialect", "xml"], "argument --dialect: invalid choice: 'xml' (choose from 'auto"),
    (["consensus", "--policy", "llm", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--prompt-mode", "chat2"], "argument --prompt-mode: invalid choice: 'chat2' (choose from"),
    (["consensus", "--policy", "llm", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--prompt-mode", "completion", "--dialect", "json_schema"], "dialect 'json_schema' needs chat prompts; use --dialect inst"),
    (["consensus", "--policy", "llm", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--price", "1"], "--price '1' needs the form PROMPT,COMPLETION (per 1M tokens)"),
    (["consensus", "--policy", "llm", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--price", "a,b"], "--price 'a,b' needs the form PROMPT,COMPLETION (per 1M token"),
    (["consensus", "--policy", "llm", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--max-cost", "1"], "--max-cost needs --price PROMPT,COMPLETION (per 1M tokens)"),
    (["consensus", "--policy", "llm", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--replay-fill"], "--replay-fill needs --replay FILE"),
    (["consensus", "--policy", "llm", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--replay", "{tmp}/nonexistent.sqlite"], "replay store {tmp}/nonexistent.sqlite does not exist; record a ru"),
    (["consensus", "--policy", "llm", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--record", "a.sqlite", "--no-record"], "--no-record excludes --record; pick one"),
    (["consensus", "--policy", "llm", "--base-url", "https://api.example.invalid/v1", "--model", "m", "--api-key-env", "NO_SUCH_VAR_X"], "environment variable NO_SUCH_VAR_X holds no API key for http"),
    (["consensus", "--policy", "llm", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--api-key-env", "BAD-NAME"], "--api-key-env must be the NAME of an environment variable (e"),
    (["consensus", "--policy", "llm", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--llm-seed", "x"], "argument --llm-seed: invalid int value: 'x'"),
    (["consensus", "--frobnicate"], "unrecognized arguments: --frobnicate"),
    (["consensus", "--json", "extra-positional"], "unrecognized arguments: extra-positional"),
    (["naming", "--n", "1"], "n=1 is below its minimum 2; number of agents (the study: 12 "),
    (["naming", "--n", "1000000000"], "n=1000000000 is above its maximum 1e+07; number of agents (t"),
    (["naming", "--n", "x"], "n='x' is not a whole number >= 2 and <= 1e+07"),
    (["naming", "--mode", "xml"], "unknown mode 'xml'; choose one of: nl, nl-sw, schema"),
    (["naming", "--memory", "-1"], "memory=-1 is below its minimum 0; memory window K (0 = no me"),
    (["naming", "--mode", "nl", "--memory", "5"], "mode nl has no memory (K=0); use mode nl-sw for a window of "),
    (["naming", "--mode", "nl-sw", "--memory", "0"], "mode nl-sw needs a memory window K > 0; use mode nl for K=0"),
    (["naming", "--alpha", "1.5"], "alpha=1.5 is above its maximum 1; lose-shift adoption probab"),
    (["naming", "--alpha", "nan"], "alpha='nan' is not a number >= 0 and <= 1"),
    (["naming", "--pairing", "ring"], "unknown pairing 'ring'; choose one of: all, one"),
    (["naming", "--rounds", "0"], "max_rounds=0 is below its minimum 1; rounds to play (the stu"),
    (["naming", "--rounds", "10000000"], "max_rounds=10000000 is above its maximum 1e+06; rounds to pl"),
    (["naming", "--lexicon-size", "0"], "lexicon_size=0 is below its minimum 1; M, names C1..CM"),
    (["naming", "--lexicon-size", "1000000"], "lexicon_size=1000000 is above its maximum 10000; M, names C1"),
    (["naming", "--seed", "-2"], "the seed must be a non-negative integer (got -2)"),
    (["naming", "--speaker", "oracle"], "unknown naming policy 'oracle'; choose one of: echo, llm, mi"),
    (["naming", "--speaker", "noisy:p=2"], "noisy speaker p=2.0 must lie in [0, 1]"),
    (["naming", "--speaker", "noisy:q=1"], "unknown parameter(s) q of naming policy 'noisy'; it takes: p"),
    (["naming", "--speaker", "majority-inertia"], "unknown naming policy 'majority-inertia'; choose one of: ech"),
    (["naming", "--speaker", "llm"], "no endpoint given; pass --base-url (e.g. http://127.0.0.1:80"),
    (["naming", "--speaker", "llm", "--base-url", "http://127.0.0.1:9/v1"], "no model given; pass --model NAME or set LLM_MESA_MODEL"),
    (["naming", "--speaker", "llm:temperature=9", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"], "temperature 9 is outside [0, 2]"),
    (["naming", "--speaker", "llm:frob=1", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"], "unknown llm option(s) frob in --speaker 'llm:frob=1'; choose"),
    (["naming", "--out", ""], "--out is empty; give the directory to write the run to, e.g."),
    (["naming", "--out", "/proc/x"], "cannot write in '/proc' (No such file or directory); choose "),
    (["naming", "--record", "x.sqlite"], "--record/--replay/--replay-fill apply to --speaker llm only"),
    (["naming", "--frob"], "unrecognized arguments: --frob"),
    (["sweep", "--game", "consensus"], "no output given; pass --out DIR (a new or earlier sweep's di"),
    (["sweep", "--game", "consensus", "--out", ""], "no output given; pass --out DIR (a new or earlier sweep's di"),
    (["sweep", "--game", "chess", "--out", "{tmp}/x"], "argument --game: unknown game 'chess'; choose one of: "),
    (["sweep", "--game", "consensus", "--conditions", "nope", "--out", "{tmp}/s1"], "unknown condition 'nope' of the consensus game; choose among"),
    (["sweep", "--game", "consensus", "--seeds", "0", "--out", "{tmp}/s2"], "seeds must be at least 1 game per cell (got 0)"),
    (["sweep", "--game", "consensus", "--seeds", "2000000", "--out", "{tmp}/s3"], "2,000,000 seeds is above the limit of 1,000,000; split the s"),
    (["sweep", "--game", "consensus", "--seeds", "1-9999999", "--out", "{tmp}/s4"], "--seeds '1-9999999': give a count (30), a range (1-30) or a "),
    (["sweep", "--game", "consensus", "--seeds", "a", "--out", "{tmp}/s5"], "--seeds 'a': give a count (30), a range (1-30) or a list (1,"),
    (["sweep", "--game", "consensus", "--seeds", "-3", "--out", "{tmp}/s6"], "seeds must be at least 1 game per cell (got -3)"),
    (["sweep", "--game", "consensus", "--policies", "oracle", "--out", "{tmp}/s7"], "unknown consensus policy 'oracle'; choose one of: announce, llm, major"),
    (["sweep", "--game", "consensus", "--policies", "", "--out", "{tmp}/s8"], "no policies given; pass e.g. --policies rules or --policies "),
    (["sweep", "--game", "consensus", "--set", "n", "--out", "{tmp}/s9"], "--set 'n' needs the form NAME=V1,V2,... (e.g. --set n=12,24)"),
    (["sweep", "--game", "consensus", "--set", "n=1", "--out", "{tmp}/s10"], "n=1 is below its minimum 2; number of agents (the study: 36;"),
    (["sweep", "--game", "consensus", "--set", "frob=1", "--out", "{tmp}/s11"], "unknown parameter 'frob'; choose among: n, topology, ring_degree, prefere"),
    (["sweep", "--game", "consensus", "--set", "max_failure_share=0.5", "--out", "{tmp}/s12"], "max_failure_share cannot be a sweep axis"),
    (["sweep", "--game", "consensus", "--batch-size", "0", "--out", "{tmp}/s15"], "batch size must be at least 1 (got 0)"),
    (["sweep", "--game", "consensus", "--tables", "frames", "--out", "{tmp}/s16"], "unknown table(s) frames of the consensus game; choose among:"),
    (["sweep", "--game", "consensus", "--store-mode", "wild", "--out", "{tmp}/s17"], "argument --store-mode: invalid choice: 'wild' (choose from '"),
    (["sweep", "--game", "naming", "--set", "baseline_permutations=5", "--out", "{tmp}/s18"], "unknown parameter 'baseline_permutations'; choose among: n, "),
    (["sweep", "--game", "consensus", "--set", "max_rounds=0", "--out", "{tmp}/s19"], "max_rounds=0 is below its minimum 1; round limit (the study:"),
    (["sweep", "--game", "consensus", "--out", "/etc/passwd"], "'/etc/passwd' is a file; give a directory for --out (or a na"),
    (["sweep", "--game", "consensus", "--out", "{tmp}/nonexistent/deep/x"], "parent folder of '{tmp}/nonexistent/deep/x' does not exist; creat"),
    (["sweep", "{tmp}/nonexistent.toml", "--out", "{tmp}/s20"], "no experiment file '{tmp}/nonexistent.toml'; see experiments/ for"),
    (["sweep", "/etc/passwd", "--out", "{tmp}/s21"], "/etc/passwd: not valid TOML (Expected '=' after a key in a k"),
    (["sweep", "--game", "consensus", "--executor", "x", "--out", "{tmp}/s22"], "--executor 'x': use local, local-cluster:N or dask://HOST:PO"),
    (["sweep", "--game", "consensus", "--policies", "llm", "--out", "{tmp}/s23"], "no endpoint given; pass --base-url (e.g. http://127.0.0.1:80"),
    (["sweep", "--game", "consensus", "--policies", "llm:frob=2", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--out", "{tmp}/s24"], "unknown llm option(s) frob in --policies 'llm:frob=2'; choos"),
    (["viz", "--port", "99999"], "--port 99999 is not a TCP port; use e.g. --port 8521"),
    (["viz", "--game", "chess"], "argument --game: unknown game 'chess'; choose one of: "),
    (["viz", "--replay", "{tmp}/nonexistent"], "'{tmp}/nonexistent' is not a directory; give the folder passed to"),
    (["serve", "--port", "99999"], "port 99999 is not a TCP port; give --port a number from 0 to"),
    (["serve", "--port", "-1"], "port -1 is not a TCP port; give --port a number from 0 to 65"),
    (["analyze", "{tmp}/nonexistent"], "no sweep output at '{tmp}/nonexistent'; pass the --out of `llm-me"),
    (["analyze", "/etc"], "'/etc' is not a sweep's output (no manifest.json); pass the "),
    (["local", "--frob"], "unrecognized arguments: --frob"),
    (["serve", "--port", "99999"], "port 99999 is not a TCP port; give --port a number from 0 to"),
    (["serve", "--port", "-1"], "port -1 is not a TCP port; give --port a number from 0 to 65"),
    (["serve", "--port", "x"], "argument --port: invalid int value: 'x'"),
    (["serve", "--require-api-key", "sk-x"], "--require-api-key would show the key to every user in the pr"),
    (["serve", "--require-api-key-env", "NO_SUCH_ENV_VAR"], "the environment variable NO_SUCH_ENV_VAR given to --require-"),
    (["serve", "--require-api-key-file", "{tmp}/nonexistent"], "cannot read the API key file {tmp}/nonexistent (No such file or d"),
    (["serve", "--max-body-bytes", "0"], "max_body_bytes=0 must be a whole number of bytes >= 1; check"),
    (["serve", "--read-timeout", "0"], "read_timeout=0.0 must be a finite number of seconds > 0; che"),
    (["serve", "--latency", "-1"], "latency=-1.0 (server default) must be a finite number of sec"),
    (["serve", "--script", "{tmp}/nonexistent.json"], "cannot read script {tmp}/nonexistent.json (No such file or direct"),
    (["serve", "--frob"], "unrecognized arguments: --frob"),
    (["local", "--port", "99999"], "--port must be between 0 and 65535, not 99999"),
    (["local", "--threads", "0"], "--threads must be at least 1, not 0"),
    (["local", "--servers", "0"], "--servers must be at least 1, not 0"),
    (["local", "--servers", "many"], "'many' is not a number of servers; give K >= 1 or auto"),
    (["local", "--model-path", "{tmp}/nonexistent.gguf"], "unrecognized arguments: --model-path {tmp}/nonexistent.gguf"),
    (["local", "--frob"], "unrecognized arguments: --frob"),
    (["viz", "--port", "0"], "--port 0 is not a TCP port; use e.g. --port 8521"),
    (["viz", "--port", "99999"], "--port 99999 is not a TCP port; use e.g. --port 8521"),
    (["viz", "--replay", "/etc"], "/etc has no rounds.parquet (found: "),
    (["viz", "--game", "chess"], "argument --game: unknown game 'chess'; choose one of: "),
    (["viz", "--frob"], "unrecognized arguments: --frob"),
    (["analyze"], "the following arguments are required: SWEEP_DIR"),
    (["analyze", "{tmp}/nonexistent"], "no sweep output at '{tmp}/nonexistent'; pass the --out of `llm-me"),
    (["analyze", "/etc"], "'/etc' is not a sweep's output (no manifest.json); pass the "),
    (["analyze", "{tmp}", "--out", ""], "'{tmp}' is not a sweep's output (no manifest.json); pass "),
    (["sweep", "--out", "{tmp}/s0"], "several games are installed; choose one with --game ("),
    (["report"], "the following arguments are required: SWEEP_DIR, --out"),
    (["report", "{tmp}/nonexistent", "--out", "{tmp}/r.html"], "no sweep output at '{tmp}/nonexistent'; pass the --out of `llm-me"),
    (["report", "/etc", "--out", "{tmp}/r.html"], "'/etc' is not a sweep's output (no manifest.json); pass the "),
    (["frobnicate"], "argument COMMAND: invalid choice: 'frobnicate' (choose from "),
    ([], "the following arguments are required: COMMAND"),
    (["sweep", "--game", "consensus", "--processes", "0", "--out", "{tmp}/s13"], "processes must be a whole number from 1 to 4,096 (got 0)"),
    (["sweep", "--game", "consensus", "--games-in-flight", "0", "--out", "{tmp}/s14"], "games in flight must be a whole number from 1 to 4,096 (got 0)"),
]


def test_the_table_is_large_and_walks_every_subcommand():
    commands = {argv[0] for argv, _ in ROWS if argv}
    assert len(ROWS) >= 150
    assert commands >= {"consensus", "naming", "sweep", "serve", "local", "viz", "analyze", "report"}


@pytest.mark.parametrize("argv, fragment", ROWS, ids=[" ".join(argv)[:60] or "(nothing)" for argv, _ in ROWS])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(argv, fragment, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a default store (llm-mesa-calls.sqlite) would land here
    args = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    err, out = io.StringIO(), io.StringIO()
    try:
        with redirect_stderr(err), redirect_stdout(out):
            status = main(args)
    except SystemExit as exc:
        status = exc.code
    lines = err.getvalue().strip().splitlines()
    assert status == 2, (status, err.getvalue()[-500:])
    assert len(lines) == 1 and "Traceback" not in err.getvalue(), err.getvalue()[-500:]
    assert fragment.replace("{tmp}", str(tmp_path)) in lines[0]
    assert list(tmp_path.iterdir()) == []  # nothing written: no run, no store, no sweep
