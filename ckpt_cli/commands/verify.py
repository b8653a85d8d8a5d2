"""``ckpt verify``: read everything, check every checksum and every data file's layout."""
from __future__ import annotations


from formats.core.errors import ExitCode

from ..kept import keep_until_exit
from ..options import executor_option, jobs_option, json_option, rule_options
from ..spec import CHECKPOINT, Arg, Command, CommandLineError, Opt

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

    from ..environment import Environment
    from ..spec import Params


def run(env: Environment, p: Params) -> int:
    """``ckpt verify``: verify each PATH, or compare PATH with ``--against`` SRC; the exit status."""
    if p.against is not None:
        if len(p.paths) != 1:
            raise CommandLineError("--against compares one checkpoint with SRC; give one PATH")
        if p.allow_loader_refusals:
            raise CommandLineError("--allow-loader-refusals is for verifying PATH itself: do not give it with --against")
        from formats.ops.rules import build_rules

        rules = build_rules(p.maps, p.regexes, p.rules_file)
        return _verify_against(env, p.paths[0], p.against, p.match, rules, p.as_json)
    if p.match != "key" or p.maps or p.regexes or p.rules_file:
        raise CommandLineError("--match, --map, --regex and --rules pair tensors with SRC: use them with --against")
    if p.executor is None:
        return run_verify(p.paths, p.as_json, p.jobs, p.allow_loader_refusals)
    from formats.core.executors import executor_for

    with executor_for(p.executor, p.jobs) as executor:
        return run_verify(p.paths, p.as_json, p.jobs, p.allow_loader_refusals, executor)


SPEC = Command(
    "verify", runner=run,
    short_help="Check every checksum and every data file of a checkpoint.",
    exit_status={0: "every checkpoint is sound (or the same as SRC)", 1: "problems or differences found (each listed)",
                 3: "a checkpoint cannot be opened at all (the others are still verified)"},
    help="""Read every tensor and check every checksum; check that data files are whole.

    Several PATHs (a shell glob such as run/ckpt-*) verify each checkpoint once.
    With --against SRC, check instead that PATH holds exactly the tensors of SRC
    (keys, shapes, dtypes and values, compared chunk by chunk), e.g. after a conversion:
    --match name pairs them by variable name (after a name-based -> object-based
    conversion the keys differ), and --map/--regex/--rules rename SRC's names as
    the conversion did; --match path pairs two object-based checkpoints by
    object path, as tf.train.Checkpoint.restore does (Keras 3 layers share full
    names), the rename options then renaming SRC's object paths.

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
      ckpt rename guide/tf_ckpts/ckpt-10 -o moved/ckpt-10 --map net=model
      ckpt verify moved/ckpt-10 --against guide/tf_ckpts/ckpt-10 --match path --map net=model
    """,
    arguments=(Arg("paths", nargs=-1, type=CHECKPOINT),),
    options=(
        Opt("--against", name="against", type=CHECKPOINT, metavar="SRC",
            help="Compare with another checkpoint instead: same keys, shapes, dtypes and values."),
        Opt("--match", type=("key", "name", "path"), default="key", show_default=True,
            help="With --against: pair tensors by checkpoint key, by TF1-style variable name (a "
                 "name-based SRC and its object-based conversion, a bundle and a Keras file), or by object "
                 "path (net/l1/_kernel: both object-based, where Keras 3 layers share full names)."),
        *rule_options("SRC's"),
        Opt("--allow-loader-refusals", flag=True,
            help="Report what the format's own loader refuses (TensorFlow, the safetensors library) "
                 "without failing on it."),
        json_option("Machine-readable report on stdout."),
        jobs_option(),
        executor_option(),
    ),
)


def _verify_against(env: Environment, path: str, against: str, match: str, rules: Any, as_json: bool) -> int:
    from formats import verbs
    from formats.api import open_checkpoint
    from formats.ops.compare.keying import match_name_hint, match_path_hint

    from ..boundary import cli_words

    from ..render.progress import progress_for

    with open_checkpoint(path) as out, open_checkpoint(against) as src:
        with progress_for(out, "comparing") as progress:
            report = verbs.verify_against(out, src, match=match, rules=rules or None, progress=progress)
        report.path, report.against = path, against  # as the command line named them
        hint = match_name_hint(out, src) if match == "key" and report.tensors == 0 and report.mismatches else None
        if match == "name":  # names several tensors share leave them unpaired, even when the rest is the same
            hint = match_path_hint(out, src)
    if hint:
        env.hint(cli_words(hint))
    for note in report.notes:
        env.warn(note)
    if as_json:
        from ..render.common import print_json

        print_json(report.to_json())
    else:
        from ..render.roundtrip import render_roundtrip

        render_roundtrip(report)
    return int(ExitCode.OK if report.ok else ExitCode.PROBLEMS)


def run_verify(paths: tuple[str, ...], as_json: bool, jobs: int | None, allow_loader_refusals: bool = False,
               executor: Any = None) -> int:
    """Verify each checkpoint once (on ``jobs`` threads; None: every core), print the reports, and return the
    exit status: the worst of every checkpoint's (what a format's own loader refuses counts as a problem unless
    ``allow_loader_refusals``). ``executor``: where the work runs (None: ``$CKPT_EXECUTOR``, else local threads)."""
    reports: list[Any] = []
    status = ExitCode.OK
    seen: set[tuple[str, str]] = set()
    for path in paths:
        report, code = _verify_one(path, seen, len(paths) > 1, jobs, allow_loader_refusals, executor)
        status = max(status, code)
        if report is not None:
            reports.append(report)
    _render(reports, as_json)
    return int(status)


def _verify_one(path: str, seen: set[tuple[str, str]], several: bool, jobs: int | None,
                allow_loader_refusals: bool, executor: Any = None) -> tuple[Any, ExitCode]:
    """The report of one checkpoint (None when ``seen`` already holds it: ``ckpt-1.index`` and
    ``ckpt-1.data-*`` are one); with ``several``, one that cannot be opened is an error line, not the end."""
    from formats.api import open_target
    from formats.core.errors import CheckpointError
    from formats.discover.resolve import identity, resolve
    from formats import verbs

    from ..render.progress import progress_for

    try:
        target = resolve(path)
        if (target.format, identity(target.path)) in seen:
            return None, ExitCode.OK
        seen.add((target.format, identity(target.path)))
        with open_target(target) as ckpt, progress_for(ckpt, "verifying") as progress:
            report = verbs.verify(ckpt, jobs=jobs, progress=progress, allow_loader_refusals=allow_loader_refusals,
                                  executor=executor)
            keep_until_exit(report)  # (it lives until the end)
    except CheckpointError as exc:
        if not several:
            raise
        from ..environment import current

        current().error(str(exc))
        return None, exc.exit_code
    return report, ExitCode.OK if report.ok else ExitCode.PROBLEMS


def _render(reports: list[Any], as_json: bool) -> None:
    if as_json:
        from ..render.common import print_json

        docs = [r.to_json() for r in reports]
        print_json(docs[0] if len(docs) == 1 else docs)
        return
    from ..render.reports import render_verify

    for report in reports:
        render_verify(report)
