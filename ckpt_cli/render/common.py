"""Small formatting helpers and the consoles every renderer writes to (names that are not valid UTF-8
are shown by :func:`formats.core.names.safe_text`, the one rule for them)."""
from __future__ import annotations

import sys

from formats.core.memo import remembered
from formats.core.shapes import shape_text as _shape_text
from formats.core.units import human_bytes as _human_bytes
from formats.core.names import safe_data, safe_text

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any


human_bytes = remembered(4096)(_human_bytes)  # listings repeat the same few sizes and shapes many times
"""``formats.core.units.human_bytes`` (``1536`` -> ``1.5 KiB``), cached."""


def shown(text: str) -> str:
    """Text from a checkpoint (a key) as a terminal shows it: undecodable bytes as ``\\xNN``
    (:func:`safe_text`), and control characters (escape, bell, newline...) escaped the same way, so a
    hostile key cannot move the cursor, recolour the terminal or break a table's rows (stats and the plots;
    the other tables, and ls's compact listing, print keys as :func:`safe_text` leaves them)."""
    text = safe_text(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else (f"\\x{ord(c):02x}" if ord(c) < 256 else f"\\u{ord(c):04x}")
                   for c in text)


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
    import json

    text = json.dumps(data, indent=2, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(safe_data(data), indent=2, ensure_ascii=False)
    return text


def print_json(data: Any) -> None:
    """Machine output: JSON on stdout, nothing else (undecodable key bytes escaped as ``\\xNN``)."""
    sys.stdout.write(json_text(data) + "\n")


def with_names(docs: list[dict[str, Any]], names: dict[str, tuple[str, str]]) -> list[dict[str, Any]]:
    """Tensor documents (each with a ``key``) with the ``name`` and ``role`` of ``--names`` added after the key."""
    out = []
    for doc in docs:
        name, role = names.get(doc["key"], (None, None))
        out.append({"key": doc["key"], "name": name, "role": role, **doc})
    return out
