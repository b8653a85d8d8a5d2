"""Tensors a model map computes from a stored one while it streams: reshaped (free: the bytes are the same),
transposed (a 2-D kernel ``[in, out]`` as PyTorch's ``[out, in]``), permuted (``permute:0,2,1``: keras-hub
Gemma's ``[heads, hidden, head_dim]`` query kernel as ``[heads, head_dim, hidden]``) and cast (T5's bfloat16 as
float32).

:class:`MappedEntry` is a :class:`~formats.core.model.TensorEntry`, so writers stream it. A transpose takes its
source whole (one tensor at a time: the largest kernel of BERT-large is 16 MiB; from the input file's mapped pages
where the format allows, else read into a reused scratch) and computes the result a block of rows at a time (a
2-D kernel by :func:`~formats.core.transpose.transpose_rows`), into the writer's reused chunk buffers where it
has them (:meth:`MappedEntry.fill_chunks`, :mod:`formats.io.placed`); a plain reshape streams the source's own
chunks. The read-back does not compute the transform again: it compares the file's bytes with the CRC32C taken
as they were written, and :meth:`MappedEntry.spot_check` says what the file must hold where three rows of the
stored tensor land, worked out apart from the writing (index arithmetic, not the transposer).
"""
from __future__ import annotations

import math

from formats.core.model import CHUNK_BYTES, CHUNK_ELEMENTS, TensorEntry
from formats.core.transpose import transpose_rows

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from concurrent.futures import Executor
    from collections.abc import Iterator

    import numpy as np

    from formats.io.chunk_buffers import ChunkBuffers

__all__ = ["MappedEntry", "PartEntry", "StackedEntry", "PiecesEntry", "RowsZeroedEntry", "ZerosEntry", "OPS", "output_shape"]

OPS = ("reshape", "transpose", "permute:AXES", "conv2d")
"""The shape transforms a map may name, applied in order; a cast is the map's ``dtype``. ``permute:0,2,1`` (or
``permute(0,2,1)``) moves the axes; ``conv2d``: a TensorFlow conv2d kernel ``(kh, kw, in, out)`` as PyTorch's
``(out, in, kh, kw)``."""
CONV2D_AXES = (3, 2, 0, 1)


def permutation(op: str) -> tuple[int, ...] | None:
    """The axes of a ``conv2d``, ``permute:a,b,...`` or ``permute(a,b,...)`` op (None for another op)."""
    if op == "conv2d":
        return CONV2D_AXES
    if op.startswith("permute(") and op.endswith(")"):
        return tuple(int(a) for a in op[8:-1].split(","))
    if op.startswith("permute:"):
        return tuple(int(a) for a in op[len("permute:"):].split(","))
    return None


def output_shape(shape: tuple[int, ...], ops: tuple[str, ...], target: tuple[int, ...]) -> tuple[int, ...] | None:
    """The shape ``ops`` make of ``shape`` when the result must be ``target`` (a reshape takes the shape the
    following ops turn into ``target``); None when they cannot (element counts differ)."""
    if math.prod(shape) != math.prod(target):
        return None
    out = tuple(shape)
    for n, op in enumerate(ops):
        if op == "reshape":
            out = _reshape_goal(ops[n + 1:], target)
        elif op == "transpose":
            out = out[::-1]
        elif (axes := permutation(op)) is not None:
            if sorted(axes) != list(range(len(out))):
                return None
            out = tuple(out[a] for a in axes)
    return out


def _reshape_goal(rest: tuple[str, ...], target: tuple[int, ...]) -> tuple[int, ...]:
    """The shape a reshape must give so that the ops after it end at ``target``."""
    shape = tuple(target)
    for op in reversed(rest):
        if op == "transpose":
            shape = shape[::-1]
        elif (axes := permutation(op)) is not None:
            before = [0] * len(axes)
            for n, a in enumerate(axes):
                before[a] = shape[n]
            shape = tuple(before)
    return shape


def _read_stored(base: TensorEntry, into: np.ndarray) -> bool:
    """Read ``base``'s stored bytes straight into ``into`` (uint8, their size) with ``pread`` where they lie
    unchanged in a local file (:meth:`~formats.core.model.TensorEntry.stored_range`), checking their CRC32C
    (a mismatch: the base's own check raises its error); False where they do not."""
    import os

    from formats.io.crc import crc32c

    where = base.stored_range()
    if where is None or where[2] != into.nbytes:
        return False
    fd, offset, size, expected = where
    view = memoryview(into)  # type: ignore[arg-type]
    done = 0
    while done < size:
        n = os.preadv(fd, [view[done:]], offset + done)
        if n <= 0:
            return False  # the file ends early: read the usual way, which says so
        done += n
    if crc32c(view) != expected:
        base.check()  # raises the input's ChecksumError
        return False
    return True


