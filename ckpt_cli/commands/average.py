"""``ckpt average``: the mean of several checkpoints' weights, as one checkpoint."""
from __future__ import annotations

import click

from formats.ops.convert.targets import TARGETS

from ..completion import CHECKPOINT
from ..exit_codes import ExitCode
from ..help import WRITER_EXIT_STATUS, command
from ..options import READ_BACK_JOBS, ByteSize, jobs_option, write_options
from .edit import check_output, report


@command(short_help="Average the weights of several checkpoints (a run's last N).",
         exit_status=WRITER_EXIT_STATUS)
@click.argument("ckpts", nargs=-1, required=True, type=CHECKPOINT)
@click.option("-o", "--output", "out", required=True, type=click.Path(), metavar="OUT",
              help="Output checkpoint prefix (or file, for file formats).")
@click.option("--last", type=click.IntRange(min=2), metavar="N",
              help="CKPT is a directory: average its N checkpoints with the highest steps.")
@click.option("--drop-optimizer", is_flag=True,
              help="Leave out optimizer state (default: the newest input's).")
@click.option("--to", "to", type=click.Choice(sorted(TARGETS)), help="Output format (default: the inputs' own).")
@click.option("--shards", type=click.IntRange(min=1), metavar="N",
              help="Spread the data over N files (.data-0000k-of-0000N).")
@click.option("--max-shard-size", type=ByteSize(), metavar="SIZE", help="Data files of at most SIZE bytes.")
@write_options("the mean of the inputs")
@jobs_option(READ_BACK_JOBS)
@click.pass_context
def average(ctx: click.Context, ckpts: tuple[str, ...], out: str, last: int | None, drop_optimizer: bool,
            to: str | None, shards: int | None, max_shard_size: int | None, dry_run: bool, as_json: bool,
            force: bool, no_verify: bool, update_state: bool, verbose: bool, jobs: int) -> None:
    """Average the weights of several checkpoints into one.

    Every floating-point model variable is the mean of the inputs, accumulated in
    float64 and rounded to nearest even in its own dtype (bfloat16 and float16
    included); integer tensors, counters and the iterator come from the newest input
    (the highest step), and so does optimizer state unless --drop-optimizer. The
    inputs must agree on keys, shapes and dtypes: every difference is listed before
    anything is written. Values stream a few chunks per input at a time, so memory
    stays bounded whatever the size; the output is read back and compared with the
    mean computed again from the inputs. Works for name- and object-based bundles,
    V1 checkpoints and Keras files; written in the inputs' format unless --to.

    \b
    Examples:
      ckpt average run/tf_ckpts --last 3 -o averaged/ckpt-10
      ckpt average run/ckpt-8 run/ckpt-9 run/ckpt-10 -o model_only/ckpt-10 --drop-optimizer
      ckpt average model_dir --last 2 -o avg/model.ckpt --dry-run
    """
    from formats.api import open_checkpoint
    from formats.ops.edit import EditOptions, execute_edit, plan_average

    from ..render.progress import progress_for

    paths = _inputs(ckpts, last)
    options = EditOptions(to=to, drop_optimizer=drop_optimizer, shards=shards, max_shard_size=max_shard_size)
    opened = []
    try:
        for path in paths:
            opened.append(open_checkpoint(path))
        plan = plan_average(opened, options)
        check_output(out, plan.target, max_shard_size)
        total = 0 if dry_run else sum(e.nbytes for e in opened[-1].values())
        with progress_for(opened[-1], "averaging", total=total) as progress:
            result = execute_edit(plan, out, dry_run=dry_run, force=force, verify=not no_verify,
                                  update_state=update_state, progress=progress, jobs=jobs, inputs=paths)
    finally:
        for ckpt in opened:
            ckpt.close()
    report(result, as_json, verbose)
    ctx.exit(ExitCode.OK if result.ok else ExitCode.PROBLEMS)


def _inputs(ckpts: tuple[str, ...], last: int | None) -> list[str]:
    """The checkpoints to average, oldest first: a directory's newest ``last``, or those given (each once)."""
    import os

    from formats.discover.resolve import resolve_many
    from formats.ops.edit import newest
    from formats.ops.edit.average import newest_last

    if last is not None:
        if len(ckpts) != 1 or not os.path.isdir(ckpts[0]):
            raise click.UsageError("--last N takes one directory (the run whose newest N checkpoints to average)")
        return newest(ckpts[0], last)
    resolved = resolve_many(ckpts, directories=True)
    folders = [path for path, target in resolved if target is None]
    if folders:
        raise click.UsageError(f"{folders[0]} is a directory: give --last N to average its newest N checkpoints")
    paths = [target.path for _, target in resolved if target is not None]
    if len(paths) < 2:
        raise click.UsageError("averaging needs at least 2 checkpoints")
    return newest_last(paths)
