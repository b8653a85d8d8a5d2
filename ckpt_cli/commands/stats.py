"""``ckpt stats``: min, max, mean, std, L2 norm, zeros, NaN and Inf counts per tensor."""
from __future__ import annotations

import click

from ..completion import CHECKPOINT, complete_keys
from ..exit_codes import ExitCode
from ..help import command
from ..options import jobs_option


@command(short_help="Statistics of a checkpoint's tensors; catch NaN and Inf.",
         exit_status={1: "a KEY|GLOB matches no key, or with --check-finite a tensor holds NaN or Inf"})
@click.argument("path", type=CHECKPOINT)
@click.argument("patterns", nargs=-1, metavar="[KEY|GLOB]...", shell_complete=complete_keys)
@click.option("--check-finite", is_flag=True, help="Exit 1 and name the tensors holding NaN or Inf.")
@click.option("--names", is_flag=True, help="Add each tensor's TF1-style name and role (also to --json), as ls does.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output on stdout.")
@jobs_option()
@click.pass_context
def stats(ctx: click.Context, path: str, patterns: tuple[str, ...], check_finite: bool, names: bool, as_json: bool,
          jobs: int) -> None:
    """Summary statistics of a checkpoint's tensors (all, or those matching KEY|GLOB).

    min, max, mean, std and L2 norm are over the finite elements; zeros, NaN and
    Inf are counted. bfloat16/float16 are computed in float32 or wider; strings
    and variants get a count only. Tensors are read in chunks, checksums checked.

    \b
    Examples:
      ckpt stats run/tf_ckpts
      ckpt stats run/model.ckpt-200 'dnn/*/kernel' --json
      ckpt stats --names run/tf_ckpts
      ckpt stats --check-finite run/tf_ckpts || echo "training diverged"
    """
    from formats.api import open_checkpoint
    from formats.ops.inspect.stats import checkpoint_stats

    from ..render.progress import progress_for

    with open_checkpoint(path) as ckpt:
        with progress_for(ckpt, "reading") as progress:
            result = checkpoint_stats(ckpt, patterns, progress=progress, jobs=jobs)
        named = None
        if names:
            from formats.ops.inspect.summary import names_and_roles

            named = names_and_roles(ckpt, (t.key for t in result.tensors))
    if as_json:
        from ..render.common import print_json, with_names

        doc = result.to_json()
        print_json(doc if named is None else {**doc, "tensors": with_names(doc["tensors"], named)})
    else:
        from ..render.stats import render_stats

        render_stats(result, check_finite, named)
    ctx.exit(ExitCode.PROBLEMS if check_finite and result.nonfinite else ExitCode.OK)
