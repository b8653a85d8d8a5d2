"""Exports (``--to npz``, ``--to safetensors``, a plugin format's target): leave the TensorFlow world with
the original keys.

:func:`plan_export` plans any layout a registered format writes and that has no dedicated planner in
:mod:`formats.ops.convert.targets`: the format says which tensors it cannot store (``unstorable``), how
it stores one (``storage_note``) and which keys it refuses (``key_problems``), see :mod:`formats.core.format`;
its ``write`` gets the provenance record as ``options["provenance"]`` (its ``"tensors"`` held as columns,
:class:`~formats.core.provenance.RecordColumns`, where the format ``streams_records``, else a list of dicts).

Every fixed-width tensor is written under its key (rename rules apply to keys), streamed in
bounded chunks, and a provenance record goes with the file: for each tensor its output key,
source key, object path, full name (the TF1-style/Keras name), role, dtype and shape.

- npz: written by :func:`formats.npz.writer.write_npz`, with the dtype policy ``extract`` shares: an
  uncompressed zip of ``<key>.npy`` members plus ``__ckpt_provenance__.npy`` (a 0-d unicode array
  holding the JSON record; ``numpy.load`` reads it without pickle). Types numpy cannot describe
  (bfloat16, float8, int4, ...) are stored as their bits, unsigned integers of the same width; the
  record keeps the real dtype. Strings and variants are stored as fixed-width bytes; one with an
  element ending in NUL (which numpy would drop) is left out with a warning.
- safetensors: the documented layout (8-byte header length, JSON header with ``__metadata__``,
  then the data); ``__metadata__["ckpt.provenance"]`` holds the record. Written without the
  ``safetensors`` package (which reads it back).

Both are written (:mod:`formats.npz.writer`, :mod:`formats.safetensors.writer`) the one way (:mod:`formats.io.writing`): guarded, atomically, read back, compared
with their sources, and reported as a :class:`~formats.io.writing.WriteReport`.
"""
from __future__ import annotations

from _operator import itemgetter  # operator's C half, without operator.py (start-up)
from _functools import partial  # type: ignore[import-not-found]  # functools' C class, without functools (which imports collections)

from formats.core.dtypes import by_name
from formats.core.format import capability
from formats.core.gc_pause import gc_paused
from formats.core.model import (KERAS3_LAYOUTS, OBJECT_GRAPH_KEY, Checkpoint, FormatName, TensorEntry, array_problem,
                                 kinds_of)
from formats.core.object_keys import ATTRIBUTES
from formats.core.provenance import GRAPH_CARRIERS, PROVENANCE_KEY, PROVENANCE_MEMBER, CarriedGraph, RecordColumns
from formats.core.registry import writer_of
from formats.ops.convert.plan import WARNING, ConversionPlan, ConvertOptions
from formats.ops.convert.conversion_source import is_object_based

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["plan_export", "plan_npz", "plan_safetensors", "PROVENANCE_MEMBER", "PROVENANCE_KEY", "record_columns",
           "let_go_of_labels", "exporter", "graph_reader"]


def record_columns(source: Checkpoint, keys: list[str] | None = None,
                   entries: list[TensorEntry] | None = None) -> RecordColumns:
    """The provenance items of ``entries`` of ``source`` written as ``keys`` (more added by
    ``RecordColumns.add(out, entry)``): each one's object path the part of its key before ``/.ATTRIBUTES/`` in an
    object-based checkpoint, before ``/vars/`` in a Keras 3 one, else ``""``."""
    marker = f"/{ATTRIBUTES}/"
    object_based, keras3 = is_object_based(source), source.format in KERAS3_LAYOUTS

    def object_path(key: str) -> str:
        if marker in key and object_based:
            return key.split(marker, 1)[0]
        if "/vars/" in key and keras3:
            return key.rsplit("/vars/", 1)[0]
        return ""

    return RecordColumns(object_path if object_based or keras3 else None, keys, entries)


def _storable(fmt: Any, entry: TensorEntry) -> str | None:
    """Why ``entry`` cannot be stored by ``fmt`` (None when it can)."""
    if entry.unreadable:
        return entry.unreadable
    try:
        dt = by_name(entry.dtype)
    except ValueError:
        dt = None
    unfit = array_problem(tuple(entry.shape), dt.itemsize if dt is not None and dt.fixed_width else 8)
    if unfit is not None:
        return f"tensor has {unfit}"
    unstorable = getattr(fmt, "unstorable", None)
    return None if unstorable is None else unstorable(entry)


