"""Planning an edit through the conversion machinery: choose the tensors, cut the graph, plan the
target, then put computed values (casts, means) in the rows and give each its data file.

1. :func:`~formats.ops.edit.selection.choose_tensors` decides what stays;
2. an object-based source's graph is pruned to it (:func:`~formats.ops.edit.prune.prune_graph`) and
   the source is seen through a :class:`~formats.ops.edit.view.KeptView`;
3. the output is planned: in the source's own bundle format row for row with the pruned graph,
   otherwise by the conversion target's planner (``--to`` targets, and Keras, npz and safetensors
   files written in their own format);
4. rows that copy a tensor get their computed value (a :class:`~formats.ops.edit.values.MeanTensor`
   for ``average``, a :class:`~formats.ops.edit.values.CastTensor` for a cast);
5. the output's tensors are spread over data files when its format has them (``data_files``; the
   bundle's :mod:`formats.tf_bundle.sharding`).
"""
from __future__ import annotations

from _collections_abc import Callable, Sequence  # collections.abc's classes, without the collections package
from _operator import attrgetter  # operator's C half, without operator.py (start-up)
from itertools import repeat

from formats.core.format import capability
from formats.core.model import KERAS3_LAYOUTS, OBJECT_GRAPH_KEY, Checkpoint, FormatName, Role, TensorEntry
from formats.core.registry import edit_target, is_object_layout, write_targets, writer_capability, writer_of
from formats.core.sources import Source
from formats.ops.convert.plan import WARNING, ConversionPlan, ConvertOptions, PlanRow
from formats.ops.convert.conversion_source import is_object_based
from formats.ops.convert.targets import planner
from formats.ops.edit.plan import EditOptions, EditPlan, KeyAction
from formats.ops.edit.selection import Selection, choose_tensors
from formats.tf_bundle.sharding import assign_shards, planned_size
from formats.ops.edit.values import CastStats, CastTensor, MeanTensor, is_lossless
from formats.ops.edit.view import KeptView

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

__all__ = ["plan_output", "own_target", "has_data_files", "ValueFor", "KeyActions"]

ValueFor = Callable[[TensorEntry], tuple[Source, str] | None]
"""For an ``average``: the value to write for a kept entry and a note saying what it is (None: the entry's own)."""


def own_target(ckpt: Checkpoint) -> str | None:
    """The format an edit writes ``ckpt`` in by default: its own, or the nearest one ckpt writes (a V1
    checkpoint as a name-based bundle, a SavedModel's variables as a bundle, a ``.keras`` file as
    Keras 3 weights); None when there is none."""
    target = edit_target(ckpt.format)
    if target is not None and is_object_based(ckpt) and not is_object_layout(target):
        target = next((t for t in capability(writer_of(target), "writes") if is_object_layout(t)), target)  # type: ignore[attr-defined]
    return target


def has_data_files(target: str) -> bool:
    """Whether an output in ``target`` can be spread over data files (its format's ``data_files``)."""
    return bool(writer_capability(target, "data_files"))


def _sharded_by_size(target: str) -> bool:
    """Whether ``target`` is written as shards of at most a size (its format's ``max_shard_size``)."""
    return target in writer_capability(target, "max_shard_size")


def _writable(target: str) -> bool:
    """Whether a registered format writes ``target`` (found as ``writer_of`` finds it: the built-in writers'
    table first; listing every target imports every format and looks for plugins in every installed package)."""
    try:
        writer_of(target)
    except KeyError:
        return False
    return True


