"""Writing an edit or an average on a cluster: each unit writes one data file, the client writes the index, last.

The client plans as on one machine (every problem is found before anything is written) and sends each worker
a unit: the plan by name - the planner (``plan_average``, ``plan_edit_of``), the inputs as
:class:`~formats.discover.units.SourceRef`, the options - and one data file number. The worker opens the
inputs from their URLs, plans again (planning is deterministic; the keys it finds for its data file are
checked against the client's), and streams its tensors straight into the output's data file: to object
storage through fsspec in parts of ``buffer`` bytes (a multipart upload, published only by its last call),
or to a local temporary file renamed when whole. It reads what it wrote back and checks every tensor's
CRC32C, then returns the index rows of its tensors, nothing else. A unit run again (its worker lost) writes
the same bytes under the same name.

Only when every data file is in place does the client write the index, in one request: a reader never sees
the checkpoint without all of its data. When a unit fails, the data files written are removed and nothing is
published. A worker writes at most ``buffers`` data files at a time (``CKPT_WORKER_BUFFERS``, default 2),
each holding one ``buffer`` (``CKPT_BUFFER_MB``, default 64 MiB) in memory.
"""
from __future__ import annotations

import os

from formats.core.errors import CorruptCheckpointError, UsageError, VerificationError
from formats.core.executors import Executor, executor_for
from formats.core.model import OBJECT_GRAPH_KEY, FormatName
from formats.core.value_tuples import ValueTuple
from formats.discover.units import SourceRef, buffer_settings, opened, source_ref, worker_slot
from formats.io import storage
from formats.ops.units import new_token

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from typing import Any

    from formats.core.model import Checkpoint
    from formats.ops.convert.plan import ConversionPlan, ConversionResult
    from formats.ops.edit.plan import EditOptions, EditPlan, EditResult

__all__ = ["PlanRef", "remote_executor", "execute_edit_on", "write_on_cluster", "write_data_unit", "BUNDLE_TARGETS", "buffer_settings",
           "execute_plan_on", "write_conversion_on"]

BUNDLE_TARGETS = (FormatName.TF_NAME.value, FormatName.TF_OBJECT.value)
"""The outputs written on a cluster: TensorFlow bundles, whose data files are independent."""
_plans: dict[bytes, Any] = {}


class PlanRef(ValueTuple):
    """A plan by name: ``planner(opened inputs, options)`` of the inputs ``refs`` (``options``: EditOptions).
    (The planner is not the first field: Dask takes a tuple argument that starts with a function for a task.)"""

    refs: tuple[SourceRef, ...]
    options: Any
    planner: Any


def _conversion(plan: EditPlan | ConversionPlan) -> ConversionPlan:
    """What is written: an edit's conversion, or a conversion itself."""
    return plan.conversion if hasattr(plan, "conversion") else plan


def planned_pairs(plan: EditPlan | ConversionPlan) -> tuple[list[tuple[str, Any]], list[int]]:
    """The ``(key, source)`` pairs a bundle writer writes for ``plan`` (the object graph last), and the data
    file number of each."""
    from formats.core.sources import TensorValue

    conversion = _conversion(plan)
    pairs: list[tuple[str, Any]] = [(row.key, row.value) for row in conversion.rows]
    graph = conversion.object_graph
    if graph is not None:
        pairs.append((OBJECT_GRAPH_KEY, TensorValue(graph if isinstance(graph, bytes) else graph.SerializeToString(),
                                                    "string")))
    shards = list(conversion.write_options.get("shards") or [0] * len(pairs))
    return pairs, shards


def _plan(ref: PlanRef) -> EditPlan | ConversionPlan:
    """The plan ``ref`` names, made once per run in this process (the inputs stay open for the next unit)."""
    import pickle

    name = pickle.dumps(ref)
    plan = _plans.get(name)
    if plan is None:
        plan = ref.planner([opened(r) for r in ref.refs], ref.options)
        while len(_plans) >= 2:
            _conversion(_plans.pop(next(iter(_plans)))).close()
        _plans[name] = plan
    return plan


