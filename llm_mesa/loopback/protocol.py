"""The OpenAI wire format as the loopback endpoint reads and writes it (no HTTP here).

Reading a request: its JSON body, the prompt as behaviours see it, the token
limit, stop sequences and the asked response format. Writing an answer: a text
fitted to the stops and limits, a JSON answer fitted to a response_format
schema, and the OpenAI-shaped completion and model-list entries.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from importlib import metadata
from typing import Any

from llm_mesa.loopback.behaviours import PromptView, count_tokens, count_tokens_cached, cut_to_tokens
from llm_mesa.loopback.faults import LoopbackError

try:
    VERSION = metadata.version("llm-mesa")
except metadata.PackageNotFoundError:  # running from a bare checkout
    VERSION = "0+unknown"

#: every answer says it came from this stand-in, never from a real model
SYSTEM_FINGERPRINT = f"llm-mesa-loopback-{VERSION}"
OWNER = "llm-mesa-loopback (stand-in, not a language model)"

#: how llama-cpp-python's server refuses response_format json_schema: its pydantic
#: validation error, wrapped by its route error handler as an HTTP 500
LLAMA_CPP_JSON_SCHEMA_REJECTION = (
    "[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
    "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
    "'ctx': {'expected': \"'text' or 'json_object'\"}}]"
)

#: deepest nesting of objects and lists a request body may have (the body itself is
#: level 1): deeper bodies are refused with a 400 before anything walks them
MAX_JSON_DEPTH = 100

_DEFAULT_OF_TYPE = {"string": "", "integer": 0, "number": 0, "boolean": False, "array": [], "object": {}}


class BadRequest(LoopbackError):
    """A request the endpoint cannot answer (HTTP 400)."""

    def __init__(self, message: str, param: str | None = None):
        super().__init__(message)
        self.param = param


class RejectJsonSchema(Exception):
    """Raised under --reject-json-schema for a json_schema response_format."""


# ---------------------------------------------------------------- reading a request


def parse_json(raw: bytes, what: str = "the request body") -> Any:
    """JSON text as a value, refused (``BadRequest``) when malformed or nested too deeply.

    A body nested past the decoder's recursion limit raises ``RecursionError`` in
    ``json.loads`` (an HTTP 500 if it escaped); one nested less deeply could still
    exhaust the stack of later code, so ``MAX_JSON_DEPTH`` is checked, without
    recursion, on what the decoder returns.
    """
    too_deep = f"{what} is nested deeper than {MAX_JSON_DEPTH} levels of objects and lists"
    try:
        value = json.loads(raw)
    except RecursionError:
        raise BadRequest(too_deep) from None
    except ValueError as exc:  # UnicodeDecodeError is one too
        raise BadRequest(f"{what} is not valid JSON ({exc})") from None
    if _deeper_than(value, MAX_JSON_DEPTH):
        raise BadRequest(too_deep)
    return value


def _deeper_than(value: Any, limit: int) -> bool:
    stack = [(value, 1)] if isinstance(value, (dict, list)) else []
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def _content_text(content: Any) -> str:
    """Message content as text: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content
                       if isinstance(part, dict) and isinstance(part.get("text", ""), str))
    raise BadRequest("message content must be a string or a list of text parts", "messages")


def read_prompt(body: dict[str, Any], chat: bool) -> tuple[PromptView, str, int]:
    """The prompt as behaviours see it, as one text (hashed), and its token count.

    A chat prompt is counted message by message (the role is one more piece),
    which equals counting the joined text; recurring messages are counted once.
    """
    if chat:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise BadRequest("'messages' must be a non-empty list of {role, content}", "messages")
        parts, last_user, tokens = [], "", 0
        for message in messages:
            if not isinstance(message, dict):
                raise BadRequest("each message must be an object with role and content", "messages")
            text = _content_text(message.get("content"))
            role = str(message.get("role", "user"))
            if role == "user":
                last_user = text
            parts.append(f"{role}\n{text}")
            tokens += count_tokens_cached(role) + count_tokens_cached(text)
        full = "\n".join(parts)
        return PromptView(last_user=last_user, full=full, chat=True), full, tokens
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        prompt = prompt[0]
    if not isinstance(prompt, str):
        raise BadRequest("'prompt' must be one string (the loopback endpoint answers one "
                         "prompt per request)", "prompt")
    return PromptView(last_user=prompt, full=prompt, chat=False), prompt, count_tokens(prompt)


