"""The contract every format fulfils: a :class:`Checkpoint` mapping keys to :class:`TensorEntry`.

A format's entries must implement :meth:`TensorEntry.read`; every other capability has a default
that works for any format, and a format overrides what it can do better:

===========================  ========================================================  ==================
capability                   what it is for                                            default
===========================  ========================================================  ==================
``TensorEntry.read()``       the whole value                                           (required)
``iter_chunks(n)``           the value in C order, ``n`` elements at a time, with the  ``read()`` cut up
                             format's own checks (diff, stats, trend, extract)
``byte_chunks(n)``           canonical little-endian bytes, ``n`` at a time (writers)  ``read()`` as bytes
``read_slice(index)``        ``value[index]`` without holding the whole (``show``)     ``read()[index]``
``elements()``               a string/variant value's elements as ``bytes`` (writers,  ``read()``'s, as
                             read-backs; bundles need no numpy for it)                 bytes
``check()``                  read every stored byte, keep nothing (``verify``)         run ``iter_chunks``
``stored_range()``           where the canonical bytes lie unchanged in a local file   ``None``
                             (``diff`` reads them with ``pread``, no mapping)
``problem()``                what is wrong before reading (declared vs stored size)    ``None``
``files``                    the files the value is read from (the output guard)       ``()``
``name``/``role``/           the TensorFlow meaning: variable name, what it is,        key, ``variable``,
``slot_of``/``optimizer``/   for a slot the variable it belongs to, its optimizer and  ``None``
``slot_name``                slot name
``Checkpoint.problems()``    structure/storage problems found without reading values   ``[]``
``loader_refusals()``        what the format's own loader (TensorFlow, the              the constructor's
(``Checkpoint``)             safetensors library) refuses although ckpt reads it        ``refusals=``
``Checkpoint.files``         every file that makes up the checkpoint                   ``[path]``
``Checkpoint.metadata``      format facts (header fields, Keras config, ...)           ``{}``
``Checkpoint.object_graph``  the decoded TF2 object graph                              ``None``
``concurrent_reads``         entries may be read from several threads at once          ``False``
(checkpoint and entries)     (``verify``, ``diff``, ``stats``, read-backs use every core)
===========================  ========================================================  ==================

Nothing here imports numpy at module level.
"""
from __future__ import annotations

from _collections_abc import Mapping  # collections.abc's classes without the collections package (start-up)

from formats.core.enumeration import StrEnumeration
from formats.core.errors import TensorNotFoundError, UnsupportedError
from formats.core.shapes import MAX_RANK, OBJECT_GRAPH_KEY, array_problem, shape_text
from formats.core.shapes import elements as _elements  # (TensorEntry has an elements() of its own)
from formats.core.value_tuples import ValueTuple

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence
    from concurrent.futures import Executor
    from typing import Any

    import numpy as np

__all__ = ["KERAS3_LAYOUTS", "kinds_of", "TensorEntry", "UnreadableEntry", "Checkpoint", "CheckpointProblem", "Role", "OPTIMIZER_ROLES", "FormatName", "shape_text", "array_problem",
           "CHUNK_ELEMENTS", "CHUNK_BYTES", "OBJECT_GRAPH_KEY", "MAX_RANK", "natural_key", "is_object_based"]

CHUNK_ELEMENTS = 1 << 20
"""Default number of elements per chunk for :meth:`TensorEntry.iter_chunks`."""
CHUNK_BYTES = 8 << 20
"""Default chunk size in bytes for :meth:`TensorEntry.byte_chunks`."""


class Role(StrEnumeration):
    """What a tensor is. A ``str`` subclass: ``Role.SLOT == "slot"``.

    ``optimizer`` covers optimizer hyperparameters, step/iteration counters and other non-slot
    optimizer state (``global_step`` included).
    """

    VARIABLE = "variable"
    SLOT = "slot"
    OPTIMIZER = "optimizer"
    ITERATOR = "iterator"
    SAVE_COUNTER = "save_counter"
    OBJECT_GRAPH = "object_graph"
    OTHER = "other"


OPTIMIZER_ROLES = frozenset({Role.SLOT, Role.OPTIMIZER})
"""The roles of optimizer state: slots, and everything else an optimizer keeps (``--drop-optimizer`` leaves
them out, ``ls --tree`` shows them apart)."""


