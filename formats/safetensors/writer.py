"""The ``safetensors`` format's writer: the documented layout (8-byte header length, JSON header with
``__metadata__``, then the data), written without the ``safetensors`` package (which reads it back);
``options["provenance"]`` goes in ``__metadata__["ckpt.provenance"]``, ``options["object_graph"]`` (an
object-based source's graph: bytes or a ``CarriedGraph``) in ``__metadata__["ckpt.object_graph"]`` as base64
(left out, with a warning in the report, where the header would pass its limit with it and not without);
``options["metadata"]`` adds to (or replaces) ``__metadata__``'s other fields (``{"format": "pt"}`` for transformers). Guarded, written atomically
(tensors stored unchanged in an input copied by the kernel, others streamed: :mod:`formats.io.placed`), and
read back: the header byte for byte, every tensor's bytes against the CRC32C of what was written (taken on
the way out, or the input's own for copied bytes), without reading the sources again. :func:`write` is the
one signature of :mod:`formats.core.format`.
"""
from __future__ import annotations

import itertools
import math
import os
import struct
from _operator import attrgetter, itemgetter, ne  # operator's C half, without operator.py (start-up)

from formats.core.dtypes import by_name
from formats.core.errors import InvalidOutputError, VerificationError
from formats.core.json_writer import dumps, encode_basestring_ascii
from formats.core.model import FormatName, TensorEntry
from formats.core.provenance import (OBJECT_GRAPH_METADATA, PROVENANCE_KEY, as_written, record_pieces,
                                     without_plain)
from formats.core.roundtrip import Mismatch, RoundTripReport
from formats.core.sources import CHUNK
from formats.io.placed import (UNASKED, Copied, Placed, check_copied, check_placed, stored_unchanged,
                               stored_unchanged_all, write_copied, write_placed)
from formats.io.writing import Stored, StoredRows, WriteReport, guard_output
from formats.safetensors.header import DTYPES, MAX_HEADER_BYTES, METADATA, TF_DTYPES, key_problem

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping, Sequence
    from typing import Any

    from formats.io.spool import Spool

    from formats.core.format import Row
    from formats.core.provenance import CarriedGraph

__all__ = ["write"]


_AT_ONCE = 1024
"""Tensors whose header entries one ``dumps`` call encodes (:func:`_header_pieces`)."""
_SPOOL_BYTES = 8 << 20
"""A header longer than this waits for its length, which the file starts with, on disk (a temporary file)."""
_READ = 1 << 20
"""Bytes of the header copied to the output, or compared with what was written, at a time."""
_RECORD = object()
"""Holds the provenance record's place in ``__metadata__`` (first) until its text is written."""