_KINDS = 4096
"""Dtype and shape pairs whose answers :func:`plan_export` keeps (more: asked each time)."""


def _rows_at_once(plan: ConversionPlan, source: Checkpoint, fmt: Any, records: RecordColumns) -> bool:
    """Plan every tensor of ``source`` as :func:`plan_export`'s loop plans each when no rule renames them, all at
    once, where they are all entries of a class whose ``kinds_of`` finds their kinds (a bundle's, from its index's
    columns) and every kind is fixed-width, readable and storable (nothing then to leave out but the object graph,
    with its warning): each kind asked once, the rows made by a C function over the columns. False (nothing planned)
    otherwise: the loop plans them."""
    from _operator import attrgetter

    from formats.ops.convert.plan import PlanRow, planned_shape

    entries = list(source.values())
    kinds = kinds_of(entries)
    if kinds is None:
        return False
    keys = list(map(attrgetter("key"), entries))  # (a bundle's keys are its tensors')
    graph = keys.index(OBJECT_GRAPH_KEY) if OBJECT_GRAPH_KEY in keys else -1
    if graph >= 0:  # (left out, as the loop leaves it out: the one warning the plan then has)
        del keys[graph], entries[graph], kinds[graph]
    note_for = getattr(fmt, "storage_note", None)
    planned = {}
    for kind, entry in dict(zip(reversed(kinds), reversed(entries))).items():
        if type(entry.shape) is not tuple or not _fixed_width(entry.dtype) or _storable(fmt, entry) is not None:
            return False
        planned[kind] = (planned_shape(entry.shape), str(entry.dtype), note_for(entry) if note_for is not None else "")
    rows = list(map(planned.__getitem__, kinds))
    plan.rows += map(PlanRow, keys, keys, map(_FIRST, rows), map(_SECOND, rows), map(_THIRD, rows), entries)
    records.keys += keys
    records.entries += entries
    if graph >= 0:
        plan.add("unused", OBJECT_GRAPH_KEY, _GRAPH_LEFT_OUT, WARNING)
    return True


_FIRST, _SECOND, _THIRD = (itemgetter(i) for i in range(3))
_GRAPH_LEFT_OUT = "the object graph is not a tensor; left out"
"""(Where it cannot go with the tensors: ``convert --to tf-object`` of the file then rebuilds a graph from its keys.)"""


def _fixed_width(dtype: str) -> bool:
    try:
        return by_name(dtype).fixed_width
    except ValueError:
        return False


@gc_paused  # a row per tensor, none in a cycle
def plan_export(source: Checkpoint, options: ConvertOptions, target: str) -> ConversionPlan:
    """Plan writing every tensor of ``source`` the format writing ``target`` can store, under its key
    (rename rules applied), with the provenance record."""
    fmt = writer_of(target)
    if not options.dry_run:  # (every key's name and role for the record, asked before a row is held per key)
        source.keep_names_and_roles()
    plan = ConversionPlan(source.path, target, options.template)
    if options.template:
        plan.add("unsupported", options.template, f"--to {target} takes no --template")
    records = record_columns(source)
    note_for = getattr(fmt, "storage_note", None)
    # a readable fixed-width tensor's answers, asked once a dtype and shape (see formats.core.format): 100k tensors
    # of a few kinds asked the format a few times, not 100k
    asked: dict[tuple[str, tuple[int, ...]], tuple[str | None, str]] = {}
    add_row, record_key, record_entry = plan.add_row, records.keys.append, records.entries.append
    planned = not options.rules and _rows_at_once(plan, source, fmt, records)
    for key, entry in () if planned else source.items():  # (every entry in order: none looked up by its key)
        if key == OBJECT_GRAPH_KEY:
            plan.add("unused", key, _GRAPH_LEFT_OUT, WARNING)
            continue
        kind = (entry.dtype, entry.shape) if type(entry.shape) is tuple and entry.unreadable is None else None
        found = None if kind is None else asked.get(kind)
        if found is None:
            why = _storable(fmt, entry)
            found = (why, note_for(entry) if why is None and note_for is not None else "")
            if kind is not None and _fixed_width(entry.dtype) and len(asked) < _KINDS:
                asked[kind] = found
        why, note = found
        if why is not None:
            plan.leave_out(key, why)
            continue
        out = options.rules.apply(key) if options.rules else key
        notes = note if out == key else f"renamed from {key}; {note}" if note else f"renamed from {key}"
        add_row(key, out, entry, entry.shape, entry.dtype, notes, readable=kind is not None)
        record_key(out)  # (records.add's two steps)
        record_entry(entry)
    key_problems = getattr(fmt, "key_problems", None)
    if key_problems is not None:
        for key, problem in key_problems([row.key for row in plan.rows]).items():
            plan.add("unsupported", key, problem)
    plan.report_unused_rules(options.rules)
    plan.check_collisions()
    plan.write_options = {"provenance": {"source": source.path, "format": source.format,
                                         "tensors": records if capability(fmt, "streams_records") else list(records)}}
    _carry_graph(plan, source, target, bool(options.rules))
    # (the items' labels asked and the graph let go of as the plan is written: a dry run decodes no graph, and a
    # source whose graph cannot be decoded is planned, as before)
    plan.before_write = partial(let_go_of_labels, source, plan.write_options["provenance"]["tensors"])
    return plan


