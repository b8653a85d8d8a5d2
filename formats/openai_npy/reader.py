"""Lazy tensors over OpenAI's GPT-1 release: ``params_shapes.json`` lists every array's shape in order; the arrays,
flattened as float32 and concatenated, are split over ``params_0.npy`` ... ``params_N.npy`` (one-dimensional
float32 ``.npy`` files; the release has ten). Array ``i`` is the ``prod(shapes[i])`` values after those of the
arrays before it, wherever the shard boundaries fall (transformers 4.x's ``load_tf_weights_in_openai_gpt``
concatenates the shards and splits at the shapes' cumulative sizes).

Opening reads ``params_shapes.json`` and each shard's header, and checks that the shards hold exactly the values
the shapes need (a missing shard, a shard that is not one-dimensional little-endian float32, bytes missing or left
over: a :class:`~formats.core.errors.CorruptCheckpointError` naming the file, exit 3). Values are read when asked,
in bounded pieces, with positioned reads of the shards' byte ranges.

The arrays are named as the TensorFlow code that made them named its variables: the list transformers' loader reads
from ``parameters_names.json`` (published with huggingface/pytorch-openai-transformer-lm: ``model/we:0``, then
``model/h0/attn/c_attn/w:0`` ...), used when it lies beside the shards, else the same list made from GPT-1's
order (two embeddings, then twelve arrays per block). Its first name, ``model/we``, stands for two arrays, the
position table then the token table: they are ``model/we/positions`` and ``model/we/tokens``. A release whose
array count fits no GPT-1 and has no names file is named ``params/0``, ``params/1``, ...
"""
from __future__ import annotations

import math
import os
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from formats.core.arrays import array_from_chunks
from formats.core.errors import CorruptCheckpointError, InputReadError
from formats.core.model import CHUNK_BYTES, CHUNK_ELEMENTS, Checkpoint, TensorEntry
from formats.io.npy_header import NpyError, read_npy_header
from formats.openai_npy.layout import NAMES_FILE, OPENAI_NPY, SHAPES_FILE

if TYPE_CHECKING:
    from concurrent.futures import Executor
    import numpy as np

__all__ = ["OpenAINpyTensor", "OpenAINpyCheckpoint", "open_openai_npy", "BLOCK", "MAX_SHARDS", "MAX_ARRAYS"]

BLOCK = ("attn/c_attn/w", "attn/c_attn/b", "attn/c_proj/w", "attn/c_proj/b", "ln_1/g", "ln_1/b",
         "mlp/c_fc/w", "mlp/c_fc/b", "mlp/c_proj/w", "mlp/c_proj/b", "ln_2/g", "ln_2/b")
"""One transformer block's arrays, in the release's order (finetune-transformer-lm's ``block``)."""
MAX_SHARDS = 10_000
MAX_ARRAYS = 1_000_000
MAX_JSON_BYTES = 64 << 20
_SHARD = re.compile(r"params_(0|[1-9]\d{0,8})\.npy\Z")
_BLOCK_BYTES = 8 << 20


class _Shards:
    """The open shard files and where each one's data starts; positioned reads that share no file position."""

    def __init__(self, paths: list[str], starts: list[int]) -> None:
        self.paths, self.starts = paths, starts
        self.files: list[Any] = []
        try:
            for path in paths:
                self.files.append(open(path, "rb"))  # noqa: SIM115 - closed by the checkpoint
        except OSError as exc:
            self.close()
            raise InputReadError(exc.filename or paths[len(self.files)], f"cannot read the shard ({exc.strerror})",
                                 errno=exc.errno) from None

    def read(self, shard: int, offset: int, n: int) -> bytes:
        """``n`` bytes at ``offset`` into shard ``shard``'s data (fewer at the end of the file)."""
        fd, position = self.files[shard].fileno(), self.starts[shard] + offset
        if hasattr(os, "pread"):
            return os.pread(fd, n, position)
        self.files[shard].seek(position)  # pragma: no cover - platforms without pread
        return bytes(self.files[shard].read(n))

    def close(self) -> None:
        """Close every shard."""
        for f in self.files:
            f.close()