def write(output: str, rows: Sequence[Row], *, layout: str = FormatName.SAFETENSORS.value, force: bool = False,
          verify: bool = True, inputs: Sequence[Any] = (), progress: Callable[[int, int], None] | None = None,
          jobs: int | None = None, link: bool = False, options: Mapping[str, Any] | None = None) -> WriteReport:
    """Write ``rows`` (fixed-width dtypes safetensors names) as a ``.safetensors`` file at ``output``, read back
    on ``jobs`` threads (None: every core); ``link`` does not apply. The header is the text ``json.dumps`` makes
    of ``{"__metadata__": ..., key: {"dtype", "shape", "data_offsets"}, ...}`` (no spaces), written a run of
    tensors at a time and the provenance record an item at a time (:func:`_header_pieces`), spooled until its
    length is known: neither a dict per tensor nor the whole text is held (at 100k tensors both were 190 MB)."""
    from formats.io.atomic import atomic_output, refuse_url
    from formats.io.spool import Spool

    refuse_url(output)
    keys = {row.key for row in rows}
    if len(keys) != len(rows) or METADATA in keys:
        raise InvalidOutputError(output, f"a safetensors header names each tensor once, and none {METADATA}")
    if not all(map(str.isascii, keys)):  # (ASCII is UTF-8: only the others are asked)
        problem = next(filter(None, map(key_problem, sorted(keys))), None)
        if problem is not None:
            raise InvalidOutputError(output, problem)
    del keys
    record = without_plain(as_written((options or {}).get("provenance"), rows), _named_as_written)  # (each row as written)
    floor = header_floor(rows, record is not None and record["tensors"] != [])
    if floor > MAX_HEADER_BYTES:  # (before the header is made: 10^6 tensors were 6 s of work for this answer)
        raise InvalidOutputError(output, f"the safetensors header would be at least {floor:,} bytes for "
                                         f"{len(rows):,} tensors; safetensors readers accept at most "
                                         f"{MAX_HEADER_BYTES:,}", _TOO_MANY)
    metadata = {**({PROVENANCE_KEY: _RECORD} if record else {}), "format": "np", **(options or {}).get("metadata", {})}
    graph = (options or {}).get("object_graph")  # (its bytes, or a CarriedGraph that reads them)
    graph_piece = None if graph is None else _GraphPiece(graph)  # (base64, as metadata values are strings)
    del graph
    sizes = [math.prod(row.shape) * by_name(row.dtype).itemsize for row in rows]
    values, dtypes = [row.value for row in rows], [row.dtype for row in rows]
    columns = _copied_columns(values, dtypes, sizes)  # (every one copied, found with arrays: a large bundle's)
    lasting = stored = None
    begins: Any
    if columns is not None:
        order, begins, offset = _column_order(*columns)
        first: tuple[int, int, int, int] | None = tuple(int(c[order[0]]) for c in columns)  # type: ignore[assignment]
        streamed = 0
    else:
        lasting = stored_unchanged_all(values, dtypes, sizes)  # (None: not found at once, and asked again as copied)
        stored = lasting if lasting is not None else list(map(stored_unchanged, values, dtypes, sizes))
        order = _data_order(stored)
        first = stored[order[0]] if order else None
        streamed = sum(size for size, where in zip(sizes, stored) if where is None)  # write_placed need not ask again
        if type(order) is range:  # (the bytes in the order given: each begins where the ones before end)
            begins = list(itertools.accumulate(sizes, initial=0))
            offset = begins.pop()
        else:
            begins = [0] * len(rows)
            offset = 0
            for i in order:
                begins[i] = offset
                offset += sizes[i]
    left_out = ""
    with Spool(_SPOOL_BYTES) as header:
        length = graph_at = 0
        for piece in _header_pieces(metadata, record, rows, begins, sizes, graph_piece):
            if piece is graph_piece:
                graph_at = length
                length += graph_piece.write_to(header)
                continue
            length += header.write(piece.encode("ascii"))  # (dumps escapes the rest)
        cut = length - (0 if graph_piece is None else len(graph_piece))
        if graph_piece is not None and length + _padding(8 + length, first) > MAX_HEADER_BYTES \
                >= cut + _padding(8 + cut, first):
            left_out = (f"the object graph is left out: with its {len(graph_piece):,} bytes the safetensors header "
                        f"would pass {MAX_HEADER_BYTES:,}; convert --to tf-object of this file rebuilds the objects "
                        "from its keys")
            header.cut(graph_at, len(graph_piece))
            length -= len(graph_piece)
        length += header.write(b" " * _padding(8 + length, first))
        if length > MAX_HEADER_BYTES:  # before anything is written
            raise InvalidOutputError(output, f"the safetensors header would be {length:,} bytes for {len(rows):,} "
                                             f"tensors; safetensors readers accept at most {MAX_HEADER_BYTES:,}",
                                     _TOO_MANY)
        guard_output(output, inputs=list(inputs), sources=values, force=force)
        report = WriteReport(output, FormatName.SAFETENSORS.value, [output])
        if left_out:
            report.warnings.append(left_out)
        start = 8 + length
        copied: Copied | None = None
        items: list[Placed] = []
        if columns is not None:  # (in the order given: the columns as they are)
            fds, offsets, lengths, crcs = columns if type(order) is range else (c[order] for c in columns)
            begins += start
            copied = Copied(fds, offsets, lengths, crcs, begins if type(order) is range else begins[order], order,
                            lambda row: rows[row].key, lambda row: rows[row].value)
        else:
            items = [Placed(rows[i].key, values[i], start + begins[i], sizes[i], dtypes[i],
                            UNASKED if lasting is None else stored[i]) for i in order]  # type: ignore[index]
        del begins, stored, lasting, values, dtypes, columns

        def count_run(tensors: int, nbytes: int) -> None:
            report.tensors += tensors
            report.bytes += nbytes
            if progress is not None:
                progress(report.bytes, report.tensors)

        def count(item: Placed) -> None:
            count_run(1, item.size)

        with atomic_output(output, offset, replace=force, sources=(row.value for row in rows)) as temp:
            with open(temp, "xb") as out:
                out.write(struct.pack("<Q", length))
                for chunk in header.chunks(_READ):
                    out.write(chunk)
                # read back while the last pieces are flushed (the file still open, so the flush has its descriptor)
                if copied is not None:
                    write_copied(out, copied, count_run, then=(lambda: _verify(
                        temp, output, header, length, copied, report, jobs)) if verify else None)
                else:
                    write_placed(out, items, CHUNK, count,
                                 then=(lambda: _verify(temp, output, header, length, items, report, jobs))
                                 if verify else None, streamed=streamed)
    report.contents = StoredRows(rows, _stored)  # in the order given, as the header lists them; made when asked for
    return report


