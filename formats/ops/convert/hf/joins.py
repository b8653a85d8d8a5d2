"""Parameters a model map joins from several source tensors: a map rule with ``concat = { over = "p", axis = 1 }``
maps every word of its placeholder ``p`` to the same parameter, and the parts, each transformed by the rule's ops,
are laid side by side along ``axis`` in the order of the words (keras-hub GPT-2's query, key and value kernels as
transformers' one ``c_attn``). A part that is missing, or that does not fit its share of the parameter, is an error
naming it; the written tensor is computed one parameter at a time, as a transpose is.
"""
from __future__ import annotations

import math

from formats.core.model import CHUNK_BYTES, CHUNK_ELEMENTS, TensorEntry
from formats.ops.convert.hf.entries import MappedEntry, output_shape
from formats.ops.convert.hf.family import MapRule

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from concurrent.futures import Executor
    from collections.abc import Iterator

    import numpy as np

    from formats.ops.convert.plan import ConversionPlan

__all__ = ["JoinedEntry", "Part", "add_joined_row"]

Part = tuple[str, TensorEntry, MapRule, dict[str, str]]
"""A source key, its entry, the rule that mapped it and the rule's placeholder values."""


class JoinedEntry(TensorEntry):
    """``parts`` (entries of equal dtype) concatenated along ``axis`` under a new ``key``."""

    __slots__ = ("parts", "axis")

    def __init__(self, parts: list[TensorEntry], key: str, shape: tuple[int, ...], dtype: str, axis: int) -> None:
        from formats.core.dtypes import by_name

        super().__init__(key, tuple(shape), dtype, math.prod(shape) * by_name(dtype).itemsize, parts[0].name,
                         parts[0].role)
        self.parts, self.axis = list(parts), axis

    @property
    def files(self) -> tuple[str, ...]:
        """The files of the stored tensors."""
        return tuple(dict.fromkeys(f for part in self.parts for f in part.files))

    def read(self) -> np.ndarray:
        """The joined value."""
        import numpy as np

        return np.ascontiguousarray(np.concatenate([part.read() for part in self.parts], axis=self.axis))

    def iter_chunks(self, chunk_elements: int = CHUNK_ELEMENTS, pool: Executor | None = None) -> Iterator[np.ndarray]:
        """The values in C order, at most ``chunk_elements`` at a time."""
        flat = self.read().reshape(-1)
        for start in range(0, flat.size, max(1, chunk_elements)):
            yield flat[start:start + chunk_elements]

    def byte_chunks(self, chunk: int = CHUNK_BYTES, check: bool = True) -> Iterator[memoryview]:
        """Canonical little-endian bytes of the joined value."""
        from formats.core.dtypes import by_name
        from formats.core.sources import array_chunks

        for piece in self.iter_chunks(max(1, chunk // by_name(self.dtype).itemsize)):
            yield from array_chunks(piece, chunk)


def add_joined_row(plan: ConversionPlan, target: str, parts: list[Part], want: tuple[int, ...]) -> str | None:
    """Plan ``target`` joined from ``parts``; what is wrong with a part's shape (nothing planned), else None. A
    missing part is the plan's error here."""
    rule = parts[0][2]
    assert rule.concat is not None
    over, axis = str(rule.concat["over"]), int(rule.concat["axis"])
    words = rule.source.kinds()[over].split("|")
    have = {values[over]: (key, entry) for key, entry, _, values in parts}
    lacking = [w for w in words if w not in have]
    if lacking:
        plan.add("missing", target, f"parameter {target!r} joins {', '.join(words)}; no source tensor for "
                 f"{', '.join(lacking)} (have {', '.join(have[w][0] for w in words if w in have)})")
        return None
    if not 0 <= axis < len(want) or want[axis] % len(words):
        return f"{target!r} {list(want)} cannot be split into {len(words)} parts along axis {axis}"
    share = want[:axis] + (want[axis] // len(words),) + want[axis + 1:]
    entries: list[TensorEntry] = []
    for word in words:
        key, entry = have[word]
        if output_shape(tuple(entry.shape), rule.ops, share) != share:
            return f"{key!r} {list(entry.shape)} does not fit its part {list(share)} of {target!r} {list(want)}"
        dtype = rule.dtype or entry.dtype
        entries.append(MappedEntry(entry, key, share, dtype, rule.ops) if rule.ops or dtype != entry.dtype else entry)
    keys = [have[w][0] for w in words]
    transform = " + ".join([*rule.ops, f"concat of {len(words)} along axis {axis}"])
    plan.add_row(keys[0], target, JoinedEntry(entries, target, want, entries[0].dtype, axis), want, entries[0].dtype,
                 f"joined with {', '.join(keys[1:])}", transform)
    return None