class OpenAINpyTensor(TensorEntry):
    """One array of the release: the byte ranges of the shards it spans (``pieces``: shard, data offset, bytes)."""

    __slots__ = ("_shards", "_pieces")

    def __init__(self, key: str, shape: tuple[int, ...], shards: _Shards, pieces: list[tuple[int, int, int]]) -> None:
        super().__init__(key, shape, "float32", 4 * math.prod(shape))
        self._shards = shards
        self._pieces = pieces

    @property
    def files(self) -> tuple[str, ...]:
        """The shards this array's values lie in."""
        return tuple(self._shards.paths[shard] for shard, _, _ in self._pieces)

    def byte_chunks(self, chunk: int = CHUNK_BYTES, check: bool = True) -> Iterator[memoryview]:
        """The stored bytes (little-endian float32, C order), at most ``chunk`` at a time."""
        for shard, offset, size in self._pieces:
            done = 0
            while done < size:
                piece = self._shards.read(shard, offset + done, min(max(1, chunk), size - done))
                if not piece:
                    raise CorruptCheckpointError(self._shards.paths[shard], f"{self.key}: the shard ends at data byte "
                                                 f"{offset + done:,} (it was cut after it was opened)")
                done += len(piece)
                yield memoryview(piece)

    def read(self) -> np.ndarray:
        """The whole value."""
        return array_from_chunks(self.shape, "<f4", self.byte_chunks(_BLOCK_BYTES))

    def iter_chunks(self, chunk_elements: int = CHUNK_ELEMENTS, pool: Executor | None = None) -> Iterator[np.ndarray]:
        """The values in C order, ``chunk_elements`` at most at a time (a piece never splits a value)."""
        import numpy as np

        for piece in self.byte_chunks(max(1, chunk_elements) * 4):
            yield np.frombuffer(piece, dtype="<f4")

    def check(self) -> None:
        """Read every byte of the array, keeping nothing."""
        for _ in self.byte_chunks(_BLOCK_BYTES):
            pass


class OpenAINpyCheckpoint(Checkpoint):
    """An opened release directory."""

    def __init__(self, path: str, entries: dict[str, TensorEntry], shards: _Shards, extra: list[str],
                 metadata: dict[str, Any]) -> None:
        super().__init__(path, OPENAI_NPY, entries, metadata=metadata)
        self._shards = shards
        self._extra = extra

    @property
    def files(self) -> list[str]:
        """``params_shapes.json``, the shards and ``parameters_names.json`` when it was read."""
        return [os.path.join(self.path, SHAPES_FILE), *self._shards.paths, *self._extra]

    def close(self) -> None:
        """Close the shards."""
        self._shards.close()


def _read_json(path: str, what: str) -> Any:
    from formats.core.bounded_json import load_json

    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_JSON_BYTES + 1)
    except OSError as exc:
        raise InputReadError(path, f"cannot read {what} ({exc.strerror})", errno=exc.errno) from None
    return load_json(raw, path, what, max_bytes=MAX_JSON_BYTES)


def _shapes(path: str) -> list[tuple[int, ...]]:
    doc = _read_json(path, "the shapes list")
    if not isinstance(doc, list) or len(doc) > MAX_ARRAYS:
        raise CorruptCheckpointError(path, f"not a list of at most {MAX_ARRAYS:,} shapes")
    out = []
    for i, shape in enumerate(doc):
        if not isinstance(shape, list) or len(shape) > 32 or not all(
                type(d) is int and 0 <= d < 1 << 62 for d in shape):
            raise CorruptCheckpointError(path, f"item {i} is {str(shape)[:60]}, not a shape (a list of at most 32 "
                                               "sizes)")
        out.append(tuple(shape))
    return out


def _shard_paths(directory: str) -> list[str]:
    """``params_0.npy`` ... in order; CorruptCheckpointError naming the first one missing."""
    try:
        names = os.listdir(directory)
    except OSError as exc:
        raise InputReadError(directory, f"cannot list the release directory ({exc.strerror})", errno=exc.errno) from None
    numbers = {int(m.group(1)) for name in names if (m := _SHARD.match(name))}
    if len(numbers) > MAX_SHARDS:
        raise CorruptCheckpointError(directory, f"{len(numbers):,} params_N.npy shards (at most {MAX_SHARDS:,})")
    if not numbers:
        raise CorruptCheckpointError(os.path.join(directory, "params_0.npy"),
                                     f"missing: {SHAPES_FILE} has no params_N.npy shard beside it")
    count = max(numbers) + 1
    gap = next((n for n in range(count) if n not in numbers), None)
    if gap is not None:
        raise CorruptCheckpointError(os.path.join(directory, f"params_{gap}.npy"),
                                     f"missing: the release's values are split over params_0.npy to "
                                     f"params_{count - 1}.npy")
    return [os.path.join(directory, f"params_{n}.npy") for n in range(count)]