def plan_output(source: Checkpoint, options: EditOptions, operation: str, inputs: list[str],
                value_for: ValueFor | None = None) -> EditPlan:
    """Plan writing ``source`` as ``options`` ask (``value_for`` supplies averaged values)."""
    options.check()
    target = options.to or own_target(source)
    selection = choose_tensors(source, options.select, options.exclude, options.by, options.drop_optimizer)
    conversion = ConversionPlan(source.path, target or "?")
    conversion.problems += selection.problems
    plan = EditPlan(operation, inputs, conversion)
    if target is None or not _writable(target):
        conversion.add("unsupported", source.path, f"ckpt cannot write a {source.format} checkpoint; choose an "
                       f"output format ({', '.join(write_targets())})")
    elif conversion.ok:
        # (only the pruned graph's bytes are written, its rows copied as stored: nothing asks for a graph again)
        forget = not options.casts and value_for is None and _copied_as_stored(source, target)
        view = _view(source, selection, conversion, forget)
        if view is not None:
            plan.conversion = _plan_target(source, view, target, options, selection.kept)
            plan.conversion.problems[:0] = conversion.problems
            _fill_values(plan, view, options, value_for)
            _shard(plan, source, options)
    if options.skip_unreadable:
        plan.conversion.leave_out_unreadable()
    _list_actions(plan, source, selection.dropped)
    return plan


def _view(source: Checkpoint, selection: Selection, conversion: ConversionPlan, forget: bool = False
          ) -> KeptView | None:
    """The tensors ``selection`` keeps of ``source``, its object graph pruned to them; None when the graph cannot be.
    ``forget``: only the pruned graph's bytes are wanted: the decoded graphs are let go before an entry per key is
    taken (:meth:`~formats.core.model.Checkpoint.forget_object_graph`; at 10^6 objects an edit peaked 170 MB
    higher with the source's graph, its labels and the pruned one held). The graph is pruned by the keys left out,
    as the selection gives them: no set of the keys kept, nor a second sorted list of every key, is made (at 10^6,
    40 MB held through the pruning)."""
    kept = selection.kept
    graph = source.object_graph if is_object_based(source) else None
    if graph is None:
        return KeptView(source, kept)
    from formats.ops.edit.prune import prune_graph  # (the object graph's modules: not for a name-based edit)

    if forget:  # (the labels made from the graph go now; the graph itself once pruned, held here till then)
        source.forget_object_graph()
    pruned, data, problems = prune_graph(graph, selection.keys, selection.dropped, decoded=not forget)
    del graph
    conversion.problems += problems
    if data is None:
        return None
    if forget:
        del pruned
        return KeptView(source, kept, data=data)
    return KeptView(source, kept, pruned, data)


def _copied_as_stored(source: Checkpoint, target: str) -> bool:
    """Whether ``target`` is the source's own bundle format, written row for row (:func:`_plan_target`)."""
    return has_data_files(target) and target == own_target(source)


def _plan_target(source: Checkpoint, view: KeptView, target: str, options: EditOptions,
                 kept: list[str]) -> ConversionPlan:
    """The rows of the output: the source's own bundle format row for row, else the target's planner."""
    convert = ConvertOptions(max_shard_size=options.max_shard_size if _sharded_by_size(target) else None)
    if _copied_as_stored(source, target):
        plan = ConversionPlan(source.path, target)
        add_row = plan.add_row
        for key, entry in view.kept_items():
            add_row(key, key, entry, entry.shape, entry.dtype)
        plan.object_graph = view.graph_bytes if is_object_layout(target) else None
        return plan
    if target == FormatName.KERAS3_H5 and source.format in KERAS3_LAYOUTS:  # its layout comes from the file itself
        plan = planner(target)(source, convert)
        _keep_rows(plan, set(kept))
        return plan
    return planner(target)(view, convert)


def _keep_rows(plan: ConversionPlan, kept: set[str]) -> None:
    """Leave out rows of tensors not kept, and Keras 3 ``vars`` groups that lose all their variables."""
    owners = {_owner(r.key) for r in plan.rows}
    plan.rows = [r for r in plan.rows if r.source is None or r.source in kept]
    emptied = owners - {_owner(r.key) for r in plan.rows}
    if emptied and "groups" in plan.write_options:
        plan.write_options["groups"] = [g for g in plan.write_options["groups"] if g[0] not in emptied]


