"""An opened HDF5 image: its structure (probed by libhdf5 in an isolated child), its bytes (read by
ckpt), and what the container around it held.

libhdf5 never runs in this process on a file ckpt is reading: a hostile file can crash it (a chunk
inflating to less than its size), hang it (zeroed global-heap objects behind a string attribute) or
make it allocate without bound. :func:`open_image` runs the structural walk in a forked child with a
memory limit and a stall timeout (:func:`formats.io.sandbox.run_isolated`; a few milliseconds for a
Keras file); values are then read here, from checked addresses, in bounded blocks
(:mod:`formats.keras_h5.storage`), and only what ckpt does not decode itself goes back to a child.
"""
from __future__ import annotations

import threading

from formats.core.errors import CorruptCheckpointError
from formats.core.records import field, record
from formats.io.sandbox import run_isolated
from formats.keras_h5 import probe
from formats.keras_h5.chunks import ChunkIndex
from formats.keras_h5.tree import DatasetInfo, Tree, parse_tree

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["H5Image", "open_image", "MEMORY", "ANSWER"]

MEMORY = 512 << 20
"""Address space an isolated child may add beyond the parent's (plus what the file's size justifies)."""
ANSWER = 32 << 20
"""Bytes an isolated child may send back beyond a small multiple of the file's size."""


@record
class H5Image:
    """An HDF5 image. ``path`` is the file named in errors (the ``.h5``, or the ``.keras`` holding it),
    ``size`` the image's bytes, ``source`` reads them (``readinto_at``), ``opener`` opens them with h5py
    (only ever called in an isolated child), ``container`` is ``file`` or ``zip``; ``extras`` the parsed
    ``config.json``/``metadata.json``, ``notes`` problems found while opening, ``crc_check`` a callable
    returning why the archive member's checksum fails (or None)."""

    path: str
    size: int
    container: str
    source: Any
    opener: Callable[[], Any]
    tree: Tree = field(default_factory=lambda: Tree({}, {}))
    extras: dict[str, Any] = field(default_factory=dict)
    notes: list[tuple[str, str]] = field(default_factory=list)
    crc_check: Any = None
    _closers: list[Any] = field(default_factory=list)
    _tables: dict[str, list[Any]] | None = None
    _indexes: dict[str, ChunkIndex] = field(default_factory=dict)
    _lock: Any = field(default_factory=threading.Lock)

    def read_into(self, offset: int, buffer: Any) -> None:
        """Fill ``buffer`` with the image's bytes from ``offset`` (a CorruptCheckpointError past its end)."""
        n = memoryview(buffer).nbytes
        if offset < 0 or offset + n > self.size:
            raise CorruptCheckpointError(self.path, f"bytes {offset:,}..{offset + n:,} lie outside the HDF5 "
                                                    f"image ({self.size:,} bytes)")
        try:
            self.source.readinto_at(offset, buffer)
        except (OSError, EOFError, ValueError) as exc:
            raise CorruptCheckpointError(self.path, f"cannot read bytes {offset:,}..{offset + n:,} ({exc})") from None

    def mapped(self, offset: int, size: int) -> memoryview | None:
        """``size`` bytes from ``offset`` as a read-only view of the file's pages, where the image is a plain file's
        bytes (not a member of an archive); None elsewhere."""
        where = getattr(self.source, "map_range", None)
        if where is None or offset < 0 or offset + size > self.size:
            return None
        try:
            return where(offset, size)
        except (OSError, ValueError):
            return None

    def read(self, offset: int, size: int) -> bytes:
        """``size`` bytes from ``offset``."""
        out = bytearray(size)
        self.read_into(offset, out)
        return bytes(out)

    def chunk_index(self, info: DatasetInfo) -> ChunkIndex:
        """The checked chunk table of a chunked dataset (every chunked dataset's is listed at the first ask)."""
        with self._lock:
            if self._tables is None:
                keys = [d.path for d in self.tree.datasets.values() if d.layout == "chunked" and d.error is None]
                self._tables = _load_tables(self, keys)
            if info.path not in self._indexes:
                self._indexes[info.path] = ChunkIndex(info, self._tables.get(info.path, []), self.size, self.path)
            return self._indexes[info.path]

    def values(self, info: DatasetInfo) -> bytes:
        """A dataset's values read by libhdf5 in an isolated child (see ``probe.dataset_values``)."""
        expected = info.elements * (16 if info.vlen else info.dtype.itemsize)
        answer = ANSWER + 8 * self.size + (0 if info.vlen else expected)
        return run_isolated(lambda beat: probe.dataset_values(self.opener, self.path, info.path, beat),
                            self.path, what=f"reading {info.path}", memory=MEMORY + 3 * answer,
                            max_output=answer, hold=_fork_lock())

    def close(self) -> None:
        """Release the bytes and whatever they were read from."""
        for closer in [getattr(self.source, "close", None), *self._closers]:
            try:
                if closer is not None:
                    closer()
            except Exception:  # noqa: BLE001 - closing must not raise
                pass


def open_image(path: str, size: int, container: str, source: Any, opener: Callable[[], Any]) -> H5Image:
    """Probe an HDF5 image's structure in an isolated child; the image (its ``source`` closed on failure)."""
    image = H5Image(path, size, container, source, opener)
    answer = ANSWER + 8 * size
    try:
        raw = run_isolated(lambda beat: probe.describe_file(opener, path, beat), path, what="reading the HDF5 structure",
                           memory=MEMORY + size, max_output=answer, hold=_fork_lock())
        image.tree = parse_tree(raw, path, answer)
    except BaseException:
        image.close()
        raise
    return image


def _load_tables(image: H5Image, keys: list[str]) -> dict[str, list[Any]]:
    from formats.core.bounded_json import load_json

    if not keys:
        return {}
    answer = ANSWER + 8 * image.size
    raw = run_isolated(lambda beat: probe.chunk_tables(image.opener, image.path, keys, beat), image.path,
                       what="reading the HDF5 chunk index", memory=MEMORY + image.size, max_output=answer,
                       hold=_fork_lock())
    tables = load_json(raw, image.path, "the HDF5 chunk index", max_bytes=answer, max_depth=4)
    if not isinstance(tables, dict) or not all(isinstance(v, list) for v in tables.values()):
        raise CorruptCheckpointError(image.path, "the HDF5 chunk index reported by the isolated reader is malformed")
    return tables


def _fork_lock() -> Any:
    """The lock :func:`run_isolated` holds while it forks, so no other thread holds h5py's global lock
    ("phil") in the child, or None when h5py does that itself.

    h5py 3.14 and later register ``os.register_at_fork`` handlers that take phil before a fork and release it
    after (h5py PR 2585); for those, nothing is needed. Older h5py (``h5py>=3.8`` is supported) has no public
    way to reach the lock, so ``h5py._objects.phil`` is used there: it is the only private name ckpt uses, and
    only on those versions. h5py is imported here in the parent either way, so that each child forks with it
    loaded.
    """
    import h5py

    if tuple(h5py.version.version_tuple[:2]) >= (3, 14):
        return None
    return h5py._objects.phil  # no public alternative before 3.14 (see above)
