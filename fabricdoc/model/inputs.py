"""The one boundary for untrusted input files: bounded reads, strict UTF-8, safe YAML and JSON.

Every file fabricdoc reads (fabric files, tool outputs, records, reports,
rules, host lists, logs) comes through here, so a bad file always gives one
error naming the file and the line: too big, not UTF-8, not JSON/YAML,
nested too deeply, a YAML alias (the "billion laughs" expansion), or a
non-finite number. Nothing here guesses: undecodable bytes are refused, not
replaced.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import fields, replace
from pathlib import Path
from typing import Any, TypeVar

from fabricdoc.errors import ConfigError, ParseError

MAX_INPUT_BYTES = int(os.environ.get("FABRICDOC_MAX_INPUT_BYTES", str(1 << 30)))
MAX_DEPTH = 64
T = TypeVar("T")
_PLAIN = {str, int, float, bool, type(None)}


def decode(data: bytes, source: str) -> str:
    """Bytes as UTF-8 text; invalid bytes are a ParseError naming the line and column."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        bad = data[exc.start : exc.start + 1].hex()
        raise ParseError(source, line, "", f"not valid UTF-8 (byte 0x{bad} at column {col})") from None


def read_bytes(path: str | os.PathLike[str], what: str = "input", max_bytes: int | None = None) -> bytes:
    """The file's bytes, refusing a file larger than ``max_bytes`` (default :data:`MAX_INPUT_BYTES`)."""
    limit = MAX_INPUT_BYTES if max_bytes is None else max_bytes
    p = Path(path)
    try:
        with p.open("rb") as fh:
            data = fh.read(limit + 1)
    except IsADirectoryError:
        raise ConfigError(f"{p}: cannot read {what}: it is a directory") from None
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read {what}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise ConfigError(f"{p}: {what} is larger than {limit:,} bytes (FABRICDOC_MAX_INPUT_BYTES)")
    return data


def read_text(path: str | os.PathLike[str], what: str = "input", max_bytes: int | None = None) -> str:
    """The file as UTF-8 text, through the size bound; one error naming file and line otherwise."""
    return decode(read_bytes(path, what, max_bytes), str(path))


_SIZE = re.compile(r"\s*(\d{1,15})\s*([KMG]?)i?B?\s*", re.IGNORECASE)
_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(text: str) -> int:
    """A message size as people write it: ``256M`` -> 268435456 (K, M, G are powers of 1024; a plain
    number is bytes; at most 15 digits). Anything else is a ConfigError saying what was expected.

    >>> parse_size("16MiB"), parse_size("4096")
    (16777216, 4096)
    """
    m = _SIZE.fullmatch(text)
    if not m:
        raise ConfigError(f"message size {text!r}: expected bytes, or a number with K, M or G"[:200])
    return int(m.group(1)) * _SIZE_UNITS[m.group(2).upper()]


# A 64-bit register holds 20 decimal digits: no number a tool or file prints for fabricdoc is longer.
U64_MAX = (1 << 64) - 1
I64_MAX = (1 << 63) - 1  # what SQLite (the history store) and most JSON consumers hold
_INT = re.compile(r"\s*([+-]?)(0[xX][0-9a-fA-F]{1,16}|\d{1,20})\s*")
_FLOAT = re.compile(r"\s*[+-]?(?:\d{1,20}(?:\.\d{0,20})?|\.\d{1,20})(?:[eE][+-]?\d{1,3})?\s*")


class BadNumber(ValueError):
    """A number the bounded readers refuse: too long, not a number, or out of its field's range."""


def read_int(text: str, what: str, lo: int = 0, hi: int = U64_MAX) -> int:
    """A whole number (decimal, or ``0x`` hex) as a tool or file prints it, within ``[lo, hi]``; at most
    20 digits, so no input reaches ``int()`` unbounded. :class:`BadNumber` says what is wrong; the caller
    names the file and line.

    >>> read_int(" 42 ", "port"), read_int("0x1f", "lid")
    (42, 31)
    """
    m = _INT.fullmatch(text) if len(text) <= 64 else None
    if m is None:
        shown = text.strip()[:24] + ("..." if len(text.strip()) > 24 else "")
        raise BadNumber(f"{what} {shown!r} is not a whole number of at most 20 digits")
    digits = m.group(2)
    value = int(digits, 16) if digits[:2] in ("0x", "0X") else int(digits)
    value = -value if m.group(1) == "-" else value
    if not lo <= value <= hi:
        raise BadNumber(f"{what} {value} is outside {lo}..{hi}")
    return value


_LONG_NUMBER = re.compile(r"\d{41}")


def refuse_long_numbers(text: str, source: str, digits: int = 40) -> None:
    """A ParseError at the first line holding a run of more than ``digits`` digits: no field of a tool's
    output is that long (a 64-bit value has 20, a GUID 16 hex digits), and ``int()`` on thousands of
    digits is slow or refused. Linear in the text."""
    m = (_LONG_NUMBER if digits == 40 else re.compile(rf"\d{{{digits + 1}}}")).search(text)
    if m is not None:
        start = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.start())
        line = text[start : end if end >= 0 else len(text)]
        raise ParseError(source, text.count("\n", 0, m.start()) + 1, line[:120],
                         f"a number longer than {digits} digits: no field of this output is")


