"""Conversions between Keras and TensorFlow formats: Keras 2 ``.h5``, Keras 3 ``.weights.h5``,
Keras TF-format bundles, and exports to ``.npz`` and ``.safetensors``.

Each ``plan_*`` function takes ``(source Checkpoint, ConvertOptions)`` and returns a
:class:`~formats.ops.convert.plan.ConversionPlan` whose ``writer`` writes the target format; run it
with :func:`~formats.ops.convert.plan.execute_plan` (or :func:`convert_file`).
"""
from __future__ import annotations

import os

from formats.core.model import FormatName
from formats.ops.convert.targets import planner

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    PLANNERS: dict[str, Callable[..., Any]]
    """``--to`` name -> planning function, for the targets this package provides (every registered target
    but the bundles': Keras, npz, safetensors and plugin formats' exports); built when first asked."""
    from formats.ops.convert.cross.export import plan_npz, plan_safetensors
    from formats.ops.convert.cross.keras_targets import plan_keras2_h5, plan_keras3_h5

BUNDLE_LAYOUTS = (FormatName.TF_OBJECT.value, FormatName.TF_NAME.value)

__all__ = ["plan_keras2_h5", "plan_keras3_h5", "plan_npz", "plan_safetensors", "PLANNERS", "convert_file"]

_LAZY = {"plan_npz": "export", "plan_safetensors": "export", "plan_keras2_h5": "keras_targets",
         "plan_keras3_h5": "keras_targets"}
"""Names this package offers -> the submodule defining them, imported when first asked: importing one submodule
(``cross.export`` for ``--to safetensors``) imports this package first, and must not load every other target's
planner (Keras, transformers) with it (issue 38: start-up)."""


def __getattr__(name: str) -> object:
    """:data:`PLANNERS` and the ``plan_*`` functions, imported when first asked."""
    if name == "PLANNERS":
        from formats.ops.convert.targets import targets

        return {target: planner(target) for target in targets() if target not in BUNDLE_LAYOUTS}
    if name in _LAZY:
        module = f"{__name__}.{_LAZY[name]}"
        __import__(module)
        import sys

        return getattr(sys.modules[module], name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def convert_file(src: str | os.PathLike[str], output: str | os.PathLike[str], to: str, *,
                 template: str | None = None, rules: Any = None, allow_missing: bool = False,
                 dry_run: bool = False, force: bool = False, verify: bool = True,
                 max_shard_size: int | None = None, drop_optimizer: bool = False, skip_unreadable: bool = False) -> Any:
    """Convert ``src`` to ``output`` in format ``to`` (a :data:`PLANNERS` key, or any export target); returns the
    :class:`~formats.ops.convert.plan.ConversionResult` (nothing is written when the plan has errors).
    ``max_shard_size`` (bytes) makes ``keras3-h5`` output sharded weights (``output`` a ``*.weights.json``);
    ``drop_optimizer`` leaves optimizer state out of ``keras3-h5`` output; an ``output`` named ``*.keras``
    is a whole Keras 3 model (the template's or source's ``config.json`` carried over); ``skip_unreadable`` writes the
    rest without the tensors ckpt cannot read (else each is an error)."""
    from formats.discover.resolve import open_checkpoint
    from formats.ops.convert.plan import ConvertOptions, execute_plan
    from formats.ops.convert.targets import ConvertJob, plan_job
    from formats.ops.rules import RuleSet

    options = ConvertOptions(rules=rules or RuleSet(), template=template, allow_missing=allow_missing,
                             max_shard_size=max_shard_size, drop_optimizer=drop_optimizer,
                             skip_unreadable=skip_unreadable, dry_run=dry_run)
    with open_checkpoint(os.fspath(src)) as source:
        plan = plan_job([source], ConvertJob(options, to))
        inputs: list[Any] = [os.fspath(src), source] + ([template] if template else [])
        return execute_plan(plan, os.fspath(output), dry_run=dry_run, force=force, verify=verify, inputs=inputs)
