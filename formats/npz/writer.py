"""The ``npz`` format's writer: an uncompressed ZIP64 ``.npz`` of ``<key>.npy`` members (the dtype policy
of :mod:`formats.io.npy_output`) plus, when given, the provenance record ``__ckpt_provenance__.npy``; guarded,
atomically, and read back: the central directory, each member's local header, ``.npy`` header (dtype and shape)
and bytes against the CRC32C taken as they were written (the sources are not read again), the provenance
record's bytes likewise. :func:`write` is the one signature of :mod:`formats.core.format`.

The archive is written by :class:`~formats.io.zip_stored.StoredZip`, byte for byte what :mod:`zipfile` writes,
:data:`RUN` members at a time: the small fixed-width tensors among them whose bytes lie unchanged in a local
file (a bundle's) are read together, a span at a time, each checked against its CRC32C
(:func:`~formats.io.spans.read_checked`), and each run of them goes in at once
(:meth:`~formats.io.zip_stored.StoredZip.add_many`: no Python step a member); any other small tensor (under
:data:`~formats.io.zip_stored.SPOOL` bytes) is one ``.npy`` in memory written with its CRC-32 known, in its
place; a larger one streams in bounded chunks, through a second thread from
:data:`~formats.io.placed.PIPELINE_BYTES` (reading the next chunk while one is written and checksummed). The
archive is read back in blocks of many members at once (each distinct ``.npy`` header parsed once a block;
large members on every core).
"""
from __future__ import annotations

import math
import os
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from _operator import add, attrgetter, itemgetter  # operator's C half, without operator.py (start-up)
from itertools import accumulate, compress, islice, repeat

from formats.core.errors import InvalidOutputError
from formats.core.model import Checkpoint, FormatName, TensorEntry
from formats.core.shapes import MAX_RANK
from formats.core.provenance import (OBJECT_GRAPH_MEMBER, PROVENANCE_MEMBER, CarriedGraph, as_written, record_pieces,
                                     without_plain)
from formats.core.sources import CHUNK, Source, describe_all
from formats.io.atomic import atomic_output, refuse_url
from formats.io.placed import PIPELINE_BYTES, ThreadedSink
from formats.core.roundtrip import Mismatch, RoundTripReport
from formats.io.npy_output import (Written, bits_note, check_member_names, fixed_member, member_name, npy_header,
                                   named_as_written, small_member, stores_bits, tally_member,
                                   write_member)
from formats.io.spans import SMALL_BYTES, SPAN_BYTES, read_checked, small_ranges
from formats.io.writing import RowPairs, Stored, StoredRows, WriteReport, guard_output, sources_of
from formats.io.zip_stored import MAX_MEMBERS, SPOOL, ZIP64_LIMIT, StoredZip, ZipMember

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from formats.core.format import Row

__all__ = ["write", "write_npz"]

_BUFFER = 1 << 20
"""The output file's write buffer (many small members go out in one system call)."""


def write(output: str, rows: Sequence[Row], *, layout: str = FormatName.NPZ.value, force: bool = False,
          verify: bool = True, inputs: Sequence[Any] = (), progress: Callable[[int, int], None] | None = None,
          jobs: int | None = None, link: bool = False, options: Mapping[str, Any] | None = None) -> WriteReport:
    """Write ``rows`` as an ``.npz`` (``options["provenance"]``: the record to store, with each row's dtype and
    shape as written; one is made when a dtype numpy lacks is stored as its bits); ``jobs`` and ``link`` do not
    apply."""
    provenance = as_written((options or {}).get("provenance"), rows, any(stores_bits(r.dtype) for r in rows))
    return write_npz(output, RowPairs(rows), provenance=provenance, object_graph=(options or {}).get("object_graph"),
                     inputs=list(inputs), force=force, verify=verify, progress=progress)


MEMBER_CHUNK = CHUNK // 2
"""Bytes of a member's stream handed to the writing thread at a time: three are in memory at once (one read,
one queued, one written), 12 MiB, which keeps ``extract`` of a 2 GiB tensor under issue 38's 60 MiB."""


