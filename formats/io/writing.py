"""One way to write: the report every writer returns, the one guard against replacing an input, and
the read-back check every output passes before it takes its name.

Every writer (TensorFlow bundles, Keras 2/3 HDF5, npz, safetensors, ``extract``'s ``.npy`` files,
rules and state files) goes through the same steps:

1. **plan**: the files it will create and the bytes they take are known before anything is written;
2. **guard** (:func:`guard_output`): an output that is a file of any input is refused - always, with
   ``force`` too (paths compared after resolving symlinks, and by inode for hard links) - and an
   existing output is refused unless ``force``;
3. **write** under temporary names beside the output (:mod:`formats.io.atomic`), flushed to disk;
4. **read back** and compare with the sources (:func:`~formats.core.roundtrip.compare_checkpoints`);
   a mismatch raises :class:`~formats.core.errors.VerificationError` and nothing takes the output's name;
5. **rename** into place and return a :class:`WriteReport`.
"""
from __future__ import annotations

from _operator import attrgetter, itemgetter  # operator's C half
import itertools
import math
import os
from _collections_abc import Sequence  # collections.abc's, without the collections package

from formats.core.errors import (CheckpointError, CorruptCheckpointError, InvalidOutputError, OutputExistsError,
                                 OutputIsInputError, VerificationError)
from formats.core.model import Checkpoint, TensorEntry
from formats.core.roundtrip import RoundTripReport
from formats.core.records import field, record
from formats.core.sources import CHUNK, Source, describe

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator
    from typing import Any

    import numpy as np

__all__ = ["WriteReport", "Stored", "StoredRows", "OutputGuard", "guard_output", "refuse_directory", "named_files", "bundle_file_part",
           "check_roundtrip", "planned_bytes", "sources_of", "RowPairs", "ZippedPairs", "StoredBytes", "write_text", "VerificationError"]


@record(frozen=True, slots=True)  # one per tensor
class Stored:
    """One tensor as an output holds it: its ``key``, where it went (``stored_as``: a bundle key, an
    HDF5 dataset, an npz member, a file under a directory), its dtype and the dtype it is stored as."""

    key: str
    stored_as: str
    dtype: str
    stored_dtype: str
    shape: tuple[int, ...]

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return {"key": self.key, "stored_as": self.stored_as, "dtype": self.dtype,
                "stored_dtype": self.stored_dtype, "shape": list(self.shape)}


@record
class WriteReport:
    """What a writer wrote: the output ``path`` (a bundle prefix, a file or a directory), its
    ``format``, the ``files`` created, the tensors and their data bytes, whether it was read back
    and matched its sources (``verified``, with the comparison in ``roundtrip``), notes about how
    values were stored (``warnings``) and every tensor as stored (``contents``)."""

    path: str
    format: str
    files: list[str] = field(default_factory=list)
    tensors: int = 0
    bytes: int = 0
    verified: bool = False
    roundtrip: RoundTripReport | None = None
    warnings: list[str] = field(default_factory=list)
    contents: Sequence[Stored] = field(default_factory=list)

    def add(self, stored: Stored, nbytes: int) -> None:
        """Count one tensor written (``contents`` is then a list: one :class:`Stored` a tensor)."""
        self.contents.append(stored)  # type: ignore[attr-defined]  # a list, not a writer's StoredRows
        self.tensors += 1
        self.bytes += nbytes

    def accept(self, roundtrip: RoundTripReport) -> None:
        """Record the read-back comparison; raise :class:`VerificationError` when anything differs."""
        check_roundtrip(self.path, roundtrip)
        self.roundtrip, self.verified = roundtrip, True

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict (``roundtrip`` is summed up by ``verified``)."""
        return {"path": self.path, "format": self.format, "files": list(self.files), "tensors": self.tensors,
                "bytes": self.bytes, "verified": self.verified, "warnings": list(self.warnings),
                "contents": [s.to_json() for s in self.contents]}


class StoredRows(Sequence[Stored]):
    """A write report's ``contents`` made on access: the :class:`Stored` of ``rows[i]`` is ``stored(rows[i])``.
    A writer that keeps a row per tensor anyway (the bundle writer's records) lends them, rather than a second
    object per tensor held for the report's life (at a million tensors, about 70 MB)."""

    __slots__ = ("_rows", "_stored")

    def __init__(self, rows: Sequence[Any], stored: Callable[[Any], Stored]) -> None:
        self._rows, self._stored = rows, stored

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self._stored(row) for row in self._rows[i]]
        return self._stored(self._rows[i])

    def __iter__(self) -> Iterator[Stored]:
        return map(self._stored, self._rows)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, (list, StoredRows)) and len(other) == len(self) and all(map(Stored.__eq__, self, other))

    __hash__ = None  # type: ignore[assignment]