def write_data_unit(ref: PlanRef, shard: int, keys: tuple[str, ...], positions: tuple[int, ...], path: str,
                    buffer: int = 64 << 20, buffers: int = 2, verify: bool = True) -> list[tuple[bytes, bytes]]:
    """A unit of a write on a cluster: data file ``path`` (number ``shard``) of the plan ``ref`` names, holding
    the tensors at ``positions`` of its pairs (which must be ``keys``), written, read back and checked (unless
    not ``verify``); its index rows ``(key, entry)``."""
    pairs, _ = planned_pairs(_plan(ref))
    mine = [pairs[i] for i in positions]
    if tuple(k for k, _ in mine) != keys:
        raise CorruptCheckpointError(path, "the inputs changed since the write was planned (a worker planned "
                                           "other tensors for this data file)")
    with worker_slot(buffers):
        write = _write_remote if storage.is_url(path) else _write_local
        rows, written = write(path, mine, shard, buffer)
    if verify:
        _read_back(path, written)
    return rows


class _Summing:
    """A file being written, with the CRC32C and the size of everything written to it."""

    def __init__(self, f: Any) -> None:
        self.f, self.crc, self.size = f, 0, 0

    def write(self, data: Any) -> int:
        from formats.io.crc import crc32c

        self.crc = crc32c(data, self.crc)
        self.size += len(memoryview(data).cast("B"))
        return int(self.f.write(data) or 0)


def _write_local(path: str, pairs: list[tuple[str, Any]], shard: int, buffer: int) -> tuple[Any, tuple[int, int]]:
    from formats.io.atomic import atomic_output
    from formats.tf_bundle.writer import write_data_file

    with atomic_output(path) as temp, open(temp, "xb", buffering=min(buffer, 8 << 20)) as f:
        out = _Summing(f)
        rows = write_data_file(out, pairs, shard, path, chunk=min(buffer, 8 << 20))  # type: ignore[arg-type]
    return rows, (out.size, out.crc)


def _write_remote(url: str, pairs: list[tuple[str, Any]], shard: int, buffer: int) -> tuple[Any, tuple[int, int]]:
    """Stream to object storage: parts of ``buffer`` bytes; the object appears only when the last call completes,
    and an error discards the upload (a killed process leaves an incomplete upload, never an object)."""
    from formats.tf_bundle.writer import write_data_file

    fs, p = storage.filesystem(url)
    f = fs.open(p, "wb", block_size=buffer)
    out = _Summing(f)
    try:
        rows = write_data_file(out, pairs, shard, url, chunk=min(buffer, 8 << 20))  # type: ignore[arg-type]
    except BaseException:
        f.discard()
        raise
    f.close()
    return rows, (out.size, out.crc)


def _read_back(path: str, written: tuple[int, int]) -> None:
    """Read the data file at ``path`` back whole and check its size and CRC32C against what was written."""
    from formats.io.crc import crc32c

    size, expected = written
    crc = 0
    if storage.is_url(path):
        if storage.file_size(path) != size:
            raise VerificationError(path, f"verification failed: {storage.file_size(path)} bytes read back, "
                                          f"{size} written")
        for piece in storage.iter_ranges(path, 0, size):
            crc = crc32c(piece, crc)
    else:
        with open(path, "rb") as f:
            while piece := f.read(8 << 20):
                crc = crc32c(piece, crc)
    if crc != expected:
        raise VerificationError(path, "verification failed: the bytes read back differ from those written")


def remote_executor(executor: str | Executor | None) -> Executor | None:
    """The executor ``executor`` names when it runs units elsewhere (a cluster), else None (local threads)."""
    chosen = executor_for(executor)
    return chosen if chosen.remote else None


