"""``ckpt ls``: list a checkpoint's tensors, or the checkpoints in a directory."""
from __future__ import annotations

import sys

from formats.core.errors import ExitCode

from ..environment import current
from ..kept import keep_until_exit
from ..options import json_option
from ..spec import CHECKPOINT, Arg, Command, Opt

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

    from ..environment import Environment
    from ..spec import Params


def run(env: Environment, p: Params) -> int:
    """``ckpt ls``: list every path (a checkpoint's tensors, a directory's checkpoints); the exit status."""
    return run_ls(p.paths, p.patterns, p.sort, p.recursive, p.tree, p.names, p.no_optimizer, p.as_json)


SPEC = Command(
    "ls", runner=run,
    short_help="List a checkpoint's tensors, or a directory's checkpoints.",
    help="""List the tensors of a checkpoint, or the checkpoints in a directory.

    PATH is a checkpoint prefix (run/ckpt-10), its .index or .data file, a Keras
    weights file, a SavedModel directory, or a directory. A directory lists one row
    per checkpoint found (from its `checkpoint` state file and its *.index files; a
    model base directory lists its SavedModel versions); -r walks a tree; with
    --tree, a directory shows its latest checkpoint. Several PATHs (a shell glob
    such as run/ckpt-*) list each checkpoint once. A directory's rows show "save",
    the number in a checkpoint's name (ckpt-5: 5), and "step", its own step
    variable (step, global_step, the optimizer's iterations; - without one).

    \b
    Examples:
      ckpt ls run/tf_ckpts/ckpt-5
      ckpt ls run/tf_ckpts/ckpt-5 --filter '*kernel*' --sort size
      ckpt ls -r runs/ --json
      ckpt ls --tree run/tf_ckpts/ckpt-5 --no-optimizer
      ckpt ls --names model.ckpt-200
    """,
    arguments=(Arg("paths", nargs=-1, type=CHECKPOINT),),
    options=(
        Opt("--filter", "-f", name="patterns", multiple=True, metavar="GLOB",
            help="Only keys matching GLOB (repeatable; any match counts)."),
        Opt("--sort", type=("key", "size"), default="key", show_default=True, help="Order of the tensor rows."),
        Opt("-r", "--recursive", flag=True, help="For a directory: walk the whole tree of runs."),
        Opt("--tree", flag=True, help="Show the checkpoint as a tree of objects (slots under their variable)."),
        Opt("--names", flag=True, help="Add each tensor's TF1-style name and role (also to --json)."),
        Opt("--no-optimizer", flag=True, help="Leave out optimizer slots and optimizer state."),
        json_option(),
    ),
)


def run_ls(paths: tuple[str, ...], patterns: tuple[str, ...], sort: str, recursive: bool, tree: bool,
           names: bool, no_optimizer: bool, as_json: bool) -> int:
    """List every path (a checkpoint's tensors, a directory's checkpoints) and return the exit status."""
    from formats.core.gc_pause import paused_gc

    tried = len(paths) == 1 and sort == "key" and not (tree or names or no_optimizer) and _local_prefix(paths[0])
    if tried:  # the start-up path of `ckpt ls PREFIX`: the index alone, nothing resolved, opened or registered
        quick = _bundle_listing(paths[0], list(patterns))
        if quick is not None:
            with paused_gc():
                _render([quick], as_json)
            return int(ExitCode.OK)
    from formats.discover.resolve import resolve_many

    outputs: list[tuple[str, str, Any]] = []
    status = ExitCode.OK
    for path, target in resolve_many(paths, directories=not tree):
        if target is None:
            from formats.discover.scan import scan_directory

            infos = scan_directory(path, recursive)
            if any(i.error for i in infos):
                status = ExitCode.PROBLEMS
            _mention_temporaries(path, as_json)
            outputs.append(("dir", path, (infos, _below(path, recursive, infos))))
        else:
            with paused_gc():  # a tree's or a listing's objects per tensor, none in a cycle
                outputs.append(_listing(target, tree, list(patterns), sort, names, not no_optimizer, as_json,
                                        not tried))
                keep_until_exit(outputs[-1])  # (they live until the end)
    with paused_gc():  # rows of a 50,000-tensor listing are many small acyclic objects
        _render(outputs, as_json)
    return int(status)


def _local_prefix(path: str) -> bool:
    """Whether ``path`` names a local bundle by its prefix and nothing else: ``PATH.index`` is a regular file,
    and no file or folder is called ``PATH`` (which resolving would weigh against the bundle)."""
    import os

    return "://" not in path and not os.path.lexists(path) and os.path.isfile(path + ".index")


def _bundle_listing(prefix: str, patterns: list[str]) -> tuple[str, str, object] | None:
    """The default listing of the local bundle at ``prefix`` read from its index alone
    (:mod:`formats.tf_bundle.index_listing`), with its warnings; None where the compact listing declines the index,
    and the caller resolves and opens ``prefix`` as for any path (so the output is the same either way)."""
    from formats.tf_bundle.index_listing import compact_listing

    listing = compact_listing(prefix, patterns)
    if listing is None:
        return None
    _warn_missing(listing.files)
    _warn_unmatched(listing.path, listing.unmatched)
    return ("compact", listing.path, listing)


def _warn_missing(files: list[str]) -> None:
    """A warning per file of the checkpoint that does not exist (its keys are listed, their values not read)."""
    from formats.io.storage import missing_files

    for path in missing_files(files):
        warn(f"{path}: missing; the keys are listed, their values cannot be read")


