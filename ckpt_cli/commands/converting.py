"""What ``ckpt convert`` does, without click: the click command (:mod:`ckpt_cli.commands.convert`) and the
start-up fast path (:mod:`ckpt_cli.fast`) both call :func:`run_convert`."""
from __future__ import annotations

from formats.core.errors import ExitCode


def run_convert(src: str, out: str, to: str, *, template: str | None = None, maps: tuple[str, ...] = (),
                regexes: tuple[str, ...] = (), rules_file: str | None = None, allow_missing: bool = False,
                slot_names: str = "tf2", hparams: dict[str, float] | None = None, max_shard_size: int | None = None,
                dry_run: bool = False, as_json: bool = False, force: bool = False, no_verify: bool = False,
                update_state: bool = False, link: bool = False,
                jobs: int | None = None) -> int:
    """Convert ``src`` to the ``to`` format at ``out``; print the plan's problems and what was written;
    return the exit status (0 written or planned, 1 problems found)."""
    from formats.api import open_checkpoint
    from formats.ops.convert.plan import ConvertOptions, execute_plan
    from formats.ops.convert.targets import planner
    from formats.ops.rules import build_rules

    from ..render.progress import progress_for

    options = ConvertOptions(rules=build_rules(maps, regexes, rules_file), template=template,
                             allow_missing=allow_missing, slot_names=slot_names, max_shard_size=max_shard_size,
                             hparams=dict(hparams or {}))
    with open_checkpoint(src) as source:
        plan = planner(to)(source, options)
        with progress_for(source, "writing", total=0 if dry_run else None) as progress:
            result = execute_plan(plan, out, dry_run=dry_run, force=force, verify=not no_verify,
                                  update_state=update_state, progress=progress,
                                  inputs=[src, source] + ([template] if template else []), link=link,
                                  jobs=jobs)
    if as_json:
        from ..render.common import print_json

        print_json(result.to_json())
    else:
        from ..render.convert import render_conversion

        render_conversion(result)
    return int(ExitCode.OK if result.ok else ExitCode.PROBLEMS)
