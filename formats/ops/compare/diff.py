"""``diff``: what differs between two checkpoints - keys, shapes, dtypes and values.

Tensors are paired by key (``match="key"``), by :attr:`TensorEntry.name` (``match="name"``, the
TF1-style variable name, which lets a name-based checkpoint be compared with an object-based one; the
object graph entry is then left out) or by object path (``match="path"``, both sides object-based: what
``tf.train.Checkpoint.restore`` goes by, where Keras 3 gives several variables one full name); see
:mod:`formats.ops.compare.keying`. Names are first stripped of ``strip_prefix_a`` / ``strip_prefix_b``,
then the rename ``rules`` are applied **to A's names** so that they match B's (``--map old=new`` reads
"A's old is B's new").

Values are compared in chunks straight from the memory-mapped data files (both sides' checksums are
checked as they stream by). By default two tensors are the same when their bytes are identical; with a
:class:`Tolerance` they are the same when ``numpy.allclose(a, b, rtol, atol, equal_nan)`` holds
(``|a - b| <= atol + rtol * |b|``; NaN equals NaN only with ``equal_nan``). Statistics are computed in
float64 (bfloat16/float16 go through float32) over the element pairs where both values are finite;
NaN and Inf are counted separately on each side.

Small tensors (bytewise, without ``keys_only``) are compared many pairs at once, read a span at a time
(:mod:`formats.ops.compare.same_small`): equal pairs, and the statistics of changed pairs of finite real
numbers, come out as the per-pair comparison gives them; any other pair is compared on its own.
"""
from __future__ import annotations

import os
from _collections_abc import Callable  # for the Progress alias: collections.abc's, without the collections package

from formats.core.errors import UsageError
from formats.core.gc_pause import gc_paused
from formats.core.model import CHUNK_ELEMENTS, Checkpoint, TensorEntry
from formats.core.selection import nothing_selected, select_keys
from formats.core.value_tuples import ValueTuple
from formats.discover.units import SourceRef, each_in_unit, opened
from formats.ops.compare.keying import MATCHES, pairing_names
from formats.ops.compare.same_small import same_small
from formats.ops.units import run_units

TYPE_CHECKING = False  # typing itself stays off the start-up path (``diff`` of equal tensors needs no numpy)
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from formats.core.executors import Executor

    import numpy as np

    from formats.ops.rules import Rule, RuleSet

__all__ = ["Tolerance", "Side", "Change", "DiffResult", "diff_checkpoints", "diff_unit", "compare_entries"]

_INF = float("inf")  # (math.inf, without importing math: a shared library)

BYTE_CHUNK = 1 << 20
"""Bytes compared at a time when values are compared bytewise (small enough to stay in the CPU's cache
between its checksum and the comparison)."""
Progress = Callable[[int, int], None]


class Tolerance(ValueTuple):
    """How values are compared: bytewise (the default) or ``allclose(rtol, atol, equal_nan)``."""

    atol: float = 0.0
    rtol: float = 0.0
    equal_nan: bool = False
    bytewise: bool = True

    @classmethod
    def of(cls, atol: float | None = None, rtol: float | None = None, equal_nan: bool = False) -> Tolerance:
        """Bytewise unless a tolerance or ``equal_nan`` is given; an unset tolerance is 0."""
        if atol is None and rtol is None and not equal_nan:
            return cls()
        return cls(atol or 0.0, rtol or 0.0, equal_nan, bytewise=False)


class Side:
    """One side of a changed pair: its key, shape, dtype and (when values were read) NaN/Inf counts."""

    __slots__ = ("key", "shape", "dtype", "nan", "inf")

    def __init__(self, key: str, shape: tuple[int, ...], dtype: str, nan: int | None = None,
                 inf: int | None = None) -> None:
        self.key, self.shape, self.dtype, self.nan, self.inf = key, shape, dtype, nan, inf

    def __repr__(self) -> str:
        return f"Side({self.key!r}, {self.shape!r}, {self.dtype!r}, nan={self.nan!r}, inf={self.inf!r})"

    def to_json(self) -> dict[str, Any]:
        """``{"key", "shape", "dtype"}`` plus ``"nan"``, ``"inf"`` when counted."""
        out: dict[str, Any] = {"key": self.key, "shape": list(self.shape), "dtype": self.dtype}
        if self.nan is not None:
            out.update(nan=self.nan, inf=self.inf)
        return out


