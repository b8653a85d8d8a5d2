"""``ckpt edit``: write a checkpoint again without its optimizer, with a subset, cast, or re-sharded."""
from __future__ import annotations

from typing import Any

import click

from formats.ops.convert.targets import TARGETS

from ..completion import CHECKPOINT
from ..exit_codes import ExitCode
from ..help import WRITER_EXIT_STATUS, command
from ..options import READ_BACK_JOBS, ByteSize, jobs_option, write_options


@command(short_help="Drop the optimizer, keep a subset, cast, or re-shard.",
         exit_status=WRITER_EXIT_STATUS)
@click.argument("src", type=CHECKPOINT)
@click.option("-o", "--output", "out", required=True, type=click.Path(), metavar="OUT",
              help="Output checkpoint prefix (or file, for file formats).")
@click.option("--to", "to", type=click.Choice(sorted(TARGETS)), help="Output format (default: SRC's own).")
@click.option("--drop-optimizer", is_flag=True,
              help="Leave out optimizer slots, hyperparameters and iteration counters (and the optimizer's objects).")
@click.option("--select", "select", multiple=True, metavar="GLOB",
              help="Keep only keys matching GLOB (repeatable; any match counts).")
@click.option("--exclude", "exclude", multiple=True, metavar="GLOB", help="Leave out keys matching GLOB (repeatable).")
@click.option("--by", type=click.Choice(["key", "name"]), default="key", show_default=True,
              help="Match --select/--exclude against keys or TF1-style variable names.")
@click.option("--cast", "casts", multiple=True, metavar="FROM=TO",
              help="Convert floating-point tensors (float32=bfloat16, bfloat16=float32, float32=float16...; "
                   "round to nearest even); repeatable.")
@click.option("--cast-model-only", is_flag=True, help="Cast model variables only, not optimizer slots.")
@click.option("--shards", type=click.IntRange(min=1), metavar="N",
              help="Spread the data over N files (.data-0000k-of-0000N); 1 merges them.")
@click.option("--max-shard-size", type=ByteSize(), metavar="SIZE",
              help="Data files of at most SIZE bytes (500MB, 2GB...); keras3-h5: sharded weights (OUT *.json).")
@write_options()
@jobs_option(READ_BACK_JOBS)
@click.pass_context
def edit(ctx: click.Context, src: str, out: str, to: str | None, drop_optimizer: bool, select: tuple[str, ...],
         exclude: tuple[str, ...], by: str, casts: tuple[str, ...], cast_model_only: bool, shards: int | None,
         max_shard_size: int | None, dry_run: bool, as_json: bool, force: bool, no_verify: bool,
         update_state: bool, verbose: bool, jobs: int) -> None:
    """Write SRC again, edited: without its optimizer, a subset, cast, or re-sharded.

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
    """
    from formats.api import open_checkpoint
    from formats.ops.edit import EditOptions, execute_edit, plan_edit

    from ..render.progress import progress_for

    options = EditOptions(to=to, select=select, exclude=exclude, by=by, drop_optimizer=drop_optimizer,
                          casts=_casts(casts), cast_model_only=cast_model_only, shards=shards,
                          max_shard_size=max_shard_size)
    with open_checkpoint(src) as source:
        plan = plan_edit(source, options)
        check_output(out, plan.target, max_shard_size)
        total = 0 if dry_run else sum(a.nbytes for a in source.values())
        with progress_for(source, "writing", total=total) as progress:
            result = execute_edit(plan, out, dry_run=dry_run, force=force, verify=not no_verify,
                                  update_state=update_state, progress=progress, jobs=jobs, inputs=[src, source])
    report(result, as_json, verbose)
    ctx.exit(ExitCode.OK if result.ok else ExitCode.PROBLEMS)


def check_output(out: str, target: str, max_shard_size: int | None) -> None:
    """Sharded Keras 3 weights are named by their JSON index, as Keras names them."""
    if max_shard_size is not None and target == "keras3-h5" and not out.endswith(".json"):
        raise click.UsageError(f"--max-shard-size writes sharded weights: name OUT *.weights.json, not {out!r}")


def _casts(values: tuple[str, ...]) -> dict[str, str]:
    """``--cast`` values as a FROM -> TO table; a bad one is a usage error naming the option."""
    from formats.core.errors import UsageError
    from formats.ops.edit import parse_casts

    try:
        return parse_casts(values)
    except UsageError as exc:
        raise click.BadParameter(exc.message, param_hint="--cast") from None


def report(result: Any, as_json: bool, verbose: bool = False) -> None:
    """Print an edit or average result: JSON, or the tables and summary (``verbose``: the keys behind each
    problem)."""
    if as_json:
        from ..render.common import print_json

        print_json(result.to_json())
    else:
        from ..render.edit import render_edit

        render_edit(result, verbose)
