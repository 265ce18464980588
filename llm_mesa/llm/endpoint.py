"""Where LLM calls go and how they are sampled: one frozen, recordable value.

An ``Endpoint`` names an OpenAI-compatible server (OpenAI, vLLM, Ollama,
llama.cpp, LM Studio, or the loopback stand-in), a model, and every sampling
parameter explicitly, so that a run's manifest says exactly what was asked.
The API key is never held here: only the *name* of the environment variable
that holds it, read when a client is built, so it cannot leak into a repr, a
manifest or the response store.
"""

from __future__ import annotations

import argparse
import dataclasses
import ipaddress
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import Any
from urllib.parse import urlparse

from llm_mesa.llm.option_values import (  # noqa: F401 (EndpointError and shared_concurrency are read from here)
    EndpointError,
    EndpointOption,
    concurrency_value,
    option_metadata,
    parse_json_object,
    parse_price,
    shared_concurrency,
)
from llm_mesa.llm.wire import MAX_ANSWER_BYTES

DIALECTS = ("auto", "json_schema", "json_object", "instructions")
PROMPT_MODES = ("chat", "completion")
#: request fields the project sets itself (and records); --extra-body may not override them
RESERVED_BODY_KEYS = frozenset({"model", "messages", "prompt", "response_format", "stream", "stream_options", "n",
                                "temperature", "top_p", "max_tokens", "max_completion_tokens", "seed"})
#: a stand-in key for servers on this machine, which ask for none
LOOPBACK_DUMMY_KEY = "loopback-no-key"
#: bounds on the counts an endpoint is given (a value from a file or a spec is checked against them on load)
MAX_CONCURRENCY = 100_000
MAX_ATTEMPTS = 100
MAX_TIMEOUT_S = 86_400.0
MIN_ANSWER_BYTES = 1024
MAX_ANSWER_BYTES_LIMIT = 1024 ** 3


