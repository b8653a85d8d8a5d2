"""``ckpt show``: print a tensor's values (or a slice of them)."""
from __future__ import annotations

from ..options import json_option
from ..spec import CHECKPOINT, Arg, Command, CommandLineError, Ints, Opt

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from ..environment import Environment
    from ..spec import Params

JSON_LIMIT = 1_000_000  # elements printed as JSON without --full


def run(env: Environment, p: Params) -> int:
    """``ckpt show PATH KEY[SLICE]``: print the values; the exit status."""
    import math

    from formats.api import open_checkpoint
    from formats.core.values import parse_key_slice, read_slice, read_summary, selected_shape

    from ..render.values import to_jsonable

    threshold = None if p.full else p.threshold
    with open_checkpoint(p.path) as ckpt:
        name, index, text = parse_key_slice(ckpt, p.key)
        entry = ckpt[name]
        size = math.prod(selected_shape(entry, index))
        if p.as_json and size > JSON_LIMIT and not p.full:  # said before anything is read
            raise CommandLineError(f"{size:,} elements: pass a slice, or --full to print them all as JSON")
        summary = not p.as_json and index is None and threshold is not None and size > threshold
        value = read_summary(entry, p.edgeitems) if summary else read_slice(entry, index)
        where = ckpt.path
    if p.as_json:
        from ..render.common import print_json

        print_json({"path": where, "key": name, "dtype": entry.dtype, "shape": list(entry.shape),
                    "slice": text if index is not None else None, "value_shape": list(value.shape),
                    "values": to_jsonable(value)})
        return 0
    from ..render.show import render_values

    render_values(name, entry, value, text if index is not None else None, precision=p.precision,
                  threshold=0 if summary else threshold, edgeitems=p.edgeitems)  # a summary: printed as one
    return 0


SPEC = Command(
    "show", runner=run,
    short_help="Print a tensor's values, or a slice of them.",
    help="""Print a tensor's values; KEY may carry a numpy-style slice.

    Strings are printed as quoted literals with control characters escaped;
    bfloat16, float8 and int4 print as numbers. In JSON, NaN/Inf are the strings
    "nan"/"inf"/"-inf", complex numbers [re, im], non-UTF-8 bytes {"base64": ...}.

    \b
    Examples:
      ckpt show run/model.ckpt-200 global_step
      ckpt show run/model.ckpt-200 'dnn/hiddenlayer_0/kernel[0:3, :]' --precision 3
      ckpt show run/tf_ckpts 'net/l1/kernel/.ATTRIBUTES/VARIABLE_VALUE[..., -1]' --json
    """,
    arguments=(Arg("path", type=CHECKPOINT), Arg("key", metavar="KEY[SLICE]", complete=("keys",))),
    options=(
        Opt("--precision", type=Ints(0, 30), default=6, show_default=True, help="Digits after the point."),
        Opt("--threshold", type=Ints(0), default=1000, show_default=True,
            help="Summarise (with ...) arrays with more elements than this."),
        Opt("--edgeitems", type=Ints(1), default=3, show_default=True,
            help="Items shown at each edge of a summarised dimension."),
        Opt("--full", flag=True, help="Print every element, however many."),
        json_option("The values as JSON (nested lists) on stdout."),
    ),
)
