"""What ``ckpt rename`` does, without click: the click command (:mod:`ckpt_cli.commands.rename`) and the
start-up fast path (:mod:`ckpt_cli.fast`) both call :func:`run_rename`."""
from __future__ import annotations


def run_rename(src: str, out: str, *, maps: tuple[str, ...] = (), regexes: tuple[str, ...] = (),
               rules_file: str | None = None, add_prefix: str | None = None, strip_prefix: str | None = None,
               rename_full_names: bool = False, dry_run: bool = False, as_json: bool = False, force: bool = False,
               no_verify: bool = False, update_state: bool = False, link: bool = False,
               jobs: int | None = None, all_rows: bool = False, verbose: bool = False) -> int:
    """Write ``src`` again at ``out`` with its variables renamed; print the plan's problems and what was
    written (a dry run: the renamed tensors, every one with ``all_rows``); return the exit status (0 written
    or planned, 1 problems found)."""
    from formats.api import open_checkpoint
    from formats.ops.convert.plan import ConvertOptions
    from formats.ops.convert.rename import plan_rename
    from formats.ops.rules import build_rules

    from .converting import write_plan

    rules = build_rules(maps, regexes, rules_file, add_prefix=add_prefix, strip_prefix=strip_prefix)
    options = ConvertOptions(rules=rules, rename_full_names=rename_full_names)
    with open_checkpoint(src) as source:
        return write_plan(source, plan_rename(source, options), out, inputs=[src, source], dry_run=dry_run,
                          as_json=as_json, force=force, no_verify=no_verify, update_state=update_state, link=link,
                          jobs=jobs, changed_only=not all_rows, verbose=verbose)
