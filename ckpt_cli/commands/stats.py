"""``ckpt stats``: min, max, mean, std, L2 norm, zeros, NaN and Inf counts per tensor."""
from __future__ import annotations

from formats.core.errors import ExitCode

from ..kept import keep_until_exit
from ..options import executor_option, jobs_option, json_option
from ..spec import CHECKPOINT, Arg, Command, Ints, Opt

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from ..environment import Environment
    from ..spec import Params


def run(env: Environment, p: Params) -> int:
    """``ckpt stats PATH [KEY|GLOB]...``: the exit status (1: with --check-finite, a tensor holds NaN or Inf)."""
    from formats import verbs
    from formats.api import open_checkpoint

    from formats.core.gc_pause import paused_gc

    from ..render.progress import progress_for

    with paused_gc(), open_checkpoint(p.path) as ckpt:  # objects per tensor by the hundred thousand, no cycle
        with progress_for(ckpt, "reading") as progress:
            result = verbs.stats(ckpt, p.patterns, progress=progress, jobs=p.jobs,
                                 histograms=("linear",) if p.hist else (), bins=p.bins, executor=p.executor)
        keep_until_exit(result, ckpt)  # (they live until the end)
        named = None
        if p.names:
            from formats.ops.inspect.summary import names_and_roles

            named = names_and_roles(ckpt, (t.key for t in result.tensors))
    if p.as_json:
        from ..render.common import print_json, with_names

        doc = result.to_json()
        print_json(doc if named is None else {**doc, "tensors": with_names(doc["tensors"], named)})
    else:
        from ..render.stats import render_stats

        hist = None
        if p.hist:
            from ..render.plot import plot_width, wants_ascii

            hist = (wants_ascii(p.ascii), plot_width(None))
        render_stats(result, p.check_finite, named, hist, p.columns)
    return int(ExitCode.PROBLEMS if p.check_finite and result.nonfinite else ExitCode.OK)


COLUMN_NAMES = ("dtype", "shape", "min", "max", "mean", "std", "L2", "zeros", "NaN", "Inf")
"""``--columns``' choices, as its help and completion list them (:data:`ckpt_cli.render.stats.COLUMNS`)."""


def _columns(text: str | None) -> tuple[str, ...] | None:
    """``--columns`` parsed (:func:`ckpt_cli.render.stats.parse_columns`); a usage error for an unknown name."""
    if text is None:
        return None
    from ..render.stats import parse_columns
    from ..spec import ParameterError

    try:
        return parse_columns(text)
    except ValueError as e:
        raise ParameterError(str(e)) from None


SPEC = Command(
    "stats", runner=run,
    short_help="Statistics of a checkpoint's tensors; catch NaN and Inf.",
    exit_status={1: "a KEY|GLOB matches no key, or with --check-finite a tensor holds NaN or Inf"},
    help="""Summary statistics of a checkpoint's tensors (all, or those matching KEY|GLOB).

    min, max, mean, std and L2 norm are over the finite elements; zeros, NaN and
    Inf are counted. bfloat16/float16 are computed in float32 or wider; strings
    and variants get a count only. Tensors are read in chunks, checksums checked.

    --hist adds a histogram of each tensor's finite values (--bins equal bins
    from its min to its max; bool and 8-bit integers over their dtype's range),
    drawn in Unicode blocks that fit the terminal, or ASCII with --ascii; with
    --json the bin edges and counts, NaN, +Inf, -Inf and zeros counted apart.

    On a terminal too narrow for every column, L2 and zeros are left out first
    (then NaN and Inf when all is finite, max, min, shape...; a line names
    them); --columns chooses which and in what order (--json has them all).

    \b
    Examples:
      ckpt stats run/tf_ckpts
      ckpt stats run/model.ckpt-200 'dnn/*/kernel' --json
      ckpt stats --names run/tf_ckpts
      ckpt stats --columns mean,std,NaN,Inf run/tf_ckpts
      ckpt stats --hist run/model.ckpt-200 'dnn/*'
      ckpt stats --check-finite run/tf_ckpts || echo "training diverged"
    """,
    arguments=(Arg("path", type=CHECKPOINT), Arg("patterns", nargs=-1, required=False, metavar="[KEY|GLOB]...",
                                                  complete=("keys",))),
    options=(
        Opt("--check-finite", flag=True, help="Exit 1 and name the tensors holding NaN or Inf."),
        Opt("--names", flag=True, help="Add each tensor's TF1-style name and role (also to --json), as ls does."),
        Opt("--hist", flag=True, help="Add a histogram of each tensor's values (also to --json: edges and counts)."),
        Opt("--bins", type=Ints(min=1, max=4096), default=32, show_default=True, metavar="N",
            help="Bins of each --hist histogram (fewer are drawn when the terminal is narrower)."),
        Opt("--columns", metavar="COL,...", convert=_columns, complete=("choices", *COLUMN_NAMES),
            help="The statistics to show, in this order: " + ",".join(COLUMN_NAMES) + " or all "
                 "(default: all that fit the terminal; the key is always shown)."),
        Opt("--ascii", flag=True, help="Draw --hist in ASCII characters instead of Unicode blocks."),
        json_option(),
        jobs_option(),
        executor_option(),
    ),
)
