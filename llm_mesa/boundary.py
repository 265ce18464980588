"""Where data from outside becomes trusted: bounded, validated reading of bytes, JSON and TOML.

Everything llm-mesa reads that it did not make in this process (a server's answer,
a manifest, a summary, an experiment file, a recorded row) is read through here or
through ``llm_mesa.llm.wire`` (the server side, built on this), once, at the edge.
What comes out is plain data inside known bounds, so the code behind the edge never
meets:

* JSON or TOML nested deeper than ``MAX_DEPTH`` (Python's parsers recurse: 200,000
  brackets are a ``RecursionError``, i.e. a traceback, and a deep tree costs every
  reader after the parser too);
* text that is not valid UTF-8 (a ``\\ud800`` escape decodes to a lone surrogate,
  which no encoder, store or Parquet writer will take afterwards);
* numbers that are not finite (``1e999`` parses as infinity, and ``int()`` of it
  raises) where the data comes from a server or a model;
* more bytes than the reader allows (``max_bytes``: a file is checked on its size
  before it is read, a body while it is read).

A violation is ``Malformed`` (an ordinary ``ValueError`` with a reason) for the caller
to turn into what it means there: a failed call for a server's answer, one line and
exit status 2 (``OutsideDataError``) for a file. Files we write ourselves may hold
NaN (a summary's missing figure), so ``finite`` is a choice of the reader.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import tomllib
from pathlib import Path
from typing import Any

from llm_mesa.errors import LlmMesaError

#: deepest nesting of JSON or TOML accepted anywhere (our manifests nest about 8 levels, answers 3)
MAX_DEPTH = 64
#: largest JSON file read (a manifest of a sweep at its games limit, with every seed listed, stays below)
MAX_JSON_FILE_BYTES = 512 * 1024 * 1024
#: largest experiment (TOML) file read: a study's file is a few KB
MAX_TOML_FILE_BYTES = 1024 * 1024

_SURROGATE = re.compile("[\ud800-\udfff]")


class Malformed(ValueError):
    """Data from outside that breaks a bound; the message says which (for the caller to place)."""


class OutsideDataError(LlmMesaError):
    """A file or folder that is not what it must be; the message names it and the fix."""


def is_valid_text(text: str) -> bool:
    """True when ``text`` encodes as UTF-8 (no lone surrogates)."""
    return text.isascii() or _SURROGATE.search(text) is None


def check_tree(value: Any, *, max_depth: int = MAX_DEPTH, finite: bool = True) -> None:
    """Raise ``Malformed`` when parsed data nests deeper than ``max_depth``, holds a string
    that is not valid UTF-8 (a key or a value), or (``finite``) a number that is not finite.

    Iterative, so that checking a tree never recurses itself.
    """
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if not is_valid_text(item):
                raise Malformed("text that is not valid UTF-8 (a lone surrogate)")
        elif isinstance(item, float):
            if finite and not math.isfinite(item):
                raise Malformed(f"a number that is not finite ({item})")
        elif isinstance(item, (dict, list)):
            if depth > max_depth:
                raise Malformed(f"data nested deeper than {max_depth} levels")
            if isinstance(item, dict):
                stack.extend((key, depth) for key in item)
                stack.extend((v, depth + 1) for v in item.values())
            else:
                stack.extend((v, depth + 1) for v in item)


def _refuse_constant(name: str) -> Any:
    raise Malformed(f"a number that is not finite ({name})")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999, or 400 digits: the parser's float is infinity
        raise Malformed(f"a number that is not finite ({text[:20]})")
    return value


#: a ``\uD800``-``\uDFFF`` escape: the only way a lone surrogate gets into text decoded from valid UTF-8
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def loads_json(data: bytes | str, *, max_bytes: int | None = None, max_depth: int = MAX_DEPTH,
               finite: bool = True) -> Any:
    """Parse JSON from outside within the bounds above; ``Malformed`` says which one broke.

    Bytes must be valid UTF-8, and numbers (``finite``) finite as they are parsed. The
    parsed tree is walked (``check_tree``) only when the text could break a bound the
    parser does not hold: more brackets than ``max_depth`` (it could nest deeper) or a
    surrogate escape; an ordinary answer is parsed and nothing more.
    """
    if max_bytes is not None and len(data) > max_bytes:
        raise Malformed(f"{len(data):,} bytes, above the limit of {max_bytes:,}")
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise Malformed("bytes that are not valid UTF-8") from None
    else:
        text = data
    try:
        value = json.loads(text, parse_constant=_refuse_constant if finite else None,
                           parse_float=_finite_float if finite else None)
    except RecursionError:
        raise Malformed(f"data nested deeper than {max_depth} levels") from None
    except Malformed:
        raise
    except ValueError as exc:
        raise Malformed(f"not JSON ({getattr(exc, 'msg', exc)})") from None
    if text.count("[") + text.count("{") > max_depth or ("\\u" in text and _SURROGATE_ESCAPE.search(text)):
        check_tree(value, max_depth=max_depth, finite=False)  # finiteness was held by the parser
    return value


def _read_bounded(path: Path, what: str, max_bytes: int, fix: str) -> bytes:
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise OutsideDataError(f"{path} is {size:,} bytes, too large for {what} (at most {max_bytes:,}); {fix}")
        with open(path, "rb") as fh:
            data = fh.read(max_bytes + 1)
    except IsADirectoryError:
        raise OutsideDataError(f"{path} is a folder, not {what}; {fix}") from None
    except OSError as exc:
        raise OutsideDataError(f"cannot read {path} ({exc.strerror or exc}); {fix}") from None
    if len(data) > max_bytes:  # grew while being read
        raise OutsideDataError(f"{path} is larger than {max_bytes:,} bytes, too large for {what}; {fix}")
    return data


def read_json_file(path: str | os.PathLike[str], what: str, *, fix: str,
                   max_bytes: int = MAX_JSON_FILE_BYTES, shape: type | None = dict) -> Any:
    """A JSON file's data, or one ``OutsideDataError`` line: ``what`` it should be and the ``fix``.

    ``shape``: the type its top level must have (None: any). NaN is allowed (we write it).
    """
    path = Path(path)
    data = _read_bounded(path, what, max_bytes, fix)
    try:
        value = loads_json(data, max_depth=MAX_DEPTH, finite=False)
    except Malformed as exc:
        raise OutsideDataError(f"{path} is not {what}: {exc}; {fix}") from None
    if shape is not None and not isinstance(value, shape):
        raise OutsideDataError(f"{path} is not {what}: it holds a JSON {_json_kind(value)}, not an object; {fix}")
    return value


def read_toml_file(path: str | os.PathLike[str], what: str, *, fix: str,
                   max_bytes: int = MAX_TOML_FILE_BYTES) -> dict[str, Any]:
    """A TOML file's tables, or one ``OutsideDataError`` line (missing files are the caller's to name)."""
    path = Path(path)
    return loads_toml(_read_bounded(path, what, max_bytes, fix), path, what, fix=fix)


def read_bounded(path: str | os.PathLike[str], what: str, *, fix: str, max_bytes: int = MAX_TOML_FILE_BYTES) -> bytes:
    """A file's bytes, or one ``OutsideDataError`` line: for a reader that hashes exactly what it parses."""
    return _read_bounded(Path(path), what, max_bytes, fix)


