"""The loopback endpoint over real HTTP, with the real ``openai`` client (no retries).

Each test checks what a hand-made prompt must produce: the rule behaviours
answer as the rule would, faults happen exactly when and as often as the seeded
settings say, and the server's counters agree with what the client saw.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import subprocess
import sys
from collections import Counter

import openai
import pytest
from openai import AsyncOpenAI

from llm_mesa import cli
from llm_mesa.loopback import LoopbackServer
from llm_mesa.models.naming.decoding import adecode_with_retry

CONSENSUS_PROMPT = """\
You are agent 5 in a network colouring game.
Your preferred colour: {preferred}
Your current colour: {current}
Your neighbours' current colours: {neighbours}
Round: 3 of 50
{extra}Answer with JSON."""


def consensus_messages(preferred="red", current="blue", neighbours="4: red, 7: blue, 12: red",
                       system="Rules: pick red or blue.", extra=""):
    user = CONSENSUS_PROMPT.format(preferred=preferred, current=current,
                                   neighbours=neighbours, extra=extra)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def naming_prompt(agent=3, round_id=2, name="C3", schema=True):
    instruction = (f"Reply EXACTLY one line as: @say {{name: {name}}} | rationale." if schema
                   else "Reply EXACTLY one line proposing your name.")
    return f"You are agent {agent} in round {round_id}.\nYour current proposed name is {name}.\n{instruction}\n"


def client_for(server: LoopbackServer | str, **kwargs) -> AsyncOpenAI:
    """The real openai client without its own retries, for a server or a base URL."""
    kwargs.setdefault("api_key", "none")
    base_url = server if isinstance(server, str) else server.base_url
    return AsyncOpenAI(base_url=base_url, max_retries=0, **kwargs)


def run(coro):
    return asyncio.run(coro)


async def chat(server, model, messages=None, **kwargs):
    async with client_for(server) as client:
        return await client.chat.completions.create(
            model=model, messages=messages or consensus_messages(), **kwargs)


async def complete(server, model, prompt, **kwargs):
    async with client_for(server) as client:
        return await client.completions.create(model=model, prompt=prompt, **kwargs)


@pytest.fixture(scope="module")
def server():
    with LoopbackServer(seed=11) as running:
        yield running


def answer_json(response) -> dict:
    return json.loads(response.choices[0].message.content)


# ------------------------------------------------------------ listing and shape


def test_models_lists_behaviours_marked_as_stand_ins(server):
    async def go():
        async with client_for(server) as client:
            return [m async for m in client.models.list()]

    models = run(go())
    ids = {m.id for m in models}
    assert {"rule:majority-inertia", "rule:stubborn", "rule:voter", "naming:echo",
            "naming:noisy", "naming:babble", "fixed", "random", "scripted", "echo"} <= ids
    assert all("stand-in" in m.owned_by for m in models)


def test_chat_answer_is_openai_shaped_and_honest_about_being_a_stand_in(server):
    response = run(chat(server, "rule:stubborn"))
    assert response.object == "chat.completion"
    assert response.id and response.created > 0
    assert response.model == "rule:stubborn"
    assert response.system_fingerprint.startswith("llm-mesa-loopback-")
    assert response.choices[0].finish_reason == "stop"
    assert set(answer_json(response)) == {"colour", "reason", "diary"}  # a move: no message keys at all


def test_usage_counts_word_pieces(server):
    # "Hello, world!" is 4 pieces: Hello , world !
    response = run(chat(server, "fixed?text=Hello,%20world!",
                        messages=[{"role": "user", "content": "one two, three"}]))
    assert response.choices[0].message.content == "Hello, world!"
    assert response.usage.completion_tokens == 4
    # the role counts as one piece per message: user + one two , three
    assert response.usage.prompt_tokens == 5
    assert response.usage.total_tokens == 9
    stats = server.stats()
    assert stats["completion_tokens"] >= 4 and stats["prompt_tokens"] >= 5


# ------------------------------------------------------------ rule behaviours


@pytest.mark.parametrize(("current", "neighbours", "expected"), [
    ("blue", "4: red, 7: blue, 12: red", "red"),    # 2 red of 3: follow red
    ("red", "1: blue, 2: blue, 3: red", "blue"),    # 2 blue of 3: follow blue
    ("red", "1: blue, 2: red", "red"),              # tie: keep current
    ("blue", "none", "blue"),                        # isolated: keep current
])
def test_majority_without_inertia_follows_the_neighbourhood_majority(server, current, neighbours,
                                                                      expected):
    response = run(chat(server, "rule:majority-inertia?inertia=0",
                        consensus_messages(preferred="red", current=current, neighbours=neighbours)))
    assert answer_json(response)["colour"] == expected


def test_stubborn_answers_its_preference_against_any_majority(server):
    response = run(chat(server, "rule:stubborn", consensus_messages(
        preferred="blue", current="red", neighbours="1: red, 2: red, 3: red")))
    assert answer_json(response)["colour"] == "blue"


def test_voter_copies_a_neighbour_and_is_reproducible(server):
    unanimous = run(chat(server, "rule:voter", consensus_messages(
        preferred="blue", current="blue", neighbours="1: red, 2: red")))
    assert answer_json(unanimous)["colour"] == "red"
    mixed = consensus_messages(neighbours="1: red, 2: blue, 3: red, 4: blue")
    first = run(chat(server, "rule:voter", mixed)).choices[0].message.content
    again = run(chat(server, "rule:voter", mixed)).choices[0].message.content
    assert first == again


def test_inertia_one_always_keeps_the_current_colour(server):
    response = run(chat(server, "rule:majority-inertia:inertia=1", consensus_messages(
        current="blue", neighbours="1: red, 2: red, 3: red")))
    assert answer_json(response)["colour"] == "blue"


def test_rule_talks_only_when_messages_are_allowed(server):
    silent = answer_json(run(chat(server, "rule:stubborn?talk=1")))
    assert "message" not in silent and "message_to" not in silent
    local = answer_json(run(chat(server, "rule:stubborn?talk=1",
                                 consensus_messages(extra="Communication: local\n"))))
    assert "red" in local["message"] and local.get("message_to") is None
    private = answer_json(run(chat(server, "rule:stubborn?talk=1&dm=1", consensus_messages(
        system="Rules. Communication: local\nPrivate messages: allowed"))))
    assert private["message"] and private["message_to"] in (4, 7, 12)


def test_json_schema_shapes_the_answer(server):
    schema = {"type": "object", "additionalProperties": False, "required": ["colour", "reason"],
              "properties": {"colour": {"type": "string", "enum": ["red", "blue"]},
                             "reason": {"type": "string"}}}
    response = run(chat(server, "rule:stubborn", response_format={
        "type": "json_schema", "json_schema": {"name": "move", "schema": schema, "strict": True}}))
    assert list(answer_json(response)) == ["colour", "reason"]
    assert answer_json(response)["colour"] == "red"
    plain = run(chat(server, "rule:stubborn", response_format={"type": "json_object"}))
    assert answer_json(plain)["colour"] == "red"


def test_a_prompt_without_the_state_lines_is_a_clear_400(server):
    with pytest.raises(openai.BadRequestError, match="Your preferred colour"):
        run(chat(server, "rule:voter", [{"role": "user", "content": "hello"}]))


# ------------------------------------------------------------ naming and plain behaviours


def test_naming_echo_says_its_name_in_the_asked_form(server):
    schema = run(complete(server, "naming:echo", naming_prompt(name="C7")))
    assert schema.object == "text_completion"
    assert schema.choices[0].text == "@say {name: C7} | keeping my name"
    nl = run(complete(server, "naming:echo", naming_prompt(name="C7", schema=False)))
    assert nl.choices[0].text == "I propose the name C7."
    as_chat = run(chat(server, "naming:echo", [{"role": "user", "content": naming_prompt(name="C2")}]))
    assert as_chat.choices[0].message.content.startswith("@say {name: C2}")


def test_naming_noisy_yields_every_decoding_outcome_and_babble_none():
    async def speak(client, model, agent, name):
        prompt = naming_prompt(agent=agent, round_id=1, name=name)
        first = (await client.completions.create(model=model, prompt=prompt)).choices[0].text

        async def ask_again():
            retry = f"{prompt}{first}\nFollow EXACTLY one line: @say {{name: Ck}}\n"
            return (await client.completions.create(model=model, prompt=retry)).choices[0].text

        return await adecode_with_retry("schema", first, ask_again)

    async def go(server):
        async with client_for(server) as client:
            noisy = await asyncio.gather(*(speak(client, "naming:noisy?p=0.5", a, f"C{a % 12 + 1}")
                                           for a in range(120)))
            babble = await asyncio.gather(*(speak(client, "naming:babble", a, "C1") for a in range(20)))
        return noisy, babble

    with LoopbackServer(seed=3) as server:
        noisy, babble = run(go(server))
    outcomes = Counter(u.outcome for u in noisy)
    assert set(outcomes) == {"schema", "retry", "salvage", "none"}
    assert all(u.name is None for u in babble)


def test_fixed_echo_and_random(server):
    assert run(chat(server, "fixed?text=plain%20text")).choices[0].message.content == "plain text"
    messages = [{"role": "user", "content": "first"}, {"role": "assistant", "content": "x"},
                {"role": "user", "content": "say this back"}]
    assert run(chat(server, "echo", messages)).choices[0].message.content == "say this back"
    colours = {answer_json(run(chat(server, "random", seed=s)))["colour"] for s in range(12)}
    assert colours == {"red", "blue"}


def test_scripted_answers_in_order_per_model_name(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"scripted": ["one", {"colour": "red"}],
                                  "scripted?key=b": ["b1"]}))

    async def go(server):
        async with client_for(server) as client:
            async def say(model):
                return (await client.chat.completions.create(
                    model=model, messages=[{"role": "user", "content": "?"}])).choices[0].message.content
            said = [await say("scripted"), await say("scripted?key=b"), await say("scripted")]
            with pytest.raises(openai.BadRequestError, match="used up"):
                await say("scripted")
            posted = await client.post("/control/script", body=["three"], cast_to=object)
            said.append(await say("scripted"))
            return said, posted

    with LoopbackServer(script=script) as server:
        said, posted = run(go(server))
    assert said == ["one", "b1", '{"colour": "red"}', "three"]
    assert posted["scripts_remaining"]["scripted"] == 1


def test_unknown_behaviour_is_404_and_bad_parameter_400(server):
    with pytest.raises(openai.NotFoundError, match="no behaviour"):
        run(chat(server, "oracle"))
    with pytest.raises(openai.BadRequestError, match="p429"):
        run(chat(server, "fixed?p429=2"))
    with pytest.raises(openai.BadRequestError, match="unknown parameter"):
        run(chat(server, "naming:echo?volume=11"))


# ------------------------------------------------------------ faults


def test_each_fault_kind_happens_and_is_counted():
    async def go(server):
        seen = {}
        async with client_for(server) as client:
            async def call(model):
                return await client.chat.completions.create(model=model, messages=consensus_messages())
            with pytest.raises(openai.RateLimitError) as rate_limited:
                await call("rule:stubborn?p429=1&retry_after=2")
            seen["429"] = rate_limited.value.response.headers.get("retry-after")
            with pytest.raises(openai.InternalServerError):
                await call("rule:stubborn?p500=1")
            with pytest.raises(openai.APIConnectionError):
                await call("rule:stubborn?pdrop=1")
            malformed = await call("rule:stubborn?pmalformed=1")
            seen["malformed"] = malformed.choices[0].message.content
            truncated = await call("rule:stubborn?ptruncate=1")
            seen["truncate"] = truncated.choices[0]
        async with client_for(server, timeout=0.5) as impatient:
            with pytest.raises(openai.APITimeoutError):
                await impatient.chat.completions.create(model="rule:stubborn?ptimeout=1",
                                                        messages=consensus_messages())
        return seen

    with LoopbackServer(seed=5) as server:
        seen = run(go(server))
        stats = server.stats()
    assert seen["429"] == "2"
    with pytest.raises(json.JSONDecodeError):
        json.loads(seen["malformed"])
    assert seen["truncate"].finish_reason == "length"
    assert seen["truncate"].message.content != "" and not seen["truncate"].message.content.endswith("}")
    assert stats["by_fault"] == {"429": 1, "500": 1, "drop": 1, "malformed": 1, "truncate": 1,
                                 "timeout": 1}
    assert stats["requests"] == 6


def test_random_faults_match_the_counters_and_repeat_with_the_seed():
    async def go(server):
        outcomes = Counter()
        async with client_for(server) as client:
            async def call(i):
                try:
                    response = await client.chat.completions.create(
                        model="rule:voter", messages=consensus_messages(neighbours=f"{i}: red, 99: blue"))
                except openai.RateLimitError:
                    outcomes["429"] += 1
                except openai.InternalServerError:
                    outcomes["500"] += 1
                else:
                    try:
                        json.loads(response.choices[0].message.content)
                        outcomes["ok"] += 1
                    except json.JSONDecodeError:
                        outcomes["malformed"] += 1
            await asyncio.gather(*(call(i) for i in range(200)))
        return outcomes

    counts = []
    for _ in range(2):
        with LoopbackServer(seed=42, p429=0.2, p500=0.1, pmalformed=0.1) as server:
            outcomes = run(go(server))
            stats = server.stats()
        assert stats["by_fault"] == {k: v for k, v in outcomes.items() if k != "ok"}
        assert stats["requests"] == 200 and stats["answered"] == outcomes["ok"] + outcomes["malformed"]
        assert all(outcomes[k] > 0 for k in ("ok", "429", "500", "malformed"))
        counts.append(outcomes)
    assert counts[0] == counts[1]


def test_fail_first_fails_exactly_the_first_n_calls_of_each_prompt():
    async def go(server):
        results = []
        async with client_for(server) as client:
            for prompt in ("A", "B", "A", "A", "B", "B", "A"):
                try:
                    await client.chat.completions.create(
                        model="echo", messages=[{"role": "user", "content": prompt}])
                    results.append((prompt, "ok"))
                except openai.RateLimitError as exc:
                    assert exc.response.headers["retry-after"] == "1"
                    results.append((prompt, "429"))
        return results

    with LoopbackServer(fail_first=2, fault="429") as server:
        results = run(go(server))
        assert server.stats()["by_fault"] == {"429": 4}
        server.reset()
        assert server.stats()["requests"] == 0
        again = run(go(server))
    assert results == [("A", "429"), ("B", "429"), ("A", "429"), ("A", "ok"),
                       ("B", "429"), ("B", "ok"), ("A", "ok")]
    assert again == results  # reset rewinds the tallies


def test_max_tokens_truncates_with_finish_reason_length(server):
    model = "fixed?text=one%20two%20three%20four%20five"
    cut = run(chat(server, model, max_tokens=3))
    assert cut.choices[0].message.content == "one two three"
    assert cut.choices[0].finish_reason == "length"
    assert cut.usage.completion_tokens == 3
    whole = run(chat(server, model, max_completion_tokens=5))
    assert whole.choices[0].message.content == "one two three four five"
    assert whole.choices[0].finish_reason == "stop"
    raw = run(complete(server, model, "go", max_tokens=1))
    assert (raw.choices[0].text, raw.choices[0].finish_reason) == ("one", "length")


def test_many_requests_are_in_flight_together():
    async def go(server):
        async with client_for(server) as client:
            await asyncio.gather(*(client.chat.completions.create(
                model="fixed?latency=1", messages=[{"role": "user", "content": str(i)}])
                for i in range(8)))

    with LoopbackServer() as server:
        run(go(server))
        stats = server.stats()
    assert stats["max_in_flight"] == 8 and stats["in_flight"] == 0


# ------------------------------------------------------------ dialects and auth


def test_reject_json_schema_answers_like_llama_cpp_python():
    schema_format = {"type": "json_schema", "json_schema": {"name": "m", "schema": {"type": "object"}}}
    with LoopbackServer(reject_json_schema=True) as server:
        with pytest.raises(openai.InternalServerError) as refused:
            run(chat(server, "rule:stubborn", response_format=schema_format))
        fallback = run(chat(server, "rule:stubborn", response_format={
            "type": "json_object", "schema": {"type": "object", "properties": {"colour": {}}}}))
        stats = server.stats()
    assert refused.value.status_code == 500
    body = refused.value.response.text
    assert "Input should be 'text' or 'json_object'" in body and "response_format" in body
    assert answer_json(fallback)["colour"] == "red"
    assert stats["rejected"] == {"json_schema": 1}


def test_require_api_key():
    with LoopbackServer(require_api_key="sesame") as server:
        with pytest.raises(openai.AuthenticationError):
            run(chat(server, "rule:stubborn"))

        async def with_key():
            async with client_for(server, api_key="sesame") as client:
                return await client.chat.completions.create(model="rule:stubborn",
                                                            messages=consensus_messages())
        assert answer_json(run(with_key()))["colour"] == "red"


# ------------------------------------------------------------ command line


def test_cli_serves_on_a_free_port():
    process = subprocess.Popen([sys.executable, "-m", "llm_mesa.cli", "serve", "--port", "0",
                                "--seed", "3"], stdout=subprocess.PIPE, text=True)
    try:
        first_line = process.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/v1", first_line)
        assert url and not url.group(0).endswith(":0/v1"), first_line
        response = run(chat(url.group(0), "rule:majority-inertia?inertia=0"))
        assert answer_json(response)["colour"] == "red"
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_cli_on_a_taken_port_is_one_error_line_and_exit_2(capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        status = cli.main(["serve", "--port", str(port)])
    err = capsys.readouterr().err
    assert status == 2
    assert len(err.strip().splitlines()) == 1 and "--port" in err and str(port) in err


def test_cli_refuses_bad_fault_settings(capsys):
    assert cli.main(["serve", "--port", "0", "--p429", "0.7", "--p500", "0.6"]) == 2
    assert "sum" in capsys.readouterr().err
