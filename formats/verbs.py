"""ckpt's verbs as library calls: what each command does, returning a result object instead of printing.

Every verb takes checkpoints as paths (opened and closed here) or as opened :class:`~formats.core.model.Checkpoint`
objects (left open: the caller that opened one, for example to size a progress bar, closes it), and reports
progress through an optional callback ``progress(bytes_done, items_done)``. The command line maps its
arguments to these calls and renders what they return (``ckpt_cli``); nothing here prints.

    import formats
    report = formats.verify("run/tf_ckpts/ckpt-5")
    result = formats.convert("model.ckpt-200", "tf2/ckpt-1", "tf-object", rules=["dnn/=dense/"])
    assert result.ok, result.plan.problems
"""
from __future__ import annotations

from formats.core.gc_pause import paused_gc
from formats.core.model import Checkpoint

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    import os
    from collections.abc import Callable, Sequence
    from typing import Any

    from formats.core.executors import Executor
    from formats.core.roundtrip import RoundTripReport
    from formats.ops.compare.diff import DiffResult
    from formats.ops.compare.verify import VerifyReport
    from formats.ops.convert.plan import ConversionResult
    from formats.ops.inspect.stats import CheckpointStats
    from formats.ops.report.result import Report
    from formats.ops.rules import RuleSet

    Source = str | os.PathLike[str] | Checkpoint
    Progress = Callable[[int, int], None]

__all__ = ["verify", "verify_against", "diff", "stats", "report", "extract", "convert", "rename", "edit", "average"]