def _owner(key: str) -> str:
    return key.rpartition("vars/")[0].rstrip("/")


def _fill_values(plan: EditPlan, view: KeptView, options: EditOptions, value_for: ValueFor | None) -> None:
    """Put the averaged or cast value in every row that copies a kept tensor."""
    casts: dict[str, CastStats] = {}
    for row in plan.conversion.rows if value_for is not None or options.casts else ():  # else nothing to put
        entry = view[row.source] if row.source is not None and row.source in view else None
        if entry is None or row.source == OBJECT_GRAPH_KEY:
            continue
        if value_for is not None:
            found = value_for(entry) if row.value is entry else None
            if found is not None:
                row.value, detail = found
                row.note = _joined(row.note, detail)
        target = options.casts.get(row.dtype)
        if target is not None and _castable(entry, options.cast_model_only):
            stats = CastStats(row.key, row.dtype, target, is_lossless(row.dtype, target))
            casts[row.key] = stats
            row.value, row.dtype = CastTensor(row.value, entry, target, stats), target
            row.note = _joined(row.note, f"cast {stats.source_dtype} -> {target}" + ("" if stats.lossless else
                                                                                     " (lossy)"))
    plan.casts = list(casts.values())
    for source_dtype in options.casts:
        if not any(c.source_dtype == source_dtype for c in plan.casts):
            plan.conversion.add("cast", source_dtype, f"no {'model ' if options.cast_model_only else ''}tensor "
                                f"is {source_dtype}; nothing cast", WARNING)


def _castable(entry: TensorEntry, model_only: bool) -> bool:
    """Model variables are cast, and slots unless ``model_only``; optimizer state and counters never."""
    role = str(entry.role)
    return role == Role.VARIABLE or (role == Role.SLOT and not model_only)


def _joined(note: str, more: str) -> str:
    return f"{note}; {more}" if note else more


def _shard(plan: EditPlan, source: Checkpoint, options: EditOptions) -> None:
    """Give each tensor of a bundle output its data file; refuse data files for other outputs."""
    conversion = plan.conversion
    if not has_data_files(conversion.target):
        if options.shards is not None or (options.max_shard_size is not None and not _sharded_by_size(conversion.target)):
            conversion.add("unsupported", conversion.target, f"a {conversion.target} output is not spread over "
                           "data files (TensorFlow bundles are; Keras 3 weights by maximum shard size)")
        return
    count = options.shards
    if count is None and options.max_shard_size is None:
        count = int(source.metadata.get("num_shards") or 1) if has_data_files(source.format) else 1
    if count == 1 and options.max_shard_size is None and (conversion.rows or conversion.object_graph is not None):
        return  # one data file holds every tensor: no size asked for (at 10^5 tensors, 3% of an edit)
    sizes = [planned_size(r.value, r.shape, r.dtype) for r in conversion.rows]
    if conversion.object_graph is not None:
        sizes.append(planned_size(conversion.object_graph, (), "string"))  # one string (bytes), read without numpy
    if count is not None and count > len(sizes):
        conversion.add("shards", conversion.target, f"{count} data files asked for, but only {len(sizes)} tensors "
                       f"to write: {len(sizes)} data files", WARNING)
    if options.max_shard_size is not None:
        _oversized(conversion.rows, sizes, options.max_shard_size, conversion)
    shards = assign_shards(sizes, count, options.max_shard_size)
    if shards and shards[-1] > 0:
        plan.shards = shards
        conversion.write_options["shards"] = shards
        for row, shard in zip(conversion.rows, shards):
            row.note = _joined(row.note, f"data file {shard}")


def _oversized(rows: list[PlanRow], sizes: list[int], limit: int, conversion: ConversionPlan) -> None:
    for row, size in zip(rows, sizes):
        if size > limit:
            conversion.add("shards", row.key, f"{size:,} bytes, more than the maximum shard size ({limit:,}): "
                           "alone in its data file", WARNING)