def write_npz(path: str | os.PathLike[str], items: Sequence[tuple[str, Source]], *,
              provenance: dict[str, Any] | None = None, object_graph: bytes | CarriedGraph | None = None,
              inputs: Sequence[str | Checkpoint] = (),
              force: bool = False, verify: bool = True, allow_pickle: bool = False, chunk: int = MEMBER_CHUNK,
              progress: Callable[[int, int], None] | None = None) -> WriteReport:
    """Write ``(key, source)`` pairs to an uncompressed ZIP64 ``.npz`` (member ``<key>.npy`` each, plus the
    provenance record and an object-based source's ``object_graph`` when given: its bytes, or a
    :class:`~formats.core.provenance.CarriedGraph` read a piece at a time as the member is written), guarded,
    atomically, read back and compared; see the module doc."""
    out = os.fspath(path)
    refuse_url(out)
    provenance = without_plain(provenance, named_as_written)  # (no item where none says more than the member)
    extras = [PROVENANCE_MEMBER] * (provenance is not None) + [OBJECT_GRAPH_MEMBER] * (object_graph is not None)
    members = len(items) + len(extras)
    if members > MAX_MEMBERS:  # (before anything is written: ckpt would not read it back)
        raise InvalidOutputError(out, f"an npz of {members:,} members; ckpt reads at most {MAX_MEMBERS:,}",
                                 "write fewer tensors a file (a selection of them)")
    check_member_names([key for key, _ in items], out)  # (each name made again as it is written, not held)
    sources = sources_of(items)
    guard_output(out, inputs=inputs, sources=sources, force=force)
    report = WriteReport(out, FormatName.NPZ.value, [out])
    written: list[Written] = []  # (shared: one a kind of member)
    described = describe_all(sources)  # one tuple a dtype and shape
    alike = dict(zip(map(id, described), described))
    sizes_of = {at: _small_size(*kind) for at, kind in alike.items()}  # (by kind: they may go in runs if not 0)
    kinds = {at: _Kind(kind) for at, kind in alike.items() if sizes_of[at]}
    del alike
    planned = sum(math.prod(shape) * dt.itemsize for dt, shape in described if dt.fixed_width)
    with atomic_output(out, planned, replace=force, sources=sources) as temp:
        with open(temp, "xb", buffering=_BUFFER) as f:
            archive = StoredZip(f)
            pairs = zip(items, described)
            for small in _parts(described, sizes_of):
                _write_part(archive, out, list(islice(pairs, len(small))), small, kinds, written, report,
                            allow_pickle, chunk, progress)
            if provenance is not None:
                _write_record(archive, provenance)
            graph_size = 0
            if object_graph is not None:
                graph_size = _write_graph(archive, object_graph)
            archive.close()
        report.contents = StoredRows(range(len(written)), lambda i: Stored(
            items[i][0], items[i][0] + ".npy", described[i][0].name, written[i].stored, described[i][1]))
        if verify:
            _verify_npz(temp, out, archive, items, written, [shape for _, shape in described], report, extras,
                        graph_size)
    return report


RUN = 2048
"""Members :func:`_write_part` takes at a time (the small ones among them written in runs)..."""
RUN_BYTES = SPAN_BYTES
"""...holding at most about this many bytes of small tensors (read by one ``pread``, held until written)."""


def _parts(described: list[Any], sizes_of: dict[int, int]) -> Iterator[list[int]]:
    """Consecutive members, :data:`RUN` at a time and no more than :data:`RUN_BYTES` of small tensors: of each
    part, each member's size where it may go in a run, else 0 (``sizes_of``: by the ``id`` of its ``described``
    tuple), the part's end found by bisection."""
    start, count = 0, len(described)
    while start < count:
        sizes = list(map(sizes_of.__getitem__, map(id, described[start:start + RUN])))
        stop = max(1, bisect_right(list(accumulate(sizes)), RUN_BYTES))
        yield sizes[:stop]
        start += stop