def execute_edit_on(executor: str | Executor | None, plan: EditPlan, planner: Callable[..., EditPlan],
                    sources: Sequence[Checkpoint], options: EditOptions, output: str, *, dry_run: bool = False,
                    force: bool = False, verify: bool = True, update_state: bool = False, inputs: Iterable[Any] = (),
                    progress: Callable[[int, int], None] | None = None, jobs: int | None = None) -> EditResult:
    """:func:`~formats.ops.edit.plan.execute_edit` on local threads, or :func:`write_on_cluster` when ``executor``
    (None: ``$CKPT_EXECUTOR``) is a cluster."""
    remote = None if dry_run else remote_executor(executor)
    if remote is None:
        from formats.ops.edit.plan import execute_edit

        return execute_edit(plan, output, dry_run=dry_run, force=force, verify=verify, update_state=update_state,
                            inputs=inputs, progress=progress, jobs=jobs)
    try:
        return write_on_cluster(plan, planner, sources, options, output, remote, force=force, verify=verify,
                                update_state=update_state, inputs=inputs, progress=progress)
    finally:
        if remote is not executor:
            remote.close()


def execute_plan_on(executor: str | Executor | None, plan: ConversionPlan, planner: Callable[..., ConversionPlan],
                    sources: Sequence[Checkpoint], options: Any, output: str, *, dry_run: bool = False,
                    force: bool = False, verify: bool = True, update_state: bool = False, inputs: Iterable[Any] = (),
                    progress: Callable[[int, int], None] | None = None, link: bool = False,
                    jobs: int | None = None) -> ConversionResult:
    """:func:`~formats.ops.convert.plan.execute_plan` (``convert``, ``rename``) on local threads, or written on
    a cluster's workers when ``executor`` (None: ``$CKPT_EXECUTOR``) is one: ``planner(sources, options)``
    makes ``plan`` again there. ``link`` (hard links of input data files) is for local outputs only."""
    remote = None if dry_run else remote_executor(executor)
    if remote is None:
        from formats.ops.convert.plan import execute_plan

        return execute_plan(plan, output, dry_run=dry_run, force=force, verify=verify, update_state=update_state,
                            inputs=inputs, progress=progress, link=link, jobs=jobs)
    try:
        if link:
            raise UsageError(output, "linking data files applies to writes on this machine, not on a cluster")
        return write_conversion_on(plan, PlanRef((), options, planner), sources, output, remote, force=force,
                                   verify=verify, update_state=update_state, inputs=inputs, progress=progress)
    finally:
        if remote is not executor:
            remote.close()


def write_on_cluster(plan: EditPlan, planner: Callable[..., EditPlan], sources: Sequence[Checkpoint],
                     options: EditOptions, output: str, executor: Executor, *, force: bool = False,
                     verify: bool = True, update_state: bool = False, inputs: Iterable[Any] = (),
                     progress: Callable[[int, int], None] | None = None) -> EditResult:
    """Write the edit ``plan`` (``planner(sources, options)``) at ``output`` on ``executor``'s workers
    (see the module docstring); the plan is closed afterwards. Nothing is written for a plan with errors."""
    from formats.ops.edit.plan import EditResult

    try:
        result = write_conversion_on(plan.conversion, PlanRef((), options, planner), sources, output, executor,
                                     force=force, verify=verify, update_state=update_state,
                                     inputs=[*plan.inputs, *inputs], progress=progress)
    finally:
        plan.close()
    return EditResult(plan, result)