def _stored(row: Row) -> Stored:
    """The report's line of a row written (its key, dtype and shape, each stored as it is)."""
    return Stored(row.key, row.key, row.dtype, row.dtype, tuple(row.shape))


_TOO_MANY = "write fewer tensors a file (a selection of them), or an npz file, which has no such limit"
_ENTRY_FLOOR = len(',"' + '":{"dtype":"' + "I8" + '","shape":[' + '],"data_offsets":[' + "0,0]}")
"""The fewest characters a tensor's entry in the header takes beside its key (a comma, the shortest dtype code,
no dimension, offsets of one digit)."""
_ITEM_FLOOR = len('{"key":"' + '","dtype":"' + "bool" + '","shape":[]}')
"""The fewest a provenance record's item takes beside its key (inside the metadata's JSON string its quotes are
escaped, and it has a comma: more)."""


def _named_as_written(dtype: str) -> bool:
    """Whether a reader without ckpt's provenance record reads a tensor of ``dtype`` back as ``dtype`` (the header's
    code for it names it)."""
    return TF_DTYPES.get(DTYPES.get(dtype, "")) == dtype


def header_floor(rows: Sequence[Row], record: bool) -> int:
    """A number of bytes the header of ``rows`` (with a provenance record item each, if ``record``) is never shorter
    than: each key's characters (escaping only lengthens them) and the fewest each entry and item add."""
    keys = sum(map(len, map(_KEY, rows)))
    return keys + len(rows) * _ENTRY_FLOOR + ((keys + len(rows) * _ITEM_FLOOR) if record else 0)


_KEY = attrgetter("key")