def _small_size(dt: Any, shape: tuple[int, ...]) -> int:
    """The bytes of a tensor of ``dt`` and ``shape`` that may be written in a run (fixed-width, none of its
    dimensions 0, small enough to be read as part of a span), else 0."""
    if not dt.fixed_width or 0 in shape or len(shape) > MAX_RANK:
        return 0
    size = math.prod(shape) * dt.itemsize
    return size if size <= min(SMALL_BYTES, SPOOL, PIPELINE_BYTES) else 0


def _write_part(archive: StoredZip, out: str, part: list[tuple[tuple[str, Source], Any]], small: list[int],
                kinds: dict[int, _Kind], written: list[Written], report: WriteReport, allow_pickle: bool, chunk: int,
                progress: Callable[[int, int], None] | None) -> None:
    """Write the members of ``part`` in order: runs of small tensors whose bytes lie unchanged in a file, read in
    spans and checked (:func:`~formats.io.spans.read_checked`), with :meth:`StoredZip.add_many`; any other (or one
    whose bytes do not read back whole and as stored: it then says what is wrong) by :func:`_write_member`."""
    at = [j for j in compress(range(len(part)), small) if isinstance(part[j][0][1], TensorEntry)
          and part[j][0][1].dtype == part[j][1][0].name]
    pieces: list[Any] = [None] * len(part)
    if at:  # (the part holds at most RUN_BYTES of them: read together)
        got: list[Any] = read_checked(small_ranges([part[j][0][1] for j in at]), RUN_BYTES)
        if len(at) == len(part) and None not in got and list(map(len, got)) == small:
            pieces = got  # (the usual case: every one of them read and checked, as it was planned)
        else:
            for j, piece in zip(at, got):
                if piece is not None and len(piece) == small[j]:
                    pieces[j] = piece
    j = 0
    while j < len(part):
        if pieces[j] is None:
            (key, source), (dt, shape) = part[j]
            member = _write_member(archive, member_name(key, out), key, source, (dt, shape), allow_pickle, chunk)
            written.append(member)
            tally_member(report, key, dt, member.nbytes, progress)
            j += 1
            continue
        stop = j + 1
        while stop < len(part) and pieces[stop] is not None:
            stop += 1
        _write_run(archive, part[j:stop], pieces[j:stop], kinds, written, report, progress)
        j = stop


class _Kind:
    """What the members of one small kind (a dtype and shape) of a run share: their ``.npy`` header, their
    :class:`Written`, and whether they are stored as their bits (a note each)."""

    __slots__ = ("header", "written", "bits")

    def __init__(self, kind: tuple[Any, tuple[int, ...]]) -> None:
        self.header, self.written = small_member(kind[0].name, kind[1])
        self.bits = kind[0].name if stores_bits(kind[0].name) else None


def _write_run(archive: StoredZip, run: list[tuple[tuple[str, Source], Any]], pieces: list[Any],
               kinds: dict[int, _Kind], written: list[Written], report: WriteReport,
               progress: Callable[[int, int], None] | None) -> None:
    """Write a run of small tensors (``kinds``: theirs, by the ``id`` of each ``describe`` tuple), each of
    ``pieces`` the bytes of one as stored (checked), as :func:`_write_member` writes each; count them in
    ``report`` as :func:`~formats.io.npy_output.tally_member` counts each."""
    keys = [pair[0] for pair, _ in run]
    made = [kinds[id(kind)] for _, kind in run]
    archive.add_many([key + ".npy" for key in keys], list(map(_HEADER, made)), pieces)
    members = list(map(_WRITTEN, made))
    written += members
    if any(map(_BITS, made)):
        report.warnings += [bits_note(key, kind.bits) for key, kind in zip(keys, made) if kind.bits]
    if progress is None:
        report.tensors += len(run)
        report.bytes += sum(map(_NBYTES, members))
        return
    for member in members:
        report.tensors += 1
        report.bytes += member.nbytes
        progress(report.bytes, report.tensors)


