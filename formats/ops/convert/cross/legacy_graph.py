"""Where a translated model's variables live in Keras 3, and in which order Keras 2 listed them.

Keras 3 saves a model's variables under object paths (``saving_lib._save_state``): a Functional or Sequential
model's layers under ``layers/<key>``, the key being the snake_case class name made unique within the model
in the order of ``model.layers`` (``conv2d``, ``conv2d_1``...), a layer's sub-objects under their attribute
(``cell``, ``forward_layer``, ``query_dense``: :data:`~formats.concepts.keras_layers.SUB_OBJECTS`), each
object's own variables as ``vars/<i>`` in creation order (:data:`~formats.concepts.keras_layers.VARIABLES`).

A Functional model's ``layers`` are in the order Keras 3 computes when it rebuilds the model from its config
(``ops.function.map_graph``: operations by decreasing depth from the outputs, ties by first visit of a
depth-first walk from the outputs), which :func:`functional_order` repeats on the config's calls: it is not
the config's order (Keras 2 ordered them by its own walk).

Keras 2 lists a layer's weights as ``layer.weights``: its trainable weights, then the rest, each gathered from
the layer's own variables, then its sub-layers' in creation order (a nested model's BatchNormalization
statistics come after all its trainable weights; a frozen layer's weights with the non-trainable ones):
:func:`keras2_order`.

What ``functional_from_config`` would fail on, or loop for ever on, in a translated config (a call naming a node
or output that does not exist, calls in a cycle, no outputs) is :func:`graph_problems`'s.
"""
from __future__ import annotations

from formats.concepts.keras_layers import (CELLS, NON_TRAINABLE, SUB_OBJECT_CONFIGS, SUB_OBJECT_NAMES, SUB_OBJECTS,
                                           VARIABLES, has_variable, to_snake_case)
from formats.core.records import field, record
from formats.ops.convert.cross.legacy_model import KERAS_TENSOR, is_operation, is_reference

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Keras3Object", "model_objects", "functional_order", "keras2_order", "unique_keys", "node_inputs",
           "endpoints", "graph_problems"]


@record
class Keras3Object:
    """One object of a Keras 3 model: its object ``path`` (``""`` the model), ``name`` (the ``name`` attribute
    Keras 3 gives its ``vars`` group: a sub-object's is :data:`~formats.concepts.keras_layers.SUB_OBJECT_NAMES`'
    or its own config's; None when unknown), ``cls``, ``variables`` (its own, in creation order; None when ckpt
    does not know the class's),
    ``trainable``, ``children`` (sub-layers and sub-objects in Keras 2's creation order), ``layer``: the name of
    the layer it is or belongs to (a sub-object's is its layer's), which Keras 2 puts in its weights' names, and
    ``kept``: False for a layer Keras 3 leaves out of the model (not connected to its outputs); ``config``: its
    translated config."""

    path: str
    name: str | None
    cls: str
    variables: list[str] | None
    trainable: bool = True
    layer: str = ""
    children: list[Keras3Object] = field(default_factory=list)
    kept: bool = True
    config: dict[str, Any] = field(default_factory=dict, repr=False)

    def walk(self) -> list[Keras3Object]:
        """This object and every object below it, parents first."""
        out = [self]
        for child in self.children:
            out += child.walk()
        return out


def unique_keys(classes: list[str]) -> list[str]:
    """Keras 3's container keys: each class's snake_case name, numbered from its second use on."""
    used: dict[str, int] = {}
    keys = []
    for cls in classes:
        name = to_snake_case(cls)
        if name in used:
            used[name] += 1
            name = f"{name}_{used[name]}"
        else:
            used[name] = 0
        keys.append(name)
    return keys


def _join(path: str, part: str) -> str:
    return f"{path}/{part}" if path else part


def _config(obj: dict[str, Any]) -> dict[str, Any]:
    config = obj.get("config")
    return config if isinstance(config, dict) else {}


