"""``ls`` as data: the rows and totals of one checkpoint, filtered and sorted."""
from __future__ import annotations

from _operator import attrgetter  # operator's C half, without operator.py (start-up)

from formats.core.gc_pause import paused_gc
from formats.core.compact_listing import CompactListing, count_data_files, count_parameters
from formats.core.model import Checkpoint, TensorEntry
from formats.core.model import Role
from formats.core.natural import key_order, natural_order, sort_naturally
from formats.core.selection import select_keys
from formats.core.value_tuples import ValueTuple

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["TensorRow", "CheckpointSummary", "summarise", "expand", "names_and_roles"]


class TensorRow(ValueTuple):
    """One listed tensor (a namedtuple: cheap to build for indexes with tens of thousands of keys)."""

    key: str
    dtype: str
    shape: tuple[int, ...]
    nbytes: int
    name: str | None = None  # None unless asked for (working names out may decode an object graph)
    role: str | None = None

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict (with ``name`` and ``role`` when they were asked for)."""
        doc: dict[str, object] = {"key": self.key, "dtype": self.dtype, "shape": list(self.shape),
                                  "nbytes": self.nbytes}
        if self.name is not None:
            doc.update(name=self.name, role=self.role)
        return doc


class CheckpointSummary:
    """What ``ckpt ls`` shows for one checkpoint (``unmatched``: the patterns that matched no key)."""

    __slots__ = ("path", "format", "rows", "total_tensors", "data_files", "unmatched")

    def __init__(self, path: str, format: str, rows: list[TensorRow] | None = None, total_tensors: int = 0,
                 data_files: int = 0, unmatched: list[str] | None = None) -> None:
        self.path = path
        self.format = format
        self.rows = [] if rows is None else rows
        self.total_tensors = total_tensors
        self.data_files = data_files
        self.unmatched = [] if unmatched is None else unmatched

    def __repr__(self) -> str:
        return (f"CheckpointSummary(path={self.path!r}, format={self.format!r}, {len(self.rows)} rows, "
                f"total_tensors={self.total_tensors})")

    @property
    def tensors(self) -> int:
        """Tensors listed (after filtering)."""
        return len(self.rows)

    @property
    def nbytes(self) -> int:
        """Stored bytes of the listed tensors."""
        return sum(r.nbytes for r in self.rows)

    @property
    def parameters(self) -> int:
        """Elements of the listed numeric tensors."""
        return sum(count_parameters(r.dtype, r.shape) for r in self.rows)

    def to_json(self) -> dict[str, object]:
        """``{"path", "format", "tensors": [{"key", "dtype", "shape", "nbytes"}, ...]}``."""
        return {"path": self.path, "format": self.format, "tensors": [r.to_json() for r in self.rows]}


_key = attrgetter("key")

def names_and_roles(ckpt: Checkpoint, keys: Iterable[str]) -> dict[str, tuple[str, str]]:
    """``key -> (name, role)`` for each of ``keys`` that ``ckpt`` holds: what ``ls --names`` shows beside a key
    (``optimizer/_variables/1/...`` -> ``("Adam/m/net/dense/kernel", "slot")``). May decode the object graph."""
    entries = (ckpt[k] for k in dict.fromkeys(keys) if k in ckpt)
    return {e.key: (e.name, str(e.role)) for e in entries}


def _row(entry: TensorEntry, names: bool) -> TensorRow:
    if not names:
        return TensorRow(entry.key, entry.dtype, entry.shape, entry.nbytes)
    return TensorRow(entry.key, entry.dtype, entry.shape, entry.nbytes, entry.name, str(entry.role))


def summarise(ckpt: Checkpoint, patterns: list[str] | None = None, sort: str = "key", names: bool = False,
              include_optimizer: bool = True) -> CheckpointSummary:
    """The rows of ``ckpt`` whose keys match ``patterns``, sorted by ``key`` (in natural order:
    :mod:`formats.core.natural`) or by ``size`` (largest first).

    Patterns are selected as by :func:`~formats.core.selection.select_keys`; those matching no key
    are listed in ``unmatched`` (a listing does not fail on them). ``names`` fills each row's ``name`` and ``role``; ``include_optimizer=False`` drops slots and
    optimizer state (roles ``slot``/``optimizer``). Either may decode the object graph.
    """
    unmatched: list[str] = []
    with paused_gc():
        if not patterns and include_optimizer and not names:  # (entries a batch at a time: none kept a key)
            rows = [TensorRow(e.key, e.dtype, e.shape, e.nbytes) for e in ckpt.entries_by_batch(list(ckpt))]
        else:
            keys, unmatched = select_keys(ckpt, patterns or ())
            rows = [_row(e, names) for e in ckpt.entries_by_batch(keys)
                    if include_optimizer or e.role not in (Role.SLOT, Role.OPTIMIZER)]
    order = key_order(r.key for r in rows)  # numbers by value: optimizer/vars/2 before optimizer/vars/10
    if sort == "size":
        rows.sort(key=lambda r: (-r.nbytes, order(r.key)))
    elif order is natural_order:
        sort_naturally(rows, _key)
    else:
        rows.sort(key=lambda r: order(r.key))
    return CheckpointSummary(ckpt.path, ckpt.format, rows, len(ckpt), count_data_files(ckpt.files), unmatched)


def expand(listing: CompactListing) -> CheckpointSummary:
    """The :class:`CheckpointSummary` of a compact listing (a row object per tensor)."""
    with paused_gc():
        rows = [TensorRow(key, *kind) for key, kind in listing.rows()]
    return CheckpointSummary(listing.path, listing.format, rows, listing.total_tensors, listing.data_files,
                             list(listing.unmatched))
