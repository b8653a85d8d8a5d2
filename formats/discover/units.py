"""Checkpoints named so that a unit of work can open them anywhere, and the work cut into units.

A :class:`SourceRef` is what travels to a worker in place of an opened checkpoint: its path or URL, its
format, the fsspec storage options of the URL's protocol (``fsspec.config.conf``, which fsspec fills from
``FSSPEC_<PROTOCOL>_<OPTION>`` variables and its config files; credentials otherwise come from the worker's
own environment, as they do on the client), and a token naming this run. :func:`opened` gives the
checkpoint a reference names in the process running the unit: the one the caller lent (:func:`lending`) when
units run on local threads - one code path, one opened index - else one opened there, once per run and
process, and kept for the next unit.

:func:`group_keys` cuts a list of tensors into units: consecutive runs (so a fixed-order merge is a
concatenation) of about ``budget`` stored bytes, a bigger tensor alone.
"""
from __future__ import annotations

import os

from formats.core.errors import UsageError
from formats.core.value_tuples import ValueTuple

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence
    from typing import Any, TypeVar

    R = TypeVar("R")

    from formats.core.model import Checkpoint

__all__ = ["SourceRef", "source_ref", "opened", "lending", "group_keys", "each_in_unit", "UNIT_BYTES",
           "buffer_settings", "reads_in_flight", "for_unit", "worker_slot"]

UNIT_BYTES = 64 << 20
"""Stored bytes of tensors per unit (a bigger tensor is a unit alone)."""
LOCAL_UNIT_BYTES = 1 << 20
"""Stored bytes of tensors per unit on local threads: small tensors go together (a unit per tensor costs a
hand-over between threads each, more than reading a tiny tensor), a bigger tensor is a unit alone."""
LOCAL_UNIT_ITEMS = 512
"""At most this many tensors per unit on local threads (progress and an early stop stay fine-grained)."""
_KEEP = 4  # checkpoints a worker process keeps open (one per run and side of a diff)


def buffer_settings() -> tuple[int, int]:
    """``(buffers, buffer bytes)`` a worker may hold: ``CKPT_WORKER_BUFFERS`` (2) data files written at once,
    each with one buffer of ``CKPT_BUFFER_MB`` (64) MiB; a unit that reads keeps one buffer's worth of chunks
    in flight (:func:`each_in_unit`)."""
    try:
        return (max(1, int(os.environ.get("CKPT_WORKER_BUFFERS", "2"))),
                max(5, int(os.environ.get("CKPT_BUFFER_MB", "64"))) << 20)
    except ValueError as exc:
        raise UsageError("", f"CKPT_WORKER_BUFFERS and CKPT_BUFFER_MB must be whole numbers ({exc})") from None


class SourceRef(ValueTuple):
    """A checkpoint by name: ``path`` (absolute, or a URL), ``format``, storage options, the run's token, and
    the sizes of its remote files."""

    path: str
    format: str
    options: tuple[tuple[str, Any], ...] = ()
    token: str = ""
    sizes: tuple[tuple[str, int | None], ...] = ()
    """Sizes of remote files the client found (:func:`for_unit`): a worker asks the store about no others."""


_lent: dict[SourceRef, Checkpoint] = {}
_opened: dict[SourceRef, Checkpoint] = {}


def storage_options(path: str) -> tuple[tuple[str, Any], ...]:
    """The fsspec options configured in this process for ``path``'s protocol (none for a local path)."""
    from formats.io import storage

    if not storage.is_url(path):
        return ()
    try:
        from fsspec.config import conf
    except ImportError:
        return ()
    protocol = path.split("://", 1)[0].lower()
    return tuple(sorted((conf.get(protocol) or {}).items()))


def source_ref(ckpt: Checkpoint, token: str = "") -> SourceRef:
    """The reference a unit opens ``ckpt`` by (a local path made absolute: workers have their own cwd)."""
    from formats.io import storage

    path = ckpt.path if storage.is_url(ckpt.path) else os.path.abspath(ckpt.path)
    return SourceRef(path, ckpt.format, storage_options(path), token)


class lending:  # noqa: N801 - used as a context manager, like open()
    """``with lending(ckpt, ref):`` units of this process naming ``ref`` use ``ckpt`` (already open)."""

    def __init__(self, ckpt: Checkpoint, ref: SourceRef) -> None:
        self.ckpt, self.ref = ckpt, ref

    def __enter__(self) -> SourceRef:
        _lent[_name(self.ref)] = self.ckpt
        return self.ref

    def __exit__(self, *exc: object) -> None:
        _lent.pop(_name(self.ref), None)


