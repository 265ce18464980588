"""The record store's compact rows: shared texts stored once by hash, rows compressed.

Why: every call of a game repeats the same long texts (the rules message, the answer
schema); stored with each row they made ~4.2 KB a call. Here

* every message but the last, the first paragraph of a long last message or raw
  prompt (rules folded into it) and the schema become references
  (``{"$text": hash}``) into the store's ``texts`` table, each text stored once;
* the rest of the request, and the answer record without the fields left at their
  defaults, are deflate-compressed with a preset dictionary, kept in ``texts`` under
  ``zdict:ID``. Rows of one game differ in a few numbers and words, so against that
  dictionary each row compresses to a fraction of what it takes alone. The first
  row a store writes is the first dictionary; once ``DICTIONARY_ROWS`` rows are
  written (and again at 8 and 64 times as many), the last ``DICTIONARY_BYTES`` of
  the rows written so far become the next: a first row has no history block, and
  against it a row of round 10 (ten rounds of colours and quoted messages) took
  twice what it takes against rows that have one (demo game: 340 against 150 bytes
  a call). A row names its dictionary: ``R`` + 8-byte ID ahead of a raw deflate
  stream (no zlib header or checksum: SQLite pages have their own), or, in rows
  written before, ``D`` + ID ahead of a zlib stream; a row without one starts with
  zlib's own header.

``decode_*`` read old JSON-text rows as well, so older stores replay unchanged.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from collections.abc import Callable
from typing import Any

ROW_FORMAT = 2
#: a text at least this long is stored once in ``texts`` (rules, long shared prefixes)
SHARED_TEXT_CHARS = 200
_REF = "$text"
_DICT_TAG = b"D"  # a zlib stream against a dictionary (rows written before the raw tag)
_RAW_TAG = b"R"  # a raw deflate stream against a dictionary
DICT_PREFIX = "zdict:"
#: rows written before the dictionary is made again from the rows themselves (then 8x, 64x as many)
DICTIONARY_ROWS = 64
#: how much of the latest rows the dictionary holds: 8 KB of a game's rows cut a row to ~150 bytes,
#: 32 KB to ~132 at half again the CPU (preparing a dictionary costs in proportion to its size)
DICTIONARY_BYTES = 8 * 1024
_COMPACT_DEFAULTS: dict[str, Any] = {"text": "", "finish_reason": None, "prompt_tokens": 0, "completion_tokens": 0,
                                     "latency_s": 0.0, "model": None, "system_fingerprint": None, "error": None,
                                     "error_message": "", "attempts": 0, "dialect": None, "queue_s": 0.0,
                                     "cached_tokens": 0, "server": None}


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _share(value: Any, texts: dict[str, bytes]) -> Any:
    """``value`` replaced by a reference into ``texts`` (filled here)."""
    encoded = _json(value)
    digest = hashlib.sha256(encoded.encode()).hexdigest()[:32]
    texts[digest] = zlib.compress(encoded.encode(), 9)
    return {_REF: digest}


def _split(text: str, texts: dict[str, bytes], share: Callable = _share) -> str | list[Any]:
    """A long text whose first paragraph is long too (rules folded into a prompt): that paragraph shared."""
    head, sep, tail = text.partition("\n\n")
    if sep and len(head) >= SHARED_TEXT_CHARS:
        return [share(head, texts), sep + tail]
    return text


def _shared_request(identity: dict[str, Any], texts: dict[str, bytes], share: Callable = _share) -> dict[str, Any]:
    request = dict(identity)
    messages = request.get("messages")
    if isinstance(messages, list):
        last = len(messages) - 1
        request["messages"] = [
            {**m, "content": share(m["content"], texts) if i < last else _split(m["content"], texts, share)}
            if isinstance(m, dict) and isinstance(m.get("content"), str) and len(m["content"]) >= SHARED_TEXT_CHARS else m
            for i, m in enumerate(messages)]
    if isinstance(request.get("prompt"), str):
        request["prompt"] = _split(request["prompt"], texts, share)
    if request.get("schema") is not None:
        request["schema"] = share(request["schema"], texts)
    return request


class Packer:
    """Compresses one store's rows against a dictionary: its first row, then its latest rows (see above).

    ``pack`` is called by one thread at a time (the store's writer); ``unpack`` by any.
    """

    def __init__(self) -> None:
        self.dict_id: bytes | None = None
        self.zdict: bytes | None = None
        self._zdict_body = b""
        #: dictionaries known to this process, by ID (its own, and those read from the file)
        self.known: dict[bytes, bytes] = {}
        self.packed = 0
        self._next_dictionary = DICTIONARY_ROWS
        self._recent = bytearray()  # the latest rows' bytes, for the next dictionary
        #: shared texts already encoded, by the identity of the value (a game's rules and schema are
        #: one object for all its calls): (value, reference, compressed body)
        self._shared: dict[int, tuple[Any, dict[str, str], str, bytes]] = {}

    def pack(self, identity: dict[str, Any], record: dict[str, Any]) -> tuple[bytes, bytes, dict[str, bytes]]:
        """A request and answer as compressed BLOBs, and the shared texts (and dictionary) they refer to."""
        texts: dict[str, bytes] = {}
        request = _json(_shared_request(identity, texts, self._share)).encode()
        response = _json({k: v for k, v in record.items()
                          if k not in _COMPACT_DEFAULTS or _COMPACT_DEFAULTS[k] != v}).encode()
        if self.zdict is None or self.packed == self._next_dictionary:
            if self.zdict is not None:
                self._next_dictionary *= 8
            self._use_dictionary(bytes(self._recent[-DICTIONARY_BYTES:]) or request + response)
        assert self.dict_id is not None
        self.packed += 1
        self._recent += request + response
        del self._recent[:-DICTIONARY_BYTES]
        # with every row (INSERT OR IGNORE): no row is ever written without its dictionary
        texts[DICT_PREFIX + self.dict_id.hex()] = self._zdict_body
        return self._compress(request), self._compress(response), texts

    def _use_dictionary(self, zdict: bytes) -> None:
        self.zdict = zdict
        self.dict_id = hashlib.sha256(zdict).digest()[:8]
        self.known[self.dict_id] = zdict
        self._zdict_body = zlib.compress(zdict, 9)

    def _share(self, value: Any, texts: dict[str, bytes]) -> dict[str, str]:
        known = self._shared.get(id(value))
        if known is None or known[0] is not value:
            if len(self._shared) >= 256:
                self._shared.clear()
            reference = _share(value, texts)
            known = self._shared[id(value)] = (value, reference, reference[_REF], texts[reference[_REF]])
        texts[known[2]] = known[3]
        return known[1]

    def _compress(self, data: bytes) -> bytes:
        assert self.zdict is not None and self.dict_id is not None
        packer = zlib.compressobj(9, zlib.DEFLATED, -15, zdict=self.zdict)
        return _RAW_TAG + self.dict_id + packer.compress(data) + packer.flush()

    def unpack(self, blob: bytes, load_dict: Callable[[str], bytes | None]) -> bytes:
        raw = blob.startswith(_RAW_TAG)
        if not raw and not blob.startswith(_DICT_TAG):
            return zlib.decompress(blob)
        dict_id = blob[1:9]
        zdict = self.known.get(dict_id)
        if zdict is None:
            stored = load_dict(DICT_PREFIX + dict_id.hex())
            if stored is None:
                raise ValueError(f"row compressed with dictionary {dict_id.hex()}, which the store does not hold")
            zdict = self.known[dict_id] = zlib.decompress(stored)
        unpacker = zlib.decompressobj(-15 if raw else zlib.MAX_WBITS, zdict=zdict)
        data = unpacker.decompress(blob[9:]) + unpacker.flush()
        if raw and not unpacker.eof:  # a raw stream has no checksum: a cut one must not pass as whole
            raise zlib.error("the row's compressed data is cut short")
        return data

    def decode_request(self, stored: str | bytes, lookup: Callable[[str], Any],
                       load_dict: Callable[[str], bytes | None]) -> dict[str, Any]:
        """A stored request (old JSON text or a compact BLOB) as the identity it was recorded from."""
        if isinstance(stored, str):
            return json.loads(stored)
        request = _expand(json.loads(self.unpack(stored, load_dict)), lookup)
        if isinstance(request.get("prompt"), list):
            request["prompt"] = "".join(request["prompt"])
        for message in request.get("messages") or ():
            if isinstance(message, dict) and isinstance(message.get("content"), list) \
                    and all(isinstance(part, str) for part in message["content"]):
                message["content"] = "".join(message["content"])
        return request

    def decode_response(self, stored: str | bytes, load_dict: Callable[[str], bytes | None]) -> dict[str, Any]:
        """A stored answer record (old JSON text or a compact BLOB), defaults filled in."""
        if isinstance(stored, str):
            return json.loads(stored)
        return {**_COMPACT_DEFAULTS, **json.loads(self.unpack(stored, load_dict))}


def _expand(value: Any, lookup: Callable[[str], Any]) -> Any:
    if isinstance(value, dict):
        if len(value) == 1 and _REF in value:
            return lookup(value[_REF])
        return {k: _expand(v, lookup) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v, lookup) for v in value]
    return value
