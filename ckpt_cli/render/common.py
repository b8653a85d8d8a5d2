"""Small formatting helpers and the consoles every renderer writes to (names are shown by :func:`shown`:
:func:`formats.core.names.terminal_text`, the one rule for them)."""
from __future__ import annotations

import sys

from formats.core.memo import remembered
from formats.core.shapes import shape_text as _shape_text
from formats.core.units import human_bytes as _human_bytes
from formats.core.names import safe_data, terminal_text

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


human_bytes = remembered(4096)(_human_bytes)  # listings repeat the same few sizes and shapes many times
"""``formats.core.units.human_bytes`` (``1536`` -> ``1.5 KiB``), cached."""


shown = terminal_text
"""Text from a checkpoint (a key, a path, a message naming one) as every text renderer prints it, on a
terminal or a pipe: :func:`formats.core.names.terminal_text` (undecodable bytes as ``\\xNN``, control and
other unprintable characters escaped the same way), so a hostile key cannot move the cursor, recolour the
terminal or forge a table's rows. The table layer (:mod:`.table`) applies it to every cell and line; JSON
keeps the exact string."""


shape_text = remembered(4096)(_shape_text)
"""``formats.core.shapes.shape_text``, cached."""


def use_color() -> bool:
    """Colour unless --no-color, NO_COLOR (the running command's :class:`~ckpt_cli.environment.Environment`)."""
    from ..environment import current

    return current().color


def console(stderr: bool = False) -> Any:
    """A rich Console on stdout (or stderr) honouring the colour settings."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr, no_color=not use_color(), highlight=False, soft_wrap=False, file=stream)


def json_text(data: Any) -> str:
    """``data`` as the JSON ckpt prints: indented by 2, non-ASCII kept, undecodable key bytes as ``\\xNN``."""
    from formats.core.json_writer import dumps  # json.dumps without importing json (start-up)

    text = dumps(data, indent=2, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = dumps(safe_data(data), indent=2, ensure_ascii=False)
    return text


def print_json(data: Any) -> None:
    """Machine output: JSON on stdout, nothing else (undecodable key bytes escaped as ``\\xNN``): the text of
    :func:`json_text`, written a part at a time (:func:`write_json`)."""
    write_json(data)
    sys.stdout.write("\n")


def part_encoder() -> Callable[[Any, int], str]:
    """A function ``(value, level) -> text``: :func:`json_text` of ``value`` as it reads nested ``level``
    containers deep in a document (each line after its first indented two spaces a level), by one encoder for
    all the parts of a document (:func:`formats.core.json_writer.indented_encoder`)."""
    from formats.core.json_writer import indented_encoder

    encoded = indented_encoder(2, ensure_ascii=False)

    def text(value: Any, level: int) -> str:
        out = encoded(value, level)
        if not out.isascii():
            try:
                out.encode("utf-8")
            except UnicodeEncodeError:  # undecodable key bytes, as json_text writes them
                out = encoded(safe_data(value), level)
        return out

    return text


STREAMED = 64
"""A container of more items than this, or one at the top of a document or just below it, is written an item
at a time by :func:`write_json`; any other as one part."""


def write_json(data: Any, level: int = 0) -> None:
    """Write :func:`json_text` of ``data`` on stdout, nested ``level`` containers deep (each line after the first
    indented two spaces a level; no newline after it), a part at a time: the document's top containers, and any
    of more than :data:`STREAMED` items, an item at a time; the rest (a tensor's row...) each one part. The text
    of a document of 10^5 rows is never held whole, nor its pieces all at once (json's indented encoder keeps a
    string a value and joins them)."""
    write, text = sys.stdout.write, part_encoder()
    parts: list[str] = []
    stack: list[list[Any]] = []  # open containers: [their items, closing bracket, level, depth, none written yet]

    def put(value: Any, level: int, depth: int) -> None:
        if not value or not isinstance(value, (list, tuple, dict)) or (depth > 1 and len(value) <= STREAMED) or \
                isinstance(value, dict) and not all(type(k) is str for k in value):  # (other keys: json's conversions)
            parts.append(text(value, level))  # (a row: one part, its keys not looked at twice)
            return
        if isinstance(value, dict):
            parts.append("{")
            stack.append([iter(value.items()), "}", level, depth, True])
        else:
            parts.append("[")
            stack.append([iter(value), "]", level, depth, True])

    put(data, level, 0)
    while stack:
        frame = stack[-1]
        items, closing, at, depth, first = frame
        item = next(items, parts)  # (parts: none is an item)
        if item is parts:
            stack.pop()
            parts.append(f"\n{'  ' * at}{closing}")
            continue
        parts.append(("\n" if first else ",\n") + "  " * (at + 1))
        frame[4] = False
        if closing == "}":
            key, item = item
            parts.append(text(key, 0) + ": ")
        put(item, at + 1, depth + 1)
        if len(parts) >= 4096:
            write("".join(parts))
            parts.clear()
    write("".join(parts))


def with_names(docs: list[dict[str, Any]], names: dict[str, tuple[str, str]]) -> list[dict[str, Any]]:
    """Tensor documents (each with a ``key``) with the ``name`` and ``role`` of ``--names`` added after the key."""
    out = []
    for doc in docs:
        name, role = names.get(doc["key"], (None, None))
        out.append({"key": doc["key"], "name": name, "role": role, **doc})
    return out
