"""What an edit asks for, what it plans for every tensor, and what became of it.

:class:`EditOptions` holds the request; :class:`EditPlan` wraps the
:class:`~formats.ops.convert.plan.ConversionPlan` that will be written (one row per output tensor,
every problem found) with one :class:`KeyAction` per input key - kept, cast, averaged, taken from
the newest input, or left out and why - and the cast statistics filled while writing;
:func:`execute_edit` writes it through :func:`~formats.ops.convert.plan.execute_plan` (guarded,
atomic, read back and compared) and returns an :class:`EditResult`.
"""
from __future__ import annotations

from formats.core.errors import UsageError
from formats.core.model import Checkpoint
from formats.core.records import field, record
from formats.ops.convert.plan import ConversionPlan, ConversionResult, Problem, execute_plan
from formats.ops.edit.values import CastStats

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from typing import Any

__all__ = ["EditOptions", "KeyAction", "EditPlan", "EditResult", "execute_edit", "parse_casts", "FLOAT_DTYPES"]

FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64", "float8_e5m2", "float8_e4m3fn")
"""Floating-point dtypes a cast converts between."""


@record
class EditOptions:
    """What to do to a checkpoint (every field optional; the default rewrites it as it is).

    ``to``: the output format (a conversion target; default the source's own); ``select`` /
    ``exclude``: glob patterns on keys, or on variable names with ``by="name"``; ``drop_optimizer``:
    leave out slots and optimizer state; ``casts``: ``{"float32": "bfloat16"}``, applied to model
    variables and slots (variables only with ``cast_model_only``); ``shards`` / ``max_shard_size``:
    spread a bundle's data over that many files, or files of at most that many bytes (Keras 3
    outputs: sharded weights).
    """

    to: str | None = None
    select: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    by: str = "key"
    drop_optimizer: bool = False
    casts: dict[str, str] = field(default_factory=dict)
    cast_model_only: bool = False
    shards: int | None = None
    max_shard_size: int | None = None
    skip_unreadable: bool = False
    """Write the rest without the tensors ckpt cannot read (each a warning); else each is an error (or leave
    them out by name with ``exclude``)."""

    def check(self) -> None:
        """Raise :class:`~formats.core.errors.UsageError` for a request that cannot mean anything."""
        if self.by not in ("key", "name"):
            raise UsageError("", f"patterns match 'key' or 'name', not {self.by!r}")
        for source, target in self.casts.items():
            for name in (source, target):
                if name not in FLOAT_DTYPES:
                    raise UsageError("", f"cannot cast {source} to {target}: {name} is not one of "
                                     f"{', '.join(FLOAT_DTYPES)}")
            if source == target:
                raise UsageError("", f"cast {source}={target} changes nothing")
        if self.shards is not None and self.max_shard_size is not None:
            raise UsageError("", "give a number of data files or a maximum shard size, not both")
        if self.shards is not None and self.shards < 1:
            raise UsageError("", f"a checkpoint needs at least one data file, not {self.shards}")
        if self.max_shard_size is not None and self.max_shard_size < 1:
            raise UsageError("", "the maximum shard size must be more than 0 bytes")


def parse_casts(pairs: Iterable[str]) -> dict[str, str]:
    """``["float32=bfloat16"]`` -> ``{"float32": "bfloat16"}``; UsageError for anything else."""
    out: dict[str, str] = {}
    for text in pairs:
        source, sep, target = (part.strip() for part in text.partition("="))
        if not sep or not source or not target:
            raise UsageError("", f"{text!r} is not FROM=TO (e.g. float32=bfloat16)")
        if source in out:
            raise UsageError("", f"{source} is cast twice ({source}={out[source]} and {text})")
        out[source] = target
    return out


@record(slots=True)  # one per tensor
class KeyAction:
    """What happens to one input key: ``action`` is ``keep``, ``cast``, ``mean``, ``newest`` or
    ``drop``; ``output`` the key written (None when left out), ``dtype`` the dtype written,
    ``detail`` why or how."""

    key: str
    action: str
    output: str | None = None
    dtype: str = ""
    detail: str = ""

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return {"key": self.key, "action": self.action, "output": self.output, "dtype": self.dtype or None,
                "detail": self.detail}


