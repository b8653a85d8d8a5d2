"""The result of planning a conversion, before anything is written: rows, problems, and how to write them.

Every converter (``ckpt convert --to ...`` targets and ``ckpt rename``) produces a
:class:`ConversionPlan`: one :class:`PlanRow` per output tensor (source key -> output key,
shape, dtype, a note, and the value to write), plus every :class:`Problem` found on the way.
Problems with severity ``error`` stop the write; ``warning`` ones (unused source tensors,
rules that matched nothing, fallbacks) are reported and the output is written anyway.
:func:`execute_plan` writes a plan with the ``write`` of the registered format that writes its
``target`` layout (:func:`formats.core.registry.writer_of`), passing the plan's ``write_options`` (the
layout's own choices: object graph, data files, provenance, Keras groups), and optionally updates the
directory's ``checkpoint`` state file.
"""
from __future__ import annotations

import os
from _operator import attrgetter, truth  # operator's C half, without operator.py (start-up)
from _bisect import bisect_left  # bisect's C half, without its module (start-up)

from formats.core.gc_pause import gc_paused
from formats.core.records import field, record
from formats.ops.rules import RuleSet
from formats.core.errors import UsageError
from formats.core.model import OBJECT_GRAPH_KEY
from formats.core.natural import ascending

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    from formats.core.sources import Source  # a row's value (annotations only: sources imports numpy's helpers)

__all__ = ["ConvertOptions", "PlanRow", "Problem", "ConversionPlan", "ConversionResult", "execute_plan",
           "write_plan", "planned_shape", "ERROR", "WARNING", "UNREADABLE_HINT"]

ERROR = "error"
RESERVED_KEY = OBJECT_GRAPH_KEY
WARNING = "warning"


@record
class ConvertOptions:
    """What the user asked for: rename ``rules``, a ``template`` path, the target's switches
    (``max_shard_size``: bytes per shard of sharded Keras 3 weights), and ``hparams``: optimizer
    hyperparameters (``learning_rate``, ``beta_1``, ``iterations``) that optimizer state transforms need
    when neither checkpoint stores them; ``drop_optimizer``: leave optimizer state out (``keras3-h5``);
    ``family``, ``model_config``, ``model_map``: a model family's name, its original configuration file and a
    model map file (``--to hf``, ``--to safetensors``, ``--to tf-name`` from a transformers directory);
    ``hf_task``: the fine-tuning task whose hyperparameters the checkpoint lacks (:mod:`.hf.tasks`);
    ``skip_unreadable``: write the rest without the tensors ckpt cannot read."""

    rules: RuleSet = field(default_factory=RuleSet)
    template: str | None = None
    allow_missing: bool = False
    slot_names: str = "tf2"
    rename_full_names: bool = False
    max_shard_size: int | None = None
    hparams: dict[str, float] = field(default_factory=dict)
    drop_optimizer: bool = False
    family: str | None = None
    model_config: str | None = None
    model_map: str | None = None
    hf_task: str | None = None
    skip_unreadable: bool = False
    """Write the rest without the tensors ckpt cannot read (each a warning); else each is an error."""
    dry_run: bool = False
    """Planned to be shown, not written: what only a write asks for (an export's labels) is not asked."""


