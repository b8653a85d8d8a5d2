"""``ckpt rename``: rename keys (name-based) or objects (object-based), rebuilding the object graph.

Name-based checkpoints: the rules rewrite every key. Object-based checkpoints: the rules rewrite
object paths (the key without ``/.ATTRIBUTES/...``), edge by edge. Every edge of the graph has a
path (its parent's path plus its escaped local name; aliases included). When a rule rewrites an
edge's path to ``P``, the edge's child is attached, under the last segment of ``P``, to the
object whose new path is the rest of ``P`` (objects that do not exist yet are created, empty):
``--map net/l1=net/dense`` renames the edge ``l1``; ``--map net/l1=model/dense`` moves ``l1`` to a
new parent ``model``. Edges no rule rewrites stay where they are and follow their parent. Keys
and ``checkpoint_key``s follow the new paths, slot variable keys
(``<var>/.OPTIMIZER_SLOT/<optimizer>/<slot>``) follow their variable and optimizer, and with
``rename_full_names`` the rules rewrite ``full_name``s too. Collisions (two objects or keys to
one name), rules that match nothing and renames that would break the graph are reported
before anything is written.
"""
from __future__ import annotations

from formats.core.gc_pause import gc_paused
from formats.core.model import Checkpoint, FormatName, is_object_based
from formats.core.natural import ascending
from formats.ops.convert.plan import ConversionPlan, ConvertOptions

__all__ = ["plan_rename"]


@gc_paused
def plan_rename(source: Checkpoint, options: ConvertOptions) -> ConversionPlan:
    """Plan renaming ``source``'s keys (name-based) or objects (object-based) with ``options.rules``."""
    fmt = (FormatName.TF_OBJECT if is_object_based(source) else FormatName.TF_NAME).value
    plan = ConversionPlan(source.path, fmt)
    if not options.rules:
        plan.add("unsupported", source.path, "no rename rules given (--map, --regex, --rules, --add-prefix, "
                 "--strip-prefix)")
        return plan
    if fmt == FormatName.TF_OBJECT and source.object_graph is not None:
        from formats.ops.convert.rename_objects import ObjectRename

        ObjectRename(source, options, plan).run()
    else:
        apply = options.rules.apply
        ordered = ascending(list(source))  # (a bundle's keys are, in index order: no list of pairs then)
        for key, entry in source.items() if ordered else sorted(source.items(), key=_first):
            new = apply(key)
            plan.add_row(key, new, entry, entry.shape, entry.dtype, "" if new != key else "unchanged")
    plan.check_collisions()
    plan.report_unused_rules(options.rules)
    return plan


def _first(pair: tuple[str, object]) -> str:
    return pair[0]