_HEADER, _WRITTEN, _BITS, _NBYTES = map(attrgetter, ("header", "written", "bits", "nbytes"))


def _write_member(archive: StoredZip, name: str, key: str, source: Source, described: tuple[Any, tuple[int, ...]],
                  allow_pickle: bool, chunk: int) -> Written:
    """One member: a small fixed-width tensor in one go, any other streamed (see the module doc)."""
    dt, shape = described
    size = math.prod(shape) * dt.itemsize if dt.fixed_width else -1
    if 0 <= size < min(SPOOL, PIPELINE_BYTES):
        header, data, written = fixed_member(key, source, dt, shape, chunk)
        archive.add(name, header, data)
        return written
    member = archive.member(name)
    summed = _Summing(member, size >= PIPELINE_BYTES)
    try:
        written = write_member(summed, key, source, allow_pickle, chunk)  # type: ignore[arg-type]
        summed.finish()
    finally:
        summed.close()
    member.close()
    return written


class _Summing:
    """A write-only member handed to :func:`~formats.io.npy_output.write_member` (the member takes the CRC-32
    and CRC32C of what goes through it). ``threaded``: a second thread writes while the caller reads the next
    chunk from its source (:class:`~formats.io.placed.ThreadedSink`); :meth:`finish` waits for it."""

    def __init__(self, f: ZipMember, threaded: bool = False) -> None:
        self.f = f
        self.sink = ThreadedSink(self) if threaded else None

    def piece(self, item: Any, data: Any) -> None:
        """Write ``data`` (on the writing thread when there is one)."""
        self.f.write(data)

    def write(self, data: Any) -> int:
        if self.sink is not None:
            self.sink.piece(None, data)
        else:
            self.piece(None, data)
        return memoryview(data).nbytes

    def finish(self) -> None:
        """Everything handed over is written (an error of the writing thread is raised here)."""
        if self.sink is not None:
            self.sink.finish()

    def close(self) -> None:
        """Stop the writing thread (after an error too)."""
        if self.sink is not None:
            self.sink.close()


_RECORD_CHARS = 1 << 18
_SPOOL_CHARS = 1 << 20
"""A record longer than this waits for its header on disk (a temporary file), not in memory (at 10^5 tensors the
record is about 8 MB: held whole, it was a tenth of ``extract``'s peak)."""


def _write_record(archive: StoredZip, provenance: dict[str, Any]) -> None:
    """The record as ``numpy.lib.format.write_array(np.array(json.dumps(provenance)))`` writes it: a 0-d
    ``<U<n>`` array (UTF-32 code units). Its ``"tensors"`` may be any iterable, consumed once
    (:func:`~formats.core.provenance.record_pieces`): the text, ASCII (``json.dumps`` escapes every other
    character), is spooled until its length, which the header names, is known, then written a piece at a time
    (never the whole text, nor a dict per tensor, in memory at once)."""
    from formats.io.spool import Spool

    with Spool(_SPOOL_CHARS) as spool:
        for piece in record_pieces(provenance):
            spool.write(piece.encode("ascii"))
        length = spool.size
        header = npy_header(f"<U{length}", ())
        member = archive.member(PROVENANCE_MEMBER + ".npy", zip64=len(header) + 4 * length > ZIP64_LIMIT)
        member.write(header)
        for chunk in spool.chunks(_RECORD_CHARS):
            member.write(chunk.decode("ascii").encode("utf-32-le"))
        member.close()


def _write_graph(archive: StoredZip, graph: bytes | CarriedGraph) -> int:
    """The object graph as ``numpy.save`` writes ``np.frombuffer(graph, np.uint8)``: a 1-D ``|u1`` array (streamed
    a piece at a time from a :class:`~formats.core.provenance.CarriedGraph`); returns its size."""
    size, pieces = (len(graph), (graph,)) if isinstance(graph, bytes) else graph.pieces()
    header = npy_header("|u1", (size,))
    member = archive.member(OBJECT_GRAPH_MEMBER + ".npy", zip64=len(header) + size > ZIP64_LIMIT)
    member.write(header)
    for piece in pieces:
        member.write(piece)
    member.close()
    return size