@record(slots=True)  # one per tensor
class PlanRow:
    """One output tensor: where it comes from (``source`` key, None for made-up values), its output
    ``key``, ``shape``, ``dtype``, a short ``note``, ``value`` (the source to stream) and the
    ``transform`` that computes it from the source, if it is not a copy (``x (-0.05)``, ``= global_step``)."""

    source: str | None
    key: str
    shape: tuple[int, ...]
    dtype: str
    note: str = ""
    value: Source = field(default=None, repr=False, compare=False)
    transform: str = ""

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict (without the value)."""
        return {"source": self.source, "key": self.key, "shape": list(self.shape), "dtype": self.dtype,
                "note": self.note, "transform": self.transform or None}


@record
class Problem:
    """Something wrong or noteworthy. ``kind``: missing, shape, dtype, unused, unmatched-rule, collision,
    duplicate-name, graph, unsupported, fallback, optimizer (optimizer state that cannot move as asked),
    partitioned; ``severity``: error (nothing is written) or warning."""

    kind: str
    key: str
    message: str
    severity: str = ERROR
    candidates: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return {"kind": self.kind, "key": self.key, "message": self.message, "severity": self.severity,
                "candidates": list(self.candidates)}


UNREADABLE_HINT = "the output would lack it (--skip-unreadable writes the rest without it)"
"""What the error of a tensor ckpt cannot read says after its reason."""


@record
class ConversionPlan:
    """Rows and problems for converting ``source`` to ``target`` (a layout a registered format writes,
    optionally onto ``template``).

    ``object_graph`` is the serialized ``TrackableObjectGraph`` to store (None for name-based
    output); ``write_options`` are the target layout's own choices, handed to its format's ``write``
    (see :mod:`formats.core.format`); ``check_output(path)``, if
    set, raises a :class:`~formats.core.errors.UsageError` for an output the writer cannot make (before
    anything is planned or written, also on a dry run); ``resources`` are opened checkpoints the rows
    stream from, closed by :meth:`close`.
    """

    source: str
    target: str
    template: str | None = None
    rows: list[PlanRow] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    object_graph: bytes | None = None
    write_options: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    check_output: Callable[[str], None] | None = field(default=None, repr=False, compare=False)
    resources: list[Any] = field(default_factory=list, repr=False)
    details: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    unreadable: list[tuple[Problem, str]] = field(default_factory=list, repr=False, compare=False)
    """The problem of each tensor ckpt cannot read, with its reason (see :meth:`leave_out_unreadable`)."""
    before_write: Callable[[], None] | None = field(default=None, repr=False, compare=False)
    """Called by :func:`write_plan` before anything is written (not on a dry run): what the planner leaves to the write
    (an export asks its items' labels then, and lets go of its source's graph)."""

    @property
    def errors(self) -> list[Problem]:
        """Problems that stop the write."""
        return [p for p in self.problems if p.severity == ERROR]

    @property
    def warnings(self) -> list[Problem]:
        """Problems reported without stopping the write."""
        return [p for p in self.problems if p.severity != ERROR]

    @property
    def ok(self) -> bool:
        """True when nothing stops the write."""
        return not self.errors

    def add(self, kind: str, key: str, message: str, severity: str = ERROR,
            candidates: Iterable[str] = ()) -> Problem:
        """Record a problem and return it."""
        problem = Problem(kind, key, message, severity, list(candidates))
        self.problems.append(problem)
        return problem

    def add_row(self, source: str | None, key: str, value: Source, shape: Iterable[int], dtype: str,
                note: str = "", transform: str = "", readable: bool = False) -> PlanRow:
        """Append an output row and return it. A value ckpt cannot read (``value.unreadable``) is not appended: it
        is an error naming it (the output would lack it), which :meth:`leave_out_unreadable` turns into a warning
        saying it is left out (``--skip-unreadable``). ``readable``: the caller found ``value.unreadable`` None
        already (not asked again)."""
        row = PlanRow(source, key, planned_shape(shape), str(dtype), note, value, transform)
        why = None if readable else getattr(value, "unreadable", None)
        if why:
            self.leave_out(source or key, why)
            return row
        self.rows.append(row)
        return row

    def leave_out(self, key: str, why: str) -> Problem:
        """Plan the tensor ``key``, which cannot be written (``why``), as left out: an error, or the warning
        :meth:`leave_out_unreadable` makes of it."""
        problem = self.add("unsupported", key, f"{why}; {UNREADABLE_HINT}")
        self.unreadable.append((problem, why))
        return problem

    def leave_out_unreadable(self) -> None:
        """Write the rest without the tensors ckpt cannot read (``--skip-unreadable``): the error of each becomes
        a warning saying it is left out."""
        for problem, why in self.unreadable:
            problem.severity, problem.message = WARNING, f"{why}; left out"

    @property
    def transformed(self) -> int:
        """How many rows are computed from their source rather than copied (counted in C: asked of every plan
        a command renders, 100,000 rows a time)."""
        return sum(map(truth, map(_TRANSFORM, self.rows)))

    def report_unused_rules(self, rules: RuleSet | None) -> None:
        """A warning for every rule of ``rules`` that matched nothing."""
        for rule in rules.unused() if rules else []:
            self.add("unmatched-rule", str(rule), f"rule {rule} matched nothing", WARNING)

    def check_collisions(self) -> None:
        """An error for every output key that two rows would write, that is empty, or that is reserved."""
        rows = self.rows
        keys = list(map(_key, rows))
        # keys strictly ascending (a name-based rename, most conversions): none twice, none empty; no dict a key
        if keys and keys[0] and ascending(keys):
            at = bisect_left(keys, RESERVED_KEY)
            if at == len(keys) or keys[at] != RESERVED_KEY or rows[at].source in (None, RESERVED_KEY):
                return
        elif keys:  # else sorted (a list, where a dict of the keys was about 5 MB at 10^5 rows): none twice, none empty
            keys.sort()
            if keys[0] and ascending(keys) and _absent(keys, RESERVED_KEY):
                return
        del keys
        seen: dict[str, PlanRow] = {}
        for row in rows:
            if not row.key:
                self.add("collision", row.source or "", f"{row.source!r} would be written under the empty key, "
                         "which is reserved for the bundle header")
                continue
            if row.key == RESERVED_KEY and row.source not in (None, RESERVED_KEY):
                self.add("collision", row.key, f"{row.source!r} would be written as {RESERVED_KEY}, the object "
                         "graph's key")
            first = seen.setdefault(row.key, row)
            if first is not row:
                self.add("collision", row.key, f"{first.source!r} and {row.source!r} would both be written "
                         f"as {row.key!r}")

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict: source, target, template, rows, problems, ok."""
        return {"source": self.source, "target": self.target, "template": self.template, "ok": self.ok,
                "object_graph": self.object_graph is not None, "transformed": self.transformed,
                "rows": [r.to_json() for r in self.rows], "problems": [p.to_json() for p in self.problems],
                **({"details": self.details} if self.details else {})}

    def close(self) -> None:
        """Close every checkpoint the plan opened (a template, for instance)."""
        while self.resources:
            self.resources.pop().close()

    def __enter__(self) -> ConversionPlan:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _absent(keys: list[str], key: str) -> bool:
    """Whether ``key`` is not among the sorted ``keys``."""
    at = bisect_left(keys, key)
    return at == len(keys) or keys[at] != key


