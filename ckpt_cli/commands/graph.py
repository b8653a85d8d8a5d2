"""``ckpt graph``: the object graph of a TF2 checkpoint as Graphviz dot or Mermaid text."""
from __future__ import annotations

from ..options import json_option
from ..spec import CHECKPOINT, Arg, Command, Opt

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from ..environment import Environment
    from ..spec import Params


def run(env: Environment, p: Params) -> int:
    """``ckpt graph PATH``: print the drawing; the exit status."""
    import sys

    from formats.api import open_checkpoint
    from formats.core.errors import UnsupportedError
    from formats.ops.inspect.graph_drawing import build_drawing

    with open_checkpoint(p.path) as ckpt:
        try:
            drawing = build_drawing(ckpt)
        except UnsupportedError as exc:
            exc.hint = "`ckpt ls --tree` shows any checkpoint as a tree"
            raise
    if p.as_json:
        from ..render.common import print_json

        print_json({"path": p.path, "nodes": [vars(n) for n in drawing.nodes],
                    "edges": [vars(e) for e in drawing.edges]})
        return 0
    sys.stdout.write(drawing.to_dot() if p.fmt == "dot" else drawing.to_mermaid())
    return 0


SPEC = Command(
    "graph", runner=run,
    short_help="Draw a TF2 checkpoint's object graph (dot, mermaid).",
    help="""Draw the objects that wrote a TF2 checkpoint and how they reference each other.

    The optimizer is red, variables blue, slot variables orange (dashed edges to
    their variable and optimizer), other objects black; edges are attribute names.
    Only object-based checkpoints have a graph (`ckpt ls --tree` works on any).

    \b
    Examples:
      ckpt graph run/tf_ckpts/ckpt-5 | dot -Tsvg > graph.svg
      ckpt graph run/tf_ckpts --format mermaid
    """,
    arguments=(Arg("path", type=CHECKPOINT),),
    options=(
        Opt("--format", name="fmt", type=("dot", "mermaid"), default="dot", show_default=True,
            help="Graphviz dot, or a Mermaid flowchart."),
        json_option("Nodes and edges as JSON instead."),
    ),
)