def loads_toml(data: bytes, path: str | os.PathLike[str], what: str, *, fix: str) -> dict[str, Any]:
    """The tables of TOML ``data`` read from ``path`` (named in the one-line errors)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise OutsideDataError(f"{path} is not {what}: not valid UTF-8 (byte {exc.start}); {fix}") from None
    try:
        value = tomllib.loads(text)
    except RecursionError:
        raise OutsideDataError(f"{path} is not {what}: nested deeper than {MAX_DEPTH} levels; {fix}") from None
    except tomllib.TOMLDecodeError as exc:
        raise OutsideDataError(f"{path}: not valid TOML ({exc})") from None
    try:
        check_tree(value, max_depth=MAX_DEPTH, finite=False)
    except Malformed as exc:
        raise OutsideDataError(f"{path} is not {what}: {exc}; {fix}") from None
    return value


#: the member of a sealed JSON object that holds the digest of the rest (``seal``)
DIGEST_KEY = "digest"


def content_digest(value: Any) -> str:
    """SHA-256 of ``value``'s canonical JSON (sorted keys, no spaces; NaN as JSON's reader writes it back)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def seal(value: dict[str, Any]) -> dict[str, Any]:
    """``value`` as it reads back from JSON, with the digest of its content (``DIGEST_KEY``), so that a
    reader can prove it holds what was written (``check_seal``): a file edited or damaged since says so."""
    plain = json.loads(json.dumps({k: v for k, v in value.items() if k != DIGEST_KEY}, default=str))
    return {**plain, DIGEST_KEY: content_digest(plain)}


def check_seal(value: dict[str, Any], path: str | os.PathLike[str], what: str, *, fix: str) -> dict[str, Any]:
    """``value`` when its digest matches its content (a file written before seals existed has none and passes);
    else one ``OutsideDataError`` line."""
    digest = value.get(DIGEST_KEY)
    if digest is None:
        return value
    if digest != content_digest({k: v for k, v in value.items() if k != DIGEST_KEY}):
        raise OutsideDataError(f"{path} does not hold what was written as {what}: its content does not match "
                               f"its digest (edited or damaged since); {fix}")
    return value


def _json_kind(value: Any) -> str:
    return {list: "list", str: "text", bool: "true/false", type(None): "null"}.get(type(value), "number")


__all__ = ["DIGEST_KEY", "MAX_DEPTH", "Malformed", "OutsideDataError", "check_seal", "check_tree", "content_digest",
           "is_valid_text", "loads_json", "loads_toml", "read_bounded", "read_json_file", "read_toml_file", "seal"]
