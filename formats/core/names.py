"""The one rule for names that are not valid UTF-8, wherever a name is printed, put in JSON or written.

Keys are ``str``. A key read from bytes that are not UTF-8 (a bundle or V1 key, an HDF5 name) keeps each
undecodable byte as a surrogate escape (U+DC80..U+DCFF, Python's ``surrogateescape``), so it round-trips.
A key read from JSON (a safetensors header, an npz provenance record) may also hold a lone surrogate that
stands for no byte at all (``"\\ud800"``). The rule:

* shown (tables, JSON, messages): an undecodable byte as ``\\xNN``, a lone surrogate as ``\\uXXXX``
  (:func:`safe_text`); on a terminal (every text renderer and message, TTY or pipe, never JSON), control
  and other unprintable characters too: ``\\x1b``, ``\\x07``, ``\\x9b``, ``\\u202e`` (:func:`terminal_text`),
  so a hostile name cannot move the cursor, recolour the terminal or forge a row;
* written where a format stores bytes (bundle keys, HDF5 names, file names): undecodable bytes as those
  bytes, a lone surrogate as the text ``\\uXXXX`` (:func:`writable_name`, :func:`name_bytes`);
* written where a format stores UTF-8 (proto strings: an object graph's names, and so the keys it
  names): as shown (:func:`safe_text`).
"""
from __future__ import annotations

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from re import Match
    from typing import Any

__all__ = ["all_utf8", "safe_text", "terminal_text", "all_printable", "safe_data", "map_data", "writable_name", "name_bytes", "quoted_text", "repeated", "unused_name"]

_SURROGATE = "[\ud800-\udfff]"
_BYTELESS = "[\ud800-\udc7f\udd00-\udfff]"  # surrogates that are no surrogate-escaped byte
# Patterns, compiled (and ``re`` imported) only for a name that is not valid UTF-8: start-up.


def _shown(match: Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def _unicode_escape(match: Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def all_utf8(texts: list[str]) -> bool:
    """Whether every one of ``texts`` is valid UTF-8 (each its own :func:`safe_text`)."""
    try:
        "".join(texts).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def safe_text(text: str) -> str:
    """``text`` as valid UTF-8: undecodable bytes kept as surrogate escapes shown as ``\\xNN``, any other
    lone surrogate as ``\\uXXXX``; everything else unchanged."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        import re

        return re.sub(_SURROGATE, _shown, text)


def terminal_text(text: str) -> str:
    """``text`` as every renderer prints it on a terminal or a pipe: :func:`safe_text`, then each character
    :meth:`str.isprintable` refuses (C0 and C1 controls such as ESC, BEL, CR, newline, DEL, CSI; format
    characters such as U+202E) as ``\\xNN`` (below 256), ``\\uXXXX`` or ``\\UXXXXXXXX``. Printable text is returned as it
    is (JSON keeps the exact string: this is for text output only)."""
    if text.isascii() and text.isprintable():  # the common case, once per cell of a table: nothing to escape
        return text
    text = safe_text(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _escaped(ord(c)) for c in text)


def all_printable(texts: Iterable[str]) -> bool:
    """Whether :func:`terminal_text` leaves every one of ``texts`` as it is: one check of them all joined (a
    column of a table, a block of keys), so a renderer escapes cell by cell only when some cell needs it. (A
    surrogate, escaped or lone, is not printable either: :func:`safe_text` has nothing to do then.)"""
    return "".join(texts).isprintable()


def _escaped(code: int) -> str:
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def safe_data(data: Any) -> Any:
    """``data`` (JSON-ready: dicts, lists, tuples, strings, numbers) with every string, keys included, made
    :func:`safe_text`; tuples become lists."""
    return map_data(data, lambda leaf: safe_text(leaf) if isinstance(leaf, str) else leaf, safe_text)


def map_data(data: Any, leaf: Callable[[Any], Any], key: Callable[[str], str] | None = None) -> Any:
    """A copy of JSON-ready ``data`` (dicts, lists, tuples) with ``leaf`` applied to every other value and
    ``key`` (if given) to every dict key; tuples become lists. Iterative: any nesting depth (a report's tree
    of a key with thousands of ``/``) is walked without recursion."""
    if not isinstance(data, (dict, list, tuple)):
        return leaf(data)
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(data, root, 0)]  # (container, its copy's parent, slot in the parent)
    while stack:
        node, parent, slot = stack.pop()
        if isinstance(node, dict):
            copy: Any = {}
            parent[slot] = copy
            for k, v in node.items():
                k = key(k) if key is not None else k
                if isinstance(v, (dict, list, tuple)):
                    copy[k] = None
                    stack.append((v, copy, k))
                else:
                    copy[k] = leaf(v)
        else:
            copy = [None] * len(node)
            parent[slot] = copy
            for i, v in enumerate(node):
                if isinstance(v, (dict, list, tuple)):
                    stack.append((v, copy, i))
                else:
                    copy[i] = leaf(v)
    return root[0]


def writable_name(name: str) -> str:
    """``name`` with each lone surrogate that stands for no byte replaced by the text ``\\uXXXX``;
    surrogate-escaped bytes are kept, so ``os.fsencode`` and :func:`name_bytes` give them back."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        import re

        return re.sub(_BYTELESS, _unicode_escape, name)


def name_bytes(name: str | bytes) -> bytes:
    """The bytes a writer stores for ``name``: its UTF-8, undecodable bytes as themselves, a lone surrogate
    as the text ``\\uXXXX`` (bytes are returned as they are)."""
    if isinstance(name, (bytes, bytearray, memoryview)):
        return bytes(name)
    return writable_name(name).encode("utf-8", "surrogateescape")


def is_text(value: Any) -> bool:
    """Whether ``value`` is text: a ``str``, or bytes that decode as UTF-8."""
    if not isinstance(value, (bytes, bytearray, memoryview)):
        return True
    try:
        bytes(value).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def quoted_text(value: Any, limit: int = 200, as_bytes: bool = False) -> str:
    """A string element as a quoted literal: ``'text'`` when it is UTF-8 (and not ``as_bytes``), else ``b'...'``
    (a ``str`` holding undecodable bytes as surrogate escapes, as keys do, shows those bytes); escapes make
    control characters inert; cut at ``limit``."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            try:
                value = value.encode("utf-8", "surrogateescape")
            except UnicodeEncodeError:  # a surrogate that stands for no byte: shown escaped as text
                pass
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        shown = repr(data) if as_bytes or not is_text(data) else repr(data.decode("utf-8"))
    else:
        shown = repr(str(value))
    return shown if len(shown) <= limit else shown[:limit] + f"... ({len(shown)} chars)"


def repeated(values: Iterable[Any]) -> set[Any]:
    """The values that come more than once among ``values`` (names several tensors share; or their hashes, for a
    caller that holds no name), found in one pass with each value held once."""
    seen: set[Any] = set()
    twice: set[Any] = set()
    for value in values:
        if value in seen:
            twice.add(value)
        else:
            seen.add(value)
    return twice


def unused_name(base: str, taken: set[str]) -> str:
    """``base``, or ``base_1``, ``base_2``, ... : the first not in ``taken``, which is added to it."""
    name, n = base, 0
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    taken.add(name)
    return name