_CHECKED = 4096
"""Kinds of member (the header read back, what was written, the shape and the size) whose problems the read-back
keeps: 100,000 tiny tensors are a few kinds, each checked once."""


def _verify_npz(temp: str, out: str, archive: StoredZip, items: Sequence[tuple[str, Source]],
                written: list[Written], shapes: Sequence[tuple[int, ...]], report: WriteReport,
                extras: Sequence[str] = (PROVENANCE_MEMBER,), graph_bytes: int = 0) -> None:
    """Read the archive back (:meth:`~formats.io.zip_stored.StoredZip.problems`): its central directory, every
    member's local header and bytes against the CRC32C taken as they were written (the sources are not read
    again), each tensor's ``.npy`` header against what was written (dtype, shape, size; a pickled member's
    sha256), the provenance record's header (a 0-d unicode array) and the object graph's (``graph_bytes`` of
    ``uint8``); ``extras``: the names of the members after the tensors, in order."""
    from formats.io.npy_header import NpyError, npy_header_of
    from formats.io.npy_output import header_problems

    found = RoundTripReport(out, "sources")
    count = len(items)
    checked: dict[tuple[int, int, tuple[int, ...], int], tuple[Any, Written, list[tuple[str, str]]]] = {}

    def key_of(i: int) -> str:
        return items[i][0] if 0 <= i < count else extras[i - count] if 0 <= i - count < len(extras) else out

    def visit(i: int, view: memoryview, whole: bool) -> None:
        try:
            header = npy_header_of(view)  # (a plain descr read without numpy: it is not imported to write an npz)
        except NpyError as exc:
            found.mismatches.append(Mismatch(key_of(i), "value", f"member does not read back: {exc}"))
            return
        if i >= count:
            if key_of(i) == OBJECT_GRAPH_MEMBER:
                if header.descr != "|u1" or header.shape != (graph_bytes,):
                    found.mismatches.append(Mismatch(OBJECT_GRAPH_MEMBER, "value", "the object graph does not read "
                                                                                    "back as a 1-D uint8 array"))
            elif header.kind != "U" or header.shape != ():
                found.mismatches.append(Mismatch(PROVENANCE_MEMBER, "value", "the provenance record does not read "
                                                                              "back as a 0-d unicode array"))
            return
        member, shape, size = written[i], shapes[i], archive.sizes[i]
        asked = (id(header), id(member), shape, size)  # (a header read back and a Written are shared by their kinds)
        known = checked.get(asked)
        if known is not None and known[0] is header and known[1] is member:
            problems = known[2]
        else:
            problems = header_problems(header, member, shape, size)
            if len(checked) < _CHECKED:
                checked[asked] = (header, member, problems)
        if problems:
            found.mismatches += [Mismatch(items[i][0], kind, problem) for kind, problem in problems]
        found.tensors += 1
        found.bytes += member.nbytes
        digest = member.digest
        if digest is not None and not problems:
            import hashlib  # (a pickled member's only: not imported for the rest)

            stored = view if whole else _member_bytes(temp, archive.starts[i], archive.sizes[i])
            if hashlib.sha256(stored).hexdigest() != digest:
                found.mismatches.append(Mismatch(items[i][0], "value", "the pickled member does not read back as "
                                                                       "written"))

    def visit_many(first: int, views: list[memoryview]) -> None:
        """:func:`visit` of each of ``views`` (the members ``first``, ``first + 1``, ...; the record too, where it
        is among them), each distinct ``.npy`` header read back parsed once and each distinct question of it asked
        once, with no Python step a member; a run :func:`visit` alone can answer for (a header not of version 1.0
        or that does not parse, a pickled member) goes a member at a time."""
        tensors = views[:count - first]
        n = len(tensors)
        members = written[first:first + n]
        headers = None if any(map(_DIGEST, members)) else _headers(tensors)
        parsed: dict[bytes, Any] = {}
        for header in set(headers or ()):
            try:
                parsed[header] = npy_header_of(header)
            except NpyError:
                parsed.clear()
                break
        if not parsed or headers is None:
            for i, view in enumerate(views, first):
                visit(i, view, True)
            return
        shapes_here, sizes = shapes[first:first + n], archive.sizes[first:first + n]
        if headers.count(headers[0]) == n and members.count(members[0]) == n and \
                shapes_here.count(shapes_here[0]) == n and sizes.count(sizes[0]) == n:  # (a block of one kind)
            problems = header_problems(parsed[headers[0]], members[0], shapes_here[0], sizes[0])
            for key, _ in items[first:first + n] if problems else ():
                found.mismatches += [Mismatch(key, kind, problem) for kind, problem in problems]
            _counted(found, n, members, views, count, visit)
            return
        by_id = {id(value): value for value in parsed.values()}
        by_id.update(zip(map(id, members), members))
        by_id.update(zip(map(id, shapes_here), shapes_here))
        asked = list(zip(map(id, map(parsed.__getitem__, headers)), map(id, members), map(id, shapes_here),
                         sizes))  # (by the objects' ids: no tuple hashed a member)
        answers = {question: header_problems(by_id[question[0]], by_id[question[1]], by_id[question[2]], question[3])
                   for question in set(asked)}
        if any(answers.values()):
            for i, question in enumerate(asked, first):
                found.mismatches += [Mismatch(items[i][0], kind, problem) for kind, problem in answers[question]]
        _counted(found, n, members, views, count, visit)

    for i, problem in archive.problems(temp, visit, visit_many=visit_many):
        found.mismatches.append(Mismatch(key_of(i), "value", problem))
    report.accept(found)