def planned_shape(shape: Iterable[int]) -> tuple[int, ...]:
    """``shape`` as a tuple of ints, one tuple per distinct shape (the rows of a plan share a few)."""
    found = _SHAPES.get(shape) if type(shape) is tuple else None
    if found is None:
        found = tuple(map(int, shape))
        if len(_SHAPES) < 4096:
            _SHAPES[found] = found
    return found


_SHAPES: dict[tuple[int, ...], tuple[int, ...]] = {}
_key, _TRANSFORM = attrgetter("key"), attrgetter("transform")


@record
class ConversionResult:
    """A plan and what became of it: ``written`` (the writer's report) unless a dry run or errors."""

    plan: ConversionPlan
    output: str
    dry_run: bool = False
    written: Any = None
    state_file: str | None = None

    @property
    def ok(self) -> bool:
        """True when the plan had no errors (and so was written, unless a dry run)."""
        return self.plan.ok

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict: the plan plus output, dry_run, written and state_file."""
        data = self.plan.to_json()
        data.update({"output": self.output, "dry_run": self.dry_run,
                     "written": None if self.written is None else self.written.to_json(),
                     "state_file": self.state_file})
        return data


@gc_paused  # a writer's objects per tensor, none in a cycle
def write_plan(plan: ConversionPlan, output: str, *, force: bool = False, verify: bool = True,
               inputs: Iterable[Any] = (), progress: Callable[[int, int], None] | None = None,
               link: bool = False, jobs: int | None = None) -> Any:
    """Write the plan's rows at ``output`` with the ``write`` of the format that writes its target (the
    object graph, when there is one, and the ``write_options`` passed on), its ``before_write`` called first;
    returns its ``WriteReport``."""
    from formats.core.registry import writer_of

    if plan.before_write is not None:
        plan.before_write()
    options = dict(plan.write_options)
    if plan.object_graph is not None:
        options["object_graph"] = plan.object_graph
    return writer_of(plan.target).write(output, plan.rows, layout=plan.target, force=force, verify=verify,
                                        inputs=list(inputs), progress=progress, jobs=jobs, link=link,
                                        options=options)


def execute_plan(plan: ConversionPlan, output: str, *, dry_run: bool = False, force: bool = False,
                 verify: bool = True, update_state: bool = False, inputs: Iterable[Any] = (),
                 progress: Callable[[int, int], None] | None = None, link: bool = False,
                 jobs: int | None = None) -> ConversionResult:
    """Write ``plan`` at ``output`` unless it has errors or ``dry_run``; closes the plan's resources.

    ``inputs`` are paths or checkpoints the output must not replace. With ``update_state`` the
    output becomes the latest checkpoint of its directory's ``checkpoint`` file (bundles only).
    ``progress(bytes_done, tensors_done)`` follows the writing of bundle outputs. ``link`` hard-links
    input data files a bundle output takes over whole (bundle outputs only). ``jobs``: threads reading
    a bundle output back (None: every core).
    """
    if link and not _links(plan.target):
        raise UsageError(os.fspath(output), "linking data files applies to TensorFlow bundle outputs only")
    inputs = list(inputs)
    result = ConversionResult(plan, os.fspath(output), dry_run=dry_run)
    try:
        if plan.check_output is not None:
            plan.check_output(result.output)
        if dry_run or not plan.ok:
            return result
        result.written = write_plan(plan, result.output, force=force, verify=verify, inputs=inputs,
                                    progress=progress, link=link, jobs=jobs)
        if update_state:
            from formats.tf_bundle.state_file import update_state_file

            directory = os.path.dirname(os.path.abspath(result.output))
            update_state_file(directory, result.output, inputs=inputs)
            result.state_file = os.path.join(directory, "checkpoint")
    finally:
        plan.close()
    return result


def _links(target: str) -> bool:
    """Whether the format writing ``target`` can hard-link input data files."""
    from formats.core.registry import writer_capability

    return bool(writer_capability(target, "links"))
