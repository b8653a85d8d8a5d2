"""``ckpt rename``: rename the variables (or objects) of a checkpoint into a new one."""
from __future__ import annotations


from ..kept import keep_until_exit
from ..options import (READ_BACK_JOBS, executor_option, jobs_option, link_option, output_option, rule_options,
                       write_options)
from ..spec import CHECKPOINT, WRITER_EXIT_STATUS, Arg, Command, Opt

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Callable

    from formats.core.model import Checkpoint
    from formats.ops.convert.plan import ConversionResult

    from ..environment import Environment
    from ..spec import Params


def run(env: Environment, p: Params) -> int:
    """``ckpt rename SRC -o OUT``: the exit status (0 written or planned, 1 problems found)."""
    return run_rename(p.src, p.out, maps=p.maps, regexes=p.regexes, rules_file=p.rules_file, add_prefix=p.add_prefix,
                      strip_prefix=p.strip_prefix, rename_full_names=p.rename_full_names, dry_run=p.dry_run,
                      as_json=p.as_json, force=p.force, no_verify=p.no_verify, update_state=p.update_state,
                      link=p.link, jobs=p.jobs, all_rows=p.all_rows, verbose=p.verbose, executor=p.executor,
                      skip_unreadable=p.skip_unreadable)


SPEC = Command(
    "rename", runner=run,
    short_help="Write a checkpoint again with variables renamed.",
    exit_status=WRITER_EXIT_STATUS,
    help="""Write SRC again with variables renamed.

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

    --executor dask://HOST:PORT writes a bundle's data files on a Dask
    cluster's workers, each straight to the destination (a bucket), the index
    last; SRC and OUT must be reachable from the workers.
    """,
    arguments=(Arg("src", type=CHECKPOINT),),
    options=(
        output_option("Output checkpoint prefix."),
        *rule_options(),
        Opt("--add-prefix", metavar="PREFIX", help="Put every name under PREFIX."),
        Opt("--strip-prefix", metavar="PREFIX", help="Remove PREFIX from the names under it (PREFIX/x -> x)."),
        Opt("--rename-full-names", flag=True, help="Object-based: apply the rules to full_names too."),
        *write_options(),
        Opt("--all", name="all_rows", flag=True,
            help="With --dry-run, list every tensor (by default only those whose key changes)."),
        link_option(),
        jobs_option(READ_BACK_JOBS),
        executor_option(),
    ),
)


def run_rename(src: str, out: str, *, maps: tuple[str, ...] = (), regexes: tuple[str, ...] = (),
               rules_file: str | None = None, add_prefix: str | None = None, strip_prefix: str | None = None,
               rename_full_names: bool = False, dry_run: bool = False, as_json: bool = False, force: bool = False,
               no_verify: bool = False, update_state: bool = False, link: bool = False,
               jobs: int | None = None, all_rows: bool = False, verbose: bool = False,
               executor: str | None = None, skip_unreadable: bool = False) -> int:
    """Write ``src`` again at ``out`` with its variables renamed; print the plan's problems and what was
    written (a dry run: the renamed tensors, every one with ``all_rows``); return the exit status (0 written
    or planned, 1 problems found)."""
    from formats import verbs
    from formats.api import open_checkpoint
    from formats.ops.rules import build_rules

    from ..render.conversion import render_result

    rules = build_rules(maps, regexes, rules_file, add_prefix=add_prefix, strip_prefix=strip_prefix)

    def rename(source: Checkpoint, progress: Callable[[int, int], None] | None) -> ConversionResult:
        return verbs.rename(source, out, rules, rename_full_names=rename_full_names, dry_run=dry_run, force=force,
                            verify=not no_verify, update_state=update_state, link=link, jobs=jobs, progress=progress,
                            executor=executor, skip_unreadable=skip_unreadable)

    with open_checkpoint(src) as source:
        if dry_run:  # (nothing written: no bar, and its module not imported)
            result = rename(source, None)
        else:
            from ..render.progress import progress_for

            with progress_for(source, "writing") as progress:
                result = rename(source, progress)
        keep_until_exit(result)  # (it lives until the end)
    return render_result(result, as_json, changed_only=not all_rows, verbose=verbose)