class Change:
    """A pair of tensors that differ: ``kind`` is ``shape``, ``dtype`` or ``value``; ``stats`` as in the module doc."""

    __slots__ = ("key", "kind", "a", "b", "stats")

    def __init__(self, key: str, kind: str, a: Side, b: Side, stats: dict[str, Any] | None = None) -> None:
        self.key, self.kind, self.a, self.b = key, kind, a, b
        self.stats = {} if stats is None else stats

    def __repr__(self) -> str:
        return f"Change({self.key!r}, {self.kind!r}, {self.a!r}, {self.b!r}, {self.stats!r})"

    def to_json(self) -> dict[str, Any]:
        """``{"key", "kind", "a", "b", **stats}``."""
        return {"key": self.key, "kind": self.kind, "a": self.a.to_json(), "b": self.b.to_json(), **self.stats}

    def magnitude(self) -> tuple[Any, ...]:
        """Sort key, biggest change first: shape, then dtype, then by relative L2 change and max |a-b|."""
        rel = self.stats.get("rel_l2")
        rel = _INF if rel is None and self.stats.get("differ") else (rel or 0.0)
        return ({"shape": 0, "dtype": 1}.get(self.kind, 2), -rel, -(self.stats.get("max_abs_diff") or 0.0), self.key)


class DiffResult:
    """What :func:`diff_checkpoints` found; ``equal`` when nothing differs."""

    def __init__(self, a: str, b: str) -> None:
        self.a, self.b = a, b
        self.only_in_a: list[str] = []
        self.only_in_b: list[str] = []
        self.changed: list[Change] = []
        self.same = 0
        self.notes: list[str] = []
        self.unused_rules: list[Rule] = []
        self.complete = True
        """False when the comparison stopped at its first difference (``first_difference``): ``changed`` then
        holds that one, ``same`` only the pairs compared before it."""

    def __repr__(self) -> str:
        return (f"DiffResult({self.a!r}, {self.b!r}, only_in_a={self.only_in_a!r}, only_in_b={self.only_in_b!r}, "
                f"changed={self.changed!r}, same={self.same})")

    @property
    def equal(self) -> bool:
        """True when both sides hold the same keys with the same shapes, dtypes and (within tolerance) values."""
        return not (self.only_in_a or self.only_in_b or self.changed)

    def by_size(self) -> list[Change]:
        """The changes, biggest first (see :meth:`Change.magnitude`)."""
        return sorted(self.changed, key=Change.magnitude)

    def to_json(self) -> dict[str, Any]:
        """``{"a", "b", "only_in_a", "only_in_b", "changed", "same"}``; ``changed`` sorted by key."""
        return {"a": self.a, "b": self.b, "only_in_a": self.only_in_a, "only_in_b": self.only_in_b,
                "changed": [c.to_json() for c in sorted(self.changed, key=lambda c: c.key)], "same": self.same}


# -- pairing ---------------------------------------------------------------------------------------
def _names(ckpt: Checkpoint, match: str, strip: str | None, rules: RuleSet | None,
           side: str, notes: list[str]) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """name -> key for one side (:func:`~formats.ops.compare.keying.pairing_names`), and the (key, name) pairs
    left unmatched because another key took the name (each said in ``notes``)."""
    out, clashes = pairing_names(ckpt, match, strip=strip, rules=rules)
    notes += [f"{side}: {key!r} and {out[name]!r} both match as {name!r}; {key!r} left unmatched"
              for key, name in clashes]
    return out, clashes


