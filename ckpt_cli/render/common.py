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
    """Machine output: JSON on stdout, nothing else (undecodable key bytes escaped as ``\\xNN``)."""
    sys.stdout.write(json_text(data) + "\n")


def with_names(docs: list[dict[str, Any]], names: dict[str, tuple[str, str]]) -> list[dict[str, Any]]:
    """Tensor documents (each with a ``key``) with the ``name`` and ``role`` of ``--names`` added after the key."""
    out = []
    for doc in docs:
        name, role = names.get(doc["key"], (None, None))
        out.append({"key": doc["key"], "name": name, "role": role, **doc})
    return out