def model_objects(obj: dict[str, Any], path: str = "", name: str | None = None, layer: str = "") -> Keras3Object:
    """The object tree of a translated (Keras 3) serialized layer or model at ``path``."""
    cls = str(obj.get("class_name"))
    config = _config(obj)
    own = config.get("name") if name is None and isinstance(config.get("name"), str) else name
    node = Keras3Object(path, own, cls, None, bool(config.get("trainable", True)), layer or str(own or ""),
                        config=config)
    if cls in ("Functional", "Sequential"):
        node.variables = []
        node.children = _model_children(cls, config, path)
        return node
    table = VARIABLES.get(cls)
    node.variables = [v for v, flag in table if has_variable(flag, config)] if table is not None else None
    for attr, sub_cls in SUB_OBJECTS.get(cls, {}).items():
        sub = _sub_object(cls, attr, sub_cls, obj)
        if sub is not None:
            child = model_objects(sub, _join(path, attr), None, node.layer)
            child.name = SUB_OBJECT_NAMES.get(cls, {}).get(attr, child.name)
            child.trainable = child.trainable and node.trainable
            node.children.append(child)
    if node.variables is None and node.children:
        node.variables = []
    return node


def _sub_object(cls: str, attr: str, sub_cls: str | None, obj: dict[str, Any]) -> dict[str, Any] | None:
    """The serialized config of sub-object ``attr`` of a layer ``obj`` of class ``cls`` (None when absent)."""
    config = _config(obj)
    how = SUB_OBJECT_CONFIGS.get(cls, {}).get(attr)
    if isinstance(how, tuple):
        found = next((config[k] for k in how if isinstance(config.get(k), dict)), None)
        return found if found is None or sub_cls is None else {**found, "class_name": sub_cls}
    if isinstance(how, dict):
        return {"class_name": sub_cls, "config": {flag: config.get(source) for flag, source in how.items()}}
    if cls in CELLS:  # a recurrent layer keeps its cell's arguments
        return {"class_name": sub_cls, "config": config}
    return None


def _model_children(cls: str, config: dict[str, Any], path: str) -> list[Keras3Object]:
    layers = [e for e in config.get("layers", []) if isinstance(e, dict)]
    if cls == "Sequential":
        layers = [e for e in layers if e.get("class_name") != "InputLayer"]
        ordered = layers
    else:  # Keras 3 orders operations and layers together; model.layers (and so the keys) holds the layers only
        layers = [e for e in layers if not is_operation(e)]
        ordered = [e for e in functional_order(config) if not is_operation(e)]
    keys = dict(zip((id(e) for e in ordered), unique_keys([str(e.get("class_name")) for e in ordered])))
    children = []
    for entry in layers:  # Keras 2's order; each at its Keras 3 key (None: Keras 3 leaves the layer out)
        key = keys.get(id(entry))
        child = model_objects(entry, _join(_join(path, "layers"), key or str(entry.get("name"))))
        if key is None:
            for lost in child.walk():
                lost.kept = False
        children.append(child)
    return children


# -- Keras 3's order of a Functional model's layers ------------------------------------------------------------
def _flatten(value: Any, scope: dict[str, Any]) -> list[tuple[str, int, int]]:
    """The tensors of a call's arguments in ``tree.flatten`` order (lists in order, dicts by sorted key)."""
    if isinstance(value, dict):
        if value.get("class_name") == KERAS_TENSOR:
            history = _config(value).get("keras_history")
            return [tuple(history[:3])] if is_reference(history, scope) else []  # type: ignore[index]
        return [t for k in sorted(value) for t in _flatten(value[k], scope)]
    if isinstance(value, list):
        return [t for v in value for t in _flatten(v, scope)]
    return []


def node_inputs(data: Any, scope: dict[str, Any]) -> list[tuple[str, int, int]]:
    """The tensor references ``(layer, node, tensor)`` of one call of a translated config (either form), naming
    layers of ``scope``."""
    if isinstance(data, dict):
        return _flatten([data.get("args"), data.get("kwargs")], scope)
    return [(d[0], d[1], d[2]) for d in data if is_reference(d, scope)] if isinstance(data, list) else []