def _shard_header(path: str) -> tuple[int, int]:
    """``(data start, values)`` of one shard: a one-dimensional little-endian float32 ``.npy`` holding exactly the
    values its header declares."""
    try:
        with open(path, "rb") as f:
            header = read_npy_header(f.read)
            size = os.fstat(f.fileno()).st_size
    except NpyError as exc:
        raise CorruptCheckpointError(path, f"not a .npy shard: {exc}") from None
    except OSError as exc:
        raise InputReadError(path, f"cannot read the shard ({exc.strerror})", errno=exc.errno) from None
    if header.pickled or header.dtype.str != "<f4" or len(header.shape) != 1:
        raise CorruptCheckpointError(path, f"holds {header.dtype.str} {list(header.shape)}, not the one-dimensional "
                                           "little-endian float32 (<f4) values of the release")
    if size != header.size + header.nbytes:
        raise CorruptCheckpointError(path, f"declares {header.shape[0]:,} float32 values ({header.nbytes:,} bytes) but "
                                           f"holds {size - header.size:,} bytes after its header")
    return header.size, header.shape[0]


def _default_names(count: int) -> list[str]:
    if count >= 2 and (count - 2) % len(BLOCK) == 0:
        return ["model/we/positions", "model/we/tokens"] + [f"model/h{i}/{part}" for i in range((count - 2) // len(BLOCK))
                                                            for part in BLOCK]
    return [f"params/{i}" for i in range(count)]


def _names(directory: str, count: int) -> tuple[list[str], list[str], list[str]]:
    """The arrays' keys, the names file read (if any) and the names it lists beyond the arrays (``model/clf``)."""
    path = os.path.join(directory, NAMES_FILE)
    if not os.path.isfile(path):
        return _default_names(count), [], []
    doc = _read_json(path, "the names list")
    if not isinstance(doc, list) or not all(isinstance(n, str) for n in doc):
        raise CorruptCheckpointError(path, "not a list of variable names")
    if count < 2 or len(doc) - 1 < count - 2:
        raise CorruptCheckpointError(path, f"lists {len(doc):,} names, but {SHAPES_FILE}'s {count:,} arrays need "
                                           f"{max(count - 1, 1):,} (the first name stands for the two embeddings)")
    used = doc[1:count - 1]
    bad = next((n for n in used if not n.endswith(":0") or not n[:-2]), None)
    if bad is not None:
        raise CorruptCheckpointError(path, f"{bad[:80]!r} is not a variable name ending in :0")
    keys = ["model/we/positions", "model/we/tokens"] + [n[:-2] for n in used]
    if len(set(keys)) != len(keys):
        raise CorruptCheckpointError(path, "names an array twice")
    return keys, [path], doc[count - 1:]


def _pieces(shards: list[int], start: int, values: int) -> list[tuple[int, int, int]]:
    """The (shard, data byte offset, bytes) ranges of ``values`` values from global value ``start``."""
    out, shard, before = [], 0, 0
    while shard < len(shards) and before + shards[shard] <= start:
        before += shards[shard]
        shard += 1
    while values > 0:
        take = min(values, before + shards[shard] - start)
        if take:
            out.append((shard, 4 * (start - before), 4 * take))
        start, values = start + take, values - take
        before += shards[shard]
        shard += 1
    return out


def open_openai_npy(directory: str) -> OpenAINpyCheckpoint:
    """Open a release directory (:mod:`formats.openai_npy`)."""
    shapes_path = os.path.join(directory, SHAPES_FILE)
    shapes = _shapes(shapes_path)
    paths = _shard_paths(directory)
    headers = [_shard_header(p) for p in paths]
    held, needed = sum(n for _, n in headers), sum(math.prod(s) for s in shapes)
    if held != needed:
        raise CorruptCheckpointError(shapes_path, f"its {len(shapes):,} shapes need {needed:,} values, but "
                                                  f"{os.path.basename(paths[0])} to {os.path.basename(paths[-1])} "
                                                  f"hold {held:,}")
    keys, extra, unused = _names(directory, len(shapes))
    shards = _Shards(paths, [start for start, _ in headers])
    sizes = [n for _, n in headers]
    entries: dict[str, TensorEntry] = {}
    at = 0
    for key, shape in zip(keys, shapes):
        values = math.prod(shape)
        entries[key] = OpenAINpyTensor(key, shape, shards, _pieces(sizes, at, values))
        at += values
    metadata: dict[str, Any] = {"arrays": len(shapes), "shards": len(paths),
                                "names": NAMES_FILE if extra else "GPT-1's order (no parameters_names.json)"}
    if unused:
        metadata["names_without_arrays"] = unused
    return OpenAINpyCheckpoint(directory, entries, shards, extra, metadata)
