"""JSON read from checkpoint files, bounded in size and nesting depth.

A hostile file cannot exhaust memory (the size is checked before anything is decoded) nor the
stack (the nesting depth is measured in C-speed passes before :func:`json.loads` runs, so code
that walks the result recursively is safe too).

:mod:`json` and :mod:`re` (about 8 ms of start-up together) are imported when JSON is read: the writers
that import this module for :data:`MAX_DEPTH` or their reader's sake (a safetensors header's dtypes) do not.
"""
from __future__ import annotations

from formats.core.errors import CorruptCheckpointError

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any
    from collections.abc import Callable

__all__ = ["load_json", "nesting_depth", "MAX_DEPTH"]

MAX_DEPTH = 64
"""Deepest nesting accepted by default (a Keras model config with nested models stays far below)."""
_STRINGS = '"[^"]*"'
"""A JSON string once its escaped backslashes and quotes are taken out (see :func:`nesting_depth`)."""
_BLOCK = 1 << 20


_SMALL = 1 << 20
"""A skeleton up to this many bytes is measured without numpy (whose import is most of ``ckpt ls`` of a small
safetensors file's start-up): its brackets kept by ``bytes.translate`` and summed by ``itertools.accumulate``."""
_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[]{}")))
_STEPS = {0x5B: 1, 0x7B: 1, 0x5D: -1, 0x7D: -1}


def nesting_depth(text: str, stop: int | None = None) -> int:
    """The deepest ``[``/``{`` nesting of JSON ``text`` (brackets inside strings do not count);
    stops counting once ``stop`` is exceeded (a large text, a block at a time).

    In JSON a backslash is met only in a string, where it begins an escape: with each escaped backslash and then
    each escaped quote taken out (left to right, pairing backslashes as a reader does), every quote left begins or
    ends a string, and a string is a quote, anything but a quote, a quote. (A text that is not JSON may be measured
    deeper or shallower than a reader would go; :func:`json.loads` then refuses it, or stops at its recursion
    limit.) The three passes are C's: the general pattern for a string with its escapes took twice as long on a
    safetensors header of 10^5 tensors."""
    import re

    plain = text.replace("\\\\", "").replace('\\"', "") if "\\" in text else text
    skeleton = re.sub(_STRINGS, "", plain).encode("utf-8", "surrogatepass")
    if len(skeleton) <= _SMALL:
        from itertools import accumulate

        return max(0, max(accumulate(map(_STEPS.__getitem__, skeleton.translate(None, _NOT_BRACKETS))), default=0))
    import numpy as np

    level = deepest = 0
    for start in range(0, len(skeleton), _BLOCK):
        raw = np.frombuffer(skeleton, dtype=np.uint8, count=min(_BLOCK, len(skeleton) - start), offset=start)
        steps = ((raw == 0x5B) | (raw == 0x7B)).astype(np.int32) - ((raw == 0x5D) | (raw == 0x7D))
        levels = np.cumsum(steps, dtype=np.int64) + level
        if levels.size:
            deepest = max(deepest, int(levels.max()))
            level = int(levels[-1])
        if stop is not None and deepest > stop:
            break
    return deepest


def load_json(raw: bytes | str, path: str, what: str, *, max_bytes: int, max_depth: int = MAX_DEPTH,
              object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None) -> Any:
    """Parse ``raw`` (UTF-8 bytes or text) as JSON; a :class:`CorruptCheckpointError` naming ``what``
    and ``path`` when it is larger than ``max_bytes``, nested deeper than ``max_depth`` or not JSON.
    ``object_pairs_hook`` is :func:`json.loads`'s (it sees duplicate keys)."""
    import json

    if len(raw) > max_bytes:
        raise CorruptCheckpointError(path, f"{what} is {len(raw):,} bytes, more than the {max_bytes:,} accepted")
    try:
        text = raw.decode("utf-8") if isinstance(raw, (bytes, bytearray, memoryview)) else raw
    except UnicodeDecodeError as exc:
        raise CorruptCheckpointError(path, f"{what} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    depth = nesting_depth(text, stop=max_depth)
    if depth > max_depth:
        raise CorruptCheckpointError(path, f"{what} nests deeper than {max_depth} levels; refusing to parse it")
    try:
        return json.loads(text, object_pairs_hook=object_pairs_hook)
    except (ValueError, RecursionError) as exc:
        raise CorruptCheckpointError(path, f"{what} is not valid JSON ({exc})") from None
