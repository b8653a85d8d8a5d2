"""``ckpt verify``: read everything, check every checksum and every data file's layout."""
from __future__ import annotations

import click

from ..completion import CHECKPOINT
from ..exit_codes import ExitCode
from ..help import command


@command(short_help="Check every checksum and every data file of a checkpoint.")
@click.argument("path", type=CHECKPOINT)
@click.option("--against", "against", type=CHECKPOINT, metavar="SRC",
              help="Compare with another checkpoint instead: same keys, shapes, dtypes and values.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable report on stdout.")
@click.pass_context
def verify(ctx: click.Context, path: str, against: str | None, as_json: bool) -> None:
    """Read every tensor and check every checksum; check that data files are whole.

    With --against SRC, check instead that PATH holds exactly the tensors of SRC
    (keys, shapes, dtypes and values, compared chunk by chunk), e.g. after a conversion.

    Exit status: 0 when the checkpoint is sound (or the same as SRC), 1 when problems
    or differences were found (each is listed), 3 when it cannot be opened at all
    (all codes below).

    \b
    Examples:
      ckpt verify run/tf_ckpts/ckpt-5
      ckpt verify run/tf_ckpts --json
      ckpt verify converted/ckpt --against run/model.ckpt-200
    """
    if against is not None:
        _verify_against(ctx, path, against, as_json)
        return
    from formats.api import open_checkpoint
    from formats.ops.compare.verify import verify_checkpoint

    from ..render.progress import progress_for

    with open_checkpoint(path) as ckpt:
        with progress_for(ckpt, "verifying") as progress:
            report = verify_checkpoint(ckpt, progress)
    if as_json:
        from ..render.common import print_json

        print_json(report.to_json())
    else:
        from ..render.reports import render_verify

        render_verify(report)
    ctx.exit(ExitCode.OK if report.ok else ExitCode.PROBLEMS)


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