def is_loopback_url(url: str) -> bool:
    """True for http(s) URLs on this machine (localhost, 127.0.0.0/8, ::1)."""
    host = (urlparse(url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Endpoint:
    """An OpenAI-compatible endpoint, a model and every sampling parameter (None: not sent).

    Each field is checked when the endpoint is made (an ``EndpointError`` names the fix) and
    is also a command-line option, a policy-spec key (``llm:model=X``) and an experiment
    file's ``[llm]`` key; the fields, with their options, are listed below.
    """

    base_url: str = field(metadata=option_metadata(
        "--base-url", str, "OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1 (env OPENAI_BASE_URL); "
        "several servers of the one model: URL1,URL2 (calls spread by free capacity)"))
    model: str = field(metadata=option_metadata("--model", str, "model name as the server lists it (env LLM_MESA_MODEL)"))
    api_key_env: str = field(default="OPENAI_API_KEY", metadata=option_metadata(
        "--api-key-env", str, "NAME of the environment variable holding the API key (default %(default)s; "
        "not needed on loopback)"))
    temperature: float | None = field(default=None, metadata=option_metadata(
        "--temperature", float, "sampling temperature (unset: not sent)"))
    top_p: float | None = field(default=None, metadata=option_metadata("--top-p", float, "nucleus sampling top-p (unset: not sent)"))
    max_tokens: int | None = field(default=None, metadata=option_metadata(
        "--max-tokens-per-call", int, "max_tokens of each call (unset: not sent)"))
    max_completion_tokens: int | None = field(default=None, metadata=option_metadata(
        "--max-completion-tokens", int, "max_completion_tokens, for reasoning models (excludes --max-tokens-per-call)"))
    seed: int | None = field(default=None, metadata=option_metadata(
        "--llm-seed", int, "seed sent to the server (does not make serving reproducible; recording does)"))
    extra_body: dict[str, Any] | None = field(default=None, hash=False, metadata=option_metadata(
        "--extra-body", dict, "JSON object merged into each request body, e.g. '{\"repetition_penalty\": 1.1}'",
        spec=False))
    dialect: str = field(default="auto", metadata=option_metadata(
        "--dialect", str, "structured-output dialect (default %(default)s: json_schema, then json_object, then "
        "instructions)", choices=DIALECTS))
    prompt_mode: str = field(default="chat", metadata=option_metadata(
        "--prompt-mode", str, "chat messages or a raw /completions prompt (default %(default)s)", choices=PROMPT_MODES))
    #: calls in flight to the server: ``auto`` finds its capacity (``limits.AdaptiveLimit``), a number fixes it;
    #: endpoints with one base URL share one limit (the smallest number given, auto only if all say auto)
    concurrency: int | str = field(default="auto", metadata=option_metadata(
        "--concurrency", concurrency_value, "calls in flight to this server: auto (default) starts at 64 and grows "
        "while latency stays flat and no 429 or timeout comes back, cuts on them; a number fixes it. Endpoints "
        "sharing a base URL share one limit, the smallest number given"))
    timeout: float = field(default=120.0, metadata=option_metadata(
        "--timeout", float, "seconds one attempt of a call may take in all, and each read within it, before it is "
        "retried; the pre-flight check waits no longer either (default %(default)s)"))
    max_attempts: int = field(default=5, metadata=option_metadata(
        "--max-attempts", int, "attempts per call for 429/5xx/timeouts (default %(default)s)"))
    #: a larger answer is a failed call (its body is not read past this)
    max_answer_bytes: int = field(default=MAX_ANSWER_BYTES, metadata=option_metadata(
        "--max-answer-bytes", int, "bytes one answer may have; a larger one is a failed call, read no further "
        "(default %(default)s, 4 MiB)"))
    #: (prompt, completion) price per 1M tokens, for cost accounting
    price: tuple[float, float] | None = field(default=None, metadata=option_metadata(
        "--price", tuple, "PROMPT,COMPLETION price per 1M tokens, for cost in the usage report", spec=False))
    #: llama.cpp servers: JSON answers on one line (``dialects.COMPACT_JSON_LOGIT_BIAS``)
    compact_json: bool = field(default=False, metadata=option_metadata(
        "--compact-json", bool, "llama.cpp servers (llm-mesa local): JSON answers on one line, newline and tab tokens "
        "banned, so a small model cannot pad an answer with whitespace up to its token limit", spec=False))

    def __post_init__(self) -> None:
        # several servers of one model: "URL1,URL2" (each checked; calls spread by free capacity)
        urls = [part.strip() for part in str(self.base_url or "").split(",")]
        if len(urls) > 1:
            if any(not part for part in urls):
                raise EndpointError("--base-url has an empty entry; give comma-separated URLs, e.g. "
                                    "http://127.0.0.1:8000/v1,http://127.0.0.1:8001/v1")
            checked = [dataclasses.replace(self, base_url=part).base_url for part in urls]
            if len(set(checked)) != len(checked):
                raise EndpointError("--base-url names one server twice; give each server once")
            object.__setattr__(self, "base_url", ",".join(checked))
            return
        url = (self.base_url or "").strip().rstrip("/")
        try:
            parts = urlparse(url)
            parts.port  # noqa: B018  (raises on a port that is not a number in range)
        except ValueError:
            raise EndpointError("the base URL is not a valid URL; pass e.g. --base-url http://127.0.0.1:8000/v1") from None
        if parts.username is not None or parts.password is not None:
            raise EndpointError("the base URL holds credentials (user:key@); drop them from the URL and give the key "
                                "through an environment variable named with --api-key-env")
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise EndpointError(f"base URL {self.base_url!r} is not an http(s) URL; "
                                "pass e.g. --base-url http://127.0.0.1:8000/v1")
        object.__setattr__(self, "base_url", url)
        if not self.model or not str(self.model).strip():
            raise EndpointError("no model name given; pass --model NAME (as the server lists it under /models)")
        if not self.api_key_env or not str(self.api_key_env).replace("_", "").isalnum() \
                or str(self.api_key_env).lower().startswith(("sk-", "sk_")):
            raise EndpointError("--api-key-env must be the NAME of an environment variable (e.g. OPENAI_API_KEY), "
                                "not the key itself (what was given is not shown, in case it is a key)")
        if self.dialect not in DIALECTS:
            raise EndpointError(f"unknown dialect {self.dialect!r}; choose one of: {', '.join(DIALECTS)}")
        if self.prompt_mode not in PROMPT_MODES:
            raise EndpointError(f"unknown prompt mode {self.prompt_mode!r}; choose one of: {', '.join(PROMPT_MODES)}")
        if self.prompt_mode == "completion" and self.dialect in ("json_schema", "json_object"):
            raise EndpointError(f"dialect {self.dialect!r} needs chat prompts; use --dialect instructions "
                                "(or auto) with --prompt-mode completion")
        if self.max_tokens is not None and self.max_completion_tokens is not None:
            raise EndpointError("--max-tokens-per-call and --max-completion-tokens exclude each other; "
                                "use --max-completion-tokens for reasoning models, else --max-tokens-per-call")
        for name in ("max_tokens", "max_completion_tokens"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise EndpointError(f"{name} must be a positive integer, got {value!r}")
        if self.temperature is not None and not 0 <= self.temperature <= 2:
            raise EndpointError(f"temperature {self.temperature} is outside [0, 2]")
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise EndpointError(f"top-p {self.top_p} is outside (0, 1]")
        object.__setattr__(self, "concurrency", concurrency_value(self.concurrency))
        if isinstance(self.concurrency, int) and self.concurrency > MAX_CONCURRENCY:
            raise EndpointError(f"concurrency {self.concurrency:,} is above the limit of {MAX_CONCURRENCY:,} calls in "
                                "flight to one server; give a smaller --concurrency (or auto)")
        if not (isinstance(self.timeout, (int, float)) and math.isfinite(self.timeout) and self.timeout > 0):
            raise EndpointError(f"timeout must be a positive number of seconds, got {self.timeout!r}")
        if self.timeout > MAX_TIMEOUT_S:
            raise EndpointError(f"timeout {self.timeout:g} s is above the limit of {MAX_TIMEOUT_S:g} s (a day); "
                                "give a smaller --timeout")
        if not isinstance(self.max_attempts, int) or self.max_attempts < 1:
            raise EndpointError(f"max_attempts must be a positive integer, got {self.max_attempts!r}")
        if self.max_attempts > MAX_ATTEMPTS:
            raise EndpointError(f"max_attempts {self.max_attempts:,} is above the limit of {MAX_ATTEMPTS}; "
                                "give a smaller --max-attempts")
        if isinstance(self.max_answer_bytes, bool) or not isinstance(self.max_answer_bytes, int) \
                or not MIN_ANSWER_BYTES <= self.max_answer_bytes <= MAX_ANSWER_BYTES_LIMIT:
            raise EndpointError(f"max_answer_bytes must be a whole number of bytes from {MIN_ANSWER_BYTES:,} to "
                                f"{MAX_ANSWER_BYTES_LIMIT:,}, got {self.max_answer_bytes!r}")
        if self.extra_body is not None:
            if not isinstance(self.extra_body, dict):
                raise EndpointError("extra body must be a JSON object, e.g. --extra-body '{\"repetition_penalty\": 1.1}'")
            try:
                json.dumps(self.extra_body, sort_keys=True)
            except (TypeError, ValueError):
                raise EndpointError("extra body must be JSON-serialisable") from None
            ours = sorted(set(self.extra_body) & RESERVED_BODY_KEYS)
            if ours:
                raise EndpointError(f"--extra-body may not set {', '.join(ours)}: the project sets it (and records it); "
                                    "use --model, --temperature, --top-p, --max-tokens-per-call, --llm-seed or --dialect")
        if not isinstance(self.compact_json, bool):
            raise EndpointError(f"compact_json must be true or false, got {self.compact_json!r}")
        if self.compact_json and self.extra_body and "logit_bias" in self.extra_body:
            raise EndpointError("--compact-json sends its own logit_bias; drop logit_bias from --extra-body (or --compact-json)")
        if self.price is not None:
            try:
                prompt_price, completion_price = (float(p) for p in self.price)
            except (TypeError, ValueError):
                raise EndpointError("price must be two numbers: prompt and completion price per 1M tokens") from None
            if not all(math.isfinite(p) and p >= 0 for p in (prompt_price, completion_price)):
                raise EndpointError(f"price {prompt_price},{completion_price} must be two finite numbers >= 0 "
                                    "(prompt and completion price per 1M tokens)")
            object.__setattr__(self, "price", (prompt_price, completion_price))

    # -- what is sent -----------------------------------------------------------------
    @property
    def base_urls(self) -> tuple[str, ...]:
        """The servers of this model: one, or several (``--base-url URL1,URL2``)."""
        return tuple(self.base_url.split(","))

    def for_server(self, url: str) -> Endpoint:
        """This endpoint on one of its servers.

        Args:
            url: One of ``base_urls``.

        Returns:
            The endpoint with that base URL alone (the same object when it has one server).
        """
        if url == self.base_url:
            return self
        found = _per_server.get((self, url))
        if found is None:
            if url not in self.base_urls:
                raise EndpointError(f"{url} is not one of this endpoint's servers ({self.base_url})")
            found = _per_server[(self, url)] = dataclasses.replace(self, base_url=url)
        return found

    @property
    def is_loopback(self) -> bool:
        """Whether every server is on this machine (such a server needs no key)."""
        return all(is_loopback_url(url) for url in self.base_urls)

    def sampling_params(self) -> dict[str, Any]:
        """The sampling fields sent with every call.

        Returns:
            The fields set (temperature, top-p, token limit, seed), the extra body merged in.
        """
        return dict(self._sampling_params)

    @cached_property
    def _sampling_params(self) -> dict[str, Any]:
        params = {name: getattr(self, name)
                  for name in ("temperature", "top_p", "max_tokens", "max_completion_tokens", "seed")
                  if getattr(self, name) is not None}
        if self.extra_body:
            params.update(self.extra_body)
        return params

    def api_key(self) -> str:
        """The API key, read from the environment when a client is made (never stored here).

        Returns:
            The variable ``api_key_env``'s value; a stand-in key for a server on this machine.

        Raises:
            EndpointError: No key, for a server elsewhere; the message names the variable.
        """
        key = os.environ.get(self.api_key_env)
        if key:
            return key
        if self.is_loopback:
            return LOOPBACK_DUMMY_KEY
        raise EndpointError(f"environment variable {self.api_key_env} holds no API key for {self.base_url}; "
                            f"export {self.api_key_env}=... (or name another with --api-key-env)")

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """What these tokens cost under ``price``.

        Args:
            prompt_tokens: Prompt tokens.
            completion_tokens: Completion tokens.

        Returns:
            The cost, in the price's currency (0 when no price is set).
        """
        if self.price is None:
            return 0.0
        return (prompt_tokens * self.price[0] + completion_tokens * self.price[1]) / 1e6

    @classmethod
    def from_url_and_env(cls, base_url: str | None = None, model: str | None = None, **options: Any) -> Endpoint:
        """An endpoint from arguments, the environment filling in what they leave out.

        Args:
            base_url: The base URL (default: ``OPENAI_BASE_URL``).
            model: The model (default: ``LLM_MESA_MODEL``).
            **options: Any other field.

        Returns:
            The endpoint, checked.
        """
        base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        model = model or os.environ.get("LLM_MESA_MODEL")
        if not base_url:
            raise EndpointError("no endpoint given; pass --base-url (e.g. http://127.0.0.1:8000/v1 "
                                "from `llm-mesa serve`) or set OPENAI_BASE_URL")
        if not model:
            raise EndpointError("no model given; pass --model NAME or set LLM_MESA_MODEL")
        return cls(base_url=base_url, model=model, **options)


_per_server: dict[tuple[Endpoint, str], Endpoint] = {}


# -- command line, specs and files: one list of options ------------------------------------

ENDPOINT_OPTIONS: tuple[EndpointOption, ...] = tuple(
    EndpointOption(f.name, *f.metadata["option"]) for f in fields(Endpoint))
#: the options by field name
OPTIONS_BY_NAME: dict[str, EndpointOption] = {o.name: o for o in ENDPOINT_OPTIONS}
_FIELD_DEFAULTS = {f.name: f.default for f in fields(Endpoint) if f.default is not dataclasses.MISSING}
Endpoint.__doc__ += "\n    Attributes:\n" + "".join(  # the fields, from their options' own help (one source)
    f"        {o.name}: {o.help.replace('%(default)s', str(_FIELD_DEFAULTS.get(o.name)))} (``{o.flag}``).\n"
    for o in ENDPOINT_OPTIONS)


def add_endpoint_arguments(parser: argparse.ArgumentParser, *, unset: bool = False,
                           **defaults: Any) -> argparse._ArgumentGroup:
    """Add one option per ``Endpoint`` field.

    ``defaults`` (by field name) overrides per game (e.g. ``temperature=0.7``); ``unset``
    leaves every option None unless given (the help still names the default), for a
    command that lays the options over other sources (an experiment file's ``[llm]``).
    """
    g = parser.add_argument_group("LLM endpoint")
    for option in ENDPOINT_OPTIONS:
        default = defaults.get(option.name, _FIELD_DEFAULTS.get(option.name))
        if option.kind is dict and isinstance(default, dict):
            default = json.dumps(default)
        help_text = option.help.replace("%(default)s", str(default)) if unset else option.help
        if option.kind is bool:
            g.add_argument(option.flag, action="store_true", default=None if unset else bool(default), help=help_text)
            continue
        kind = option.kind if option.kind in (int, float) else _argparse_concurrency if \
            option.kind is concurrency_value else None
        g.add_argument(option.flag, type=kind, default=None if unset else default, choices=option.choices,
                       help=help_text)
    return g


def _argparse_concurrency(text: str) -> int | str:
    try:
        return concurrency_value(text)
    except EndpointError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


#: what a policy spec ``llm:k=v,...`` may set, with its type (``extra_body``, ``price`` and
#: ``compact_json`` are given as options or in the experiment file's ``[llm]`` table)
SPEC_OPTIONS: dict[str, type] = {o.name: o.kind for o in ENDPOINT_OPTIONS if o.spec}


def check_spec_options(options: dict[str, Any], where: str) -> dict[str, Any]:
    """A spec's endpoint options, typed; unknown or mistyped ones refused in one line that names ``where``."""
    unknown = sorted(set(options) - set(SPEC_OPTIONS))
    if unknown:
        raise EndpointError(f"unknown llm option(s) {', '.join(unknown)} in {where}; choose among: "
                            f"{', '.join(SPEC_OPTIONS)} (extra body and price: --extra-body, --price)")
    checked: dict[str, Any] = {}
    for name, value in options.items():
        kind = SPEC_OPTIONS[name]
        if kind is concurrency_value:
            try:
                checked[name] = concurrency_value(value)
            except EndpointError as exc:
                raise EndpointError(f"llm option {name}={value!r} in {where}: {exc}") from None
        elif kind is str:
            if value is None or str(value).strip() == "":
                raise EndpointError(f"llm option {name} in {where} is empty; give a value, e.g. {name}=...")
            checked[name] = str(value)
        elif isinstance(value, bool) or not isinstance(value, (int, float) if kind is float else int):
            raise EndpointError(f"llm option {name}={value!r} in {where} must be "
                                + ("a number" if kind is float else "a whole number"))
        else:
            checked[name] = value
    return checked


def endpoint_with_options(base: Endpoint | None, options: dict[str, Any], where: str,
                          extra: Mapping[str, Any] | None = None) -> Endpoint:
    """``base`` (or ``extra``: parsed field values) with a spec's options laid over it (the spec wins);
    the endpoint checks the ranges."""
    options = check_spec_options(options, where)
    if base is None:
        values = {**(extra or {}), **options}
        return Endpoint.from_url_and_env(values.pop("base_url", None), values.pop("model", None), **values)
    return dataclasses.replace(base, **options)


def endpoint_from_args(args: argparse.Namespace) -> Endpoint:
    """The ``Endpoint`` described by options added with ``add_endpoint_arguments``."""
    values = {o.name: o.parse(getattr(args, o.dest, _FIELD_DEFAULTS.get(o.name))) for o in ENDPOINT_OPTIONS}
    values = {k: v for k, v in values.items() if v is not None or k not in _FIELD_DEFAULTS
              or _FIELD_DEFAULTS[k] is None}
    return Endpoint.from_url_and_env(values.pop("base_url"), values.pop("model"), **values)


def check_endpoint_values(values: Mapping[str, Any], where: str) -> dict[str, Any]:
    """An experiment file's ``[llm]`` table (field name -> value), each value parsed and checked as the
    ``Endpoint`` checks it; a bad one is one line that says ``where``."""
    unknown = sorted(set(values) - set(OPTIONS_BY_NAME))
    if unknown:
        raise EndpointError(f"unknown key(s) {', '.join(unknown)} in {where}; allowed: {', '.join(OPTIONS_BY_NAME)}")
    parsed = {name: OPTIONS_BY_NAME[name].parse(value) for name, value in values.items()}
    for name, value in parsed.items():
        kind = OPTIONS_BY_NAME[name].kind
        if kind in (int, float) and (isinstance(value, bool) or not isinstance(value, (int, float) if kind is float
                                                                                 else int)):
            raise EndpointError(f"{name} = {value!r} in {where} must be {'a number' if kind is float else 'a whole number'}")
        if kind in (str, bool) and not isinstance(value, kind):
            raise EndpointError(f"{name} = {value!r} in {where} must be {'true or false' if kind is bool else 'a text'}")
    trial = {"base_url": "http://127.0.0.1:1/v1", "model": "m", **parsed}
    try:
        Endpoint(**trial)
    except EndpointError as exc:
        raise EndpointError(f"{where}: {exc}") from None
    return parsed


def endpoint_from_spec(options: dict[str, Any], args: argparse.Namespace, where: str) -> Endpoint:
    """A spec's endpoint: the command line's endpoint options, then the spec's own (the spec wins).

    ``--policy llm:model=X,temperature=0.3`` with ``--model Y --temperature 0.9`` calls X
    at 0.3; unknown, mistyped or out-of-range options are refused with one line.
    """
    options = check_spec_options(options, where)
    ns = argparse.Namespace(**vars(args))
    ns.base_url = options.pop("base_url", ns.base_url)
    ns.model = options.pop("model", ns.model)
    return dataclasses.replace(endpoint_from_args(ns), **options)
