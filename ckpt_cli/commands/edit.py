"""``ckpt edit``: write a checkpoint again without its optimizer, with a subset, cast, or re-sharded."""
from __future__ import annotations

from formats.core.errors import ExitCode

from ..kept import keep_until_exit
from ..options import READ_BACK_JOBS, executor_option, jobs_option, output_option, target_choices, write_options
from ..spec import CHECKPOINT, SIZE, WRITER_EXIT_STATUS, Arg, Command, CommandLineError, Ints, Opt, ParameterError

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

    from ..environment import Environment
    from ..spec import Params


def run(env: Environment, p: Params) -> int:
    """``ckpt edit SRC -o OUT``: the exit status (0 written or planned, 1 problems found)."""
    from formats.api import open_checkpoint
    from formats.ops.edit.edit import plan_edit
    from formats.ops.edit.plan import EditOptions

    from ..render.progress import progress_for

    options = EditOptions(to=p.to, select=p.select, exclude=p.exclude, by=p.by, drop_optimizer=p.drop_optimizer,
                          casts=p.casts, cast_model_only=p.cast_model_only, shards=p.shards,
                          max_shard_size=p.max_shard_size, skip_unreadable=p.skip_unreadable)
    with open_checkpoint(p.src) as source:
        plan = plan_edit(source, options)
        keep_until_exit(plan)  # (it lives until the end)
        check_output(p.out, plan.target, p.max_shard_size)
        total = 0 if p.dry_run else source.total_nbytes()
        with progress_for(source, "writing", total=total) as progress:
            how = {"dry_run": p.dry_run, "force": p.force, "verify": not p.no_verify, "update_state": p.update_state,
                   "progress": progress, "jobs": p.jobs, "inputs": [p.src, source]}
            if p.dry_run or _local(p.executor):  # (the cluster's machinery is imported for a cluster only)
                from formats.ops.edit.plan import execute_edit

                result = execute_edit(plan, p.out, **how)
            else:
                from formats.ops.edit.edit import plan_edit_of
                from formats.ops.edit.on_cluster import execute_edit_on

                result = execute_edit_on(p.executor, plan, plan_edit_of, [source], options, p.out, **how)
    report(result, p.as_json, p.verbose)
    return int(ExitCode.OK if result.ok else ExitCode.PROBLEMS)


def _local(executor: str | None) -> bool:
    """Whether ``executor`` names this process's threads (asked of a write only: a dry run writes nowhere)."""
    from formats.core.executors import is_local

    return is_local(executor)


def parse_casts(values: tuple[str, ...]) -> dict[str, str]:
    """``--cast`` values as a FROM -> TO table; a bad one is a :class:`ParameterError` naming the option."""
    from formats.core.errors import UsageError
    from formats.ops.edit.plan import parse_casts as parse

    try:
        return parse(values)
    except UsageError as exc:
        raise ParameterError(exc.message) from None


SPEC = Command(
    "edit", runner=run,
    short_help="Drop the optimizer, keep a subset, cast, or re-shard.",
    exit_status=WRITER_EXIT_STATUS,
    help="""Write SRC again, edited: without its optimizer, a subset, cast, or re-sharded.

    The output is SRC's own format (a V1 checkpoint becomes a name-based bundle, a
    .keras file Keras 3 weights) unless --to says otherwise. --drop-optimizer leaves
    out slots, hyperparameters and iteration counters; in an object-based checkpoint
    the optimizer's objects and slot references go too, and the object graph is
    rebuilt so that TensorFlow restores the model from it. --select/--exclude keep a
    subset (a slot goes with its variable), the object graph pruned to the objects
    that remain. --cast converts floating-point model variables and slots, rounding
    to nearest even; a lossy cast reports its largest error. --shards/--max-shard-size
    spread a bundle's data over files as TensorFlow's sharded saving does. Everything
    is planned first and every problem reported before anything is written; the
    output is read back and compared with the plan.

    \b
    Examples:
      ckpt edit run/tf_ckpts/ckpt-5 -o model_only/ckpt-5 --drop-optimizer
      ckpt edit run/tf_ckpts/ckpt-5 -o net/ckpt-5 --select 'net/*' --dry-run
      ckpt edit ckpt-5 -o bf16/ckpt-5 --cast float32=bfloat16 --cast-model-only
      ckpt edit model.ckpt-200 -o sharded/model.ckpt-200 --shards 4
    """,
    arguments=(Arg("src", type=CHECKPOINT),),
    options=(
        output_option(),
        Opt("--to", name="to", type=target_choices, help="Output format (default: SRC's own)."),
        Opt("--drop-optimizer", flag=True,
            help="Leave out optimizer slots, hyperparameters and iteration counters (and the optimizer's objects)."),
        Opt("--select", name="select", multiple=True, metavar="GLOB",
            help="Keep only keys matching GLOB (repeatable; any match counts)."),
        Opt("--exclude", name="exclude", multiple=True, metavar="GLOB", help="Leave out keys matching GLOB (repeatable)."),
        Opt("--by", type=("key", "name"), default="key", show_default=True,
            help="Match --select/--exclude against keys or TF1-style variable names."),
        Opt("--cast", name="casts", multiple=True, metavar="FROM=TO", convert=parse_casts,
            help="Convert floating-point tensors (float32=bfloat16, bfloat16=float32, float32=float16...; "
                 "round to nearest even); repeatable."),
        Opt("--cast-model-only", flag=True, help="Cast model variables only, not optimizer slots."),
        Opt("--shards", type=Ints(min=1), metavar="N",
            help="Spread the data over N files (.data-0000k-of-0000N); 1 merges them."),
        Opt("--max-shard-size", type=SIZE, metavar="SIZE",
            help="Data files of at most SIZE bytes (500MB, 2GB...); keras3-h5: sharded weights (OUT *.json)."),
        *write_options(),
        jobs_option(READ_BACK_JOBS),
        executor_option(),
    ),
)


def check_output(out: str, target: str, max_shard_size: int | None) -> None:
    """Sharded Keras 3 weights are named by their JSON index, as Keras names them."""
    from formats.core.model import FormatName

    if max_shard_size is not None and target == FormatName.KERAS3_H5 and not out.endswith(".json"):
        raise CommandLineError(f"--max-shard-size writes sharded weights: name OUT *.weights.json, not {out!r}")


def report(result: Any, as_json: bool, verbose: bool = False) -> None:
    """Print an edit or average result: JSON, or the tables and summary (``verbose``: the keys behind each
    problem)."""
    if as_json:
        from ..render.common import print_json

        print_json(result.to_json())
    else:
        from ..render.edit import render_edit

        render_edit(result, verbose)
