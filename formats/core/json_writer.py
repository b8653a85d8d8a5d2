"""JSON text exactly as :func:`json.dumps` writes it, without importing :mod:`json`.

Importing :mod:`json` imports :mod:`re` and :mod:`enum` for its decoder: about 8 ms of CPU, half as much
again as Python's own start-up, on every command that writes JSON (``ckpt ls --json``, a safetensors
header). Writing needs only the C half, ``_json``: :func:`dumps` without ``indent`` is what
``json.dumps`` runs (``_json.make_encoder``, the same string escaping), and with ``indent`` the same rules
as json's own Python encoder (json has no C encoder for indented output either): keys and values of the
types json writes (``str``, ``int``, ``float``, ``bool``, ``None``, ``list``, ``tuple``, ``dict``; int and
float subclasses as their numbers), ``NaN``/``Infinity`` for the non-finite floats, the same ``TypeError``
for anything else and ``ValueError`` for a container that contains itself. Reading JSON stays with
:mod:`json` (:mod:`formats.core.bounded_json`). Tests compare the two over many values.
"""
from __future__ import annotations

from _json import encode_basestring, encode_basestring_ascii, make_encoder

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["dumps", "encode_basestring", "encode_basestring_ascii"]

_INFINITY = float("inf")


def dumps(obj: Any, *, indent: int | str | None = None, ensure_ascii: bool = True,
          separators: tuple[str, str] | None = None) -> str:
    """``json.dumps(obj, indent=indent, ensure_ascii=ensure_ascii, separators=separators)``."""
    if separators is not None:
        item_separator, key_separator = separators
    else:
        item_separator, key_separator = (", " if indent is None else ","), ": "
    encode = encode_basestring_ascii if ensure_ascii else encode_basestring
    if isinstance(obj, str):
        return encode(obj)
    if indent is None:
        try:
            iterencode = make_encoder({}, _default, encode, None, key_separator, item_separator, False, False, True)
        except TypeError:  # pragma: no cover - an interpreter whose C encoder takes other arguments
            import json

            return json.dumps(obj, ensure_ascii=ensure_ascii, separators=(item_separator, key_separator))
        return "".join(iterencode(obj, 0))
    if not isinstance(indent, str):
        indent = " " * indent
    out: list[str] = []
    _Indented(encode, indent, item_separator, key_separator, out.append).value(obj, 0)
    return "".join(out)


def _default(obj: Any) -> Any:
    """What ``json.JSONEncoder.default`` does with a value of a type json does not write."""
    raise TypeError(f"Object of type {obj.__class__.__name__} is not JSON serializable")


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value == _INFINITY:
        return "Infinity"
    if value == -_INFINITY:
        return "-Infinity"
    return float.__repr__(value)


def _scalar(value: Any, encode: Callable[[str], str]) -> str | None:
    """A string, number, bool or None as JSON; None for anything else."""
    if isinstance(value, str):
        return encode(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return _float(value)
    return None


class _Indented:
    """json's Python encoder (``json.encoder._make_iterencode``) for indented output, writing to ``write``."""

    __slots__ = ("encode", "indent", "item_separator", "key_separator", "write", "markers")

    def __init__(self, encode: Callable[[str], str], indent: str, item_separator: str, key_separator: str,
                 write: Callable[[str], Any]) -> None:
        self.encode, self.indent, self.write = encode, indent, write
        self.item_separator, self.key_separator = item_separator, key_separator
        self.markers: set[int] = set()

    def value(self, obj: Any, level: int) -> None:
        text = _scalar(obj, self.encode)
        if text is not None:
            self.write(text)
        elif isinstance(obj, (list, tuple)):
            self.sequence(obj, level)
        elif isinstance(obj, dict):
            self.mapping(obj, level)
        else:
            self.enter(obj)
            self.value(_default(obj), level)
            self.markers.discard(id(obj))  # pragma: no cover - _default always raises

    def enter(self, obj: Any) -> None:
        if id(obj) in self.markers:
            raise ValueError("Circular reference detected")
        self.markers.add(id(obj))

    def sequence(self, items: list[Any] | tuple[Any, ...], level: int) -> None:
        if not items:
            self.write("[]")
            return
        self.enter(items)
        level += 1
        newline = "\n" + self.indent * level
        separator = self.item_separator + newline
        write = self.write
        write("[" + newline)
        for i, item in enumerate(items):
            if i:
                write(separator)
            self.value(item, level)
        write("\n" + self.indent * (level - 1) + "]")
        self.markers.discard(id(items))

    def mapping(self, mapping: dict[Any, Any], level: int) -> None:
        if not mapping:
            self.write("{}")
            return
        self.enter(mapping)
        level += 1
        newline = "\n" + self.indent * level
        separator = self.item_separator + newline
        write, encode = self.write, self.encode
        write("{" + newline)
        first = True
        for key, item in mapping.items():
            if isinstance(key, str):
                pass
            elif isinstance(key, float):
                key = _float(key)
            elif key is True:
                key = "true"
            elif key is False:
                key = "false"
            elif key is None:
                key = "null"
            elif isinstance(key, int):
                key = int.__repr__(key)
            else:
                raise TypeError(f"keys must be str, int, float, bool or None, not {key.__class__.__name__}")
            if not first:
                write(separator)
            first = False
            write(encode(key) + self.key_separator)
            self.value(item, level)
        write("\n" + self.indent * (level - 1) + "}")
        self.markers.discard(id(mapping))