class RowPairs(Sequence["tuple[Any, Source]"]):
    """The ``(key, value)`` pairs of rows that have both (a plan's), each made when asked for rather than a tuple
    per tensor held through the write (``tail``: pairs after the rows, the object graph's)."""

    __slots__ = ("rows", "_tail")

    def __init__(self, rows: Sequence[Any], tail: Sequence[tuple[Any, Source]] = ()) -> None:
        self.rows, self._tail = rows, tail  # ``rows``: their first pairs' rows, as given

    def and_graph(self, pair: tuple[Any, Source] | None) -> RowPairs:
        """These pairs, and the object graph's after them (None: none)."""
        return self if pair is None else RowPairs(self.rows, [*self._tail, pair])

    def __len__(self) -> int:
        return len(self.rows) + len(self._tail)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self.rows)
        if i < 0:
            i += len(self)
        if 0 <= i < n:
            row = self.rows[i]
            return row.key, row.value
        return self._tail[i - n]

    def __iter__(self) -> Iterator[tuple[Any, Source]]:
        for row in self.rows:
            yield row.key, row.value
        yield from self._tail

    def sources(self) -> Sequence[Source]:
        """The pairs' values, each read from its row when asked for (no list of them)."""
        return _RowValues(self)


class _RowValues(Sequence[Source]):
    """:meth:`RowPairs.sources`."""

    __slots__ = ("_pairs",)

    def __init__(self, pairs: RowPairs) -> None:
        self._pairs = pairs

    def __len__(self) -> int:
        return len(self._pairs)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        rows = self._pairs.rows
        return rows[i].value if 0 <= i < len(rows) else self._pairs[i][1]

    def __iter__(self) -> Iterator[Source]:
        return itertools.chain(map(_value, self._pairs.rows), map(_second, self._pairs._tail))  # (C: no frame)


class ZippedPairs(Sequence["tuple[Any, Source]"]):
    """``zip(keys, values)`` as a sequence, each pair made when asked for (no tuple a tensor held through a write;
    at 10^5 tensors, 6 MB); it lends ``values`` as its sources."""

    __slots__ = ("_keys", "_values")

    def __init__(self, keys: Sequence[Any], values: Sequence[Source]) -> None:
        if len(keys) != len(values):
            raise ValueError(f"{len(keys)} keys for {len(values)} values")
        self._keys, self._values = keys, values

    def __len__(self) -> int:
        return len(self._keys)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return list(zip(self._keys[i], self._values[i]))
        return self._keys[i], self._values[i]

    def __iter__(self) -> Iterator[tuple[Any, Source]]:
        return zip(self._keys, self._values)

    def sources(self) -> Sequence[Source]:
        """The values."""
        return self._values


_value, _second = attrgetter("value"), itemgetter(1)


def check_roundtrip(path: str, report: RoundTripReport) -> RoundTripReport:
    """``report`` when every tensor matched, else :class:`VerificationError` naming the first mismatch."""
    if report.ok:
        return report
    first, more = report.mismatches[0], len(report.mismatches) - 1
    raise VerificationError(path, f"verification failed: {first.key!r}: {first.message}"
                            + (f" (and {more} more)" if more else ""), report=report)


def sources_of(tensors: Any) -> Sequence[Source]:
    """The sources of a mapping or of a list of ``(key, source)`` pairs; ``[]`` for a one-shot iterator,
    which is not consumed here (writers guard its sources as they reach them)."""
    from _collections_abc import Mapping  # collections.abc's, without the collections package

    if isinstance(tensors, Mapping):
        return list(tensors.values())
    if isinstance(tensors, Sequence) and not isinstance(tensors, (str, bytes)):  # a list, or pairs made on access
        sources = getattr(tensors, "sources", None)  # pairs that lend their sources as a sequence (no list)
        return sources() if sources is not None else [pair[1] for pair in tensors]
    return []


def planned_bytes(sources: Iterable[Source]) -> int:
    """Bytes the fixed-width ``sources`` take (what cannot be described counts 0: its write reports it)."""
    total = 0
    for source in sources:
        try:
            dt, shape = describe(source)
        except (CheckpointError, ValueError, TypeError):
            continue
        total += math.prod(shape) * dt.itemsize
    return total