def write_conversion_on(plan: ConversionPlan, ref: PlanRef, sources: Sequence[Checkpoint], output: str,
                        executor: Executor, *, force: bool = False, verify: bool = True, update_state: bool = False,
                        inputs: Iterable[Any] = (), progress: Callable[[int, int], None] | None = None
                        ) -> ConversionResult:
    """Write ``plan`` - ``ref.planner(sources, ref.options)`` - at ``output`` on ``executor``'s workers, each
    data file read back by its worker unless not ``verify``; the plan is closed afterwards. Nothing is written
    for a plan with errors."""
    from formats.ops.convert.plan import ConversionResult

    inputs = list(inputs)
    try:
        result = ConversionResult(plan, output)
        if plan.check_output is not None:
            plan.check_output(output)
        if plan.ok:
            if plan.target not in BUNDLE_TARGETS:
                raise UsageError(output, f"a write on a cluster writes TensorFlow bundles ({', '.join(BUNDLE_TARGETS)}),"
                                         f" not {plan.target}: write it with the local executor")
            result.written = _write(plan, ref, sources, output, executor, force, [*sources, *inputs], progress,
                                    verify)
            if update_state:
                from formats.tf_bundle.state_file import update_state_file

                directory = os.path.dirname(os.path.abspath(output))
                update_state_file(directory, output, inputs=inputs)
                result.state_file = os.path.join(directory, "checkpoint")
    finally:
        plan.close()
    return result


def _write(plan: ConversionPlan, ref: PlanRef, sources: Sequence[Checkpoint], output: str, chosen: Executor,
           force: bool, inputs: list[Any], progress: Callable[[int, int], None] | None, verify: bool) -> Any:
    from formats.io.writing import Stored, WriteReport, guard_output
    from formats.tf_bundle.reader import data_file_name

    pairs, shards = planned_pairs(plan)
    count = max(shards, default=0) + 1
    files = [data_file_name(output, k, count) for k in range(count)]
    guard_output(output, [output + ".index", *files], inputs=inputs, force=force, what="output checkpoint",
                 marker=output + ".index")
    token = new_token()
    ref = ref._replace(refs=tuple(source_ref(c, token) for c in sources))
    buffers, buffer = buffer_settings()
    units, sizes = [], {}
    for k in range(count):
        positions = tuple(i for i, s in enumerate(shards) if s == k)
        unit = (ref, k, tuple(pairs[i][0] for i in positions), positions, files[k], buffer, buffers, verify)
        units.append(unit)
        sizes[id(unit)] = (sum(_nbytes(pairs[i][1]) for i in positions), len(positions))
    done = [0, 0]

    def advance(unit: tuple[Any, ...], _: object) -> None:
        done[0], done[1] = done[0] + sizes[id(unit)][0], done[1] + sizes[id(unit)][1]
        if progress is not None:
            progress(*done)

    if not storage.is_url(output):
        from formats.io.atomic import make_parents

        make_parents(output)
    try:
        found = chosen.map(write_data_unit, units, weight=lambda u: sizes[id(u)][0], done=advance)
        _publish_index(output, count, [row for rows in found for row in rows])
    except BaseException:
        _remove(files)
        raise
    layout = FormatName.TF_OBJECT if plan.object_graph is not None else FormatName.TF_NAME
    report = WriteReport(output, layout.value, [output + ".index", *files], verified=verify)
    from formats.core.sources import describe

    for key, source in pairs:
        dt, shape = describe(source)
        report.add(Stored(key, key, dt.name, dt.name, tuple(shape)), _nbytes(source))
    return report


def _nbytes(source: Any) -> int:
    return int(getattr(source, "nbytes", 0) or 0)


def _publish_index(output: str, count: int, rows: list[tuple[bytes, bytes]]) -> None:
    """The index, in one request (an object store publishes it whole) or renamed into place when written."""
    from formats.tf_bundle.writer import index_bytes

    data = index_bytes(count, rows)
    if storage.is_url(output):
        fs, p = storage.filesystem(output + ".index")
        fs.pipe_file(p, data)
        return
    from formats.io.atomic import atomic_output

    with atomic_output(output + ".index") as temp, open(temp, "xb") as f:
        f.write(data)


def _remove(files: list[str]) -> None:
    """Best effort: remove the data files a failed write put in place (the index was never written)."""
    for path in files:
        try:
            if storage.is_url(path):
                fs, p = storage.filesystem(path)
                fs.rm_file(p)
            elif os.path.exists(path):
                os.unlink(path)
        except Exception:  # noqa: BLE001 - the original error matters
            pass