class FormatName(StrEnumeration):
    """The names of the built-in formats, as ``Checkpoint.format`` reports them (plugins add their own)."""

    TF_OBJECT = "tf-object"
    TF_NAME = "tf-name"
    TF_V1 = "tf-v1"
    SAVED_MODEL = "saved-model"
    KERAS2_H5 = "keras2-h5"
    KERAS2_MODEL_H5 = "keras2-model-h5"
    KERAS3_H5 = "keras3-h5"
    KERAS_ZIP = "keras-zip"
    KERAS3_DIR = "keras3-dir"
    KERAS3_SHARDED = "keras3-sharded"
    KERAS_MODEL = "keras"  # a whole Keras 3 model written from a Keras 2 one (a target; it reads as keras-zip)
    HDF5 = "hdf5"
    NPZ = "npz"
    SAFETENSORS = "safetensors"
    HF = "hf"  # a transformers model directory: config.json and model.safetensors (or its shards)


KERAS3_LAYOUTS = (FormatName.KERAS3_H5.value, FormatName.KERAS_ZIP.value, FormatName.KERAS3_DIR.value,
                  FormatName.KERAS3_SHARDED.value)
"""Formats holding Keras 3's ``<object path>/vars/<i>`` layout (a template for ``--to keras3-h5``)."""


def natural_key(key: str) -> list[tuple[int, Any]]:
    """Sort key ordering ``vars/2`` before ``vars/10`` (numeric ``/`` segments as numbers)."""
    return [(0, int(p)) if p.isdigit() else (1, p) for p in key.split("/")]


class CheckpointProblem(ValueTuple):
    """One thing wrong with a checkpoint's stored data (what ``verify`` finds, what TensorFlow's loader would
    refuse): where (a key or a file) and what. A conversion's or an edit's problems are
    :class:`formats.ops.convert.plan.Problem`, with a kind and a severity."""

    where: str
    message: str


def _label(index: int, doc: str) -> property:
    """The label ``index`` of a :class:`TensorEntry` (name, role, slot_of, optimizer, slot_name), held in its
    ``_facts`` list, made when one is set; without one, a variable named by its key."""
    def get(self: TensorEntry) -> Any:
        facts = self._facts
        if facts is None:
            return self.key if index == 0 else Role.VARIABLE if index == 1 else None
        return facts[index]

    def put(self: TensorEntry, value: Any) -> None:
        facts = self._facts
        if facts is None:
            facts = self._facts = [self.key, Role.VARIABLE, None, None, None]
        facts[index] = value

    return property(get, put, doc=doc)