class StoredBytes(TensorEntry):
    """A tensor as an output holds it, read back to be compared with its source: ``nbytes`` bytes at
    ``offset`` of the file ``open_file()`` opens, streamed in chunks."""

    __slots__ = ("_open", "_offset")

    def __init__(self, key: str, shape: tuple[int, ...], dtype: str, nbytes: int, open_file: Callable[[], Any],
                 offset: int) -> None:
        super().__init__(key, shape, dtype, nbytes)
        self._open, self._offset = open_file, offset

    def _chunks(self, chunk: int) -> Iterator[bytes]:
        with self._open() as f:
            f.seek(self._offset)
            remaining = self.nbytes
            while remaining:
                piece = f.read(min(chunk, remaining))
                if not piece:
                    raise CorruptCheckpointError(self.key, f"the output ends {remaining} bytes early")
                remaining -= len(piece)
                yield piece

    def byte_chunks(self, chunk: int = CHUNK, check: bool = True) -> Iterator[memoryview]:
        """The stored bytes, streamed."""
        return (memoryview(piece) for piece in self._chunks(chunk))

    def read(self) -> np.ndarray:
        """The whole value."""
        import numpy as np

        from formats.core.dtypes import by_name

        return np.frombuffer(b"".join(self._chunks(CHUNK)), dtype=by_name(self.dtype).numpy()).reshape(self.shape)


# -- the guard -------------------------------------------------------------------------------------------
def _is_url(path: str) -> bool:
    from formats.io.storage import is_url

    return is_url(path)


def _identity(path: str) -> str:
    return path.rstrip("/") if _is_url(path) else os.path.realpath(os.path.abspath(path))


def _inode(path: str) -> tuple[int, int] | None:
    if _is_url(path):
        return None
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


def bundle_file_part(name: str, base: str) -> str | None:
    """``index`` or ``data-NNNNN-of-MMMMM`` when ``name`` is that file of the bundle ``base`` (five decimal
    digits each, as TensorFlow names them), else None. No regular expression: writers call this on every
    name of the output's folder, and ``re`` stays off their start-up."""
    if not name.startswith(base):
        return None
    rest = name[len(base):]
    if rest == ".index":
        return "index"
    if len(rest) == 20 and rest.startswith(".data-") and rest[11:15] == "-of-" and rest[6:11].isdecimal() \
            and rest[15:].isdecimal():
        return rest[1:]
    return None


def named_files(path: str) -> list[str]:
    """The files a path given as an input names: itself and, for a bundle prefix, its index and data files."""
    files = [path, path + ".index"]
    if _is_url(path) or not os.path.basename(path):
        return files
    directory, base = os.path.split(path)
    try:
        names = os.listdir(directory or ".")
    except OSError:
        return files
    return files + [os.path.join(directory, n) for n in sorted(names) if bundle_file_part(n, base) is not None]


class OutputGuard:
    """The files an output will create, checked against every file being read.

    :meth:`check_files`, :meth:`check_inputs` and :meth:`check_source` raise
    :class:`~formats.core.errors.OutputIsInputError` when one of them is an output file (same path
    after resolving symlinks, or the same inode: a hard link). Writers fed from a one-shot iterator
    call :meth:`check_source` as each source is reached, before its bytes are written.

    ``renamed``: the writer never writes into an existing output file - it writes new files under
    temporary names, renames them over the old ones and unlinks the old ones it does not replace (the
    bundle writer) - so an output file that is a hard link of an input file (the same inode under another
    name: the data file of an earlier ``--link`` output) is no hazard, and only the same path is refused:
    replacing that name leaves the input's own name, and its bytes, as they were.
    """

    def __init__(self, output: str, files: Iterable[str], leftovers: Iterable[str] = (), renamed: bool = False) -> None:
        self.output = output
        self.files = list(files)
        self._paths = {_identity(f) for f in self.files}
        left = set(leftovers)  # no checkpoint's files: compared by path only (a hard link of an input is fine)
        self._inodes = set() if renamed else {
            i for i in map(_inode, (f for f in self.files if f not in left)) if i is not None}
        self._seen: set[tuple[str, ...]] = set()

    def check_files(self, files: Iterable[str]) -> None:
        """Refuse when any of ``files`` is a file of the output."""
        for f in files:
            if _identity(f) in self._paths or (self._inodes and _inode(f) in self._inodes):
                raise OutputIsInputError(self.output, f"output would overwrite {f}, which is being read; "
                                         "write elsewhere")

    def check_inputs(self, inputs: Iterable[str | os.PathLike[str] | Checkpoint]) -> None:
        """Refuse when a file of an input (an opened checkpoint, or a path given as input) is an output file."""
        for item in inputs:
            if isinstance(item, Checkpoint):
                self.check_files([item.path, *item.files])
            else:
                self.check_files(named_files(os.fspath(item)))

    def check_source(self, source: Source) -> None:
        """Refuse a source read from an output file (checked once per distinct set of files)."""
        if isinstance(source, TensorEntry):
            self._check_once(source.files)

    def check_sources(self, sources: Iterable[Source]) -> None:
        """:meth:`check_source` of each of ``sources``; one whose files are the very tuple the one before lent (a
        bundle lends one a data file) is not looked up again (at 10^5 tensors, 3% of a rename)."""
        last: Any = None
        for source in sources:
            if isinstance(source, TensorEntry):
                files = source.files
                if files is not last:
                    last = files
                    self._check_once(files)

    def _check_once(self, files: Iterable[str]) -> None:
        """:meth:`check_files` of a source's files, once per distinct set of them."""
        files = tuple(files)
        if files and files not in self._seen:
            self._seen.add(files)
            self.check_files(files)


