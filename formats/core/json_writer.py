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

__all__ = ["dumps", "encode_basestring", "encode_basestring_ascii", "indented_encoder"]

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
    try:
        _indented(encode, indent, item_separator, key_separator, out)(obj, 0)
    except RecursionError:  # nesting deeper than this writer's recursion (two frames a level) goes: json's goes on
        import json

        return json.dumps(obj, indent=indent, ensure_ascii=ensure_ascii, separators=separators)
    return "".join(out)


def indented_encoder(indent: int | str, ensure_ascii: bool = True) -> Callable[[Any, int], str]:
    """A function ``(obj, level) -> text``: ``dumps(obj, indent=indent, ensure_ascii=ensure_ascii)`` as it reads
    nested ``level`` containers deep in a larger document (each line after its first indented ``level`` times
    more). Made once for the parts of a document written a part at a time: each :func:`dumps` makes its encoder's
    functions anew, a reference cycle (left to the collector, which a command may hold off)."""
    if not isinstance(indent, str):
        indent = " " * indent
    out: list[str] = []
    strings = encode_basestring_ascii if ensure_ascii else encode_basestring
    value = _indented(strings, indent, ",", ": ", out)

    def encode(obj: Any, level: int) -> str:
        nonlocal value
        try:
            value(obj, level)
            return "".join(out)
        except BaseException as e:  # a value refused: its containers may still be marked open; a fresh encoder next
            value = _indented(strings, indent, ",", ": ", out)
            if not isinstance(e, RecursionError):
                raise
        finally:
            out.clear()
        import json  # nesting deeper than this writer's recursion (two frames a level) goes: json's goes on (dumps)

        return json.dumps(obj, indent=indent, ensure_ascii=ensure_ascii).replace("\n", "\n" + indent * level)

    return encode


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


def _indented(encode: Callable[[str], str], indent: str, item_separator: str, key_separator: str,
              out: list[str]) -> Callable[[Any, int], None]:
    """json's Python encoder (``json.encoder._make_iterencode``) for indented output, appending to ``out``."""
    markers: set[int] = set()
    write = out.append
    float_repr, int_repr = _float, int.__repr__

    def scalar(value: Any) -> str | None:
        if isinstance(value, str):
            return encode(value)
        if value is None:
            return "null"
        if value is True:
            return "true"
        if value is False:
            return "false"
        if isinstance(value, int):
            return int_repr(value)
        if isinstance(value, float):
            return float_repr(value)
        return None

    def enter(obj: Any, brackets: str, level: int) -> str | None:
        """Open a container one ``level`` in (its opening bracket and first line break written) and give its
        item separator; an empty one is written whole (``[]``, ``{}``): None."""
        if not obj:
            write(brackets)
            return None
        if id(obj) in markers:
            raise ValueError("Circular reference detected")
        markers.add(id(obj))
        newline = "\n" + indent * level
        write(brackets[0] + newline)
        return item_separator + newline

    def sequence(items: list[Any] | tuple[Any, ...], level: int) -> None:
        level += 1
        separator = enter(items, "[]", level)
        if separator is None:
            return
        first = True
        for item in items:
            if first:
                first = False
            else:
                write(separator)
            value(item, level)
        write("\n" + indent * (level - 1) + "]")
        markers.discard(id(items))

    def mapping(pairs: dict[Any, Any], level: int) -> None:
        level += 1
        separator = enter(pairs, "{}", level)
        if separator is None:
            return
        first = True
        for key, item in pairs.items():
            if isinstance(key, str):
                pass
            elif isinstance(key, float):
                key = float_repr(key)
            elif key is True:
                key = "true"
            elif key is False:
                key = "false"
            elif key is None:
                key = "null"
            elif isinstance(key, int):
                key = int_repr(key)
            else:
                raise TypeError(f"keys must be str, int, float, bool or None, not {key.__class__.__name__}")
            if first:
                first = False
            else:
                write(separator)
            write(encode(key) + key_separator)
            value(item, level)
        write("\n" + indent * (level - 1) + "}")
        markers.discard(id(pairs))

    def value(obj: Any, level: int) -> None:
        text = scalar(obj)
        if text is not None:
            write(text)
        elif isinstance(obj, (list, tuple)):
            sequence(obj, level)
        elif isinstance(obj, dict):
            mapping(obj, level)
        else:
            value(_default(obj), level)  # _default raises (no object of such a type can be among the containers open)

    return value
