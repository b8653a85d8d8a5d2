"""``ckpt verify``: read everything, check every checksum and every data file's layout."""
from __future__ import annotations

import click

from ..exit_codes import Exit


@click.command()
@click.argument("path", type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="Machine-readable report on stdout.")
@click.pass_context
def verify(ctx: click.Context, path: str, as_json: bool) -> None:
    """Read every tensor and check every checksum; check that data files are whole.

    Exit status: 0 when the checkpoint is sound, 1 when problems were found
    (each is listed), 3 when it cannot be opened at all.

    \b
    Examples:
      ckpt verify run/tf_ckpts/ckpt-5
      ckpt verify run/tf_ckpts --json
    """
    from formats.api import open_checkpoint
    from formats.verify import verify_checkpoint

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
    ctx.exit(Exit.OK if report.ok else Exit.PROBLEM)
