"""``ckpt verify``: read everything, check every checksum and every data file's layout."""
from __future__ import annotations

import click

from ..completion import CHECKPOINT
from ..exit_codes import ExitCode
from ..help import command
from ..options import jobs_option


@command(short_help="Check every checksum and every data file of a checkpoint.")
@click.argument("paths", nargs=-1, required=True, type=CHECKPOINT)
@click.option("--against", "against", type=CHECKPOINT, metavar="SRC",
              help="Compare with another checkpoint instead: same keys, shapes, dtypes and values.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable report on stdout.")
@jobs_option()
@click.pass_context
def verify(ctx: click.Context, paths: tuple[str, ...], against: str | None, as_json: bool, jobs: int) -> None:
    """Read every tensor and check every checksum; check that data files are whole.

    Several PATHs (a shell glob such as run/ckpt-*) verify each checkpoint once.
    With --against SRC, check instead that PATH holds exactly the tensors of SRC
    (keys, shapes, dtypes and values, compared chunk by chunk), e.g. after a conversion.

    Exit status: 0 when every checkpoint is sound (or the same as SRC), 1 when problems
    or differences were found (each is listed), 3 when one cannot be opened at all
    (the others are still verified; all codes below).

    \b
    Examples:
      ckpt verify run/tf_ckpts/ckpt-5
      ckpt verify run/tf_ckpts --json
      ckpt verify run/tf_ckpts/ckpt-*
      ckpt verify converted/ckpt --against run/model.ckpt-200
    """
    if against is not None:
        if len(paths) != 1:
            raise click.UsageError("--against compares one checkpoint with SRC; give one PATH")
        _verify_against(ctx, paths[0], against, as_json)
        return
    from .verifying import run_verify

    ctx.exit(run_verify(paths, as_json, jobs))


def _verify_against(ctx: click.Context, path: str, against: str, as_json: bool) -> None:
    from formats.api import open_checkpoint
    from formats.core.roundtrip import compare_checkpoints

    from ..render.progress import progress_for

    with open_checkpoint(path) as out, open_checkpoint(against) as src:
        with progress_for(out, "comparing") as progress:
            report = compare_checkpoints(out, src, path=path, against=against, progress=progress)
    if as_json:
        from ..render.common import print_json

        print_json(report.to_json())
    else:
        from ..render.roundtrip import render_roundtrip

        render_roundtrip(report)
    ctx.exit(ExitCode.OK if report.ok else ExitCode.PROBLEMS)
