"""``ckpt verify``: read everything, check every checksum and every data file's layout."""
from __future__ import annotations

from typing import Any

import click

from ..completion import CHECKPOINT
from ..exit_codes import ExitCode
from ..help import command
from ..options import jobs_option, rule_options


@command(short_help="Check every checksum and every data file of a checkpoint.",
         exit_status={0: "every checkpoint is sound (or the same as SRC)", 1: "problems or differences found (each listed)",
                       3: "a checkpoint cannot be opened at all (the others are still verified)"})
@click.argument("paths", nargs=-1, required=True, type=CHECKPOINT)
@click.option("--against", "against", type=CHECKPOINT, metavar="SRC",
              help="Compare with another checkpoint instead: same keys, shapes, dtypes and values.")
@click.option("--match", type=click.Choice(["key", "name"]), default="key", show_default=True,
              help="With --against: pair tensors by checkpoint key, or by TF1-style variable name (a "
                   "name-based SRC and its object-based conversion, a bundle and a Keras file).")
@rule_options("SRC's")
@click.option("--allow-loader-refusals", is_flag=True,
              help="Report what the format's own loader refuses (TensorFlow, the safetensors library) "
                   "without failing on it.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable report on stdout.")
@jobs_option()
@click.pass_context
def verify(ctx: click.Context, paths: tuple[str, ...], against: str | None, match: str, maps: tuple[str, ...],
           regexes: tuple[str, ...], rules_file: str | None, allow_loader_refusals: bool, as_json: bool,
           jobs: int) -> None:
    """Read every tensor and check every checksum; check that data files are whole.

    Several PATHs (a shell glob such as run/ckpt-*) verify each checkpoint once.
    With --against SRC, check instead that PATH holds exactly the tensors of SRC
    (keys, shapes, dtypes and values, compared chunk by chunk), e.g. after a conversion:
    --match name pairs them by variable name (after a name-based -> object-based
    conversion the keys differ), and --map/--regex/--rules rename SRC's names as
    the conversion did.

    What the format's own loader would refuse although ckpt reads it (a safetensors
    file the safetensors library rejects, a V1 dtype TensorFlow's V1 reader does
    not take, a SavedModel nested deeper than TensorFlow parses) is listed as a
    loader refusal: a problem, unless --allow-loader-refusals.

    \b
    Examples:
      ckpt verify run/tf_ckpts/ckpt-5
      ckpt verify run/tf_ckpts --json
      ckpt verify run/tf_ckpts/ckpt-*
      ckpt verify converted/ckpt --against run/model.ckpt-200 --match name
    """
    if against is not None:
        if len(paths) != 1:
            raise click.UsageError("--against compares one checkpoint with SRC; give one PATH")
        if allow_loader_refusals:
            raise click.UsageError("--allow-loader-refusals is for verifying PATH itself: do not give it with --against")
        from formats.ops.rules import build_rules

        rules = build_rules(maps, regexes, rules_file)
        _verify_against(ctx, paths[0], against, match, rules, as_json)
        return
    if match != "key" or maps or regexes or rules_file:
        raise click.UsageError("--match, --map, --regex and --rules pair tensors with SRC: use them with --against")
    from .verifying import run_verify

    ctx.exit(run_verify(paths, as_json, jobs, allow_loader_refusals))


def _verify_against(ctx: click.Context, path: str, against: str, match: str, rules: Any, as_json: bool) -> None:
    from formats.api import open_checkpoint
    from formats.ops.compare.against import name_pairs, verify_against

    from ..render.common import safe_text
    from ..render.progress import progress_for

    with open_checkpoint(path) as out, open_checkpoint(against) as src:
        with progress_for(out, "comparing") as progress:
            report, notes = verify_against(out, src, match=match, rules=rules or None, path=path, against=against,
                                           progress=progress)
        paired = name_pairs(out, src) if match == "key" and report.tensors == 0 and report.mismatches else 0
    if paired:
        click.echo(f"ckpt: hint: no key is in both checkpoints, but {paired} tensors pair by variable name: "
                   "try --match name", err=True)
    for note in notes:
        click.echo(safe_text(f"ckpt: warning: {note}"), err=True)
    if as_json:
        from ..render.common import print_json

        print_json(report.to_json())
    else:
        from ..render.roundtrip import render_roundtrip

        render_roundtrip(report)
    ctx.exit(ExitCode.OK if report.ok else ExitCode.PROBLEMS)