class _GraphPiece:
    """The header's field ``,"ckpt.object_graph":"<base64 of the graph>"`` (ASCII bytes, :data:`OBJECT_GRAPH_METADATA`)
    of a graph given as its bytes or a :class:`~formats.core.provenance.CarriedGraph`: its length known from the
    graph's, its bytes written into the header a piece at a time (:meth:`write_to`). Neither the graph nor its base64
    is held whole (at 10^5 objects they were 31 MB of an export's peak)."""

    __slots__ = ("size", "_pieces", "_prefix")

    PIECE = 3 << 18
    """Graph bytes encoded at a time (a multiple of three: base64 of each is that of its part of the whole)."""

    def __init__(self, graph: bytes | CarriedGraph) -> None:
        self._prefix = b',"' + OBJECT_GRAPH_METADATA.encode() + b'":"'
        count, self._pieces = (len(graph), (graph,)) if isinstance(graph, bytes) else graph.pieces()  # (a bundle's
        self.size = len(self._prefix) + 4 * ((count + 2) // 3) + 1  # pieces: a generator, read as they are written)

    def __len__(self) -> int:
        return self.size

    def write_to(self, out: Any) -> int:
        """Write the field to ``out`` (``write(bytes)``), once; returns its length."""
        from binascii import b2a_base64

        out.write(self._prefix)
        step, carry = self.PIECE, b""
        for piece in self._pieces:
            view = memoryview(carry + piece if carry else piece)
            whole = len(view) - len(view) % 3
            for at in range(0, whole, step):
                out.write(b2a_base64(view[at:min(at + step, whole)], newline=False))
            carry = bytes(view[whole:])
        if carry:
            out.write(b2a_base64(carry, newline=False))
        out.write(b'"')
        return self.size


def _header_pieces(metadata: dict[str, Any], record: dict[str, Any] | None, rows: Sequence[Row],
                   begins: list[int], sizes: list[int], graph_piece: _GraphPiece | None = None) -> Iterator[Any]:
    """``json.dumps({"__metadata__": metadata, row.key: {"dtype", "shape", "data_offsets"}, ...},
    separators=(",", ":"))`` in pieces: ``metadata[PROVENANCE_KEY]``, when it holds :data:`_RECORD`, is the text
    of ``record`` (:func:`~formats.core.provenance.record_pieces`, an item at a time) as a JSON string,
    ``graph_piece`` (``,"ckpt.object_graph":"<base64>"``, :class:`_GraphPiece`: written by the caller), when given,
    the metadata's last field and a piece of its own, and the tensors' entries are encoded :data:`_AT_ONCE` at a
    time, each run their object's text without its braces."""
    separators = (",", ":")
    if record is not None and metadata.get(PROVENANCE_KEY) is _RECORD:
        rest = dumps({k: v for k, v in metadata.items() if k != PROVENANCE_KEY}, separators=separators)
        yield '{"' + METADATA + '":{' + encode_basestring_ascii(PROVENANCE_KEY) + ':"'
        for piece in record_pieces(record):  # ASCII: a JSON string of it escapes each character on its own
            yield encode_basestring_ascii(piece)[1:-1]
        yield '"' + ("," + rest[1:-1] if len(rest) > 2 else "")
    else:
        yield '{"' + METADATA + '":' + dumps(metadata, separators=separators)[:-1]  # ("format" always in it)
    if graph_piece is not None:
        yield graph_piece
    yield "}"
    kinds: dict[tuple[str, tuple[int, ...]], str] = {}  # (dtype, shape) -> the entry's text between key and offsets
    for first in range(0, len(rows), _AT_ONCE):  # (each entry as dumps writes it: keys unique, checked before)
        texts = []
        here: Any = begins[first:first + _AT_ONCE]
        for begin, size, row in zip(here if type(here) is list else here.tolist(), sizes[first:first + _AT_ONCE],
                                    map(rows.__getitem__, range(first, len(rows)))):
            shape = row.shape if type(row.shape) is tuple else tuple(row.shape)
            kind = kinds.get((row.dtype, shape))
            if kind is None:
                kind = f':{{"dtype":"{DTYPES[row.dtype]}","shape":[{",".join(map(str, shape))}],"data_offsets":['
                if len(kinds) < _KINDS:
                    kinds[(row.dtype, shape)] = kind
            texts.append(f"{encode_basestring_ascii(row.key)}{kind}{begin},{begin + size}]}}")
        yield "," + ",".join(texts)
    yield "}"


_KINDS = 4096
"""(dtype, shape) pairs whose header text :func:`_header_pieces` keeps (more: made each time)."""


def _data_order(stored: list[tuple[int, int, int, int] | None]) -> Sequence[int]:
    """The order of the tensors' bytes in the file: those stored unchanged in an input file first, in the order
    they lie there (so that a whole input data file becomes one kernel copy), the files in the order their first
    tensor is given (not by descriptor: which file was opened first must not change the output), then the others
    as given. The header lists every tensor in the order given; a reader goes by the offsets. A range when that is
    the order given (every one stored in one file, in the order they lie there: found by C functions, no sort)."""
    ranges: list[Any] = stored  # (no None among them, below)
    if stored and None not in stored and len(set(map(_FD, ranges))) == 1:
        offsets = list(map(_OFFSET, ranges))
        if all(map(int.__lt__, offsets, itertools.islice(offsets, 1, None))):
            return range(len(stored))
        return sorted(range(len(offsets)), key=offsets.__getitem__)  # (one file: by offset alone, a C key)
    rank: dict[int, int] = {}
    for i, where in enumerate(stored):
        if where is not None:
            rank.setdefault(where[0], i)
    copied = sorted((i for i, where in enumerate(stored) if where is not None),
                    key=lambda i: (rank[stored[i][0]], stored[i][1]))  # type: ignore[index]
    return copied + [i for i, where in enumerate(stored) if where is None]


_FD, _OFFSET = itemgetter(0), itemgetter(1)
_DTYPE = attrgetter("dtype")


def _copied_columns(values: Sequence[Any], dtypes: Sequence[str], sizes: Sequence[int]
                    ) -> tuple[Any, Any, Any, Any] | None:
    """Where every value is a tensor whose ``size`` bytes of its ``dtype`` lie unchanged in an input file, found
    with arrays (:meth:`~formats.core.model.TensorEntry.stored_range_columns`: a large bundle's), their descriptors,
    offsets, sizes and CRC32Cs as arrays in the order given; else None (each then asked as a tuple)."""
    first = values[0] if len(values) else None
    found = type(first).stored_range_columns(values) if isinstance(first, TensorEntry) else None
    if found is None:
        return None
    import numpy as np

    if not np.array_equal(found[2], np.array(sizes, np.int64)) or any(map(ne, map(_DTYPE, values), dtypes)):
        return None
    return found


def _column_order(fds: Any, offsets: Any, sizes: Any, crcs: Any) -> tuple[Sequence[int], Any, int]:
    """:func:`_data_order` of tensors stored as ``fds`` and ``offsets`` say (arrays: every one stored), with each
    one's ``begin`` in the data (an array, in the order given) and their bytes in all."""
    import numpy as np

    count = len(fds)
    order: Any
    if count and bool((fds == fds[0]).all()):
        order = range(count) if bool((offsets[1:] > offsets[:-1]).all()) else np.argsort(offsets, kind="stable")
    else:
        _, firsts, which = np.unique(fds, return_index=True, return_inverse=True)
        rank = np.empty(len(firsts), np.int64)
        rank[np.argsort(firsts, kind="stable")] = np.arange(len(firsts))  # (files in the order their first is given)
        order = np.lexsort((offsets, rank[which]))
    placed = sizes if type(order) is range else sizes[order]
    ends = np.cumsum(placed)
    total = int(ends[-1]) if count else 0
    ends -= placed  # (each one's begin, in the data's order)
    if type(order) is range:
        return order, ends, total
    begins = np.empty(count, np.int64)
    begins[order] = ends
    return order, begins, total


def _padding(start: int, first: tuple[int, int, int, int] | None) -> int:
    """Spaces after the header (which safetensors allows) so that the data starts 8-byte aligned and, where the
    first bytes (``first``: where they lie unchanged in an input file, else None) come from an input file at an
    8-byte-aligned offset, at the same offset modulo the page size as there: the kernel copies whole pages (an
    unaligned ``copy_file_range`` takes about twice as long)."""
    if first is None or first[1] % 8:
        return -start % 8
    return (first[1] - start) % 4096


def _verify(temp: str, output: str, header: Spool, length: int, items: Sequence[Placed] | Copied,
            report: WriteReport, jobs: int | None) -> None:
    """The header read back byte for byte (against ``header``, the spooled text); every tensor's bytes read back
    and checked against the CRC32C of the bytes written (taken on the way out, or stored with the input's bytes
    the kernel copied)."""
    with open(temp, "rb") as f:
        same = f.read(8) == struct.pack("<Q", length)
        for want in header.chunks(_READ):
            if not same:
                break
            same = f.read(len(want)) == want
        size = os.fstat(f.fileno()).st_size
    if not same:
        raise VerificationError(output, "verification failed: the safetensors header is not the planned one")
    nbytes = items.nbytes if isinstance(items, Copied) else sum(item.size for item in items)
    planned = 8 + length + nbytes
    if size != planned:
        raise VerificationError(output, f"verification failed: the file has {size} bytes, {planned} planned")
    found = RoundTripReport(output, "sources", tensors=len(items), bytes=nbytes)
    problems = check_copied(temp, items, jobs) if isinstance(items, Copied) else check_placed(temp, items, jobs)
    found.mismatches += [Mismatch(key, "value", problem) for key, problem in problems]
    report.accept(found)