class TensorEntry:
    """One tensor of a checkpoint: metadata now, value on :meth:`read`.

    ``dtype`` is TensorFlow's dtype name (``float32``, ``bfloat16``, ``string``, ``variant``, ...);
    ``shape`` a tuple of ints; ``nbytes`` the bytes the value occupies in storage. ``name`` is the
    TF1-style variable name behind the key (the key itself unless a format knows better), ``role``
    what the tensor is (a :class:`Role`); for a slot, ``slot_of`` is the key of its variable,
    ``optimizer`` the optimizer and ``slot_name`` the slot's name (``m``, ``v``, ``accumulator``).
    """

    __slots__ = ("key", "shape", "dtype", "nbytes", "_facts")
    # ``_facts``: [name, role, slot_of, optimizer, slot_name], or None for a variable named by its key (the usual
    # case: no list). Formats that work these out lazily (a bundle's tensors) override the five properties and
    # hold no slot for them (five slots were 40 bytes a tensor, 40 MB at a million, never filled).
    _facts: list[Any] | None

    concurrent_reads = False
    """Whether this entry may be read from several threads at once (as its checkpoint's ``concurrent_reads``)."""
    unreadable: str | None = None
    """Why ckpt cannot read this stored tensor at all (see :class:`UnreadableEntry`); None when it can."""

    def __init__(self, key: str, shape: tuple[int, ...], dtype: str, nbytes: int,
                 name: str | None = None, role: str = Role.VARIABLE, *, slot_of: str | None = None,
                 optimizer: str | None = None, slot_name: str | None = None) -> None:
        self.key = key
        self.shape = shape
        self.dtype = dtype
        self.nbytes = nbytes
        self._facts = None if name is None and role == Role.VARIABLE and slot_of is None and optimizer is None and \
            slot_name is None else [key if name is None else name, role, slot_of, optimizer, slot_name]

    if TYPE_CHECKING:  # (at run time: the properties _label makes, one code object for the five)
        name: str
        role: str
        slot_of: str | None
        optimizer: str | None
        slot_name: str | None
    else:
        name = _label(0, "The TF1-style variable name behind the key (the key unless the format knows better).")
        role = _label(1, "What the tensor is (a :class:`Role`).")
        slot_of = _label(2, "For a slot: the key of its variable.")
        optimizer = _label(3, "For a slot or optimizer state: the optimizer.")
        slot_name = _label(4, "For a slot: the slot's name (``m``, ``v``, ``accumulator``).")

    @property
    def size(self) -> int:
        """Number of elements (product of the shape; 1 for a scalar)."""
        return _elements(self.shape)

    @property
    def files(self) -> tuple[str, ...]:
        """The files this tensor's value is read from (used to refuse overwriting an input)."""
        return ()

    @property
    def partitions(self) -> int:
        """How many slices the tensor is stored in (a TF1 partitioned variable); 0 when stored whole."""
        return 0

    def read(self) -> np.ndarray:
        """The whole value as a numpy array (checksums verified where the format has them)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement read()")

    def elements(self) -> list[bytes]:
        """A string or variant value's elements as ``bytes``, in C order (checksums verified where the
        format has them). Formats that store the bytes as they are may override it to skip numpy."""
        from formats.core.arrays import element_bytes

        return [element_bytes(x) for x in self.read().reshape(-1)]

    def string_pieces(self) -> tuple[int, Iterator[bytes | memoryview]] | None:
        """A one-element string's length and its bytes a piece at a time, checked as :meth:`elements` checks them
        (once the last is read), where the format can read it so (a local bundle; each piece may be a view of one
        buffer, good until the next is asked for); None where it cannot (the caller reads :meth:`elements`)."""
        return None

    def problem(self) -> str | None:
        """Why the stored value cannot be what the metadata declares, found without reading it; else None."""
        return None

    def iter_chunks(self, chunk_elements: int = CHUNK_ELEMENTS, pool: Executor | None = None) -> Iterator[np.ndarray]:
        """The elements in C order as flat arrays of at most ``chunk_elements`` (object arrays for strings).

        Run the iterator to its end: formats with checksums compare them after the last chunk. A
        chunk may be a view into a memory map, valid only until the next one is asked for. ``pool``
        lets a format overlap its checks with the caller's work.
        """
        flat = self.read().reshape(-1)
        for start in range(0, flat.size, max(1, chunk_elements)):
            yield flat[start:start + chunk_elements]

    def byte_chunks(self, chunk: int = CHUNK_BYTES, check: bool = True) -> Iterator[memoryview]:
        """Canonical bytes (C order, little-endian) of a fixed-width tensor, at most ``chunk`` each.

        ``check=False`` lets a format skip checks the caller has already made.
        """
        from formats.core.arrays import array_chunks

        return array_chunks(self.read(), chunk)

    def read_into(self, out: memoryview, offset: int = 0) -> bool:
        """Fill ``out`` (writable) with the canonical bytes from ``offset`` on, straight from storage, with the
        format's checks, where the format can (one read into the caller's memory, no array of its own);
        False where it cannot, and the caller streams :meth:`byte_chunks`."""
        return False

    def mapped_bytes(self) -> memoryview | None:
        """The canonical bytes as a read-only view of the file's own pages (a memory map, unmapped when the last
        view of it goes), where the format stores them so and has no checksum to take on the way; else None."""
        return None

    def stored_range(self) -> tuple[int, int, int, int] | None:
        """``(fd, offset, size, crc32c)`` when the canonical bytes of this fixed-width tensor lie unchanged at
        ``[offset, offset + size)`` of an open local file (``fd``, owned by the checkpoint: valid while it is
        open) with that (unmasked) CRC32C; else None, and the bytes are read through :meth:`byte_chunks`."""
        return None

    @staticmethod
    def stored_ranges(tensors: Sequence[Any]) -> list[tuple[int, int, int, int] | None] | None:
        """:meth:`stored_range` of each of ``tensors`` (the first of this class), where the class finds them all at
        once (a bundle's from its index's columns) and they stay true while the checkpoint is open (each file's
        descriptor kept); else None, and each is asked as it is read."""
        return None

    @staticmethod
    def stored_range_columns(tensors: Sequence[Any]) -> tuple[Any, Any, Any, Any] | None:
        """:meth:`stored_ranges` of ``tensors`` (the first of this class) as four arrays - descriptors, offsets,
        sizes, CRC32Cs - where the class finds them with arrays (a large bundle index) and every one has a range; else
        None."""
        return None

    def checked_bytes_range(self) -> tuple[int, int, int] | None:
        """``(fd, offset, size)`` when this tensor of byte strings is stored whole at ``[offset, offset + size)`` of
        an open local file (``fd``, owned by the checkpoint), its stored bytes checked now (a buffer at a time):
        two tensors of one format whose stored bytes are equal hold equal elements (unequal bytes may still hold
        equal elements); else None."""
        return None

    def element_equals(self, expected: bytes) -> bool | None:
        """Whether this tensor of one byte string holds ``expected``, compared as its stored bytes are read (checked
        as :meth:`elements` checks them, no copy of the string made), where the format can; else None, and the
        caller compares :meth:`elements`."""
        return None

    def read_slice(self, index: tuple[Any, ...] | None) -> np.ndarray:
        """``value[index]`` (the whole value when ``index`` is None)."""
        from formats.core.arrays import apply_index

        value = self.read()
        return value if index is None else apply_index(value, index, self)

    def check(self) -> None:
        """Read every stored byte with the format's checks, keeping nothing; raises CheckpointError."""
        for _ in self.iter_chunks():
            pass

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.key!r} {self.dtype}{list(self.shape)}>"


