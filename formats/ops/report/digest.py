"""Keys summarised for a summary report: grouped by pattern and by layer, and packed for the page's search.

- :func:`key_pattern`: a key with its numbered parts as placeholders (``layer_3/kernel`` ->
  ``layer_{i}/kernel``, ``h.11.attn`` -> ``h.{i}.attn``, ``block_0001/unit_07`` -> ``block_{i}/unit_{j}``): a
  run of digits is a number when it starts the key or follows ``_ - . /`` and ends the key or is followed by
  one of ``_ - . / :`` (so ``conv2d`` and ``fc1`` keep their digits).
- :func:`group_rows`: tensors, bytes, parameters and non-finite tensors per group (a pattern, or a layer:
  the key's first path parts, as many as it takes for the checkpoint to have two groups or more, at most 3),
  with each placeholder's smallest and largest number; counts exact.
- :func:`pack_keys`: ``flag + key`` lines, newline-joined, raw-deflate compressed and base64-encoded, at most
  ``budget`` characters by construction: keys are added in chunks, the stream flushed after each; a chunk
  that would pass the budget is tried in halves, and the first line that does not fit is left out with
  everything after it (the count packed says so).
"""
from __future__ import annotations

import re

from formats.core.records import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence

__all__ = ["key_pattern", "layer_depth", "layer_of", "Group", "group_rows", "PackedKeys", "pack_keys", "PLACEHOLDERS"]

_NUMBER = re.compile(r"(?:(?<=[_\-./])|^)(\d+)(?=[_\-./:]|$)")
PLACEHOLDERS = "ijklmnpqrstuvwxyz"
"""The names of a pattern's placeholders, in order (the last is reused past the 17th)."""
_DIGITS = frozenset("0123456789")
_NAMES = ["{" + name + "}" for name in PLACEHOLDERS]


def _split(key: str) -> tuple[str, list[int]]:
    """``key``'s pattern and its numbers."""
    if _DIGITS.isdisjoint(key):
        return key, []
    parts = _NUMBER.split(key)
    if len(parts) == 1:
        return key, []
    numbers = parts[1::2]
    parts[1::2] = _NAMES[:len(numbers)] if len(numbers) <= len(_NAMES) else \
        _NAMES + _NAMES[-1:] * (len(numbers) - len(_NAMES))
    return "".join(parts), list(map(int, numbers))


_MARK = bytes.maketrans(b"0123456789", b"\x00" * 10)
"""Each ASCII digit as NUL, in a key's UTF-8 (no other character's bytes hold one): keys alike but for the values of
their digits read the same (their *shape*; bytes.translate is several times quicker than str.translate)."""


def _splitter(most: int = 1 << 16) -> Callable[[str], tuple[str, list[int]]]:
    """:func:`_split`, remembering the pattern of each shape of key (:data:`_MARK`) for at most ``most`` shapes: a
    key of a shape seen before takes its pattern and reads its numbers where that shape has them (the regular
    expression runs once per shape, not once per key: ``layer_{i}/unit_{j}/w`` is a handful of shapes for 100,000
    keys). Whether a run of digits is a number depends only on the characters around it, which keys of one shape
    share; a shape is remembered when every digit of its key is in a number (else its pattern holds that key's
    digits), and a key holding NUL itself is split on its own."""
    shapes: dict[bytes, tuple[str, tuple[tuple[int, int], ...]]] = {}  # shape -> its pattern, where its numbers are

    def split(key: str) -> tuple[str, list[int]]:
        if _DIGITS.isdisjoint(key) or "\x00" in key:
            return _split(key)
        shape = key.encode("utf-8", "surrogatepass").translate(_MARK)
        found = shapes.get(shape)
        if found is not None:
            return found[0], [int(key[a:b]) for a, b in found[1]]
        pattern, numbers = _split(key)
        if len(shapes) < most and _DIGITS.isdisjoint(pattern):  # every digit in a number (else the pattern holds
            shapes[shape] = pattern, tuple(m.span(1) for m in _NUMBER.finditer(key))  # digits of this key's own)
        return pattern, numbers

    return split


def key_pattern(key: str) -> str:
    """``key`` with each numbered part as ``{i}``, ``{j}``, ... (the module doc says what a numbered part is)."""
    return _split(key)[0]


def layer_depth(keys: Sequence[str], most: int = 3) -> int:
    """How many leading path parts name a layer: the fewest (1 to ``most``) that give two groups or more."""
    for depth in range(1, most):
        first = None
        for key in keys:  # until a second layer: no set of every key's layer
            layer = layer_of(key, depth)
            if first is None:
                first = layer
            elif layer != first:
                return depth
    return most


def layer_of(key: str, depth: int) -> str:
    """The first ``depth`` path parts of ``key`` (a key of ``depth`` parts or fewer without its last part, and
    a key of one part is its own layer)."""
    parts = key.split("/", depth)
    if len(parts) <= depth:
        parts = parts[:-1] or parts
    return "/".join(parts[:depth])


