"""A game's prompt as a choice: its named variants, or a template file of one's own.

A prompt has parts (the rules, the state, a reminder...), each a ``str.format`` text whose
placeholders the game fills. A game declares its parts (``Part``: the placeholders each may
use and those it must, so that no variant drops a fact) and named variants (``Template``:
paraphrases that keep every fact). Its ``prompt`` parameter (``Templates.parameter``) then
takes a variant's name or ``file:PATH``, so wording is a sweep axis like any other:
``--set prompt=study,terse,file:mine.toml``.

A template file is TOML: a part per key (a part named ``history.head`` is ``head`` in a
``[history]`` table), each a text; ``base = "NAME"`` names the variant whose texts fill the
parts the file leaves out (default: the game's first). ``docs/prompt-variants.md`` shows one.

Why a file's hash is of its bytes (and of its base's hash), not of its parsed texts: the
hash goes into every call's record key, so any edit of the file, or of the variant it builds
on, makes its calls new ones; a replay never answers an edited prompt with stale answers.
A declared variant keeps the hash its game gives it, so recordings made before variants
existed still replay.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from string import Formatter
from typing import Any

from llm_mesa.boundary import OutsideDataError, loads_toml, read_bounded
from llm_mesa.parameters import Parameter, ParameterError

#: how a parameter value names a template file
FILE_PREFIX = "file:"
#: the file's key that names the variant its missing parts come from
BASE_KEY = "base"
#: the most bytes a template file may have (a prompt of a few KB; this leaves room)
MAX_TEMPLATE_BYTES = 256 * 1024
DOCS = "see docs/prompt-variants.md"


class TemplateError(ParameterError):
    """A prompt value or template file that cannot be used; one line that names the fix (exit status 2)."""


@dataclass(frozen=True)
class Part:
    """One text of a game's prompt.

    ``fields``: the placeholders the game fills in it; ``required``: those it must use (each
    a name, or names joined by ``|`` of which one must appear), the facts it carries;
    ``literal``: a text the game uses as written, never filled (its braces are plain text);
    ``examples``: values a check fills the part with (numbers, for format specs like ``:.2f``;
    any other field gets a word).
    """

    fields: tuple[str, ...] = ()
    required: tuple[str, ...] = ()
    literal: bool = False
    help: str = ""
    examples: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Template:
    """A prompt's texts by part, and the hash that goes into every call's record key."""

    name: str
    texts: Mapping[str, str]
    hash: str
    #: a file's: the variant its missing parts came from, its path, its text and the SHA-256 of its bytes
    base: str | None = None
    path: str | None = None
    source: str | None = None
    sha256: str | None = None

    @property
    def is_file(self) -> bool:
        return self.path is not None

    def record(self) -> dict[str, Any]:
        """What a manifest keeps of a template file: enough to check it and to write it back."""
        return {"path": self.path, "sha256": self.sha256, "template_hash": self.hash, "base": self.base,
                "content": self.source}


def texts_hash(texts: Mapping[str, str]) -> str:
    """A hash of a template's texts (for a declared variant with no hash of its own)."""
    return hashlib.sha256(json.dumps(dict(texts), sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]


def placeholders(text: str, where: str) -> list[str]:
    """The placeholder names of a ``str.format`` text, refusing what a game could not fill safely:
    positional ``{}``, attributes or indexes (``{a.b}``, ``{a[0]}``), conversions and nested specs."""
    try:
        parsed = list(Formatter().parse(text))
    except ValueError as exc:
        raise TemplateError(f"{where}: {exc}; write {{{{ and }}}} for a brace meant as text; {DOCS}") from None
    names = []
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if not name.isidentifier():
            raise TemplateError(f"{where}: {{{name}}} is not a placeholder name; use a name alone, e.g. {{round}} "
                                f"(write {{{{ and }}}} for a brace meant as text)")
        if conversion or (spec and "{" in spec):
            raise TemplateError(f"{where}: {{{name}{'!' + conversion if conversion else ''}:{spec}}} is too "
                                f"elaborate; write {{{name}}} or a plain format such as {{{name}:.2f}}")
        names.append(name)
    return names


def pattern(text: str, groups: Mapping[str, str], default: str = ".*?") -> str:
    """A template text as a regular expression that reads its placeholders back: each one a named
    group (``groups[name]``, else ``default``; a repeat must say the same), the rest as written. A
    stand-in server reads a game's prompts so, whichever of its variants wrote them."""
    out, seen = [], set()
    for literal, name, _, _ in Formatter().parse(text):
        out.append(re.escape(literal))
        if name is not None:
            out.append(f"(?P={name})" if name in seen else f"(?P<{name}>{groups.get(name, default)})")
            seen.add(name)
    return "".join(out)


def check_part(name: str, part: Part, text: str, where: str) -> None:
    """A part's text uses only the placeholders the game fills, every one it must, and fills cleanly."""
    if part.literal:
        return
    spot = f"{where}: part {name}"
    used = placeholders(text, spot)
    unknown = [u for u in dict.fromkeys(used) if u not in part.fields]
    if unknown:
        offered = ", ".join(f"{{{f}}}" for f in part.fields) or "none (it is plain text)"
        raise TemplateError(f"{spot} uses {{{unknown[0]}}}, which the game does not fill there; "
                            f"use one of: {offered}")
    for need in part.required:
        options = need.split("|")
        if not set(options) & set(used):
            wanted = " or ".join(f"{{{o}}}" for o in options)
            raise TemplateError(f"{spot} lacks {wanted}: add it where the text should show it "
                                f"({part.help or 'a fact every variant carries'})")
    values = {f: part.examples.get(f, "x") for f in part.fields}
    try:
        text.format(**values)
    except (ValueError, TypeError) as exc:
        raise TemplateError(f"{spot} cannot be filled ({exc}); check the format after the colon, e.g. "
                            "{payoff:.2f} for a number") from None


def parse_template_file(data: bytes, path: Path, declared: Mapping[str, Template],
                        parts: Mapping[str, Part], value: str) -> Template:
    """A template file's bytes as a ``Template``: its parts checked, the rest from its base."""
    where = f"prompt file {path}"
    try:
        tree = loads_toml(data, path, "a prompt template (TOML)", fix=DOCS)
    except OutsideDataError as exc:
        raise TemplateError(str(exc)) from None
    base = tree.pop(BASE_KEY, next(iter(declared)))
    if not isinstance(base, str) or base not in declared:
        raise TemplateError(f"{where}: base = {base!r} is not a variant of this game; choose one of: "
                            f"{', '.join(declared)}")
    given = _flatten(tree, where, parts)
    if not given:
        raise TemplateError(f"{where} sets no part of the prompt; set at least one of: {', '.join(parts)} ({DOCS})")
    for name, text in given.items():
        check_part(name, parts[name], text, where)
    source = data.decode("utf-8")
    digest = hashlib.sha256(data).hexdigest()
    template_hash = hashlib.sha256(data + b"\x1e" + declared[base].hash.encode()).hexdigest()[:16]
    return Template(value, {**declared[base].texts, **given}, template_hash, base=base, path=str(path),
                    source=source, sha256=digest)


def _flatten(tree: Mapping[str, Any], where: str, parts: Mapping[str, Part], prefix: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in tree.items():
        name = prefix + key
        if isinstance(value, Mapping) and not prefix:
            out.update(_flatten(value, where, parts, name + "."))
            continue
        if name not in parts:
            raise TemplateError(f"{where}: unknown part {name!r}; this game's prompt has: {', '.join(parts)}")
        if not isinstance(value, str):
            raise TemplateError(f"{where}: part {name} must be a text (in quotes), not {type(value).__name__}")
        out[name] = value
    return out


def file_path(value: str) -> Path:
    """The path a ``file:PATH`` value names (relative to the working directory, like any path given)."""
    text = value[len(FILE_PREFIX):].strip()
    if not text:
        raise TemplateError(f"{value!r} names no file; write file:PATH, e.g. prompt=file:my-prompt.toml ({DOCS})")
    return Path(text).expanduser().absolute()


def read_template_file(value: Any, declared: Mapping[str, Template]) -> tuple[Path, bytes]:
    """The path and bytes of the file a ``file:PATH`` value names; any other value that is no declared
    variant's name is refused (one ``TemplateError`` line)."""
    if not isinstance(value, str):
        raise TemplateError(f"a prompt is a variant's name or file:PATH, not {type(value).__name__}")
    if not value.startswith(FILE_PREFIX):
        raise TemplateError(f"unknown prompt {value!r}; choose one of: {', '.join(declared)}, or file:PATH "
                            f"for a template of your own ({DOCS})")
    path = file_path(value)
    try:
        return path, read_bounded(path, "a prompt template", fix=DOCS, max_bytes=MAX_TEMPLATE_BYTES)
    except OutsideDataError as exc:
        if not path.exists():
            raise TemplateError(f"no prompt file {path}; give the path of a template file ({DOCS})") from None
        raise TemplateError(str(exc)) from None


def load_template(value: str, declared: Mapping[str, Template], parts: Mapping[str, Part]) -> Template:
    """The template a prompt value names: a declared variant, or ``file:PATH`` read and checked.

    Every error is one ``TemplateError`` line that names the fix: an unknown variant, a file
    that cannot be read or is not TOML, an unknown part, a placeholder the game does not fill
    or one a part must have.
    """
    if isinstance(value, str) and value in declared:
        return declared[value]
    path, data = read_template_file(value, declared)
    return parse_template_file(data, path, declared, parts, value)


class Templates:
    """A game's prompt templates: its parts, its declared variants (the first is the default),
    and the ``prompt`` parameter that chooses among them or names a file. ``check``: what the
    game asks of a file beyond its placeholders (raise ``TemplateError``).

    Files are read again each time they are loaded, and parsed once per content: an edit takes
    effect (under its own hash) at the next call, and an unchanged file costs a read.
    """

    __name__ = "template"

    def __init__(self, parts: Mapping[str, Part], declared: Mapping[str, Template],
                 check: Callable[[Template], None] | None = None) -> None:
        if not declared:
            raise ValueError("a game declares at least one prompt variant")
        for name, template in declared.items():
            missing = set(parts) - set(template.texts)
            if missing or set(template.texts) - set(parts):
                raise ValueError(f"variant {name!r} must give exactly the parts {sorted(parts)}")
            for part, text in template.texts.items():
                check_part(part, parts[part], text, f"variant {name}")
        self.parts, self.declared, self.check = dict(parts), dict(declared), check
        self._files: dict[tuple[str, str, bytes], Template] = {}

    @property
    def default(self) -> str:
        return next(iter(self.declared))

    @property
    def choices(self) -> tuple[str, ...]:
        """The declared variants' names (what the explorer offers)."""
        return tuple(self.declared)

    @property
    def metavar(self) -> str:
        return "{" + ",".join(self.declared) + "}|file:PATH"

    def load(self, value: str) -> Template:
        """The template a value names (``load_template``), a file parsed once per content and path."""
        if isinstance(value, str) and value in self.declared:
            return self.declared[value]
        path, data = read_template_file(value, self.declared)
        key = (value, str(path), hashlib.sha256(data).digest())
        template = self._files.get(key)
        if template is None:
            template = parse_template_file(data, path, self.declared, self.parts, value)
            if self.check is not None:
                self.check(template)  # what the game asks beyond placeholders (one TemplateError line)
            if len(self._files) >= 64:
                self._files.clear()
            self._files[key] = template
        return template

    def __call__(self, value: Any) -> str:
        """The parameter's type: the value, once it names a variant or a usable file."""
        self.load(value)
        return value

    def parameter(self, name: str = "prompt", help: str = "the wording of the prompt LLM agents get", **options: Any) -> Parameter:
        """The game's parameter that chooses a variant or names a file (``--NAME``, ``--set NAME=...``)."""
        listed = ", ".join(self.declared)
        return Parameter(name, self, self.default, f"{help}: {listed}, or file:PATH for a template of your own",
                         **options)

    def dump(self, name: str) -> str:
        """A declared variant as a template file: a start for one's own."""
        template = self.declared[name]
        top = [p for p in self.parts if "." not in p]
        tables: dict[str, list[str]] = {}
        for part in self.parts:
            if "." in part:
                table, _, key = part.partition(".")
                tables.setdefault(table, []).append(key)
        lines = [f"# The {name!r} variant's texts: edit any; a part left out is the base variant's ({DOCS}).",
                 f"{BASE_KEY} = {json.dumps(name)}", ""]
        lines += [f"{_key(p)} = {_toml_text(template.texts[p])}" for p in top]
        for table, keys in tables.items():
            lines += ["", f"[{_key(table)}]"] + [f"{_key(k)} = {_toml_text(template.texts[table + '.' + k])}"
                                                   for k in keys]
        return "\n".join(lines) + "\n"


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else json.dumps(key)


def _toml_text(text: str) -> str:
    """A text as TOML: a multi-line literal string where it can be one (as written), else a basic string."""
    plain = not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", text)
    if plain and "\n" in text and "'''" not in text and not text.endswith("'"):
        return "'''\n" + text + "'''"
    if plain and "\n" not in text and "'" not in text:
        return "'" + text + "'"
    return json.dumps(text, ensure_ascii=False)


def template_parameters(parameters: Any) -> list[str]:
    """The names of a game's parameters that choose a prompt template."""
    return [p.name for p in parameters if isinstance(p.kind, Templates)]


def template_files(parameters: Any, conditions: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every template file a grid's conditions name, by value: its path, hash and text (for a manifest)."""
    files: dict[str, dict[str, Any]] = {}
    for name in template_parameters(parameters):
        kind: Templates = parameters[name].kind
        for values in conditions.values():
            value = values.get(name)
            if isinstance(value, str) and value.startswith(FILE_PREFIX) and value not in files:
                files[value] = kind.load(value).record()
    return files


def check_template_files(before: Mapping[str, Any] | None, now: Mapping[str, Mapping[str, Any]]) -> None:
    """A resumed sweep plays the template files it started with: an edited one is refused, not mixed in."""
    for value, record in now.items():
        old = (before or {}).get(value)
        if old is not None and old.get("sha256") != record["sha256"]:
            raise TemplateError(f"prompt file {record['path']} changed since this sweep started; restore it (the "
                                f"manifest keeps its text under templates[{value!r}].content), or choose a new --out")


__all__ = ["FILE_PREFIX", "Part", "Template", "TemplateError", "Templates", "check_part", "check_template_files",
           "load_template", "pattern", "placeholders", "read_template_file", "template_files", "template_parameters", "texts_hash"]