class _Opened:
    """``with _Opened(x) as ckpt``: ``x`` itself when it is an opened checkpoint, else ``x`` opened (and closed
    on the way out)."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.opened: Checkpoint | None = None

    def __enter__(self) -> Checkpoint:
        if isinstance(self.source, Checkpoint):
            return self.source
        from formats.discover.resolve import open_checkpoint

        self.opened = open_checkpoint(self.source)
        return self.opened

    def __exit__(self, *exc: object) -> None:
        if self.opened is not None:
            self.opened.close()


def _rules(rules: RuleSet | Sequence[str] | None) -> RuleSet | None:
    """A rule set from ``OLD=NEW`` prefix rules (as ``--map`` takes them), or the rule set given."""
    if rules is None or not isinstance(rules, (list, tuple)):
        return rules  # type: ignore[return-value]
    from formats.ops.rules import build_rules

    return build_rules(tuple(rules), (), None) or None


def verify(source: Source, *, jobs: int | None = None, progress: Progress | None = None,
           allow_loader_refusals: bool = False, executor: str | Executor | None = None) -> VerifyReport:
    """Read every tensor and check every checksum and data file (``ckpt verify``): the report (``report.ok``;
    ``report.problems`` and ``report.loader_refusals`` say what is wrong). ``jobs``: threads (None: every core);
    ``executor``: where the work runs (``"local"``, ``"dask://HOST:PORT"``; None: ``$CKPT_EXECUTOR``, else local)."""
    from formats.ops.compare.verify import verify_checkpoint

    with _Opened(source) as ckpt:
        return verify_checkpoint(ckpt, progress, jobs, allow_loader_refusals=allow_loader_refusals, executor=executor)


def verify_against(output: Source, source: Source, *, match: str = "key", rules: RuleSet | Sequence[str] | None = None,
                   progress: Progress | None = None) -> RoundTripReport:
    """Whether ``output`` holds exactly the tensors of ``source`` (``ckpt verify --against``): keys (or, with
    ``match="name"``, variable names, with ``match="path"`` object paths; ``source``'s renamed by ``rules``),
    shapes, dtypes and values. The report's ``notes`` name what the pairing left aside (names two keys share,
    rules that matched nothing)."""
    from formats.ops.compare.against import verify_against as compare

    with _Opened(output) as out, _Opened(source) as src:
        report, notes = compare(out, src, match=match, rules=_rules(rules), progress=progress)
    report.notes = notes
    return report


def diff(a: Source, b: Source, *, match: str = "key", rules: RuleSet | Sequence[str] | None = None,
         patterns: Sequence[str] = (), strip_prefix_a: str | None = None, strip_prefix_b: str | None = None,
         atol: float | None = None, rtol: float | None = None, equal_nan: bool = False, keys_only: bool = False,
         jobs: int | None = None, progress: Progress | None = None, executor: str | Executor | None = None,
         first_difference: bool = False) -> DiffResult:
    """What differs between ``a`` and ``b`` (``ckpt diff``): keys only in one, shape and dtype changes, value
    changes (exact, or within ``atol``/``rtol`` as numpy's allclose), tensors paired by ``match`` (``"key"``,
    ``"name"``, ``"path"`` or ``"converted"``: :func:`formats.ops.compare.diff.diff_checkpoints`).
    ``result.equal`` when nothing differs. ``executor`` as for :func:`verify`. ``first_difference``: stop at the first difference, reading nothing
    after it (``ckpt diff -q``; ``result.complete`` is then False)."""
    from formats.ops.compare.diff import Tolerance, diff_checkpoints

    with _Opened(a) as ca, _Opened(b) as cb:
        return diff_checkpoints(ca, cb, match=match, rules=_rules(rules), strip_prefix_a=strip_prefix_a,
                                strip_prefix_b=strip_prefix_b, tolerance=Tolerance.of(atol, rtol, equal_nan),
                                keys_only=keys_only, progress=progress, patterns=patterns, jobs=jobs,
                                executor=executor, first_difference=first_difference)


def stats(source: Source, patterns: Sequence[str] = (), *, jobs: int | None = None,
          progress: Progress | None = None, histograms: Sequence[str] = (), bins: int = 32,
          executor: str | Executor | None = None) -> CheckpointStats:
    """min, max, mean, std, L2 norm, zeros, NaN and Inf counts of the tensors matching ``patterns`` (all when
    empty; ``ckpt stats``), and with ``histograms`` (``"linear"``, ``"log"``) each tensor's histograms of
    ``bins`` bins (:mod:`formats.ops.inspect.histogram`); ``executor`` as for :func:`verify`."""
    from formats.ops.inspect.stats import checkpoint_stats

    with _Opened(source) as ckpt:
        return checkpoint_stats(ckpt, patterns, progress=progress, jobs=jobs, histograms=histograms, bins=bins,
                                executor=executor)


def report(*sources: Source, kind: str | None = None, patterns: Sequence[str] = (), bins: int = 48,
           log_bins: bool = False, jobs: int | None = None, progress: Progress | None = None,
           executor: str | Executor | None = None, page: str = "auto") -> Report:
    """A report of one checkpoint, a pair (the diff) or a run directory (``ckpt report``): the data as
    ``report.to_json()``, the self-contained page as ``report.to_html()`` (Jupyter shows it). ``kind`` is found
    from ``sources`` when None (``checkpoint``, ``diff`` or ``run``); ``bins``: histogram bins per tensor;
    ``log_bins``: also each tensor's histogram of log10 |x| (about as much work again); ``executor`` as for
    :func:`verify` (a checkpoint's or a pair's tensors are read in units there); ``page``: ``full`` (a section per
    tensor), ``summary`` (a page of bounded size, :mod:`formats.ops.report.summary`) or ``auto`` (summary past
    1,000 tensors at 48 bins)."""
    from formats.ops.report.build import build_report

    scales = ("linear", "log") if log_bins else ("linear",)
    return build_report(list(sources), kind=kind, bins=bins, scales=scales, patterns=patterns, jobs=jobs,
                        progress=progress, executor=executor, page=page)


def extract(source: Source, patterns: Sequence[str], output: str | os.PathLike[str], *, mode: str = "auto",
            by: str = "auto", include_graph: bool = False, force: bool = False, allow_pickle: bool = False,
            progress: Progress | None = None) -> Any:
    """Write the tensors matching ``patterns`` to ``output`` as .npy, .npz or a directory of .npy files (``ckpt
    extract``): the :class:`~formats.io.writing.WriteReport` of what was written and read back."""
    from formats.ops.inspect.extract import extract as write

    with _Opened(source) as ckpt:
        return write(ckpt, patterns, output, mode, force, allow_pickle, progress, by=by, include_graph=include_graph)


def convert(source: Source, output: str | os.PathLike[str], to: str, *, template: str | None = None,
            rules: RuleSet | Sequence[str] | None = None, allow_missing: bool = False, drop_optimizer: bool = False,
            slot_names: str = "tf2", hparams: dict[str, float] | None = None, max_shard_size: int | None = None,
            dry_run: bool = False, force: bool = False, verify: bool = True, update_state: bool = False,
            link: bool = False, jobs: int | None = None, progress: Progress | None = None, family: str | None = None,
            model_config: str | None = None, model_map: str | None = None,
            executor: str | Executor | None = None, hf_task: str | None = None,
            skip_unreadable: bool = False) -> ConversionResult:
    """``source`` written as format ``to`` at ``output`` (``ckpt convert``): every problem is planned first, and
    nothing is written when there is one (``result.ok`` is False, ``result.plan.problems`` says why) or with
    ``dry_run``; the output is read back and compared unless ``verify=False``.

    ``to="hf"``: a transformers model directory (``config.json``, ``model.safetensors``) from a TensorFlow
    checkpoint of a model ``family`` (``bert``, ``albert``, ``electra``, ``gpt2``, ``t5``; detected when None),
    its original configuration found beside it or given as ``model_config``; ``model_map`` is a user's map
    file instead of a shipped family (also for ``to="safetensors"``); ``hf_task`` names the fine-tuning task whose
    hyperparameters the checkpoint lacks (TAPAS's ``wtq``, ``wikisql-supervised``, ``sqa``, ``tabfact``).
    ``to="tf-name"`` with ``family`` goes back: a transformers directory as the original TensorFlow names.
    A tensor ckpt cannot read (:attr:`Checkpoint.problems`) is an error, or left out with ``skip_unreadable``.

    ``executor`` (``dask://HOST:PORT``, an executor; None: ``$CKPT_EXECUTOR``, else this machine): a cluster
    writes a bundle output's data files on its workers (see :mod:`formats.ops.edit.on_cluster`)."""
    from formats.core.errors import UsageError
    from formats.ops.convert.plan import ConvertOptions
    from formats.ops.rules import RuleSet

    if drop_optimizer and to != "keras3-h5":
        raise UsageError("", "drop_optimizer applies to to='keras3-h5' only (formats.edit(..., drop_optimizer=True) "
                         "leaves optimizer state out of other formats)")
    options = ConvertOptions(rules=_rules(rules) or RuleSet(), template=template, allow_missing=allow_missing,
                             slot_names=slot_names, max_shard_size=max_shard_size, hparams=dict(hparams or {}),
                             drop_optimizer=drop_optimizer, family=family, model_config=model_config,
                             model_map=model_map, hf_task=hf_task, skip_unreadable=skip_unreadable, dry_run=dry_run)
    from formats.ops.convert.targets import ConvertJob, plan_job

    with _Opened(source) as ckpt, paused_gc():  # (planned and written: objects per tensor, none in a cycle)
        plan = plan_job([ckpt], ConvertJob(options, to))
        return _write(plan, output, ckpt, (options, to), [source] + ([template] if template else []),
                      dry_run=dry_run, force=force, verify=verify, update_state=update_state, link=link, jobs=jobs,
                      progress=progress, executor=executor)


def rename(source: Source, output: str | os.PathLike[str], rules: RuleSet | Sequence[str], *,
           rename_full_names: bool = False, dry_run: bool = False, force: bool = False, verify: bool = True,
           update_state: bool = False, link: bool = False, jobs: int | None = None,
           progress: Progress | None = None, executor: str | Executor | None = None,
           skip_unreadable: bool = False) -> ConversionResult:
    """``source`` written again at ``output`` with its variables renamed by ``rules`` (``ckpt rename``); an
    object-based checkpoint's graph is rebuilt to match. Planned, written and verified as :func:`convert`
    (``executor`` and ``skip_unreadable`` too)."""
    from formats.ops.convert.plan import ConvertOptions
    from formats.ops.convert.targets import ConvertJob, plan_job
    from formats.ops.rules import RuleSet

    options = ConvertOptions(rules=_rules(rules) or RuleSet(), rename_full_names=rename_full_names,
                             skip_unreadable=skip_unreadable)
    with _Opened(source) as ckpt:
        return _write(plan_job([ckpt], ConvertJob(options, "")), output, ckpt, (options, ""), [source], dry_run=dry_run,
                      force=force, verify=verify, update_state=update_state, link=link, jobs=jobs, progress=progress,
                      executor=executor)


def _write(plan: Any, output: str | os.PathLike[str], ckpt: Checkpoint, job: tuple[Any, str], inputs: list[Any], *,
           executor: str | Executor | None = None, **how: Any) -> ConversionResult:
    """Write ``plan`` of ``ckpt`` here, or on the cluster ``executor`` names, where ``job`` - (options, target;
    "" for a rename) - plans it again."""
    local = bool(how.get("dry_run"))  # (a dry run plans here: its executor is not looked up, nor its module imported)
    if not local:
        from formats.core.executors import is_local

        local = is_local(executor)
    if local:
        from formats.ops.convert.plan import execute_plan

        return execute_plan(plan, str(output), inputs=[*inputs, ckpt], **how)
    from formats.ops.convert.targets import ConvertJob, plan_job
    from formats.ops.edit.on_cluster import execute_plan_on

    return execute_plan_on(executor, plan, plan_job, [ckpt], _portable(ConvertJob(*job)), str(output),
                           inputs=[*inputs, ckpt], **how)


def _portable(job: Any) -> Any:
    """``job`` with the files its options name (a template, a model configuration or map) as absolute paths:
    a worker has a working directory of its own."""
    import os

    from formats.core.records import replace
    from formats.io import storage

    fixed = {name: os.path.abspath(value) for name in ("template", "model_config", "model_map")
             if isinstance(value := getattr(job.options, name), str) and not storage.is_url(value)}
    return job._replace(options=replace(job.options, **fixed)) if fixed else job


def edit(source: Source, output: str | os.PathLike[str], **options: Any) -> Any:
    """``source`` written again edited (``ckpt edit``): see :func:`formats.ops.edit.edit`."""
    from formats.ops.edit import edit as run

    return run(source, output, **options)  # type: ignore[arg-type]


def average(sources: Sequence[str | os.PathLike[str]], output: str | os.PathLike[str], **options: Any) -> Any:
    """The mean of ``sources``' weights as one checkpoint (``ckpt average``): see :func:`formats.ops.edit.average`."""
    from formats.ops.edit import average as run

    return run(sources, output, **options)