class MappedEntry(TensorEntry):
    """``base`` with ``ops`` applied (ending at ``shape``) and cast to ``dtype``, under a new ``key``."""

    __slots__ = ("base", "ops")

    def __init__(self, base: TensorEntry, key: str, shape: tuple[int, ...], dtype: str, ops: tuple[str, ...]) -> None:
        from formats.core.dtypes import by_name

        super().__init__(key, tuple(shape), dtype, math.prod(shape) * by_name(dtype).itemsize, base.name, base.role)
        self.base, self.ops = base, tuple(ops)

    @property
    def files(self) -> tuple[str, ...]:
        """The files of the stored tensor."""
        return self.base.files

    @property
    def transposes(self) -> bool:
        """Whether the element order changes (else the bytes stream through, cast at most)."""
        moves = "transpose" in self.ops or any(permutation(op) is not None for op in self.ops)
        return moves and len(self.base.shape) > 1 and sum(d > 1 for d in self.base.shape) > 1

    def _cast(self, values: np.ndarray) -> np.ndarray:
        from formats.core.dtypes import by_name

        wanted = by_name(self.dtype).numpy()
        return values if values.dtype == wanted else values.astype(wanted)

    def _stored(self, into: memoryview | None = None) -> np.ndarray:
        """The base's value, in ``into`` (its size in bytes) when given: read with ``pread`` straight into the
        array where its bytes lie unchanged in a local file (a bundle's) or where the format reads them so (a
        contiguous HDF5 dataset), read whole where it is not memory-mapped, else assembled from its canonical
        byte chunks (a memory map is released chunk by chunk as it is read, where ``read()`` would leave the
        whole tensor's pages resident)."""
        import numpy as np

        from formats.core.dtypes import by_name

        dtype = by_name(self.base.dtype).numpy()
        out = np.empty(self.base.shape, dtype=dtype) if into is None else \
            np.frombuffer(into, dtype=dtype).reshape(self.base.shape)
        flat = out.reshape(-1).view(np.uint8)
        if _read_stored(self.base, flat) or self.base.read_into(memoryview(flat)):  # type: ignore[arg-type]
            return out
        if into is None and not self.base.concurrent_reads:  # not a memory map: one read, no copy after it
            whole = self.base.read()
            if whole.dtype == out.dtype and tuple(whole.shape) == tuple(out.shape):
                return np.ascontiguousarray(whole)
        done = 0
        for piece in self.base.byte_chunks(CHUNK_BYTES):
            flat[done:done + len(piece)] = np.frombuffer(piece, dtype=np.uint8)
            done += len(piece)
        return out

    def _steps(self) -> list[tuple[str, tuple[int, ...]]]:
        """The ops as steps of :func:`~formats.core.transpose.moved_positions`: axes moved, or a reshape."""
        steps: list[tuple[str, tuple[int, ...]]] = []
        ndim = len(self.base.shape)
        for n, op in enumerate(self.ops):
            if op == "reshape":
                goal = _reshape_goal(self.ops[n + 1:], self.shape)
                steps.append(("reshape", goal))
                ndim = len(goal)
            else:
                axes = permutation(op)
                steps.append(("axes", tuple(range(ndim))[::-1] if axes is None else axes))
        return steps

    def _moved(self, value: np.ndarray) -> np.ndarray:
        """``value`` (the base's) with the ops applied, as a view where numpy can, in the output's shape."""
        for kind, arg in self._steps():
            value = value.reshape(arg) if kind == "reshape" else value.transpose(arg)
        return value.reshape(self.shape)

    def _value(self) -> np.ndarray:
        return self._cast(self._moved(self._stored()))

    def _rows_into(self, stored: np.ndarray, moved: np.ndarray, start: int, stop: int, out: np.ndarray,
                   scratch: np.ndarray | None = None) -> None:
        """Rows ``start:stop`` of the mapped value into ``out`` (their shape, the output's dtype): a plain 2-D
        transpose by :func:`~formats.core.transpose.transpose_rows`, any other move (and a cast) by numpy."""
        import numpy as np

        if self.ops == ("transpose",) and stored.ndim == 2 and self.dtype == self.base.dtype:
            transpose_rows(stored, start, stop, out.reshape(stop - start, -1), scratch)
        else:
            np.copyto(out, moved[start:stop], casting="unsafe")

    def read(self) -> np.ndarray:
        """The mapped value."""
        import numpy as np

        return np.ascontiguousarray(self._value())

    def iter_chunks(self, chunk_elements: int = CHUNK_ELEMENTS, pool: Executor | None = None) -> Iterator[np.ndarray]:
        """The values in C order, at most ``chunk_elements`` at a time (a transposed one a block of rows at a time,
        so at least a row)."""
        import numpy as np

        from formats.core.dtypes import by_name

        if not self.transposes:
            for piece in self.base.iter_chunks(chunk_elements, pool):
                yield self._cast(piece.reshape(-1))
            return
        stored = self._stored()
        moved = self._moved(stored)
        rows = max(1, chunk_elements // max(1, math.prod(self.shape[1:])))
        for start in range(0, self.shape[0], rows):
            stop = min(self.shape[0], start + rows)
            out = np.empty((stop - start, *self.shape[1:]), dtype=by_name(self.dtype).numpy())
            self._rows_into(stored, moved, start, stop, out)
            yield out.reshape(-1)

    def fill_chunks(self, buffers: ChunkBuffers) -> Iterator[tuple[memoryview, int]] | None:
        """The canonical bytes of a transposed value computed into ``buffers``' chunks, a block of rows each:
        ``(buffer, bytes filled)`` for the writer to write and give back; the base read into their scratch. None
        when nothing moves (the base's bytes stream as they are) or a row is larger than a chunk."""
        row_bytes = self.nbytes // self.shape[0] if self.shape and self.shape[0] else 0
        if not self.transposes or not row_bytes or row_bytes > buffers.size:
            return None
        return self._fill(buffers, buffers.size // row_bytes, row_bytes)

    def _fill(self, buffers: ChunkBuffers, per: int, row_bytes: int) -> Iterator[tuple[memoryview, int]]:
        import numpy as np

        from formats.core.dtypes import by_name
        from formats.core.transpose import SCRATCH_BYTES

        pages = self.base.mapped_bytes() if self.ops == ("transpose",) and self.dtype == self.base.dtype else None
        if pages is not None:  # transposed straight from the input file's pages: no copy of them first
            stored = np.frombuffer(pages, dtype=by_name(self.base.dtype).numpy()).reshape(self.base.shape)
        else:
            stored = self._stored(buffers.scratch(self.base.nbytes))
        moved = self._moved(stored)
        scratch = np.frombuffer(buffers.scratch(SCRATCH_BYTES, 1), dtype=np.uint8)
        dtype = by_name(self.dtype).numpy()
        for start in range(0, self.shape[0], per):
            stop = min(self.shape[0], start + per)
            buffer = buffers.take()
            try:
                out = np.frombuffer(buffer, dtype=dtype, count=(stop - start) * row_bytes // dtype.itemsize)
                self._rows_into(stored, moved, start, stop, out.reshape(stop - start, *self.shape[1:]), scratch)
                del out
            except BaseException:
                buffers.give(buffer)
                raise
            yield buffer, (stop - start) * row_bytes

    def spot_check(self) -> tuple[np.ndarray, np.ndarray] | None:
        """What the written bytes must hold at some places, worked out apart from the writing: three rows
        of the stored tensor (the first, the last, one between chosen by the key) read again (a ``pread`` of the row where its bytes lie in a file, else the
        format's ``read_slice``), each element's place in the output found by index arithmetic
        (:func:`~formats.core.transpose.moved_positions`, no value moved) and its value cast by numpy:
        ``(byte positions in the output tensor, sorted; the byte each must be)``. A transposed 2-D kernel's
        row is a whole column of the output, so every block of rows the writer computed is looked at. None
        where nothing moves and nothing is cast, or for a scalar or an empty tensor."""
        import zlib

        import numpy as np

        from formats.core.dtypes import by_name
        from formats.core.transpose import moved_positions

        shape = tuple(self.base.shape)
        if not (self.transposes or self.dtype != self.base.dtype) or not shape or not self.size:
            return None
        itemsize = by_name(self.dtype).itemsize
        inner = np.unravel_index(np.arange(math.prod(shape[1:])), shape[1:]) if len(shape) > 1 else ()
        places, values = [], []
        for row in sorted({0, shape[0] - 1, zlib.crc32(self.key.encode()) % shape[0]}):
            got = self._stored_row(row).reshape(-1)
            index = (np.full(got.size, row, dtype=np.intp), *inner)
            places.append(moved_positions(shape, self._steps(), index, self.shape))
            values.append(np.ascontiguousarray(got.astype(by_name(self.dtype).numpy())).view(np.uint8))
        at = np.concatenate(places)
        order = np.argsort(at, kind="stable")
        positions = (at[order][:, None] * itemsize + np.arange(itemsize)).reshape(-1)
        return positions, np.concatenate(values).reshape(-1, itemsize)[order].reshape(-1)

    def _stored_row(self, row: int) -> np.ndarray:
        """Row ``row`` (first axis) of the stored tensor, read on its own."""
        import os

        import numpy as np

        from formats.core.dtypes import by_name

        where = self.base.stored_range()
        if where is None:
            return np.asarray(self.base.read_slice((row,)))
        size = self.base.nbytes // self.base.shape[0]
        data = os.pread(where[0], size, where[1] + row * size)
        return np.frombuffer(data, dtype=by_name(self.base.dtype).numpy())

    def stored_range(self) -> tuple[int, int, int, int] | None:
        """The base's stored bytes where they are the mapped value's (a reshape, no cast): writers copy them."""
        if self.transposes or self.dtype != self.base.dtype:
            return None
        return self.base.stored_range()

    def byte_chunks(self, chunk: int = CHUNK_BYTES, check: bool = True) -> Iterator[memoryview]:
        """Canonical little-endian bytes of the mapped value, streamed."""
        from formats.core.dtypes import by_name
        from formats.core.sources import array_chunks

        itemsize = by_name(self.dtype).itemsize
        if not self.transposes and self.dtype == self.base.dtype:
            yield from self.base.byte_chunks(chunk, check)
            return
        for piece in self.iter_chunks(max(1, chunk // itemsize)):
            yield from array_chunks(piece, chunk)


class PartEntry(TensorEntry):
    """Part ``index`` of ``base`` along its first axis (a map's ``split``: XLNet's per-layer biases stored as one
    [n_layer, ...] tensor), under a new ``key``; read whole from the base (one small tensor at a time)."""

    __slots__ = ("base", "index")

    def __init__(self, base: TensorEntry, key: str, index: int) -> None:
        shape = tuple(base.shape[1:])
        super().__init__(key, shape, base.dtype, base.nbytes // max(1, base.shape[0]), base.name, base.role)
        self.base, self.index = base, index

    @property
    def files(self) -> tuple[str, ...]:
        """The files of the stored tensor."""
        return self.base.files

    def read(self) -> np.ndarray:
        """The part's value."""
        import numpy as np

        return np.ascontiguousarray(self.base.read()[self.index])


class RowsZeroedEntry(TensorEntry):
    """``base`` with the rows ``rows`` of its first axis set to zero (a map's ``zero_rows``), under a new ``key``."""

    __slots__ = ("base", "rows")

    def __init__(self, base: TensorEntry, key: str, rows: tuple[int, ...]) -> None:
        super().__init__(key, tuple(base.shape), base.dtype, base.nbytes, base.name, base.role)
        self.base, self.rows = base, rows

    @property
    def files(self) -> tuple[str, ...]:
        """The files of the stored tensor."""
        return self.base.files

    def read(self) -> np.ndarray:
        """The base's value with the rows zeroed."""
        import numpy as np

        value = np.array(self.base.read())
        value[list(self.rows)] = 0
        return value


class ZerosEntry(TensorEntry):
    """A parameter written as zeros (a family's ``zeros`` rule): no stored tensor behind it."""

    def __init__(self, key: str, shape: tuple[int, ...], dtype: str = "float32") -> None:
        from formats.core.dtypes import by_name

        super().__init__(key, tuple(shape), dtype, math.prod(shape) * by_name(dtype).itemsize)

    def read(self) -> np.ndarray:
        """Zeros of the shape and dtype."""
        import numpy as np

        from formats.core.dtypes import by_name

        return np.zeros(self.shape, dtype=by_name(self.dtype).numpy())


class StackedEntry(TensorEntry):
    """``parts`` stacked along a new first axis (a ``split`` read backwards: XLNet's per-layer biases as the one
    [n_layer, ...] tensor of the TensorFlow checkpoint), under ``key``."""

    __slots__ = ("parts",)

    def __init__(self, parts: list[TensorEntry], key: str) -> None:
        first = parts[0]
        super().__init__(key, (len(parts), *first.shape), first.dtype, first.nbytes * len(parts), key, first.role)
        self.parts = parts

    @property
    def files(self) -> tuple[str, ...]:
        """The files of the stored parts."""
        return tuple(f for part in self.parts for f in part.files)

    def read(self) -> np.ndarray:
        """The parts, stacked."""
        import numpy as np

        return np.stack([part.read() for part in self.parts])


class PiecesEntry(TensorEntry):
    """``pieces`` (entries already shaped) concatenated along ``axis`` (a map's ``into``: ImageGPT's q, k and v
    projections as one c_attn), under ``key``."""

    __slots__ = ("pieces", "axis")

    def __init__(self, pieces: list[TensorEntry], axis: int, key: str, shape: tuple[int, ...]) -> None:
        from formats.core.dtypes import by_name

        dtype = pieces[0].dtype
        super().__init__(key, tuple(shape), dtype, math.prod(shape) * by_name(dtype).itemsize, key, pieces[0].role)
        self.pieces, self.axis = pieces, axis

    @property
    def files(self) -> tuple[str, ...]:
        """The files of the stored pieces."""
        return tuple(f for piece in self.pieces for f in piece.files)

    def read(self) -> np.ndarray:
        """The pieces, concatenated."""
        import numpy as np

        return np.ascontiguousarray(np.concatenate([piece.read() for piece in self.pieces], axis=self.axis))