@record
class Group:
    """Tensors sharing a pattern or a layer: how many, their bytes and parameters, how many hold NaN/Inf, and
    for a pattern each placeholder's smallest and largest number (``ranges``, in placeholder order)."""

    name: str
    tensors: int = 0
    nbytes: int = 0
    parameters: int = 0
    nonfinite: int = 0
    ranges: list[list[int]] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        """``{"name", "tensors", "nbytes", "parameters", "nonfinite", "ranges"}``."""
        return {"name": self.name, "tensors": self.tensors, "nbytes": self.nbytes, "parameters": self.parameters,
                "nonfinite": self.nonfinite, "ranges": self.ranges}


def group_rows(keys: Sequence[str], nbytes: Sequence[int], sizes: Sequence[int], nonfinite: Sequence[bool],
               by: str, depth: int = 1) -> list[Group]:
    """The :class:`Group` of every pattern (``by="pattern"``) or layer (``by="layer"``, :func:`layer_of` at
    ``depth``) of ``keys``, most tensors first (then most bytes, then name)."""
    totals: dict[str, list[int]] = {}  # name -> [tensors, bytes, parameters, non-finite]
    ranges: dict[str, list[list[int]]] = {}
    split: Callable[[str], tuple[str, Sequence[int]]] = \
        _splitter() if by == "pattern" else (lambda key: (layer_of(key, depth), ()))
    for key, size, count, bad in zip(keys, nbytes, sizes, nonfinite):
        name, numbers = split(key)
        t = totals.get(name)
        if t is None:
            t = totals[name] = [0, 0, 0, 0]
            ranges[name] = [[n, n] for n in numbers]
        else:
            for span, n in zip(ranges[name], numbers):
                if n < span[0]:
                    span[0] = n
                elif n > span[1]:
                    span[1] = n
        t[0] += 1
        t[1] += size
        t[2] += count
        if bad:
            t[3] += 1
    order = sorted(totals, key=lambda name: (-totals[name][0], -totals[name][1], name))
    return [Group(name, t[0], t[1], t[2], t[3], ranges[name]) for name in order for t in (totals[name],)]


@record
class PackedKeys:
    """The search data: ``text`` (base64 of raw deflate of the newline-joined ``flag + key`` lines), how many
    lines it holds (``packed``) of how many there were (``total``), and the raw length."""

    text: str
    packed: int
    total: int
    raw_bytes: int = 0

    @property
    def complete(self) -> bool:
        """Whether every key is in the search data."""
        return self.packed == self.total


_FLAG_CHARS = [chr(64 + flag) for flag in range(64)]


def _line(flag: int, key: str) -> str:
    if key.isascii() and "\n" not in key:
        return _FLAG_CHARS[flag] + key
    from formats.core.names import safe_text

    return _FLAG_CHARS[flag] + safe_text(key).replace("\n", "\u2424")


def _chunks(lines: Iterable[tuple[int, str]], chunk: int) -> Iterator[list[str]]:
    """The lines as text, in lists of about ``chunk`` characters."""
    pending: list[str] = []
    size = 0
    for flag, key in lines:
        text = _line(flag, key)
        pending.append(text)
        size += len(text) + 1
        if size >= chunk:
            yield pending
            pending, size = [], 0
    if pending:
        yield pending


def pack_keys(lines: Iterable[tuple[int, str]], total: int, budget: int, chunk: int = 1 << 18) -> PackedKeys:
    """``lines`` (``(flag 0-63, key)``) packed as :class:`PackedKeys` in at most ``budget`` base64 characters
    (a key's newline shows as U+2424; keys made valid UTF-8 as :func:`~formats.core.names.safe_text` does).
    A chunk that passes the budget is tried again in halves, down to one line, so the budget is filled."""
    import base64
    import zlib

    limit = budget // 4 * 3 - 8  # base64 of n bytes is 4 * ceil(n / 3) characters; 8 for the final block
    comp = zlib.compressobj(6, zlib.DEFLATED, -15)
    out: list[bytes] = []
    size = packed = raw = 0
    full = False
    for batch in _chunks(lines, chunk):
        queue = [batch]
        while queue and not full:
            part = queue.pop(0)
            data = (("\n" if packed else "") + "\n".join(part)).encode("utf-8")
            before = comp.copy()
            piece = comp.compress(data) + comp.flush(zlib.Z_SYNC_FLUSH)
            if size + len(piece) <= limit:
                out.append(piece)
                size, packed, raw = size + len(piece), packed + len(part), raw + len(data)
                continue
            comp = before
            full = len(part) == 1
            queue[:0] = [] if full else [part[:len(part) // 2], part[len(part) // 2:]]
        if full:
            break
    out.append(comp.flush(zlib.Z_FINISH))
    return PackedKeys(base64.b64encode(b"".join(out)).decode("ascii"), packed, total, raw)
