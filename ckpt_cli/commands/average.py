"""``ckpt average``: the mean of several checkpoints' weights, as one checkpoint."""
from __future__ import annotations

from formats.core.errors import ExitCode

from ..options import READ_BACK_JOBS, executor_option, jobs_option, output_option, target_choices, write_options
from ..spec import CHECKPOINT, SIZE, WRITER_EXIT_STATUS, Arg, Command, CommandLineError, Ints, Opt
from .edit import check_output, report

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from ..environment import Environment
    from ..spec import Params


def run(env: Environment, p: Params) -> int:
    """``ckpt average CKPT... -o OUT``: the exit status (0 written or planned, 1 problems found)."""
    from formats.api import open_checkpoint
    from formats.ops.edit import EditOptions, plan_average
    from formats.ops.edit.on_cluster import execute_edit_on

    from ..render.progress import progress_for

    paths = _inputs(p.ckpts, p.last)
    options = EditOptions(to=p.to, drop_optimizer=p.drop_optimizer, shards=p.shards, max_shard_size=p.max_shard_size)
    opened = []
    try:
        for path in paths:
            opened.append(open_checkpoint(path))
        plan = plan_average(opened, options)
        check_output(p.out, plan.target, p.max_shard_size)
        total = 0 if p.dry_run else opened[-1].total_nbytes()
        with progress_for(opened[-1], "averaging", total=total) as progress:
            result = execute_edit_on(p.executor, plan, plan_average, opened, options, p.out, dry_run=p.dry_run,
                                     force=p.force, verify=not p.no_verify, update_state=p.update_state,
                                     progress=progress, jobs=p.jobs, inputs=paths)
    finally:
        for ckpt in opened:
            ckpt.close()
    report(result, p.as_json, p.verbose)
    return int(ExitCode.OK if result.ok else ExitCode.PROBLEMS)


SPEC = Command(
    "average", runner=run,
    short_help="Average the weights of several checkpoints (a run's last N).",
    exit_status=WRITER_EXIT_STATUS,
    help="""Average the weights of several checkpoints into one.

    Every floating-point model variable is the mean of the inputs, accumulated in
    float64 and rounded to nearest even in its own dtype (bfloat16 and float16
    included); integer tensors, counters and the iterator come from the newest input
    (the highest step), and so does optimizer state unless --drop-optimizer. The
    inputs must agree on keys and dtypes, and on the shapes of the tensors averaged
    (the iterator's state may grow): every difference is listed before anything is
    written. Values stream a few chunks per input at a time, so memory
    stays bounded whatever the size; the output is read back and compared with the
    mean computed again from the inputs. Works for name- and object-based bundles,
    V1 checkpoints and Keras files; written in the inputs' format unless --to.

    \b
    Examples:
      ckpt average run/tf_ckpts --last 3 -o averaged/ckpt-10
      ckpt average run/ckpt-8 run/ckpt-9 run/ckpt-10 -o model_only/ckpt-10 --drop-optimizer
      ckpt average model_dir --last 2 -o avg/model.ckpt --dry-run
    """,
    arguments=(Arg("ckpts", nargs=-1, type=CHECKPOINT),),
    options=(
        output_option(),
        Opt("--last", type=Ints(min=2), metavar="N",
            help="CKPT is a directory: average its N checkpoints with the highest steps."),
        Opt("--drop-optimizer", flag=True, help="Leave out optimizer state (default: the newest input's)."),
        Opt("--to", name="to", type=target_choices, help="Output format (default: the inputs' own)."),
        Opt("--shards", type=Ints(min=1), metavar="N", help="Spread the data over N files (.data-0000k-of-0000N)."),
        Opt("--max-shard-size", type=SIZE, metavar="SIZE", help="Data files of at most SIZE bytes."),
        *write_options("the mean of the inputs"),
        jobs_option(READ_BACK_JOBS),
        executor_option(),
    ),
)


def _inputs(ckpts: tuple[str, ...], last: int | None) -> list[str]:
    """The checkpoints to average, oldest first: a directory's newest ``last``, or those given (each once)."""
    import os

    from formats.discover.resolve import resolve_many
    from formats.ops.edit import newest
    from formats.ops.edit.average import newest_last

    if last is not None:
        if len(ckpts) != 1 or not os.path.isdir(ckpts[0]):
            raise CommandLineError("--last N takes one directory (the run whose newest N checkpoints to average)")
        return newest(ckpts[0], last)
    resolved = resolve_many(ckpts, directories=True)
    folders = [path for path, target in resolved if target is None]
    if folders:
        raise CommandLineError(f"{folders[0]} is a directory: give --last N to average its newest N checkpoints")
    paths = [target.path for _, target in resolved if target is not None]
    if len(paths) < 2:
        raise CommandLineError("averaging needs at least 2 checkpoints")
    return newest_last(paths)
