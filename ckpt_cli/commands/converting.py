"""What ``ckpt convert`` does, without click: the click command (:mod:`ckpt_cli.commands.convert`) and the
start-up fast path (:mod:`ckpt_cli.fast`) both call :func:`run_convert`."""
from __future__ import annotations

from formats.core.errors import ExitCode

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any


def run_convert(src: str, out: str, to: str, *, template: str | None = None, maps: tuple[str, ...] = (),
                regexes: tuple[str, ...] = (), rules_file: str | None = None, allow_missing: bool = False,
                drop_optimizer: bool = False, slot_names: str = "tf2", hparams: dict[str, float] | None = None, max_shard_size: int | None = None,
                dry_run: bool = False, as_json: bool = False, force: bool = False, no_verify: bool = False,
                update_state: bool = False, link: bool = False,
                jobs: int | None = None, verbose: bool = False) -> int:
    """Convert ``src`` to the ``to`` format at ``out``; print the plan's problems and what was written;
    return the exit status (0 written or planned, 1 problems found)."""
    from formats.api import open_checkpoint
    from formats.core.errors import UsageError
    from formats.ops.convert.plan import ConvertOptions
    from formats.ops.convert.targets import planner
    from formats.ops.rules import build_rules

    if drop_optimizer and to != "keras3-h5":
        raise UsageError("", "--drop-optimizer applies to --to keras3-h5 only (ckpt edit --drop-optimizer leaves "
                         "optimizer state out of other formats)")
    options = ConvertOptions(rules=build_rules(maps, regexes, rules_file), template=template,
                             allow_missing=allow_missing, slot_names=slot_names, max_shard_size=max_shard_size,
                             hparams=dict(hparams or {}), drop_optimizer=drop_optimizer)
    with open_checkpoint(src) as source:
        plan = planner(to)(source, options)
        return write_plan(source, plan, out, inputs=[src, source] + ([template] if template else []),
                          dry_run=dry_run, as_json=as_json, force=force, no_verify=no_verify,
                          update_state=update_state, link=link, jobs=jobs, verbose=verbose)


def write_plan(source: Any, plan: Any, out: str, *, inputs: list[Any], dry_run: bool, as_json: bool, force: bool,
               no_verify: bool, update_state: bool, link: bool, jobs: int | None, changed_only: bool = False,
               verbose: bool = False) -> int:
    """Write a conversion ``plan`` of ``source`` at ``out`` (with a progress bar), print the plan's problems and
    what was written (or its JSON), and return the exit status: 0 written or planned, 1 problems found.
    ``convert`` and ``rename`` both end here; ``changed_only``: a dry run's table shows only the tensors whose
    key changes; ``verbose``: the keys behind each problem."""
    from formats.ops.convert.plan import execute_plan

    from ..render.progress import progress_for

    with progress_for(source, "writing", total=0 if dry_run else None) as progress:
        result = execute_plan(plan, out, dry_run=dry_run, force=force, verify=not no_verify,
                              update_state=update_state, progress=progress, inputs=inputs, link=link, jobs=jobs)
    if as_json:
        from ..render.common import print_json

        print_json(result.to_json())
    else:
        from ..render.convert import render_conversion

        render_conversion(result, changed_only=changed_only, verbose=verbose)
    return int(ExitCode.OK if result.ok else ExitCode.PROBLEMS)
