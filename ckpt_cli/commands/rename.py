"""``ckpt rename``: rename the variables (or objects) of a checkpoint into a new one."""
from __future__ import annotations

import click

from ..completion import CHECKPOINT
from ..help import WRITER_EXIT_STATUS, command
from ..options import READ_BACK_JOBS, jobs_option, link_option, rule_options, write_options


@command(short_help="Write a checkpoint again with variables renamed.",
         exit_status=WRITER_EXIT_STATUS)
@click.argument("src", type=CHECKPOINT)
@click.option("-o", "--output", "out", required=True, type=click.Path(), metavar="OUT", help="Output checkpoint prefix.")
@rule_options()
@click.option("--add-prefix", metavar="PREFIX", help="Put every name under PREFIX.")
@click.option("--strip-prefix", metavar="PREFIX", help="Remove PREFIX from the names under it (PREFIX/x -> x).")
@click.option("--rename-full-names", is_flag=True, help="Object-based: apply the rules to full_names too.")
@write_options()
@click.option("--all", "all_rows", is_flag=True,
              help="With --dry-run, list every tensor (by default only those whose key changes).")
@link_option()
@jobs_option(READ_BACK_JOBS)
@click.pass_context
def rename(ctx: click.Context, src: str, out: str, maps: tuple[str, ...], regexes: tuple[str, ...],
           rules_file: str | None, add_prefix: str | None, strip_prefix: str | None, rename_full_names: bool,
           dry_run: bool, as_json: bool, force: bool, no_verify: bool, update_state: bool, verbose: bool,
           all_rows: bool, link: bool, jobs: int) -> None:
    """Write SRC again with variables renamed.

    Name-based checkpoints: the rules rewrite keys. Object-based checkpoints: the
    rules rewrite object paths (keys without /.ATTRIBUTES/...) and the object graph
    is rebuilt - edges renamed, objects moved to a new parent where the new path
    asks, slot variable keys following their variables - so that TensorFlow
    restores the result into the program with the new attribute names.
    Collisions, rules that match nothing and renames that would break the graph
    are reported before anything is written.

    \b
    Examples:
      ckpt rename run/tf_ckpts/ckpt-5 -o renamed/ckpt-5 --map net/l1=net/dense
      ckpt rename model.ckpt-200 -o new/model.ckpt-200 --strip-prefix tower_0 --dry-run
      ckpt rename ckpt-5 -o out/ckpt-5 --regex '^model/(.*)=\\1' --rename-full-names
    """
    from .renaming import run_rename

    ctx.exit(run_rename(src, out, maps=maps, regexes=regexes, rules_file=rules_file, add_prefix=add_prefix,
                        strip_prefix=strip_prefix, rename_full_names=rename_full_names, dry_run=dry_run,
                        as_json=as_json, force=force, no_verify=no_verify, update_state=update_state, link=link, jobs=jobs,
                        all_rows=all_rows, verbose=verbose))