def _below(path: str, recursive: bool, infos: list[Any]) -> int:
    """The checkpoints in ``path``'s subdirectories when it holds none itself and ``-r`` was not given, else 0."""
    if recursive or infos:
        return 0
    from formats.discover.scan import count_below

    return count_below(path)


def _mention_temporaries(path: str, as_json: bool) -> None:
    """A warning naming what killed writes left in ``path`` (temporaries; the next write of the same output
    removes them when their writer is gone). Nothing behind a URL."""
    import os

    from formats.io import storage
    from formats.io.atomic import is_temp_name

    if as_json or storage.is_url(path):
        return
    try:
        found = sorted((e for e in os.scandir(path) if is_temp_name(e.name)), key=lambda e: e.name)
    except OSError:
        return
    if found:
        from ..render.common import human_bytes

        size = sum(e.stat(follow_symlinks=False).st_size for e in found if not e.is_dir(follow_symlinks=False))
        shown = ", ".join(e.name for e in found[:3]) + (f", +{len(found) - 3} more" if len(found) > 3 else "")
        warn(f"{path}: {len(found)} temporary file{'s' * (len(found) != 1)} ({human_bytes(size)}) left by "
             f"interrupted writes: {shown}; the next write of the same output removes them once their writer has ended")


def warn(message: str) -> None:
    """One ``ckpt: warning: ...`` line on stderr (undecodable key bytes shown as ``\\xNN``)."""
    current().warn(message)


def _listing(target: Any, tree: bool, patterns: list[str], sort: str, names: bool, optimizer: bool,
             as_json: bool, compact: bool = True) -> tuple[str, str, object]:
    """One checkpoint's listing (or tree); warns about missing files (the keys are still listed). ``compact``:
    whether to ask the format for a compact listing (not where the start-up path's was just declined)."""
    from formats.api import open_target
    from formats.ops.inspect.summary import summarise

    if compact and not tree and sort == "key" and not names and optimizer:  # the default listing (--filter, --json)
        listing = _compact_listing(target, patterns)
        if listing is not None:
            _warn_missing(listing.files)
            _warn_unmatched(listing.path, listing.unmatched)
            return ("compact", listing.path, listing)
    with open_target(target) as ckpt:
        _warn_missing(ckpt.files)
        if tree:
            from formats.ops.inspect.tree import build_tree

            listing = build_tree(ckpt, optimizer, patterns=patterns)
            _warn_unmatched(listing.path, listing.unmatched)
            return ("tree", ckpt.path, listing)
        summary = summarise(ckpt, patterns, sort, names, optimizer)
        _warn_unmatched(summary.path, summary.unmatched)
        if names:
            _warn_shared_names(ckpt)
        signatures = ckpt.metadata.get("signatures") if as_json else None
        return ("ckpt", ckpt.path, (summary, signatures))


def _warn_shared_names(ckpt: Any) -> None:
    """A warning when the names listed do not tell variables apart: full names several variables share (Keras 3
    names every ``Dense`` kernel of a model ``<model>/kernel``)."""
    from formats.ops.inspect.doctor import duplicate_names

    shared = duplicate_names(ckpt)
    if shared:
        shown = ", ".join(f"{name!r} ({len(keys)} variables)" for name, keys in list(shared.items())[:3])
        more = f" and {len(shared) - 3} more" if len(shared) > 3 else ""
        warn(f"{ckpt.path}: {len(shared)} name(s) are shared by several variables ({shown}{more}); their keys "
             "(object paths) tell them apart, as tf.train.Checkpoint.restore does")


def _compact_listing(target: Any, patterns: list[str]) -> Any:
    """The target's compact listing when its format reads one for it (a bundle with a large index), else None."""
    from formats.core.registry import compact_listing_with, get_format

    return compact_listing_with(get_format(target.format), target.path, patterns)


def _warn_unmatched(path: str, unmatched: list[str]) -> None:
    """A filter that matches nothing is worth a warning, not a failure, in a listing."""
    if unmatched:
        from formats.core.selection import nothing_selected

        exc = nothing_selected(path, unmatched)
        warn(f"{exc} ({exc.hint})")


def _render(outputs: list[tuple[str, str, Any]], as_json: bool) -> None:
    from ..render.common import print_json

    if as_json:
        streamed = ("compact", "tree")  # written a part at a time, not made into one document first
        docs = [value if kind in streamed else _json_of(kind, path, value) for kind, path, value in outputs]
        if any(kind in streamed for kind, _, _ in outputs):
            from ..render.listing import print_listing_json

            print_listing_json(docs)
        else:
            print_json(docs[0] if len(docs) == 1 else docs)
        return
    from ..render.listing import render_compact_table, render_directory_table, render_tensor_table

    for i, (kind, path, value) in enumerate(outputs):
        if i:
            sys.stdout.write("\n")
        if kind == "dir":
            render_directory_table(path, *value)
        elif kind == "compact":
            render_compact_table(value)
        elif kind == "tree":
            from ..render.tree import render_tree

            render_tree(value)
        else:
            render_tensor_table(value[0])


def _json_of(kind: str, path: str, value: Any) -> object:
    if kind == "dir":
        infos, below = value
        doc: dict[str, Any] = {"path": path, "checkpoints": [i.to_json() for i in infos]}
        if below:
            doc["in_subdirectories"] = below
        return doc
    if kind == "ckpt":
        summary, signatures = value
        doc = summary.to_json()
        if signatures is not None:
            doc["signatures"] = signatures
        return doc
    return value.to_json()