def guard_output(output: str, files: Iterable[str] | None = None, *,
                 inputs: Iterable[str | os.PathLike[str] | Checkpoint] = (), sources: Iterable[Source] = (),
                 force: bool = False, what: str = "output file", directory: bool = False,
                 marker: str | None = None, renamed: bool = False) -> OutputGuard:
    """Check an output before anything is written; return the guard for sources met later.

    ``files`` are the files the output creates (default: ``output`` itself). Refused, in this order:
    ``output`` naming a directory (unless ``directory``: extract's directory mode), any file of
    ``inputs`` or ``sources`` that is an output file (always, ``force`` or not), and an existing output
    unless ``force`` (``what`` names it in the message: ``output checkpoint exists``). With ``marker``,
    the output exists when that one file does (a bundle is its index: data files without it are what a
    killed write left, replaced by the next; such files are inputs only under the same path, for a killed
    ``--link`` write leaves hard links of its inputs); else when any of ``files`` does. ``renamed``: the
    writer only ever renames new files over the output's (:class:`OutputGuard`): an output file that is a
    hard link of an input is then replaced, not refused.
    """
    if not directory:
        refuse_directory(output)
    files = [output] if files is None else list(files)
    orphans = [f for f in files if f != marker] if marker is not None and not _exists(marker) else []
    guard = OutputGuard(output, files, orphans, renamed)
    guard.check_inputs(inputs)
    guard.check_sources(sources)
    if not force:
        for f in ([marker] if marker is not None else guard.files):
            if _exists(f):
                raise OutputExistsError(output, f"{what} exists" + ("" if f == output or f.startswith(output + ".") else f": {f}"),
                                        hint="pass force=True to replace it")
    return guard


def _exists(path: str) -> bool:
    if _is_url(path):
        from formats.io import storage

        return storage.isfile(path)
    return os.path.lexists(path)


def refuse_directory(output: str) -> None:
    """Refuse an output path that is, or (ending in a separator) names, a directory."""
    if _is_url(output):
        return
    trailing = not os.path.basename(output)
    if os.path.isdir(output):
        example = os.path.join(output, "ckpt")
        raise InvalidOutputError(output, f"output is a directory; give a name inside it such as {example}")
    if trailing:
        example = os.path.join(output, "ckpt")
        raise InvalidOutputError(output, "output ends in a path separator, so it names a directory, not a file; "
                                 f"give a name inside it such as {example}")


# -- small text outputs ----------------------------------------------------------------------------------
def write_text(path: str | os.PathLike[str], text: str, *, format: str,
               inputs: Iterable[str | os.PathLike[str] | Checkpoint] = (), force: bool = False,
               what: str = "output file") -> WriteReport:
    """Write a small text file (a rules file, a state file) the way every output is written: guarded,
    parent directories created, written under a temporary name, read back, then renamed into place."""
    from formats.io.atomic import atomic_output

    out = os.fspath(path)
    guard_output(out, inputs=inputs, force=force, what=what)
    data = text.encode("utf-8")
    report = WriteReport(out, format, [out], bytes=len(data))
    with atomic_output(out, len(data), replace=force, what=what) as temp:
        with open(temp, "xb") as f:
            f.write(data)
        with open(temp, "rb") as f:
            if f.read(len(data) + 1) != data:
                raise VerificationError(out, "verification failed: the file does not read back as written")
    report.verified = True
    return report