@record
class EditPlan:
    """An edit (or average) planned: the ``conversion`` to write, one action per input key, the casts
    (their errors are known once written), the data file of each written tensor (``shards``, None for
    one file) and the checkpoints opened for it (``resources``, closed by :meth:`close`)."""

    operation: str
    inputs: list[str]
    conversion: ConversionPlan
    actions: Sequence[KeyAction] = field(default_factory=list)
    casts: list[CastStats] = field(default_factory=list)
    shards: list[int] | None = None
    resources: list[Checkpoint] = field(default_factory=list, repr=False)

    @property
    def ok(self) -> bool:
        """True when nothing stops the write."""
        return self.conversion.ok

    @property
    def problems(self) -> list[Problem]:
        """Every problem found (errors stop the write)."""
        return self.conversion.problems

    @property
    def target(self) -> str:
        """The output format."""
        return self.conversion.target

    def counts(self) -> dict[str, int]:
        """How many input keys each action applies to."""
        counted = getattr(self.actions, "counts", None)  # (actions made as read: counted without making them)
        if counted is not None:
            return counted()
        out: dict[str, int] = {}
        for action in self.actions:
            out[action.action] = out.get(action.action, 0) + 1
        return out

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict: operation, inputs, actions per key, shards, casts, and the conversion plan."""
        data: dict[str, object] = {"operation": self.operation, "inputs": list(self.inputs),
                                   "keys": [a.to_json() for a in self.actions], "counts": self.counts(),
                                   "data_files": (max(self.shards) + 1) if self.shards else 1,
                                   "casts": [c.to_json() for c in self.casts]}
        data.update(self.conversion.to_json())
        return data

    def close(self) -> None:
        """Close the plan's checkpoints."""
        self.conversion.close()
        while self.resources:
            self.resources.pop().close()

    def __enter__(self) -> EditPlan:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@record
class EditResult:
    """An edit plan and what became of it (``conversion`` says what was written)."""

    plan: EditPlan
    conversion: ConversionResult

    @property
    def ok(self) -> bool:
        """True when the plan had no errors (and so was written, unless a dry run)."""
        return self.plan.ok

    @property
    def written(self) -> Any:
        """The writer's :class:`~formats.io.writing.WriteReport` (None for a dry run or errors)."""
        return self.conversion.written

    @property
    def lossy_casts(self) -> list[CastStats]:
        """The casts that changed a value (largest error above 0, or an overflow)."""
        return [c for c in self.plan.casts if c.done and (c.max_error > 0 or c.overflow)]

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict: the plan's, plus output, dry_run, written and state_file."""
        data = self.plan.to_json()
        data.update({k: v for k, v in self.conversion.to_json().items() if k not in data or k == "ok"})
        data["casts"] = [c.to_json() for c in self.plan.casts]
        return data


def execute_edit(plan: EditPlan, output: str, *, dry_run: bool = False, force: bool = False, verify: bool = True,
                 update_state: bool = False, inputs: Iterable[Any] = (),
                 progress: Callable[[int, int], None] | None = None, jobs: int | None = None) -> EditResult:
    """Write ``plan`` at ``output`` unless it has errors or ``dry_run`` (see
    :func:`~formats.ops.convert.plan.execute_plan`); the plan's checkpoints are closed afterwards.
    ``inputs`` are further paths the output must not replace (the plan's own inputs always are); ``jobs``:
    threads reading the output back (None: every core)."""
    try:
        result = execute_plan(plan.conversion, output, dry_run=dry_run, force=force, verify=verify,
                              update_state=update_state, progress=progress,
                              inputs=[*plan.inputs, *plan.resources, *inputs], jobs=jobs)
    finally:
        plan.close()
    return EditResult(plan, result)