def token_limit(body: dict[str, Any]) -> int | None:
    limits = [body.get(k) for k in ("max_tokens", "max_completion_tokens") if body.get(k) is not None]
    for limit in limits:
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise BadRequest("max_tokens / max_completion_tokens must be an integer >= 1", "max_tokens")
    return min(limits) if limits else None


def stop_sequences(body: dict[str, Any]) -> tuple[str, ...]:
    stop = body.get("stop")
    if stop is None:
        return ()
    if isinstance(stop, str):
        return (stop,) if stop else ()
    if isinstance(stop, list) and all(isinstance(s, str) for s in stop):
        return tuple(s for s in stop if s)
    raise BadRequest("'stop' must be a string or a list of strings", "stop")


def response_schema(body: dict[str, Any], reject_json_schema: bool) -> dict[str, Any] | None:
    """None for free text; a schema dict ({} when none is given) for JSON answers."""
    response_format = body.get("response_format")
    if response_format is None:
        return None
    if not isinstance(response_format, dict):
        raise BadRequest("response_format must be an object with a 'type'", "response_format")
    kind = response_format.get("type")
    if kind == "text":
        return None
    if kind == "json_schema":
        if reject_json_schema:
            raise RejectJsonSchema
        wrapper = response_format.get("json_schema")
        schema = wrapper.get("schema") if isinstance(wrapper, dict) else None
        return schema if isinstance(schema, dict) else {}
    if kind == "json_object":
        schema = response_format.get("schema")  # llama-cpp-python's dialect
        return schema if isinstance(schema, dict) else {}
    raise BadRequest(f"response_format type {kind!r} must be 'text', 'json_object' or "
                     "'json_schema'", "response_format")


# ---------------------------------------------------------------- writing an answer


class SchemaMismatch(LoopbackError):
    """A behaviour's answer that cannot satisfy the request's response_format schema: a stand-in bug.

    Answered as HTTP 500: a server that decodes under a schema never sends an answer outside it,
    so the stand-in must not either (a game would count it as a valid answer)."""