def read_float(text: str, what: str, lo: float = 0.0, hi: float = 1e18) -> float:
    """A finite decimal number within ``[lo, hi]`` (at most 20 digits each side of the point, a 3-digit
    exponent); :class:`BadNumber` otherwise."""
    if len(text) > 80 or not _FLOAT.fullmatch(text):
        shown = text.strip()[:24] + ("..." if len(text.strip()) > 24 else "")
        raise BadNumber(f"{what} {shown!r} is not a number")
    value = float(text)
    if not (lo <= value <= hi):  # also refuses an exponent that overflowed to inf
        raise BadNumber(f"{what} {value:g} is outside {lo:g}..{hi:g}")
    return value


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-finite number {name}")


def check_depth(value: Any, source: str, limit: int = MAX_DEPTH) -> Any:
    """Refuse data nested deeper than ``limit`` (lists and mappings), without recursion."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                raise ParseError(source, 0, "", f"nested more than {limit} levels deep")
            children = item.values() if isinstance(item, dict) else item
            if set(map(type, children)) <= _PLAIN:
                continue  # only plain values (a report's long columns): nothing deeper, checked at C speed
            stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return value


def loads_json(text: str, source: str) -> Any:
    """Strict JSON: no NaN or Infinity, bounded nesting, big integers refused with the line."""
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        line = text.splitlines()[exc.lineno - 1] if exc.lineno <= len(text.splitlines()) else ""
        raise ParseError(source, exc.lineno, line, f"not valid JSON: {exc.msg}") from None
    except RecursionError:
        raise ParseError(source, 0, "", f"nested more than {MAX_DEPTH} levels deep") from None
    except ValueError as exc:  # a non-finite constant, or an integer beyond Python's digit limit
        raise ParseError(source, 0, "", f"not valid JSON: {exc}") from None
    return check_depth(value, source)


def json_values(text: str, source: str, invalid: str = "invalid JSON") -> Iterator[tuple[int, int, Any]]:
    """``(line, offset, value)`` of every JSON value in ``text`` (one, several concatenated, or one per line),
    as strictly as :func:`loads_json`; a value that cannot be read is a ParseError whose reason starts
    with ``invalid``."""
    decoder = json.JSONDecoder(parse_constant=_reject_constant)
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            return
        no, start = text.count("\n", 0, pos) + 1, pos
        try:
            value, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            lines = text.splitlines()
            line = lines[exc.lineno - 1] if 0 < exc.lineno <= len(lines) else ""
            raise ParseError(source, exc.lineno, line[:120], f"{invalid}: {exc.msg}") from None
        except RecursionError:
            raise ParseError(source, no, "", "nested too deeply") from None
        except ValueError as exc:  # a non-finite constant, or an integer beyond Python's digit limit
            raise ParseError(source, no, "", f"{invalid}: {exc}") from None
        yield no, start, check_depth(value, source)


def yaml_loader() -> Any:
    """A SafeLoader class that refuses aliases and deep nesting (a YAML bomb is a ConfigError)."""
    import yaml

    class _Loader(yaml.SafeLoader):
        depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                raise yaml.composer.ComposerError(
                    None, None, "aliases (*name) are not allowed in fabricdoc files", event.start_mark)
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise yaml.composer.ComposerError(
                    None, None, f"nested more than {MAX_DEPTH} levels deep", self.peek_event().start_mark)
            try:
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

    return _Loader


@contextmanager
def _yaml_errors(source: str) -> Iterator[None]:
    """A YAML error as one ConfigError naming ``source`` and its line; nesting past MAX_DEPTH too."""
    import yaml

    try:
        yield
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{source}:{mark.line + 1}" if mark else source
        raise ConfigError(f"{where}: invalid YAML: {getattr(exc, 'problem', None) or exc}") from None
    except (RecursionError, ValueError) as exc:
        if isinstance(exc, RecursionError):
            raise ConfigError(f"{source}: nested more than {MAX_DEPTH} levels deep") from None
        raise ConfigError(f"{source}: invalid value: {exc}") from None


def compose_yaml(text: str, source: str) -> Any:
    """The YAML node tree of ``text`` (line numbers kept), or None for an empty document."""
    import yaml

    with _yaml_errors(source):
        return yaml.compose(text, Loader=yaml_loader())


def construct_scalar(node: Any, source: str) -> Any:
    """One YAML scalar node as a Python value; an out-of-range number is a ConfigError with the line."""
    import yaml

    try:
        return yaml.SafeLoader("").construct_object(node)
    except (yaml.YAMLError, ValueError) as exc:
        raise ConfigError(f"{source}:{node.start_mark.line + 1}: invalid value: {exc}") from None


def loads_toml(text: str, source: str) -> dict[str, Any]:
    """TOML text as a dict; a syntax error or an integer too long to convert is a ConfigError."""
    import tomllib

    try:
        return check_depth(tomllib.loads(text), source)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from None
    except (ValueError, RecursionError) as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from None


def settings_from(cls: type[T], data: dict[str, Any], where: str, base: T | None = None,
                  lists: tuple[str, ...] = ()) -> T:
    """A settings dataclass from plain keys (a TOML table, CLI overrides): unknown keys and non-list
    values of ``lists`` are ConfigErrors naming ``where``; the result is ``base`` with the keys
    replaced, then ``.validate(where)``-ed."""
    allowed = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})")
    values = dict(data)
    for key in lists:
        if key in values:
            if not isinstance(values[key], list | tuple):
                raise ConfigError(f"{where}: key {key!r} must be a list")
            values[key] = tuple(values[key])
    return replace(base or cls(), **values).validate(where)  # type: ignore[attr-defined]


def load_yaml(text: str, source: str) -> Any:
    """Plain values from YAML text through the safe loader (no aliases, bounded nesting)."""
    import yaml

    with _yaml_errors(source):
        return yaml.load(text, Loader=yaml_loader())  # noqa: S506 - a SafeLoader subclass
