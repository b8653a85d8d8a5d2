"""``ckpt show``: print a tensor's values (or a slice of them)."""
from __future__ import annotations

import sys

import click

from ..completion import CHECKPOINT, complete_keys
from ..help import command


JSON_LIMIT = 1_000_000  # elements printed as JSON without --full


@command(short_help="Print a tensor's values, or a slice of them.")
@click.argument("path", type=CHECKPOINT)
@click.argument("key", metavar="KEY[SLICE]", shell_complete=complete_keys)
@click.option("--precision", type=click.IntRange(0, 30), default=6, show_default=True, help="Digits after the point.")
@click.option("--threshold", type=click.IntRange(0), default=1000, show_default=True,
              help="Summarise (with ...) arrays with more elements than this.")
@click.option("--edgeitems", type=click.IntRange(1), default=3, show_default=True,
              help="Items shown at each edge of a summarised dimension.")
@click.option("--full", is_flag=True, help="Print every element, however many.")
@click.option("--json", "as_json", is_flag=True, help="The values as JSON (nested lists) on stdout.")
def show(path: str, key: str, precision: int, threshold: int, edgeitems: int, full: bool, as_json: bool) -> None:
    """Print a tensor's values; KEY may carry a numpy-style slice.

    Strings are printed as quoted literals with control characters escaped;
    bfloat16, float8 and int4 print as numbers. In JSON, NaN/Inf are the strings
    "nan"/"inf"/"-inf", complex numbers [re, im], non-UTF-8 bytes {"base64": ...}.

    \b
    Examples:
      ckpt show run/model.ckpt-200 global_step
      ckpt show run/model.ckpt-200 'dnn/hiddenlayer_0/kernel[0:3, :]' --precision 3
      ckpt show run/tf_ckpts 'net/l1/kernel/.ATTRIBUTES/VARIABLE_VALUE[..., -1]' --json
    """
    import numpy as np

    from formats.api import open_checkpoint
    from formats.core.values import display_array, parse_key_slice, read_slice, to_jsonable

    with open_checkpoint(path) as ckpt:
        name, index, text = parse_key_slice(ckpt, key)
        entry = ckpt[name]
        value = read_slice(entry, index)
        where = ckpt.path
    if as_json:
        if value.size > JSON_LIMIT and not full:
            raise click.UsageError(f"{value.size:,} elements: pass a slice, or --full to print them all as JSON")
        from ..render.common import print_json

        print_json({"path": where, "key": name, "dtype": entry.dtype, "shape": list(entry.shape),
                    "slice": text if index is not None else None, "value_shape": list(value.shape),
                    "values": to_jsonable(value)})
        return
    shown = display_array(value)
    options = {"precision": precision, "edgeitems": edgeitems, "threshold": sys.maxsize if full else threshold}
    with np.printoptions(**options):
        body = np.array2string(shown, formatter={"all": str} if shown.dtype == object else None,
                               separator=", " if shown.dtype == object else " ")
    part = f"[{text}] -> {list(value.shape)}" if index is not None else ""
    click.echo(f"{name}{part}: {entry.dtype} {list(entry.shape)}")
    click.echo(body)