def shape_to_schema(answer: dict[str, Any], schema: dict[str, Any],
                    aliases: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Fit a behaviour's JSON answer to a response_format schema, as a server decoding under it would.

    An ``anyOf`` (or ``oneOf``) of objects takes the first form whose required keys the answer
    holds. In an object, the keys the schema names come first, in its order (a key the answer
    lacks is read from its alias in ``aliases``, the behaviour's ``schema_aliases``); a null
    where the schema does not allow null counts as absent; a required key still absent gets the
    empty value of its type; other keys are dropped under ``additionalProperties: false``.
    Strings are cut to ``maxLength``. A value the schema cannot take (outside an ``enum``, of
    another type) or a form none fits raises ``SchemaMismatch``, saying what did not fit.
    """
    return _shape(answer, schema, aliases or {}, "answer")


def _shape(value: Any, schema: Any, aliases: Mapping[str, str], where: str) -> Any:
    if not isinstance(schema, dict) or not schema:
        return value
    forms = schema.get("anyOf") or schema.get("oneOf")
    if forms:
        for form in forms:
            if isinstance(value, dict) and _holds_required(value, form, aliases):
                return _shape(value, form, aliases, where)
        if not isinstance(value, dict):
            for form in forms:
                try:
                    return _shape(value, form, aliases, where)
                except SchemaMismatch:
                    continue
        raise SchemaMismatch(f"loopback stand-in bug: the {where} {_show(value)} fits none of the schema's "
                             f"{len(forms)} forms (each needs its required keys)")
    kind = schema.get("type")
    if kind == "object" or (kind is None and "properties" in schema):
        return _shape_object(value, schema, aliases, where)
    return _shape_value(value, schema, where)


def _holds_required(answer: dict[str, Any], form: Any, aliases: Mapping[str, str]) -> bool:
    required = form.get("required") or () if isinstance(form, dict) else ()
    return all(_lookup(answer, key, aliases) is not None for key in required)


def _lookup(answer: dict[str, Any], key: str, aliases: Mapping[str, str]) -> Any:
    return answer[key] if answer.get(key) is not None else answer.get(aliases.get(key, key))


def _allows_null(spec: Any) -> bool:
    kind = spec.get("type") if isinstance(spec, dict) else None
    return kind == "null" or (isinstance(kind, list) and "null" in kind)


def _shape_object(answer: Any, schema: dict[str, Any], aliases: Mapping[str, str], where: str) -> dict[str, Any]:
    if not isinstance(answer, dict):
        raise SchemaMismatch(f"loopback stand-in bug: the {where} {_show(answer)} is not an object")
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return answer
    required = set(schema.get("required") or ())
    shaped: dict[str, Any] = {}
    for key, spec in properties.items():
        value = _lookup(answer, key, aliases)
        if value is None and _allows_null(spec) and (key in answer or key in required):
            shaped[key] = None
        elif value is not None:
            shaped[key] = _shape(value, spec, aliases, f"{where}'s {key!r}")
        elif key in required:
            shaped[key] = _empty(spec, f"{where}'s {key!r}")
    if schema.get("additionalProperties", True) is not False:
        used = {aliases.get(k, k) for k in properties} | set(properties)
        shaped.update({k: v for k, v in answer.items() if k not in used})
    return shaped


def _empty(spec: Any, where: str) -> Any:
    kind = spec.get("type") if isinstance(spec, dict) else None
    if isinstance(spec, dict) and "enum" in spec:
        raise SchemaMismatch(f"loopback stand-in bug: the {where} is required and the answer has none "
                             f"(one of {spec['enum']})")
    return None if _allows_null(spec) else _DEFAULT_OF_TYPE.get(kind)


def _shape_value(value: Any, spec: dict[str, Any], where: str) -> Any:
    kind = spec.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if kind else []
    if value is None and ("null" in kinds or not kinds):
        return value
    fitted = value
    if "string" in kinds and isinstance(value, str):
        limit = spec.get("maxLength")
        fitted = value[:limit] if isinstance(limit, int) else value
    elif "integer" in kinds and isinstance(value, int) and not isinstance(value, bool):
        fitted = value
    elif "number" in kinds and isinstance(value, (int, float)) and not isinstance(value, bool):
        fitted = value
    elif "boolean" in kinds and isinstance(value, bool):
        fitted = value
    elif kinds and not ({"array", "object"} & set(kinds)):
        raise SchemaMismatch(f"loopback stand-in bug: the {where} {_show(value)} is not of type {kind}")
    if "enum" in spec and fitted not in spec["enum"]:
        raise SchemaMismatch(f"loopback stand-in bug: the {where} {_show(value)} is not one of {spec['enum']}")
    return fitted


def _show(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def fit_text(text: str, stops: tuple[str, ...], limit: int | None, truncate: bool) -> tuple[str, str]:
    """The text cut at its first stop sequence, halved (``truncate`` fault), cut to ``limit``
    tokens; and its finish reason (``length`` when a cut other than a stop happened)."""
    finish_reason = "stop"
    if stops:
        cut_at = min((i for i in (text.find(s) for s in stops) if i >= 0), default=-1)
        if cut_at >= 0:
            text = text[:cut_at]
    if truncate:
        text, _ = cut_to_tokens(text, count_tokens(text) // 2)
        finish_reason = "length"
    if limit is not None:
        text, was_cut = cut_to_tokens(text, limit)
        if was_cut:
            finish_reason = "length"
    return text, finish_reason


def completion_body(number: int, model: str, text: str, finish_reason: str, prompt_tokens: int,
                    completion_tokens: int, chat: bool) -> dict[str, Any]:
    """An OpenAI chat.completion (``chat``) or text_completion object."""
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
             "total_tokens": prompt_tokens + completion_tokens}
    if chat:
        choice = {"index": 0, "message": {"role": "assistant", "content": text, "refusal": None},
                  "logprobs": None, "finish_reason": finish_reason}
        answer = {"id": f"chatcmpl-loopback-{number}", "object": "chat.completion"}
    else:
        choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish_reason}
        answer = {"id": f"cmpl-loopback-{number}", "object": "text_completion"}
    answer.update(created=int(time.time()), model=model, system_fingerprint=SYSTEM_FINGERPRINT,
                  choices=[choice], usage=usage)
    return answer


def model_entry(model_id: str, summary: str) -> dict[str, Any]:
    """One entry of ``GET /v1/models``, marked as a stand-in."""
    return {"id": model_id, "object": "model", "created": 0, "owned_by": OWNER,
            "stand_in": True, "description": summary}


def server_props() -> dict[str, Any]:
    """``GET /props`` in llama.cpp's shape: the stand-in's build (its system_fingerprint), no model file, and
    that it is a stand-in, not a language model."""
    return {"build_info": SYSTEM_FINGERPRINT, "model_path": "", "model_alias": "", "total_slots": 0,
            "default_generation_settings": {}, "stand_in": True, "owned_by": OWNER}


def error_body(message: str, kind: str, code: str | None = None, param: str | None = None) -> bytes:
    """An OpenAI error object, as JSON bytes."""
    return json.dumps({"error": {"message": message, "type": kind, "param": param, "code": code}}).encode()