class UnreadableEntry(TensorEntry):
    """A stored tensor ckpt lists but cannot read (a dtype with no TensorFlow counterpart, pickled objects, ...).

    Readers keep such tensors as entries rather than dropping them, so no command loses them silently:
    ``ls`` and ``stats`` list them (``dtype`` is the format's own name for what is stored), ``verify``
    reports :meth:`problem`, writers plan them as left out, and :meth:`read` raises UnsupportedError.
    """

    __slots__ = ("unreadable", "_path")

    def __init__(self, key: str, shape: tuple[int, ...], dtype: str, nbytes: int, why: str, path: str,
                 name: str | None = None, role: str = Role.VARIABLE) -> None:
        super().__init__(key, shape, dtype, nbytes, name, role)
        self.unreadable = why
        self._path = path

    def problem(self) -> str | None:
        """Why the value cannot be read."""
        return self.unreadable

    def read(self) -> np.ndarray:
        """Never: raises UnsupportedError naming the tensor and why."""
        raise UnsupportedError(self._path, f"tensor {self.key!r}: {self.unreadable}")

    def check(self) -> None:
        """Raises UnsupportedError, as :meth:`read` does."""
        self.read()


class Checkpoint(Mapping[str, TensorEntry]):
    """A read-only mapping of key -> :class:`TensorEntry`, usable as a context manager.

    ``path`` is what was opened (a bundle prefix, a file or a directory), ``format`` the name its
    format registered (:class:`FormatName` for the built-in ones).
    """

    concurrent_reads = False
    """Whether entries may be read (``read``, ``iter_chunks``, ``check``...) from several threads at once."""

    def __init__(self, path: str, format: str, entries: dict[str, TensorEntry], *,
                 metadata: dict[str, Any] | None = None, problems: list[CheckpointProblem] | None = None,
                 refusals: list[CheckpointProblem] | None = None) -> None:
        self.path = path
        self.format = str(format)
        self._entries = entries
        self._given_metadata = {} if metadata is None else metadata
        self._given_problems = [] if problems is None else problems
        self._given_refusals = [] if refusals is None else refusals

    def __getitem__(self, key: str) -> TensorEntry:
        try:
            return self._entries[key]
        except KeyError:
            raise TensorNotFoundError(self.path, f"no tensor named {key!r}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def values(self) -> Any:
        """The entries, in key order of the mapping (straight from the dict: listings iterate millions)."""
        return self._entries.values()

    def items(self) -> Any:
        """``(key, entry)`` pairs (straight from the dict)."""
        return self._entries.items()

    def items_maybe_not_variables(self) -> Iterable[tuple[str, TensorEntry]]:
        """``(key, entry)`` of every tensor whose role may be other than ``variable``: here every tensor; a format
        that labels its tensors all at once gives only those its labels set apart (slots, optimizer state, the save
        counter...), so a question about them is not asked of each of a million model variables."""
        return self.items()

    def nbytes_of(self, keys: Iterable[str]) -> list[int]:
        """The stored bytes of each of ``keys`` (TensorNotFoundError for a key it does not hold); a format holding
        its index as columns answers without making an entry per key."""
        return [self[key].nbytes for key in keys]

    def total_nbytes(self) -> int:
        """The stored bytes of every tensor."""
        return sum(e.nbytes for e in self.values())

    def entries_of(self, keys: Iterable[str]) -> list[TensorEntry]:
        """The entries of ``keys``, in that order (TensorNotFoundError for a key it does not hold): a unit of work's
        tensors. A format that makes its entries on demand may make these for the caller alone (not kept)."""
        return [self[key] for key in keys]

    def entries_by_batch(self, keys: Sequence[str], batch: int = 4096) -> Iterator[TensorEntry]:
        """The entries of ``keys``, in that order, made by :meth:`entries_of` ``batch`` keys at a time: a format
        that makes its entries on demand holds a batch of them at once, not one a key for the whole walk."""
        for start in range(0, len(keys), batch):
            yield from self.entries_of(keys[start:start + batch])

    @property
    def files(self) -> list[str]:
        """The files that make up this checkpoint on disk."""
        return [self.path]

    @property
    def metadata(self) -> dict[str, Any]:
        """Format-specific facts (header fields, Keras version, model config, ...)."""
        return self._given_metadata

    def remote_sizes(self) -> dict[str, int | None]:
        """The sizes of this checkpoint's remote files looked up so far (None: missing), for units of work that
        open it again elsewhere (:mod:`formats.discover.units`); empty when none were."""
        return {}

    def know_remote_sizes(self, sizes: dict[str, int | None]) -> None:
        """Take ``sizes`` of remote files (found by the process that planned the work) instead of asking the
        store again; a format that looks none up ignores them."""

    @property
    def object_graph(self) -> Any:
        """The decoded object graph of an object-based checkpoint, else None."""
        return None

    def carried_object_graph(self, keep: bool = True) -> bytes | None:
        """The serialized object graph an export of an object-based checkpoint carries beside its tensors (npz,
        safetensors: :data:`~formats.core.provenance.OBJECT_GRAPH_MEMBER`), else None;
        :class:`~formats.core.errors.CorruptCheckpointError` where it is there but cannot be read. ``keep`` False:
        only read and checked (``verify``), a piece at a time where the format can, and None returned."""
        return None

    def forget_object_graph(self) -> None:
        """Let go of the decoded object graph (and whatever was computed from it), decoded again if asked for: for
        a caller done with it that goes on to hold a row per key, such as a rename once its new graph is written
        (at 10^6 objects the graph and its columns were 160-200 MB of a rename's peak). Nothing to do by default."""

    def keep_names_and_roles(self) -> None:
        """Ask every key's name and role now, keep them (packed) and let go of the decoded object graph: for a caller
        that will ask them of its entries (an export's record) once it holds a row per key, so that the graph is
        not decoded while those rows are held (at 10^5 objects the graph and its labels were 30 MiB on top of
        them). A source whose graph cannot be decoded keeps nothing: asked later, its error comes then. Nothing
        to do by default."""

    def problems(self) -> list[CheckpointProblem]:
        """Structure and storage problems found without reading tensor values (``verify`` adds each
        entry's :meth:`TensorEntry.problem` and :meth:`TensorEntry.check`)."""
        return list(self._given_problems)

    def loader_refusals(self) -> list[CheckpointProblem]:
        """What the format's own loading program refuses although ckpt reads it (a safetensors file the
        safetensors library rejects, a V1 dtype TensorFlow's V1 reader does not take, ...): ``verify`` reports
        them, and fails on them unless told they are expected."""
        return list(self._given_refusals)

    def close(self) -> None:
        """Release open files and memory maps; entries must not be read afterwards."""

    def __enter__(self) -> Checkpoint:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.path!r} format={self.format} tensors={len(self)}>"


def kinds_of(entries: Sequence[Any]) -> list[Any] | None:
    """The kind of each of ``entries`` as their class finds them all at once (its ``kinds_of``: a bundle's tensors,
    from its index's columns; entries of one kind are alike but for their key and bytes), or None where the first
    entry's class has no such method or it finds none (entries of several classes or bundles)."""
    many = getattr(type(entries[0]), "kinds_of", None) if entries else None
    return many(entries) if many is not None else None


def is_object_based(ckpt: Checkpoint) -> bool:
    """True when the checkpoint stores an object graph."""
    return ckpt.format == FormatName.TF_OBJECT or OBJECT_GRAPH_KEY in ckpt