def _converted(ca: Checkpoint, cb: Checkpoint, rules: RuleSet | None,
               notes: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    """name -> key for both sides as converting A onto B's layout pairs them: B's keys, A's keys under the B key
    they fill (:func:`~formats.ops.convert.as_converted.converted_pairs`). What the conversion leaves out of A on
    purpose is said in ``notes``, not counted; A's model variables B holds no counterpart of are under their own
    keys, so they count as only in A; B's tensors the conversion makes up are left out of the comparison (noted)."""
    from formats.ops.convert.as_converted import converted_pairs

    found = converted_pairs(ca, cb, rules)
    notes += [f"A: left out by the conversion: {line}" for line in found.left_out]
    notes += [f"the conversion cannot be planned onto B: {line}" for line in found.problems]
    if found.made:
        notes.append(f"B: {len(found.made)} tensor(s) the conversion makes, not compared: {', '.join(found.made)}")
    made = set(found.made)
    names_a, names_b = dict(found.pairs), {key: key for key in cb if key not in made}
    for key in found.unplaced:
        names_a[key if key not in names_a and key not in names_b else f"{key} (A)"] = key
    return names_a, names_b


@gc_paused  # a result per tensor, none in a cycle
def diff_checkpoints(a: Checkpoint | str | os.PathLike[str], b: Checkpoint | str | os.PathLike[str], *,
                     match: str = "key", rules: RuleSet | None = None, strip_prefix_a: str | None = None,
                     strip_prefix_b: str | None = None, tolerance: Tolerance | None = None,
                     keys_only: bool = False, chunk_elements: int = CHUNK_ELEMENTS,
                     progress: Progress | None = None, patterns: Sequence[str] = (), jobs: int | None = 1,
                     executor: str | Executor | None = None, first_difference: bool = False) -> DiffResult:
    """Compare checkpoints ``a`` and ``b`` (opened :class:`Checkpoint` objects or paths; see the module doc).

    ``patterns`` (exact or globs, as :func:`~formats.core.selection.select_keys`) keep only the pairs whose
    name - the key, or with ``match="name"`` the variable name, with ``match="path"`` the object path, after the
    rules - they select; one that
    selects nothing on either side raises :class:`~formats.core.errors.NothingSelectedError`.
    ``keys_only`` compares keys, shapes and dtypes and reads no values. ``progress(bytes, tensors)`` is
    called after each pair. Pairs are compared on ``jobs`` threads (None: every core) when both formats allow
    concurrent reads, or in units (:func:`diff_unit`) on the workers of ``executor``; the result is the same
    whatever ``jobs`` and ``executor`` are. With ``first_difference`` (``diff -q``: is there any difference?)
    the comparison stops at the first: a key only in one side, then a shape or dtype change (neither reads a
    value), then the first pair whose values differ, in key order - the pairs after it are not read, and
    ``result.complete`` is False. Raises a :class:`~formats.core.errors.CheckpointError` when a side (a
    tensor compared) is unreadable.
    """
    if match not in MATCHES:
        raise UsageError("", f"match must be one of {', '.join(MATCHES)}, not {match!r}")
    from formats.discover.resolve import open_checkpoint

    ca = a if isinstance(a, Checkpoint) else open_checkpoint(a)
    try:
        cb = b if isinstance(b, Checkpoint) else open_checkpoint(b)
        try:
            return _diff(ca, cb, match, rules, strip_prefix_a, strip_prefix_b, tolerance or Tolerance(),
                         keys_only, chunk_elements, progress, patterns, jobs, executor, first_difference)
        finally:
            if cb is not b:
                cb.close()
    finally:
        if ca is not a:
            ca.close()


def _diff(ca: Checkpoint, cb: Checkpoint, match: str, rules: RuleSet | None, strip_a: str | None,
          strip_b: str | None, tol: Tolerance, keys_only: bool, chunk: int, progress: Progress | None,
          patterns: Sequence[str] = (), jobs: int | None = 1, executor: str | Executor | None = None,
          first_difference: bool = False) -> DiffResult:
    result = DiffResult(ca.path, cb.path)
    same_keys = None
    if match == "key" and not (strip_a or strip_b or rules or patterns):
        same_keys = sorted(ca)
        if same_keys != sorted(cb):  # (the second list is let go here)
            same_keys = None
    if same_keys is not None:  # the same keys on both sides (a run's checkpoints): each its own name, no map made
        items: Sequence[str | tuple[str, str, str]] = same_keys
        sizes = list(map(int.__add__, ca.nbytes_of(same_keys), cb.nbytes_of(same_keys)))
    else:
        items, sizes = _pairing(result, ca, cb, match, rules, strip_a, strip_b, patterns)
    parallel = ca.concurrent_reads and cb.concurrent_reads and not keys_only
    result.unused_rules = rules.unused() if rules is not None else []
    if first_difference:
        _first_difference(result, ca, cb, items, sizes, progress, jobs, executor, tol, keys_only, chunk, parallel)
        return result
    found = run_units((ca, cb), diff_unit, zip(items, sizes), progress, jobs, executor, tol, keys_only, chunk,
                      parallel=parallel, keys_of=pair_keys)
    result.changed = [change for change in found if change is not None]
    result.same = len(found) - len(result.changed)
    return result


def _pairing(result: DiffResult, ca: Checkpoint, cb: Checkpoint, match: str, rules: RuleSet | None,
             strip_a: str | None, strip_b: str | None,
             patterns: Sequence[str]) -> tuple[Sequence[str | tuple[str, str, str]], list[int]]:
    """The pairs to compare (as :func:`pair_keys` takes them) and their stored bytes, in name order; the keys only
    in one side, and the notes, set in ``result``."""
    if match == "converted":
        names_a, names_b = _converted(ca, cb, rules, result.notes)
        clash_a: list[tuple[str, str]] = []
        clash_b: list[tuple[str, str]] = []
    else:
        names_a, clash_a = _names(ca, match, strip_a, rules, "A", result.notes)
        names_b, clash_b = _names(cb, match, strip_b, None, "B", result.notes)
    if patterns:
        paired = sorted(names_a.keys() | names_b.keys())
        selected, unmatched = select_keys(paired, patterns)
        if unmatched:
            raise nothing_selected(f"{ca.path}, {cb.path}", unmatched, match, among=paired)
        keep = set(selected)
        names_a = {n: k for n, k in names_a.items() if n in keep}
        names_b = {n: k for n, k in names_b.items() if n in keep}
        clash_a, clash_b = [c for c in clash_a if c[1] in keep], [c for c in clash_b if c[1] in keep]
    result.only_in_a = sorted([names_a[n] for n in names_a if n not in names_b] + [k for k, _ in clash_a])
    result.only_in_b = sorted([names_b[n] for n in names_b if n not in names_a] + [k for k, _ in clash_b])
    both = sorted(n for n in names_a if n in names_b)
    keys_a, keys_b = [names_a[n] for n in both], [names_b[n] for n in both]
    items = [name if name == key_a == key_b else (name, key_a, key_b)
             for name, key_a, key_b in zip(both, keys_a, keys_b)]
    sizes = list(map(int.__add__, ca.nbytes_of(keys_a), cb.nbytes_of(keys_b)))
    return items, sizes


def pair_keys(pair: str | tuple[str, str, str]) -> tuple[str, str]:
    """The keys in A and in B of a pair as :func:`diff_unit` is given it: ``(name, key in A, key in B)``, or the
    name alone when it is the key on both sides (no tuple made per pair: at a million pairs they were 112 MB)."""
    return _triple(pair)[1:]


def _triple(pair: str | tuple[str, str, str]) -> tuple[str, str, str]:
    return (pair, pair, pair) if isinstance(pair, str) else pair


def _first_difference(result: DiffResult, ca: Checkpoint, cb: Checkpoint, pairs: Sequence[str | tuple[str, str, str]],
                      sizes: list[int], progress: Progress | None, jobs: int | None, executor: str | Executor | None,
                      tol: Tolerance, keys_only: bool, chunk: int, parallel: bool) -> None:
    """Fill ``result`` up to the first difference: keys only in one side, then the first shape or dtype change
    (headers only), then values in batches of pairs in key order - 1, 2, 4... pairs, so that a difference
    early on stops the reading at once and equal checkpoints are still read on ``jobs`` threads - without the
    statistics of the changed pair."""
    if result.only_in_a or result.only_in_b:
        result.complete = not pairs
        return
    for name, key_a, key_b in map(_triple, pairs):
        change = compare_entries(name, ca[key_a], cb[key_b], tol, keys_only=True)
        if change is not None:
            result.changed, result.complete = [change], False
            return
    if keys_only:
        result.same = len(pairs)
        return
    start, size, done = 0, 1, [0, 0]

    def advance(nbytes: int, n: int) -> None:
        if progress is not None:
            progress(done[0] + nbytes, done[1] + n)

    while start < len(pairs):
        batch, batch_sizes = pairs[start:start + size], sizes[start:start + size]
        found = run_units((ca, cb), diff_unit, zip(batch, batch_sizes), advance, jobs, executor, tol, False, chunk,
                          False, parallel=parallel, keys_of=pair_keys)
        done[0] += sum(batch_sizes)
        done[1] += len(batch)
        for change in found:
            if change is not None:
                result.changed, result.complete = [change], False
                return
            result.same += 1
        start, size = start + len(batch), size * 2


def diff_unit(ref_a: SourceRef, ref_b: SourceRef, pairs: tuple[str | tuple[str, str, str], ...], tol: Tolerance,
              keys_only: bool = False, chunk_elements: int = CHUNK_ELEMENTS, stats: bool = True) -> list[Change | None]:
    """A unit of ``diff``: for each ``(name, key in A, key in B)`` of ``pairs`` (or a name that is the key on both
    sides: :func:`pair_keys`), the :class:`Change` between the two tensors (None when they are the same; without its
    statistics unless ``stats``). Small pairs of equal bytes are found a span at a time
    (:func:`~formats.ops.compare.same_small.same_small`), the others one by one."""
    triples = list(map(_triple, pairs))  # this unit's
    ca, cb = opened(ref_a), opened(ref_b)
    both = ca if cb.concurrent_reads else cb  # several pairs in flight only when both sides allow it
    side_a, side_b = ca.entries_of([p[1] for p in triples]), cb.entries_of([p[2] for p in triples])  # this unit's
    small = same_small(side_a, side_b, chunk_elements) if tol.bytewise and not keys_only else {}  # in spans
    rest = [i for i in range(len(triples)) if i not in small]
    found = iter(each_in_unit(both, lambda i: compare_entries(triples[i][0], side_a[i], side_b[i], tol, keys_only,
                                                              chunk_elements, stats), rest))
    return [(None if small[i] is None else _small_change(p, side_a[i], side_b[i], small[i], stats)) if i in small
            else next(found) for i, p in enumerate(triples)]


def _small_change(pair: tuple[str, str, str], ea: TensorEntry, eb: TensorEntry, sums: tuple[Any, ...] | None,
                  stats: bool) -> Change | None:
    """What :func:`compare_entries` gives for a small pair :func:`same_small` compared: None when the same, else
    the value change with the statistics of its ``sums``, folded into an accumulator as ``_value_stats`` folds
    its one chunk."""
    if sums is None:
        return None
    side_a, side_b = Side(ea.key, ea.shape, ea.dtype), Side(eb.key, eb.shape, eb.dtype)
    if not stats:
        return Change(pair[0], "value", side_a, side_b)
    import math  # (not imported until values differ: an equal pair, asked for in the thousands, returned above)

    acc = _Accumulator()
    size, differ, acc.max_abs, sum_abs, sq_diff, sq_a, sq_b, dot = sums
    acc.differ += differ
    acc.size += size
    if all(map(math.isfinite, (sq_diff, sq_a, sq_b, dot))):
        acc.finite += size
        acc.sum_abs += sum_abs
        acc.sq_diff += sq_diff
        acc.sq_a += sq_a
        acc.sq_b += sq_b
        acc.dot += dot
    else:  # squares past float64's range: the pair (a small one) folded in as the per-pair path folds it, scaled
        from formats.core.values import as_float

        acc.add(as_float(ea.read()).reshape(-1), as_float(eb.read()).reshape(-1))
    return _with_stats(Change(pair[0], "value", side_a, side_b), acc.result(True), True)


# -- comparing one pair ----------------------------------------------------------------------------
def compare_entries(name: str, ea: TensorEntry, eb: TensorEntry, tol: Tolerance | None = None,
                    keys_only: bool = False, chunk_elements: int = CHUNK_ELEMENTS, stats: bool = True) -> Change | None:
    """The :class:`Change` between two tensors, or None when they are the same: the one engine
    (:func:`~formats.core.comparison.compare_values`) finds what differs, with this tolerance, reading no
    further than the first difference; the statistics of a value (or numeric dtype) change are added on top
    unless not ``stats`` (they read both tensors whole)."""
    from formats.core.comparison import compare_values  # not at import: a diff of equal files never gets here
    from formats.core.values import value_kind

    tol = tol or Tolerance()
    side_a, side_b = Side(ea.key, ea.shape, ea.dtype), Side(eb.key, eb.shape, eb.dtype)
    ka, kb = value_kind(ea.dtype), value_kind(eb.dtype)
    numeric = "bytes" not in (ka, kb) and "other" not in (ka, kb)

    def close(x: np.ndarray, y: np.ndarray) -> bool:
        return _differ_mask(x, y, tol, numeric, quick=True) is None

    found = compare_values(ea, eb, chunk=BYTE_CHUNK, chunk_elements=chunk_elements, strict=False, shape_first=True,
                           values=not keys_only, close=None if tol.bytewise or not numeric else close,
                           same_stored=_same_stored, to_end=False)
    if found.error is not None:
        raise found.error
    if found.kind is None:
        return None
    if found.kind == "shape" or keys_only or not stats or not numeric and found.kind == "dtype":
        return Change(name, found.kind, side_a, side_b)
    values = _value_stats(ea, eb, tol, numeric, found.kind == "dtype", chunk_elements)
    return _with_stats(Change(name, found.kind, side_a, side_b), values, numeric)


def _with_stats(change: Change, values: dict[str, Any], numeric: bool) -> Change:
    """``change`` with the statistics of its values (``_Accumulator.result``): NaN and Inf counts go to its sides."""
    side_a, side_b = change.a, change.b
    if numeric:
        side_a.nan, side_a.inf = values.pop("nan_a"), values.pop("inf_a")
        side_b.nan, side_b.inf = values.pop("nan_b"), values.pop("inf_b")
        values["nonfinite_appeared"] = side_b.nan > side_a.nan or side_b.inf > side_a.inf
    change.stats = values
    return change


def _pairs(ea: TensorEntry, eb: TensorEntry, chunk: int) -> Any:
    from formats.core.values import iter_chunks, paired_chunks

    return paired_chunks(iter_chunks(ea, chunk), iter_chunks(eb, chunk))


def _same_stored(ea: TensorEntry, eb: TensorEntry) -> bool | None:
    """Whether two tensors stored unchanged in local files hold the same bytes, read with ``pread`` (no mapping,
    no page faults) and CRC checked; None when either is not so stored or a check fails (then streamed)."""
    ranges = ea.stored_range(), eb.stored_range()
    if ranges[0] is None or ranges[1] is None:
        return _same_strings(ea, eb)
    from formats.io.crc import same_ranges

    return same_ranges(ranges[0], ranges[1])


def _same_strings(ea: TensorEntry, eb: TensorEntry) -> bool | None:
    """True when two tensors of byte strings of one format hold equal stored bytes, each checked and the two
    compared a buffer at a time (an object graph is one string of 130 MB at 10^6 objects: read whole, both
    sides were held at once); else None (elements compared one by one)."""
    if type(ea) is not type(eb):
        return None
    a = ea.checked_bytes_range()
    b = eb.checked_bytes_range() if a is not None else None
    if a is None or b is None:
        return None
    from formats.io.crc import same_bytes_ranges

    return same_bytes_ranges(a, b) or None


_CLOSE_BLOCK = 1 << 16
"""Elements compared by ``isclose`` at a time (its half-dozen float64 temporaries are of this size)."""


def _differ_mask(x: np.ndarray, y: np.ndarray, tol: Tolerance, numeric: bool, quick: bool = False) -> Any:
    """Which elements differ (None when none do and ``quick``): by bytes, by ``==`` for strings, else allclose."""
    import numpy as np

    from formats.core.values import as_float

    if not numeric:
        mask = np.fromiter((p != q for p, q in zip(x, y)), dtype=bool, count=x.size)
    elif tol.bytewise and x.dtype == y.dtype:
        if quick:
            wide = np.uint64 if x.nbytes % 8 == 0 else np.uint8  # 8 bytes at a time is ~2.5x faster
            bx, by = x.reshape(-1).view(np.uint8).view(wide), y.reshape(-1).view(np.uint8).view(wide)
            return None if np.array_equal(bx, by) else True
        mask = _bytes_differ(x, y)
    else:
        atol, rtol = (0.0, 0.0) if tol.bytewise else (tol.atol, tol.rtol)
        flat_x, flat_y = x.reshape(-1), y.reshape(-1)
        mask = np.empty(flat_x.size, dtype=bool)
        for start in range(0, flat_x.size, _CLOSE_BLOCK):  # element by element: blocks change nothing but memory
            block = slice(start, start + _CLOSE_BLOCK)
            np.logical_not(np.isclose(as_float(flat_x[block]), as_float(flat_y[block]), rtol=rtol, atol=atol,
                                      equal_nan=tol.equal_nan or tol.bytewise), out=mask[block])
    if quick:
        return True if mask.any() else None
    return mask


def _bytes_differ(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Which elements of two arrays of one dtype differ in their bytes (flat): compared as unsigned integers of
    the element's width where there is one (``any`` over each element's bytes is 40 times slower)."""
    import numpy as np

    size = x.dtype.itemsize
    if size in (1, 2, 4, 8):
        wide = np.dtype(f"u{size}")
        return np.asarray(x).reshape(-1).view(wide) != np.asarray(y).reshape(-1).view(wide)
    bx, by = x.view(np.uint8), y.view(np.uint8)
    return (bx != by).reshape(-1, size).any(axis=1)


def _value_stats(ea: TensorEntry, eb: TensorEntry, tol: Tolerance, numeric: bool, dtype_change: bool,
                 chunk: int) -> dict[str, Any]:
    import numpy as np

    from formats.core.values import as_float

    acc = _Accumulator()
    for x, y in _pairs(ea, eb, chunk):
        acc.differ += int(np.count_nonzero(_differ_mask(x, y, tol, numeric)))
        acc.size += x.size
        if numeric and x.dtype.kind == "f" and y.dtype.kind == "f":
            acc.add(x, y)  # each operation widens to float64 as it goes: the same values, no float64 copies
        elif numeric:
            a, b = as_float(x), as_float(y)  # copies: the chunks read are let go first
            del x, y
            acc.add(a, b)
            del a, b
    return acc.result(numeric)


def _magnitudes(fa: np.ndarray, fb: np.ndarray) -> np.ndarray:
    """``|fa - fb|`` in float64 (real magnitudes of complex differences)."""
    import numpy as np

    d = np.subtract(fa, fb, dtype=np.complex128 if fa.dtype.kind == "c" else np.float64)
    return np.abs(d, out=d) if d.dtype.kind == "f" else np.abs(d)  # in place but for complex


def _sums(fa: np.ndarray, fb: np.ndarray, d: np.ndarray) -> tuple[float, float, float, float]:
    """``(sum d*d, sum fa*fa, sum fb*fb, sum fa*fb)`` by :func:`_dot`'s products and sums; for real values each
    product written over ``d`` (no other temporary: ``d`` is spent)."""
    import numpy as np

    if fa.dtype.kind == "c":
        return _dot(d, d), _dot(fa, fa), _dot(fb, fb), _dot(fa, fb)
    return (float(np.multiply(d, d, out=d).sum()), float(np.multiply(fa, fa, out=d, dtype=np.float64).sum()),
            float(np.multiply(fb, fb, out=d, dtype=np.float64).sum()),
            float(np.multiply(fa, fb, out=d, dtype=np.float64).sum()))


def _dot(x: np.ndarray, y: np.ndarray) -> float:
    """``vdot(x, y).real`` summed by numpy's pairwise summation: the same bits whatever the thread count of the
    BLAS library (``np.dot``'s differ between a process with one BLAS thread, as a Dask worker has, and one
    with many), so a diff on a cluster is the diff on one machine."""
    return float(((x.conj() if x.dtype.kind == "c" else x) * y).sum().real)


def _nonfinite(values: np.ndarray, finite: np.ndarray) -> tuple[int, int]:
    """``(NaNs, Infs)`` among ``values``, whose ``isfinite`` is ``finite`` (counted only when there are some)."""
    import numpy as np

    count = int(np.count_nonzero(finite))
    if count == values.size:
        return 0, 0
    nan = int(np.count_nonzero(np.isnan(values)))
    return nan, values.size - count - nan


_SCALE_BITS = 480
"""Values scaled to below ``2**480`` (squares below ``2**960``) where their squares would pass float64's range."""


class _Accumulator:
    """Running sums for the statistics of a changed pair (float64, finite pairs only). The four sums of squares
    and products are held times ``2**(-2 * scale)``: ``scale`` is 0 (the sums as they are, the same bits as ever)
    until a chunk's would pass float64's range (values past about 1e154); from then on every chunk's values are
    taken times ``2**-scale`` (exact: a power of two), so the relative L2 and the cosine, ratios in which the scale
    cancels, stay what they are, not ``inf / inf``."""

    def __init__(self) -> None:
        self.size = self.differ = self.finite = self.scale = 0
        self.nan_a = self.nan_b = self.inf_a = self.inf_b = 0
        self.sum_abs = self.max_abs = self.sq_diff = self.sq_a = self.sq_b = self.dot = 0.0

    def add(self, a: np.ndarray, b: np.ndarray) -> None:
        """Fold one pair of chunks in: float64 or complex128 (:func:`~formats.core.values.as_float`), or real
        floating chunks as stored, each widened to float64 by the operations themselves."""
        import math  # (math: not imported until values are compared)

        import numpy as np

        fin_a, fin_b = np.isfinite(a), np.isfinite(b)
        nan, inf = _nonfinite(a, fin_a)
        self.nan_a, self.inf_a = self.nan_a + nan, self.inf_a + inf
        nan, inf = _nonfinite(b, fin_b)
        self.nan_b, self.inf_b = self.nan_b + nan, self.inf_b + inf
        both = fin_a & fin_b
        del fin_a, fin_b
        fa, fb = (a, b) if both.all() else (a[both], b[both])  # no copies when every pair is finite
        del both
        with np.errstate(over="ignore", invalid="ignore"):  # |a - b| past float64's range is inf, as numpy says
            d = _magnitudes(fa, fb)
            self.finite += int(fa.size)
            if d.size:
                self.max_abs = max(self.max_abs, float(d.max()))
            self.sum_abs += float(d.sum())
            sums: tuple[float, ...] = _sums(fa, fb, d)
        if not all(map(math.isfinite, sums)):  # squares past float64's range: the values scaled down
            sums = self._scaled_sums(fa, fb)
        elif self.scale:
            sums = tuple(math.ldexp(x, -2 * self.scale) for x in sums)
        self.sq_diff += sums[0]
        self.sq_a += sums[1]
        self.sq_b += sums[2]
        self.dot += sums[3]

    def _scaled_sums(self, fa: np.ndarray, fb: np.ndarray) -> tuple[float, float, float, float]:
        """:func:`_sums` of ``fa`` and ``fb`` times ``2**-scale``, the scale raised (and the sums so far brought to
        it) so that their largest value is below ``2**_SCALE_BITS``."""
        import math  # (math: not imported until values are compared)

        import numpy as np

        top = max(float(np.abs(fa).max(initial=0.0)), float(np.abs(fb).max(initial=0.0)))
        scale = max(self.scale, math.frexp(top)[1] - _SCALE_BITS)
        if scale > self.scale:
            shift = -2 * (scale - self.scale)
            self.sq_diff, self.sq_a, self.sq_b, self.dot = (math.ldexp(x, shift) for x in (
                self.sq_diff, self.sq_a, self.sq_b, self.dot))
            self.scale = scale
        wide = np.complex128 if fa.dtype.kind == "c" or fb.dtype.kind == "c" else np.float64
        factor = math.ldexp(1.0, -scale)
        sa, sb = np.multiply(fa, factor, dtype=wide), np.multiply(fb, factor, dtype=wide)
        return _sums(sa, sb, _magnitudes(sa, sb))

    def result(self, numeric: bool) -> dict[str, Any]:
        """The JSON statistics (``None`` where undefined)."""
        import math  # (math: not imported until values are compared)

        out: dict[str, Any] = {"size": self.size, "differ": self.differ,
                               "frac_differ": self.differ / self.size if self.size else 0.0}
        if not numeric:
            return out
        norm_a, norm_b = math.sqrt(self.sq_a), math.sqrt(self.sq_b)
        out.update(max_abs_diff=self.max_abs if self.finite else None,
                   mean_abs_diff=self.sum_abs / self.finite if self.finite else None,
                   rel_l2=math.sqrt(self.sq_diff) / norm_a if norm_a else None,
                   cosine=self.dot / (norm_a * norm_b) if norm_a and norm_b else None,
                   nan_a=self.nan_a, nan_b=self.nan_b, inf_a=self.inf_a, inf_b=self.inf_b)
        return out