def _list_actions(plan: EditPlan, source: Checkpoint, dropped: dict[str, str]) -> None:
    """One :class:`KeyAction` per input key (the object graph included), in key order: made when asked for."""
    plan.actions = KeyActions(plan, source, dropped)


class KeyActions(Sequence[KeyAction]):
    """An edit plan's actions, one per input key in key order, each made as it is reached from the plan (its rows,
    its object graph, what the selection ``dropped``) rather than an object per key held with the plan (at a million
    keys, 77 MB)."""

    __slots__ = ("_plan", "_source", "_dropped")

    def __init__(self, plan: EditPlan, source: Checkpoint, dropped: dict[str, str]) -> None:
        self._plan, self._source, self._dropped = plan, source, dropped

    def __len__(self) -> int:
        return len(self._source)

    def __getitem__(self, i: Any) -> Any:
        return list(self)[i]

    def __iter__(self) -> Iterator[KeyAction]:
        for key, action, found, detail in self._decided():
            if found is None:
                yield KeyAction(key, action, detail=detail)
            elif key == OBJECT_GRAPH_KEY:
                yield KeyAction(key, action, key, "string", detail)
            else:
                yield KeyAction(key, action, found.key, found.dtype, found.note)

    def counts(self) -> dict[str, int]:
        """How many input keys each action applies to, in the order each is first met (no action made a key). When
        every row copies its tensor as it is (no cast, no mean: an action is "keep" or "drop"), counted by C
        functions over the keys (at 10^5 keys, a twentieth of an edit's CPU walked key by key)."""
        plan = self._plan
        rows = plan.conversion.rows
        if plan.operation == "average" or any(map(isinstance, map(_value, rows), repeat((CastTensor, MeanTensor)))):
            out: dict[str, int] = {}
            for _, action, _, _ in self._decided():
                out[action] = out.get(action, 0) + 1
            return out
        if not self._source:
            return {}
        # the keys a row is written from, as _decided finds them (a dict of them: at 10^6 rows, 4 MB less than a set)
        kept = dict.fromkeys(map(_source, rows))
        any(map(kept.pop, self._dropped, repeat(None)))  # (each gives None)
        kept.pop(OBJECT_GRAPH_KEY, None)
        if plan.conversion.object_graph is not None:
            kept[OBJECT_GRAPH_KEY] = None  # (written by the plan itself)
        keep = sum(map(kept.__contains__, self._source))
        counted = {"keep": keep, "drop": len(self._source) - keep}
        order = ("keep", "drop") if min(self._source) in kept else ("drop", "keep")  # (the first key's action first)
        return {action: counted[action] for action in order if counted[action]}

    def _decided(self) -> Iterator[tuple[str, str, Any, str]]:
        """``(key, action, the row written or None, detail)`` of every input key in key order (the object graph's
        row: the plan itself, when it writes a graph that is not empty)."""
        plan, dropped = self._plan, self._dropped
        written: dict[str, PlanRow] = {}
        for row in plan.conversion.rows:
            if row.source is not None:
                written.setdefault(row.source, row)
        planned = bool(plan.conversion.rows)
        operation = plan.operation
        for key in sorted(self._source):
            found = written.get(key)
            if key == OBJECT_GRAPH_KEY:
                graph = plan.conversion.object_graph
                yield (key, "keep", plan if graph else None, "object graph, cut down to the tensors kept") \
                    if graph is not None else (key, "drop", None, "not written by the output format")
            elif key in dropped:
                yield key, "drop", None, dropped[key]
            elif found is None:
                yield key, "drop", None, "not written by the output format" if planned else "nothing is written"
            else:
                yield key, _action(found, operation), found, ""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, (list, KeyActions)) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]


_value, _source = attrgetter("value"), attrgetter("source")


def _action(row: PlanRow, operation: str) -> str:
    if isinstance(row.value, CastTensor):
        return "cast"
    if isinstance(row.value, MeanTensor):
        return "mean"
    return "newest" if operation == "average" else "keep"
