"""``ckpt trend``: per-variable norms and changes across a run's checkpoints, as sparklines."""
from __future__ import annotations

import click

from ..completion import CHECKPOINT, complete_keys
from ..exit_codes import ExitCode
from ..help import command


@command(short_help="How each variable evolves across a run's checkpoints.",
         exit_status={1: "with --check-finite: a variable holds NaN or Inf"})
@click.argument("directory", type=CHECKPOINT)
@click.argument("patterns", nargs=-1, metavar="[GLOB]...", shell_complete=complete_keys)
@click.option("--check-finite", is_flag=True, help="Exit 1 and name the variables that hold NaN or Inf.")
@click.option("--json", "as_json", is_flag=True, help="The numbers as JSON, for plotting elsewhere.")
@click.pass_context
def trend(ctx: click.Context, directory: str, patterns: tuple[str, ...], check_finite: bool, as_json: bool) -> None:
    """Show how each variable of a run evolves across its checkpoints.

    DIRECTORY holds one run's checkpoints (a CheckpointManager directory, an
    Estimator model_dir). Per variable: the L2 norm at each step and the L2 norm
    of the change since the previous checkpoint, drawn as unicode sparklines. A
    variable that holds NaN or Inf is flagged with the step where that began.
    Checkpoints of other runs in the same directory are left out with a note.

    \b
    Examples:
      ckpt trend runs/exp1/tf_ckpts
      ckpt trend model_dir 'dnn/*/kernel'
      ckpt trend runs/exp1/tf_ckpts --json > trend.json
      ckpt trend --check-finite runs/exp1/tf_ckpts || echo "training diverged"
    """
    from formats.ops.inspect.trend import run_trend

    result = run_trend(directory, patterns)
    for note in result.notes:
        click.echo(f"ckpt: warning: {note}", err=True)
    if as_json:
        from ..render.common import print_json

        print_json(result.to_json())
    else:
        from ..render.trend import render_trend

        result.notes = []
        render_trend(result)
    ctx.exit(ExitCode.PROBLEMS if check_finite and result.diverged else ExitCode.OK)
