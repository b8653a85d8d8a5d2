"""``ckpt graph``: the object graph of a TF2 checkpoint as Graphviz dot or Mermaid text."""
from __future__ import annotations

import click

from ..completion import CHECKPOINT
from ..help import command


@command(short_help="Draw a TF2 checkpoint's object graph (dot, mermaid).")
@click.argument("path", type=CHECKPOINT)
@click.option("--format", "fmt", type=click.Choice(["dot", "mermaid"]), default="dot", show_default=True,
              help="Graphviz dot, or a Mermaid flowchart.")
@click.option("--json", "as_json", is_flag=True, help="Nodes and edges as JSON instead.")
def graph(path: str, fmt: str, as_json: bool) -> None:
    """Draw the objects that wrote a TF2 checkpoint and how they reference each other.

    The optimizer is red, variables blue, slot variables orange (dashed edges to
    their variable and optimizer), other objects black; edges are attribute names.
    Only object-based checkpoints have a graph (`ckpt ls --tree` works on any).

    \b
    Examples:
      ckpt graph run/tf_ckpts/ckpt-5 | dot -Tsvg > graph.svg
      ckpt graph run/tf_ckpts --format mermaid
    """
    from formats.api import open_checkpoint
    from formats.core.errors import UnsupportedError
    from formats.ops.inspect.graph_drawing import build_drawing

    with open_checkpoint(path) as ckpt:
        try:
            drawing = build_drawing(ckpt)
        except UnsupportedError as exc:
            exc.hint = "`ckpt ls --tree` shows any checkpoint as a tree"
            raise
    if as_json:
        from ..render.common import print_json

        print_json({"path": path, "nodes": [vars(n) for n in drawing.nodes],
                    "edges": [vars(e) for e in drawing.edges]})
        return
    click.echo(drawing.to_dot() if fmt == "dot" else drawing.to_mermaid(), nl=False)
