"""``ckpt ls``: list a checkpoint's tensors, or the checkpoints in a directory."""
from __future__ import annotations

from typing import Any

import click

from ..completion import CHECKPOINT
from ..exit_codes import ExitCode
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
    from formats.core._gc import paused_gc
    from formats.discover.resolve import resolve_many
    from formats.discover.scan import scan_directory

    outputs = []
    status = ExitCode.OK
    for path, target in resolve_many(paths, directories=not tree):
        if target is None:
            infos = scan_directory(path, recursive)
            if any(i.error for i in infos):
                status = ExitCode.PROBLEMS
            outputs.append(("dir", path, infos))
        else:
            outputs.append(_listing(target, tree, list(patterns), sort, names, not no_optimizer, as_json))
    with paused_gc():  # rows of a 50,000-tensor listing are many small acyclic objects
        _render(outputs, as_json)
    ctx.exit(status)


def _listing(target: Any, tree: bool, patterns: list[str], sort: str, names: bool, optimizer: bool,
             as_json: bool) -> tuple[str, str, object]:
    """One checkpoint's listing (or tree); warns about missing files (the keys are still listed)."""
    from formats.api import open_target
    from formats.discover.scan import missing_files
    from formats.ops.inspect.summary import summarise

    from ..render.common import safe_text

    with open_target(target) as ckpt:
        for path in missing_files(ckpt):
            click.echo(safe_text(f"ckpt: warning: {path}: missing; the keys are listed, their values cannot be "
                                 "read"), err=True)
        if tree:
            from formats.ops.inspect.tree import build_tree

            listing = build_tree(ckpt, optimizer, patterns=patterns)
            _warn_unmatched(listing.path, listing.unmatched)
            return ("tree", ckpt.path, listing)
        summary = summarise(ckpt, patterns, sort, names, optimizer)
        _warn_unmatched(summary.path, summary.unmatched)
        signatures = ckpt.metadata.get("signatures") if as_json else None
        return ("ckpt", ckpt.path, (summary, signatures))


def _warn_unmatched(path: str, unmatched: list[str]) -> None:
    """A filter that matches nothing is worth a warning, not a failure, in a listing."""
    if unmatched:
        from formats.core.selection import nothing_selected

        from ..render.common import safe_text

        exc = nothing_selected(path, unmatched)
        click.echo(safe_text(f"ckpt: warning: {exc} ({exc.hint})"), err=True)


def _render(outputs: list[tuple[str, str, object]], as_json: bool) -> None:
    from ..render.common import print_json

    if as_json:
        docs = [_json_of(kind, path, value) for kind, path, value in outputs]
        print_json(docs[0] if len(docs) == 1 else docs)
        return
    from ..render.listing import render_directory_table, render_tensor_table

    for i, (kind, path, value) in enumerate(outputs):
        if i:
            click.echo()
        if kind == "dir":
            render_directory_table(path, value)  # type: ignore[arg-type]
        elif kind == "tree":
            from ..render.tree import render_tree

            render_tree(value)
        else:
            render_tensor_table(value[0])  # type: ignore[index]


def _json_of(kind: str, path: str, value: object) -> object:
    if kind == "dir":
        return {"path": path, "checkpoints": [i.to_json() for i in value]}  # type: ignore[attr-defined]
    if kind == "ckpt":
        summary, signatures = value  # type: ignore[misc]
        doc = summary.to_json()
        if signatures is not None:
            doc["signatures"] = signatures
        return doc
    return value.to_json()  # type: ignore[attr-defined]
