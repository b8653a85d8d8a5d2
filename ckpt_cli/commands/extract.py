"""``ckpt extract``: tensors to .npy / .npz files or a directory of .npy files."""
from __future__ import annotations

from formats.core.model import FormatName

from ..kept import keep_until_exit
from ..options import json_option, output_option
from ..spec import CHECKPOINT, Arg, Command, Opt

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from ..environment import Environment
    from ..spec import Params


def run(env: Environment, p: Params) -> int:
    """``ckpt extract PATH [KEY|GLOB]... -o OUT``: write the files; the exit status."""
    from formats import verbs
    from formats.api import open_checkpoint
    from formats.core.selection import selected_keys

    from ..render.progress import progress_for

    with open_checkpoint(p.path) as ckpt:
        total = sum(ckpt.nbytes_of(selected_keys(ckpt, p.patterns)))  # (no tensor object each)
        with progress_for(ckpt, "extracting", total=total) as progress:
            report = verbs.extract(ckpt, p.patterns, p.out, mode=p.mode, by=p.by, include_graph=p.include_graph,
                                   force=p.force, allow_pickle=p.allow_pickle, progress=progress)
            keep_until_exit(report)  # (it lives until the end)
    if p.as_json:
        from ..render.common import print_json

        print_json(report.to_json())
        return 0
    from ..render.reports import render_written

    render_written(report)
    return 0


SPEC = Command(
    "extract", runner=run,
    short_help="Write tensors to .npy / .npz files.",
    help="""Write tensors (all, or those matching KEY|GLOB) to numpy files.

    One tensor goes to OUT.npy, several to OUT.npz (keys kept as member names,
    plus the provenance record convert --to npz writes), or, for a directory,
    one KEY.npy per tensor (keys become relative paths; hostile keys such as
    ../../x are escaped and never leave the directory). A directory of an
    object-based checkpoint is named by variable name instead (net/dense/kernel.npy,
    not net/l1/kernel/.ATTRIBUTES/VARIABLE_VALUE.npy; --by key keeps keys; by
    object path, net/l1/kernel.npy, where tensors share a name, as Keras 3's
    do, or with --by path), and
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
    """,
    arguments=(Arg("path", type=CHECKPOINT), Arg("patterns", nargs=-1, required=False, metavar="[KEY|GLOB]...",
                                                  complete=("keys",))),
    options=(
        output_option("OUT.npy (one tensor), OUT.npz (many), or a directory (ends in / or exists)."),
        Opt("--format", name="mode", type=("auto", "npy", FormatName.NPZ.value, "dir"), default="auto", show_default=True,
            help="Output kind; auto decides from OUT and the number of tensors."),
        Opt("--by", type=("auto", "key", "name", "path"), default="auto", show_default=True,
            help="Name files and members by checkpoint key, by variable name (net/dense/kernel) or by object "
                 "path (net/l1/kernel); auto: by name for a directory of an object-based checkpoint (by path "
                 "where tensors share a name), else by key."),
        Opt("--include-graph", flag=True,
            help="Also write the object graph (_CHECKPOINTABLE_OBJECT_GRAPH), left out by default."),
        Opt("--force", flag=True, help="Replace existing output files."),
        Opt("--allow-pickle", flag=True,
            help="Write string tensors whose elements end in NUL bytes as pickled object arrays."),
        json_option("Report what was written as JSON."),
    ),
)