def functional_order(config: dict[str, Any]) -> list[dict[str, Any]]:
    """The layers (config entries) of a translated Functional config in Keras 3's ``model.layers`` order."""
    entries = {str(e.get("name")): e for e in config.get("layers", []) if isinstance(e, dict)}
    nodes: dict[tuple[str, int], list[tuple[str, int, int]]] = {}
    for name, entry in entries.items():
        for i, data in enumerate(entry.get("inbound_nodes") or []):
            nodes[(name, i)] = node_inputs(data, entries)
        if entry.get("class_name") == "InputLayer":
            nodes[(name, 0)] = []
    outputs = [(n, i - 1 if entries[n].get("class_name") == "Functional" else i, t)  # get_tensor takes 1 off
               for n, i, t in endpoints(config.get("output_layers"), entries)]
    order, indices = _build_map(outputs, nodes)
    depths = _depths(order, nodes)
    for ref in endpoints(config.get("input_layers"), entries):
        if ref[0] not in depths:
            depths[ref[0]] = 0
            indices[ref[0]] = -1
    by_depth: dict[int, list[str]] = {}
    for name, depth in depths.items():
        by_depth.setdefault(depth, []).append(name)
    layers: list[str] = []
    for depth in sorted(by_depth, reverse=True):
        layers += sorted(by_depth[depth], key=lambda n: indices[n])
    return [entries[n] for n in layers]


def endpoints(value: Any, scope: dict[str, Any]) -> list[tuple[str, int, int]]:
    """The references of a model's ``input_layers`` or ``output_layers`` (bare, a list or a dict), naming layers of
    ``scope``."""
    if is_reference(value, scope):
        return [tuple(value[:3])]
    if isinstance(value, dict):
        return [t for k in sorted(value) for t in endpoints(value[k], scope)]
    return [t for v in value for t in endpoints(v, scope)] if isinstance(value, list) else []


def _build_map(outputs: list[Any], nodes: dict[tuple[str, int], list[tuple[str, int, int]]]
               ) -> tuple[list[tuple[str, int]], dict[str, int]]:
    """``ops.function._build_map``: nodes from inputs to outputs, and each layer's first-visit index."""
    finished: set[tuple[str, int]] = set()
    started: set[tuple[str, int]] = set()
    order: list[tuple[str, int]] = []
    indices: dict[str, int] = {}
    for output in outputs:
        stack: list[tuple[tuple[str, int], int]] = [((output[0], output[1]), 0)]
        while stack:  # depth first, as the recursion: a node is finished after all its inputs
            node, done = stack.pop()
            if done == 0:
                if node in finished or node in started:  # started: a cycle, which Keras refuses
                    continue
                started.add(node)
                indices.setdefault(node[0], len(indices))
            inputs = nodes.get(node, [])
            if done < len(inputs):
                stack.append((node, done + 1))
                child = (inputs[done][0], inputs[done][1])
                if child not in finished:
                    stack.append((child, 0))
                continue
            finished.add(node)
            order.append(node)
    return order, indices


def _depths(order: list[tuple[str, int]], nodes: dict[tuple[str, int], list[tuple[str, int, int]]]) -> dict[str, int]:
    """``ops.function.map_graph``'s depth of every layer (the deepest of its nodes)."""
    in_graph = set(order)
    node_depths: dict[tuple[str, int], int] = {}
    depths: dict[str, int] = {}
    for node in reversed(order):
        depth = max(node_depths.setdefault(node, 0), depths.get(node[0], 0))
        depths[node[0]] = node_depths[node] = depth
        for parent in nodes.get(node, []):
            key = (parent[0], parent[1])
            if key in in_graph:
                node_depths[key] = max(depth + 1, node_depths.get(key, 0))
    return depths


MULTI_OUTPUT = frozenset({"MultiHeadAttention", "GroupedQueryAttention", "Bidirectional", "RNN"})
"""Layers whose number of outputs depends on how they are called (attention scores, states)."""