def _name(ref: SourceRef) -> SourceRef:
    """``ref`` without the sizes it carries: the units of one run name one checkpoint, each with its files."""
    return ref._replace(sizes=()) if ref.sizes else ref


def opened(ref: SourceRef) -> Checkpoint:
    """The checkpoint ``ref`` names, in this process: lent, already opened for this run, or opened now; it
    takes the sizes of remote files ``ref`` carries."""
    name = _name(ref)
    ckpt = _lent.get(name) or _opened.get(name)
    if ckpt is None:
        ckpt = _open(name)
    if ref.sizes:
        ckpt.know_remote_sizes(dict(ref.sizes))
    return ckpt


def _open(ref: SourceRef) -> Checkpoint:
    if ref.options:
        from fsspec.config import conf

        conf[ref.path.split("://", 1)[0].lower()] = dict(ref.options)
    from formats.core.errors import NotACheckpointError
    from formats.discover.resolve import open_checkpoint

    ckpt = open_checkpoint(ref.path)
    if ckpt.format != ref.format:
        ckpt.close()
        raise NotACheckpointError(ref.path, f"is {ckpt.format} here, {ref.format} where the work was planned")
    while len(_opened) >= _KEEP:
        _opened.pop(next(iter(_opened))).close()
    _opened[ref] = ckpt
    return ckpt


def for_unit(ref: SourceRef, ckpt: Checkpoint, keys: Iterable[str],
             known: dict[str, int | None] | None = None) -> SourceRef:
    """``ref`` carrying the sizes (as the client found them) of only the files that ``keys`` of ``ckpt`` are
    read from: what a unit reading those tensors needs, so a unit's arguments stay small however many data
    files the checkpoint has. ``ref`` itself when the client looked none up. ``known``: ``ckpt.remote_sizes()``,
    when the caller cuts many units of one checkpoint (taken once, not copied for every unit)."""
    if known is None:
        known = ckpt.remote_sizes()
    if not known:
        return _name(ref)
    files = {f for key in keys for f in ckpt[key].files if f in known}
    return ref._replace(sizes=tuple(sorted((f, known[f]) for f in files)))


def reads_in_flight() -> int:
    """Tensors a unit reads at once: one buffer (:func:`buffer_settings`) of read chunks (8 by default)."""
    from formats.io import storage

    return max(1, buffer_settings()[1] // storage.CHUNK)


_slots: dict[int, Any] = {}


def worker_slot(buffers: int | None = None) -> Any:
    """This process's semaphore of ``buffers`` (default: :func:`buffer_settings`' count) units holding a buffer
    at once: ``with worker_slot():`` around a unit's reading or writing bounds a worker's memory whatever its
    number of threads."""
    if buffers is None:
        buffers = buffer_settings()[0]
    if buffers not in _slots:
        import threading

        _slots[buffers] = threading.BoundedSemaphore(buffers)
    return _slots[buffers]


def each_in_unit(ckpt: Checkpoint, fn: Callable[[Any], R], items: Sequence[Any]) -> list[R]:
    """``[fn(item) for item in items]`` inside one unit, :func:`reads_in_flight` items at once when the
    checkpoint allows concurrent reads: a unit of many small tensors in a bucket is bound by each request's
    latency, not by bandwidth, if its tensors are read one after the other. Where the unit opened the
    checkpoint itself (a cluster worker), it first takes a :func:`worker_slot`; units on the caller's
    threads (a checkpoint lent) are bounded by ``--jobs`` instead."""
    from formats.core.parallel import map_ordered

    if any(c is ckpt for c in _lent.values()):  # the caller's threads run the units: one item after another
        return [fn(item) for item in items]
    jobs = reads_in_flight() if len(items) > 1 and ckpt.concurrent_reads else 1
    with worker_slot():
        return map_ordered(fn, items, jobs)


def group_keys(sizes: Iterable[tuple[Any, int]], budget: int = UNIT_BYTES,
               most: int | None = None) -> Iterator[tuple[tuple[Any, ...], int]]:
    """``(keys, bytes)`` of consecutive tensors of ``sizes`` (``(key, stored bytes)``; a key may be any
    picklable item, such as a pair to compare), about ``budget`` bytes each (one each for 0), at most
    ``most`` keys each (None: no limit)."""
    keys: list[Any] = []
    total = 0
    for key, size in sizes:
        if keys and (total + size > budget or len(keys) == most):
            yield tuple(keys), total
            keys, total = [], 0
        keys.append(key)
        total += size
    if keys:
        yield tuple(keys), total
