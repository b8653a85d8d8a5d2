"""``ckpt trend``: per-variable norms and changes across a run's checkpoints, as sparklines."""
from __future__ import annotations

from formats.core.errors import ExitCode

from ..options import json_option
from ..spec import CHECKPOINT, Arg, Command, Opt

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from ..environment import Environment
    from ..spec import Params


def run(env: Environment, p: Params) -> int:
    """``ckpt trend DIRECTORY [GLOB]...``: the exit status (1: with --check-finite, a variable diverged)."""
    from formats.ops.inspect.trend import run_trend

    result = run_trend(p.directory, p.patterns, executor="local")  # one thread, as ever (no --executor yet)
    for note in result.notes:
        env.warn(note)
    if p.as_json:
        from ..render.common import print_json

        print_json(result.to_json())
    elif p.plot or p.stat is not None:
        from ..render.plot import plot_width, wants_ascii
        from ..render.trend import render_trend_plot

        render_trend_plot(result, p.stat or "norm", wants_ascii(p.ascii), plot_width() or 80)
    else:
        from ..render.trend import render_trend

        result.notes = []
        render_trend(result)
    return int(ExitCode.PROBLEMS if p.check_finite and result.diverged else ExitCode.OK)


SPEC = Command(
    "trend", runner=run,
    short_help="How each variable evolves across a run's checkpoints.",
    exit_status={1: "with --check-finite: a variable holds NaN or Inf"},
    help="""Show how each variable of a run evolves across its checkpoints.

    DIRECTORY holds one run's checkpoints (a CheckpointManager directory, an
    Estimator model_dir). Per variable: the L2 norm at each step and the L2 norm
    of the change since the previous checkpoint, drawn as unicode sparklines. A
    variable that holds NaN or Inf is flagged with the step where that began: a
    checkpoint's own step variable (step, global_step, the optimizer's
    iterations), else the number in its name ("save 5").
    Checkpoints of other runs in the same directory are left out with a note.
    --plot draws each variable's norm (or another --stat) over the steps as a
    line plot in Braille dots fitting the terminal (ASCII with --ascii).

    \b
    Examples:
      ckpt trend runs/exp1/tf_ckpts
      ckpt trend model_dir 'dnn/*/kernel'
      ckpt trend --plot runs/exp1/tf_ckpts 'net/*'
      ckpt trend runs/exp1/tf_ckpts --json > trend.json
      ckpt trend --check-finite runs/exp1/tf_ckpts || echo "training diverged"
    """,
    arguments=(Arg("directory", type=CHECKPOINT), Arg("patterns", nargs=-1, required=False, metavar="[GLOB]...",
                                                       complete=("keys",))),
    options=(
        Opt("--check-finite", flag=True, help="Exit 1 and name the variables that hold NaN or Inf."),
        Opt("--plot", flag=True, help="Draw each variable's --stat over the steps as a line plot."),
        Opt("--stat", type=("norm", "change", "mean", "std", "min", "max", "nonfinite"), metavar="NAME",
            help="What --plot draws: norm (L2, the default), change (L2 of the change since the previous "
                 "checkpoint), mean, std, min, max (finite elements) or nonfinite (NaN and Inf count); "
                 "implies --plot."),
        Opt("--ascii", flag=True, help="Draw --plot in ASCII characters instead of Braille dots."),
        json_option("The numbers as JSON, for plotting elsewhere."),
    ),
)
