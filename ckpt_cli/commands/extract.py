"""``ckpt extract``: tensors to .npy / .npz files or a directory of .npy files."""
from __future__ import annotations

import click

from ..completion import CHECKPOINT, complete_keys
from ..help import command


@command(short_help="Write tensors to .npy / .npz files.")
@click.argument("path", type=CHECKPOINT)
@click.argument("patterns", nargs=-1, metavar="[KEY|GLOB]...", shell_complete=complete_keys)
@click.option("-o", "--output", "out", required=True, type=click.Path(), metavar="OUT",
              help="OUT.npy (one tensor), OUT.npz (many), or a directory (ends in / or exists).")
@click.option("--format", "mode", type=click.Choice(["auto", "npy", "npz", "dir"]), default="auto",
              show_default=True, help="Output kind; auto decides from OUT and the number of tensors.")
@click.option("--by", type=click.Choice(["auto", "key", "name"]), default="auto", show_default=True,
              help="Name files and members by checkpoint key or by variable name (net/dense/kernel); auto: by "
                   "name for a directory of an object-based checkpoint, else by key.")
@click.option("--include-graph", is_flag=True,
              help="Also write the object graph (_CHECKPOINTABLE_OBJECT_GRAPH), left out by default.")
@click.option("--force", is_flag=True, help="Replace existing output files.")
@click.option("--allow-pickle", is_flag=True,
              help="Write string tensors whose elements end in NUL bytes as pickled object arrays.")
@click.option("--json", "as_json", is_flag=True, help="Report what was written as JSON.")
def extract(path: str, patterns: tuple[str, ...], out: str, mode: str, by: str, include_graph: bool, force: bool,
            allow_pickle: bool, as_json: bool) -> None:
    """Write tensors (all, or those matching KEY|GLOB) to numpy files.

    One tensor goes to OUT.npy, several to OUT.npz (keys kept as member names,
    plus the provenance record convert --to npz writes), or, for a directory,
    one KEY.npy per tensor (keys become relative paths; hostile keys such as
    ../../x are escaped and never leave the directory). A directory of an
    object-based checkpoint is named by variable name instead (net/dense/kernel.npy,
    not net/l1/kernel/.ATTRIBUTES/VARIABLE_VALUE.npy; --by key keeps keys), and
    the object graph is left out unless --include-graph. Types numpy lacks
    (bfloat16, float8, int4...) are stored as their raw bits (uint16, uint8),
    exactly as convert --to npz stores them; strings and variants as
    fixed-width bytes (S<n>), never pickled unless --allow-pickle. Every file is
    read back and compared before it takes its name.

    \b
    Examples:
      ckpt extract run/model.ckpt-200 dnn/logits/kernel -o logits.npy
      ckpt extract run/model.ckpt-200 'dnn/*' -o weights.npz
      ckpt extract run/tf_ckpts -o arrays/
    """
    from formats.api import open_checkpoint
    from formats.ops.inspect.extract import extract as do_extract

    from ..render.progress import progress_for

    from formats.core.selection import select

    with open_checkpoint(path) as ckpt:
        total = sum(e.nbytes for e in select(ckpt, patterns))
        with progress_for(ckpt, "extracting", total=total) as progress:
            report = do_extract(ckpt, patterns, out, mode, force, allow_pickle, progress, by=by,
                                include_graph=include_graph)
    if as_json:
        from ..render.common import print_json

        print_json(report.to_json())
        return
    from ..render.reports import render_written

    render_written(report)
