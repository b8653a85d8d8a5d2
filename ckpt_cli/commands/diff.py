"""``ckpt diff``: what differs between two checkpoints - keys, shapes, dtypes, values."""
from __future__ import annotations

import click

from ..completion import CHECKPOINT, key_completer
from ..help import command
from ..options import jobs_option, rule_options


@command(short_help="Compare two checkpoints: what changed, and by how much.",
         exit_status={0: "equal", 1: "different (each difference listed), or a --filter matching nothing"})
@click.argument("a", type=CHECKPOINT)
@click.argument("b", type=CHECKPOINT)
@click.option("--match", type=click.Choice(["key", "name"]), default="key", show_default=True,
              help="Pair tensors by checkpoint key, or by TF1-style variable name (bundle vs HDF5, "
                   "name-based vs object-based).")
@click.option("--filter", "-f", "patterns", multiple=True, metavar="GLOB",
              help="Only tensors whose key (with --match name: name), after the rename rules, is GLOB or "
                   "matches it (repeatable).")
@rule_options("A's")
@click.option("--strip-prefix-a", metavar="PREFIX", shell_complete=key_completer("a"), help="Remove this '/'-prefix from A's names first.")
@click.option("--strip-prefix-b", metavar="PREFIX", shell_complete=key_completer("b"), help="Remove this '/'-prefix from B's names first.")
@click.option("--atol", type=float, help="Absolute tolerance (numpy allclose: |a-b| <= atol + rtol*|b|).")
@click.option("--rtol", type=float, help="Relative tolerance (an unset tolerance is 0 once either is given).")
@click.option("--equal-nan", is_flag=True, help="Count NaN as equal to NaN (tolerance comparison).")
@click.option("--keys-only", is_flag=True, help="Compare keys, shapes and dtypes only; read no values.")
@click.option("--names", is_flag=True, help="Add each tensor's TF1-style name and role (also to --json), as ls does.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing; the exit status says it all.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output on stdout.")
@jobs_option()
@click.pass_context
def diff(ctx: click.Context, a: str, b: str, match: str, patterns: tuple[str, ...], maps: tuple[str, ...], regexes: tuple[str, ...],
         rules_file: str | None, strip_prefix_a: str | None, strip_prefix_b: str | None, atol: float | None,
         rtol: float | None, equal_nan: bool, keys_only: bool, names: bool, quiet: bool, as_json: bool,
         jobs: int) -> None:
    """Compare two checkpoints: keys only in one, shape/dtype changes, value changes.

    A and B are checkpoints of any supported format, or directories (their latest
    checkpoint). Values are equal when their bytes are identical, unless --atol,
    --rtol or --equal-nan ask for numpy allclose semantics. Rename options rewrite
    A's names so that they match B's.

    \b
    Examples:
      ckpt diff run_a/model.ckpt-1 run_a/model.ckpt-200   # exit 1: they differ
      ckpt diff --quiet run_a/tf_ckpts run_b/tf_ckpts && echo same
      ckpt diff --match name tf1/model.ckpt-200 converted/ckpt-1 --atol 1e-6
      ckpt diff old new --map dnn/hiddenlayer_0=dense --json
      ckpt diff --names run_a/tf_ckpts/ckpt-4 run_a/tf_ckpts/ckpt-5   # exit 1: with names, roles
    """
    from .diffing import run_diff

    ctx.exit(run_diff(a, b, match=match, patterns=patterns, maps=maps, regexes=regexes, rules_file=rules_file,
                      strip_prefix_a=strip_prefix_a, strip_prefix_b=strip_prefix_b, atol=atol, rtol=rtol,
                      equal_nan=equal_nan, keys_only=keys_only, quiet=quiet, as_json=as_json, jobs=jobs,
                      names=names))
