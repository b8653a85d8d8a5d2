"""The object graph as a picture: Graphviz ``dot`` or Mermaid text (``ckpt graph``).

Colours follow TensorFlow's checkpoint guide: the optimizer red, variables blue,
slot variables orange (linked by dashed edges to their variable and optimizer),
other objects black. Every node of the graph is drawn, each child edge labelled
with its attribute name.
"""
from __future__ import annotations

from formats.core.errors import UnsupportedError
from formats.core.model import Role
from formats.core.object_keys import VARIABLE_VALUE
from formats.core.records import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from formats.core.model import Checkpoint

__all__ = ["DrawNode", "DrawEdge", "Drawing", "build_drawing", "COLORS"]

COLORS = {"optimizer": "red", "variable": "blue", "slot": "orange", "object": "black"}
_HEX = {"red": "#d62728", "blue": "#1f77b4", "orange": "#ff7f0e", "black": "#000000"}


@record(frozen=True)
class DrawNode:
    """A node: ``id`` (the graph's node id), ``label`` and ``kind`` (a key of :data:`COLORS`)."""

    id: int
    label: str
    kind: str


@record(frozen=True)
class DrawEdge:
    """An edge; ``dashed`` edges tie a slot variable to its variable and its optimizer."""

    src: int
    dst: int
    label: str = ""
    dashed: bool = False


@record
class Drawing:
    """Nodes and edges, ready to print as dot or Mermaid."""

    nodes: list[DrawNode] = field(default_factory=list)
    edges: list[DrawEdge] = field(default_factory=list)

    def to_dot(self) -> str:
        """Graphviz text: ``ckpt graph p | dot -Tsvg > graph.svg``."""
        lines = ["digraph checkpoint {", "  node [shape=box];"]
        for n in self.nodes:
            color = COLORS[n.kind]
            lines.append(f'  n{n.id} [label="{_dot_escape(n.label)}", color={color}, fontcolor={color}];')
        for e in self.edges:
            attrs = [f'label="{_dot_escape(e.label)}"'] if e.label else []
            if e.dashed:
                attrs += ["style=dashed", f"color={COLORS['slot']}"]
            suffix = f" [{', '.join(attrs)}]" if attrs else ""
            lines.append(f"  n{e.src} -> n{e.dst}{suffix};")
        lines.append("}")
        return "\n".join(lines) + "\n"

    def to_mermaid(self) -> str:
        """Mermaid flowchart text (paste into a Markdown ```mermaid block)."""
        lines = ["flowchart TD"]
        lines += [f'  n{n.id}["{_mermaid_escape(n.label)}"]' for n in self.nodes]
        dashed = []
        for i, e in enumerate(self.edges):
            arrow = "-.->" if e.dashed else "-->"
            label = f'|"{_mermaid_escape(e.label)}"|' if e.label else ""
            lines.append(f"  n{e.src} {arrow}{label} n{e.dst}")
            if e.dashed:
                dashed.append(str(i))
        for kind, color in COLORS.items():
            members = [f"n{n.id}" for n in self.nodes if n.kind == kind]
            if members and kind != "object":
                lines.append(f"  classDef {kind} stroke:{_HEX[color]},color:{_HEX[color]}")
                lines.append(f"  class {','.join(members)} {kind}")
        if dashed:
            lines.append(f"  linkStyle {','.join(dashed)} stroke:{_HEX['orange']}")
        return "\n".join(lines) + "\n"


def _dot_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _mermaid_escape(text: str) -> str:
    return text.replace("&", "#amp;").replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;")


def build_drawing(ckpt: Checkpoint) -> Drawing:
    """The drawing of ``ckpt``'s object graph; UnsupportedError for a checkpoint without one."""
    graph = ckpt.object_graph
    if graph is None:
        raise UnsupportedError(ckpt.path, f"a {ckpt.format} checkpoint has no object graph to draw",
                               hint="formats.ops.inspect.tree.build_tree shows any checkpoint as a tree")
    mapping = graph.map_keys(list(ckpt))
    kinds: dict[int, str] = {}
    slot_links: list[DrawEdge] = []
    for key, (node_id, attr) in mapping.items():
        entry = ckpt[key]
        if entry.role == Role.SLOT:
            kinds[node_id] = "slot"
            var = mapping.get(entry.slot_of or "")
            if var is not None:
                slot_links.append(DrawEdge(var[0], node_id, "", True))
        elif attr.name == VARIABLE_VALUE:
            kinds.setdefault(node_id, "variable")
    drawing = Drawing()
    for node in graph.nodes:
        kind = "optimizer" if graph.is_optimizer(node.id) else kinds.get(node.id, "object")
        drawing.nodes.append(DrawNode(node.id, graph.local_name(node.id), kind))
    for node in graph.nodes:
        drawing.edges += [DrawEdge(node.id, c.node_id, c.local_name) for c in node.children]
        drawing.edges += [DrawEdge(node.id, s.slot_variable_node_id, s.slot_name, True) for s in node.slot_variables]
    drawing.edges += sorted(slot_links, key=lambda e: (e.dst, e.src))
    return drawing