_V1 = 10
"""Bytes of a version 1.0 ``.npy`` header before its text: the magic, the version, the text's length."""
_HEAD, _DIGEST = itemgetter(slice(0, _V1)), attrgetter("digest")


def _counted(found: RoundTripReport, n: int, members: list[Written], views: list[memoryview], count: int,
             visit: Callable[[int, memoryview, bool], None]) -> None:
    """Count a block's ``n`` tensors read back in ``found``; the members after the tensors (the record, the object
    graph), where they end the block, visited."""
    found.tensors += n
    found.bytes += sum(map(_NBYTES, members))
    for i, view in enumerate(views[n:], count):
        visit(i, view, True)


def _headers(views: list[memoryview]) -> list[bytes] | None:
    """The version 1.0 ``.npy`` header (magic, version, length and text) at the start of each of ``views``, as
    their own lengths say; None where one does not start so. The usual block, members of one header length, takes
    one slice a member: the first member's length tried for all, each distinct header found checked to say it."""
    if not views:
        return []
    length = _v1_length(bytes(views[0][:_V1]))
    if length is not None:
        found = list(map(bytes, map(itemgetter(slice(0, _V1 + length)), views)))
        if all(_v1_length(header[:_V1]) == length for header in set(found)):
            return found
    heads = list(map(bytes, map(_HEAD, views)))  # (of several lengths: each one's own)
    lengths = {head: _v1_length(head) for head in set(heads)}
    if None in lengths.values():
        return None
    return list(map(bytes, map(memoryview.__getitem__, views, map(slice, repeat(0), map(add, map(
        lengths.__getitem__, heads), repeat(_V1))))))


def _v1_length(head: bytes) -> int | None:
    """The length of the header text after ``head`` (a member's first :data:`_V1` bytes) when it starts a version
    1.0 ``.npy``, else None."""
    from formats.io.npy_header import MAGIC

    if len(head) == _V1 and head[:6] == MAGIC and head[6:8] == b"\x01\x00":
        return int.from_bytes(head[8:], "little")
    return None


def _member_bytes(path: str, offset: int, size: int) -> bytes:
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read(size)
