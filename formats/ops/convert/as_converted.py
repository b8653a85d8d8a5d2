"""How a conversion pairs a source's tensors with an output's: for checking a conversion (``ckpt diff SRC OUT
--match converted``).

The output of ``ckpt convert SRC --template T`` has the template's layout, so planning the same conversion
onto the output itself pairs every output tensor with the source tensor the conversion put there - weights,
optimizer slots and counters, by the same rules (the ``--map``/``--rules`` the conversion was given). A correct
conversion's pairs hold equal bytes; a wrong one's do not. Source tensors the conversion leaves out (the object
graph, state only one side holds) are named with the conversion's reason, not counted as differences; a model
variable of the source with no counterpart in the output is ``unplaced``: the conversion should have written it,
so it is a difference (an output that lost whole layers is not "identical").
"""
from __future__ import annotations

from formats.core.errors import UsageError
from formats.core.model import KERAS3_LAYOUTS, OBJECT_GRAPH_KEY, Checkpoint, FormatName, Role, TensorEntry
from formats.core.records import field, record
from formats.ops.convert.plan import ERROR, ConvertOptions
from formats.ops.convert.targets import PLANNERS, planner
from formats.ops.rules import RuleSet

__all__ = ["ConvertedPairs", "converted_pairs"]



@record
class ConvertedPairs:
    """``pairs``: output key -> the source key a conversion fills it from; ``left_out``: what the conversion
    leaves out of the source, one line per reason with the keys; ``problems``: why the conversion could not
    be planned onto this output (then some output keys have no pair); ``made``: output keys the conversion
    makes up or computes (an object graph, a transformed value), not compared; ``unplaced``: the source's model
    variables no output tensor is paired with (what the output lacks)."""

    pairs: dict[str, str] = field(default_factory=dict)
    left_out: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    made: list[str] = field(default_factory=list)
    unplaced: list[str] = field(default_factory=list)


_TEMPLATED = sorted(t for t in PLANNERS if t not in (FormatName.KERAS_MODEL.value, FormatName.HF.value))
"""The targets that write onto a template's layout (``keras`` writes a model from its own config, ``hf`` from a
model map)."""


def _target(output: Checkpoint) -> str:
    if output.format in _TEMPLATED:
        return str(output.format)
    if output.format in KERAS3_LAYOUTS:
        return FormatName.KERAS3_H5.value
    raise UsageError(output.path, f"pairing as a conversion pairs needs a conversion's output in a template's "
                     f"layout ({', '.join(_TEMPLATED)}); {output.format} is not one")


def converted_pairs(source: Checkpoint, output: Checkpoint, rules: RuleSet | None = None) -> ConvertedPairs:
    """Pair ``output``'s tensors with ``source``'s as converting ``source`` onto ``output`` as a template does
    (see the module doc)."""
    options = ConvertOptions(rules=rules or RuleSet(), template=output.path)
    found = ConvertedPairs()
    with planner(_target(output))(source, options) as plan:
        for row in plan.rows:
            if row.source is not None and not row.transform and isinstance(row.value, TensorEntry):
                found.pairs[row.key] = row.source
            else:
                found.made.append(row.key)
        placed = {row.source for row in plan.rows}
        found.unplaced = [k for k in source if k != OBJECT_GRAPH_KEY and k not in placed
                          and source[k].role == Role.VARIABLE]
        unplaced = set(found.unplaced)
        for problem in plan.problems:
            if problem.severity == ERROR:
                found.problems.append(f"{problem.kind}: {problem.key}: {problem.message}")
            elif problem.kind == "unused":
                keys = [k for k in problem.candidates or [problem.key] if k not in unplaced]
                if keys:
                    found.left_out.append(f"{problem.message}: {', '.join(keys)}")
    return found
