"""``ckpt report``: one checkpoint, a pair or a run directory as one self-contained HTML page (or JSON)."""
from __future__ import annotations

from formats.core.errors import ExitCode

from ..kept import keep_until_exit
from ..options import executor_option, jobs_option, json_option
from ..spec import CHECKPOINT, PATH, Arg, Command, Ints, Opt

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from formats.ops.report.result import Report

    from ..environment import Environment
    from ..spec import Params


def run(env: Environment, p: Params) -> int:
    """``ckpt report PATH... -o OUT``: write the page (and with --json print the data); the exit status."""
    from formats import verbs
    from formats.core.errors import UsageError
    from formats.ops.report.build import report_kind

    if p.out is None and not p.as_json:
        raise UsageError("", "say where the page goes: -o OUT.html (or --json for the data on stdout)")
    if p.out is not None:  # an existing page is refused before every tensor is read, not after
        from formats.io.writing import guard_output

        guard_output(p.out, inputs=[path for path in p.paths if "://" not in path], force=p.force,
                     what="output file")
    kind = report_kind(p.paths) if p.kind == "auto" else p.kind
    if kind == "run":
        result = verbs.report(*p.paths, kind=kind, patterns=p.patterns, bins=p.bins, log_bins=p.log_bins,
                              jobs=p.jobs, executor=p.executor, page=p.page)
    else:
        result = _report(p, kind)
    keep_until_exit(result)  # (it lives until the end)
    written = result.write_html(p.out, force=p.force) if p.out is not None else None
    if p.as_json:
        from ..render.common import print_json

        print_json(result.to_json())
    elif written is not None:
        from ..render.report import render_report_written

        render_report_written(result, p.out, written)
    return int(ExitCode.OK)


def _report(p: Params, kind: str) -> Report:
    """A checkpoint or diff report, the checkpoints opened here so that the progress bar knows their size."""
    from contextlib import ExitStack

    from formats import verbs
    from formats.api import open_checkpoint

    from ..render.progress import progress_for

    with ExitStack() as stack:
        opened = [stack.enter_context(open_checkpoint(path)) for path in p.paths]
        total = sum(c.total_nbytes() for c in opened)  # from a bundle's columns: no tensor object each
        with progress_for(opened[0], "reading", total=total) as progress:
            return verbs.report(*opened, kind=kind, patterns=p.patterns, bins=p.bins, log_bins=p.log_bins,
                                jobs=p.jobs, progress=progress, executor=p.executor, page=p.page)


SPEC = Command(
    "report", runner=run,
    short_help="One self-contained HTML page of a checkpoint, a pair or a run.",
    exit_status={0: "written"},
    help="""Draw a checkpoint, two checkpoints or a run directory as one HTML page.

    One PATH: its object tree (model and optimizer state apart, sizes and
    parameter counts) and per tensor its statistics, a histogram (linear or
    log), NaN/Inf and all-zero flags, dtype and storage. Two PATHs: the diff,
    each changed tensor's relative change and cosine, biggest first, a heatmap
    of |a-b| for 2-D tensors, keys only in one. A directory of several
    checkpoints: each one's save number (in its name), own step and time, and
    every variable's norm over the steps. The page needs no network (CSS, script and SVG inline), has a search
    box over keys and an anchor per tensor (report.html#k-KEY). Tensors are read
    in chunks on --jobs threads, or on the workers of a Dask cluster
    (--executor dask://HOST:PORT); the page stays a few KB per tensor. Past
    1,000 tensors it is a summary of bounded size (--page): groups by pattern
    and layer, every NaN/Inf, the largest changes, a search over every key.

    \b
    Examples:
      ckpt report run/tf_ckpts/ckpt-5 -o ckpt-5.html
      ckpt report run/tf_ckpts/ckpt-4 run/tf_ckpts/ckpt-5 -o diff.html
      ckpt report run/tf_ckpts -o run.html
      ckpt report run/tf_ckpts/ckpt-5 --json > report.json
    """,
    arguments=(Arg("paths", nargs=-1, type=CHECKPOINT, metavar="PATH..."),),
    options=(
        Opt("-o", "--output", name="out", type=PATH, metavar="OUT.html", help="Write the page here."),
        Opt("--kind", type=("auto", "checkpoint", "diff", "run"), default="auto", show_default=True,
            help="What to draw: auto is diff for two PATHs, run for a directory holding several checkpoints, "
                 "else checkpoint (a directory's latest)."),
        Opt("--filter", "-f", name="patterns", multiple=True, metavar="GLOB",
            help="Only tensors whose key is GLOB or matches it (repeatable)."),
        Opt("--bins", type=Ints(min=1, max=1024), default=48, show_default=True, metavar="N",
            help="Histogram bins per tensor."),
        Opt("--log-bins", flag=True,
            help="Also each tensor's histogram of log10 |x| (magnitudes over decades; about as much work again)."),
        Opt("--page", type=("auto", "full", "summary"), default="auto", show_default=True,
            help="full: a section per tensor; summary: a page of bounded size (under 10 MB at any count: "
                 "tensors by pattern and layer, every NaN/Inf, the largest changes, detail for 100, a search "
                 "over every key); auto: summary past 1,000 tensors at 48 bins (tensors x bins x scales > 48,000)."),
        Opt("--force", flag=True, help="Replace an existing OUT."),
        json_option("The report's data as JSON on stdout (with -o, the page is written too)."),
        jobs_option(),
        executor_option(),
    ),
)