def let_go_of_labels(source: Checkpoint, items: RecordColumns | list[Any]) -> None:
    """Of an object-based source, the names and roles of the record's ``items`` asked now
    (:meth:`~formats.core.provenance.RecordColumns.label_now`; a list of items has them already) and its decoded graph
    let go of (its memory given back): nothing else a write asks for needs them, and the graph is then not decoded
    while the record is written, every row held."""
    if is_object_based(source) and OBJECT_GRAPH_KEY in source:
        if isinstance(items, RecordColumns):
            items.label_now()
        source.forget_object_graph()


def _carry_graph(plan: ConversionPlan, source: Checkpoint, target: str, renamed: bool) -> None:
    """Hand an object-based source's serialized graph to a writer that carries it (:data:`GRAPH_CARRIERS`) where
    every other tensor is planned under its own key (the graph's checkpoint keys are then the file's): the
    warning that it is left out taken back. An export's own carried graph goes on to the next (a warning where it
    cannot be read). Left out as before (with the warning) otherwise."""
    own = OBJECT_GRAPH_KEY in source
    if target not in GRAPH_CARRIERS or renamed or len(plan.rows) != len(source) - own:
        return
    graph: bytes | CarriedGraph | None = graph_reader(source)
    if not own:
        from formats.core.errors import CheckpointError

        try:
            graph = source.carried_object_graph()
        except CheckpointError as exc:
            plan.add("graph", OBJECT_GRAPH_KEY, f"the object graph the source carries is left out: {exc.message}",
                     WARNING)
    if graph is not None:
        plan.write_options["object_graph"] = graph
        plan.problems = [p for p in plan.problems if not (p.key == OBJECT_GRAPH_KEY and p.message == _GRAPH_LEFT_OUT)]


def graph_reader(source: Checkpoint) -> CarriedGraph | None:
    """The serialized object graph of ``source`` (its ``_CHECKPOINTABLE_OBJECT_GRAPH``, a scalar string) as a writer
    carries it, read when it is written (:class:`~formats.core.provenance.CarriedGraph`); None where there is none."""
    if OBJECT_GRAPH_KEY not in source:
        return None
    graph = source[OBJECT_GRAPH_KEY]
    if graph.dtype != "string" or tuple(graph.shape) != ():
        return None
    return CarriedGraph(graph)



def exporter(target: str) -> Any:
    """The planning function ``(source, options) -> ConversionPlan`` of an export to ``target``."""
    return partial(plan_export, target=target)


def plan_npz(source: Checkpoint, options: ConvertOptions) -> ConversionPlan:
    """Plan an ``.npz`` export of every tensor of ``source`` numpy can hold (see :mod:`formats.io.npy_output`)."""
    return plan_export(source, options, FormatName.NPZ.value)


def plan_safetensors(source: Checkpoint, options: ConvertOptions) -> ConversionPlan:
    """Plan a ``.safetensors`` export of every tensor whose dtype safetensors has."""
    return plan_export(source, options, FormatName.SAFETENSORS.value)
