"""``ckpt ls``: list a checkpoint's tensors, or the checkpoints in a directory."""
from __future__ import annotations

import click

from ..completion import CHECKPOINT
from ..help import command


@command(short_help="List a checkpoint's tensors, or a directory's checkpoints.")
@click.argument("paths", nargs=-1, required=True, type=CHECKPOINT)
@click.option("--filter", "-f", "patterns", multiple=True, metavar="GLOB",
              help="Only keys matching GLOB (repeatable; any match counts).")
@click.option("--sort", type=click.Choice(["key", "size"]), default="key", show_default=True,
              help="Order of the tensor rows.")
@click.option("-r", "--recursive", is_flag=True, help="For a directory: walk the whole tree of runs.")
@click.option("--tree", is_flag=True, help="Show the checkpoint as a tree of objects (slots under their variable).")
@click.option("--names", is_flag=True, help="Add each tensor's TF1-style name and role (also to --json).")
@click.option("--no-optimizer", is_flag=True, help="Leave out optimizer slots and optimizer state.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output on stdout.")
@click.pass_context
def ls(ctx: click.Context, paths: tuple[str, ...], patterns: tuple[str, ...], sort: str,
       recursive: bool, tree: bool, names: bool, no_optimizer: bool, as_json: bool) -> None:
    """List the tensors of a checkpoint, or the checkpoints in a directory.

    PATH is a checkpoint prefix (run/ckpt-10), its .index or .data file, a Keras
    weights file, a SavedModel directory, or a directory. A directory lists one row
    per checkpoint found (from its `checkpoint` state file and its *.index files; a
    model base directory lists its SavedModel versions); -r walks a tree; with
    --tree, a directory shows its latest checkpoint. Several PATHs (a shell glob
    such as run/ckpt-*) list each checkpoint once.

    \b
    Examples:
      ckpt ls run/tf_ckpts/ckpt-5
      ckpt ls run/tf_ckpts/ckpt-5 --filter '*kernel*' --sort size
      ckpt ls -r runs/ --json
      ckpt ls --tree run/tf_ckpts/ckpt-5 --no-optimizer
      ckpt ls --names model.ckpt-200
    """
    from .listing import run_ls

    ctx.exit(run_ls(paths, patterns, sort, recursive, tree, names, no_optimizer, as_json))