# -- what Keras 3 refuses in a graph -----------------------------------------------------------------------------------
def graph_problems(config: dict[str, Any], where: str = "") -> list[str]:
    """What ``functional_from_config`` would fail on (or loop on) in a translated Functional ``config``, and in the
    Functional models nested in it; one sentence per problem, naming the layer."""
    entries = {str(e.get("name")): e for e in config.get("layers", []) if isinstance(e, dict)}
    out: list[str] = []
    for name, entry in entries.items():
        inner = f"{where}/{name}" if where else name
        if entry.get("class_name") == "Functional" and isinstance(entry.get("config"), dict):
            out += graph_problems(entry["config"], inner)
        for data in entry.get("inbound_nodes") or []:
            for ref in node_inputs(data, entries):
                out += _reference_problems(ref, entries, inner, endpoint=False)
    for key in ("input_layers", "output_layers"):
        found = endpoints(config.get(key), entries)
        if not found and key == "output_layers":
            out.append(f"model {where or config.get('name')!r}: it has no outputs, so Keras 3 would keep none of its "
                       "layers")
        for ref in found:
            out += _reference_problems(ref, entries, f"{where}/{key}" if where else key, endpoint=True)
    cycle = _cycle(entries)
    if cycle:
        out.append(f"layer {(f'{where}/' if where else '') + cycle[0]!r}: its input depends on its own output "
                   f"({' -> '.join(cycle)}), which Keras cannot build")
    return out


def _calls(entry: dict[str, Any]) -> int:
    """How many calls (nodes) Keras 3 makes of a layer when it replays the config: an input has its own."""
    if entry.get("class_name") == "InputLayer":
        return 1
    nodes = entry.get("inbound_nodes")
    return len(nodes) if isinstance(nodes, list) else 0


def _outputs(entry: dict[str, Any]) -> int | None:
    """How many tensors one call of a layer returns (None: it depends on the call)."""
    cls = entry.get("class_name")
    config = _config(entry)
    if cls == "Functional":
        return len(endpoints(config.get("output_layers"), {str(e.get("name")): e for e in config.get("layers", [])
                                                           if isinstance(e, dict)})) or None
    if cls in MULTI_OUTPUT or config.get("return_state") or is_operation(entry):
        return None
    return 1


def _reference_problems(ref: tuple[str, int, int], entries: dict[str, Any], where: str, endpoint: bool) -> list[str]:
    name, node, tensor = ref
    producer = entries[name]
    index = node - 1 if endpoint and producer.get("class_name") == "Functional" else node  # get_tensor's offset
    calls = _calls(producer)
    if not 0 <= index < calls:
        return [f"layer {where!r}: names call {node} of layer {name!r}, which has {calls} call(s)"]
    outputs = _outputs(producer)
    if tensor < 0 or outputs is not None and tensor >= outputs:
        return [f"layer {where!r}: names output {tensor} of layer {name!r}, which has {outputs} output(s)"]
    return []


def _cycle(entries: dict[str, Any]) -> list[str]:
    """The layers of a cycle of calls (a call that needs its own output), first layer repeated last; else []."""
    graph = {(name, i): [(r[0], r[1]) for r in node_inputs(data, entries)]
             for name, entry in entries.items() for i, data in enumerate(entry.get("inbound_nodes") or [])}
    state: dict[tuple[str, int], int] = {}  # 1: on the path, 2: done
    for start in graph:
        if state.get(start):
            continue
        path, stack = [start], [iter(graph[start])]
        state[start] = 1
        while stack:
            child = next(stack[-1], None)
            if child is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(child) == 1:
                at = path.index(child)
                return [n for n, _ in path[at:]] + [child[0]]
            elif child in graph and not state.get(child):
                state[child] = 1
                path.append(child)
                stack.append(iter(graph[child]))
    return []


# -- Keras 2's order of a layer's weights ---------------------------------------------------------------------
def keras2_order(obj: Keras3Object) -> list[tuple[Keras3Object, int]]:
    """Each weight Keras 2 listed for the layer ``obj`` (``layer.weights``), in Keras 2's order, as ``(object, index
    of its variable)``; an object whose variables ckpt does not know (``variables`` None) counts as having none."""
    trainable, rest = _parts(obj)
    return trainable + rest


def _parts(obj: Keras3Object) -> tuple[list[tuple[Keras3Object, int]], list[tuple[Keras3Object, int]]]:
    own = obj.variables or []
    own_t = [(obj, i) for i, v in enumerate(own) if v not in NON_TRAINABLE]
    own_n = [(obj, i) for i, v in enumerate(own) if v in NON_TRAINABLE]
    trainable, rest = (own_t, own_n) if obj.trainable else ([], own_t + own_n)
    for child in obj.children:
        parts = _parts(child)
        if obj.trainable:
            trainable, rest = trainable + parts[0], rest + parts[1]
        else:
            rest = rest + parts[0] + parts[1]
    return trainable, rest
