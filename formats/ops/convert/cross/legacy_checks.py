"""What Keras 3 refuses in a translated model, checked before anything is written (``--to keras``).

A ``model_config`` is input like any other: a file can hold a config Keras cannot build, and an archive written
from it would "verify" (its weights read back) yet fail in ``keras.models.load_model``, or hang it. Three checks,
each giving sentences naming the layer (refusals, as :class:`~formats.ops.convert.cross.legacy_config.Translator`
gives):

- :func:`argument_problems`: one layer's arguments of the kinds Keras 3's constructors check - counts
  (``units``, ``filters``) positive integers, sizes (``kernel_size``, ``strides``) positive integers or lists of
  them, flags (``trainable``, ``use_bias``) booleans, a dropout ``rate`` in [0, 1];
- :func:`graph_problems`: a Functional model's calls as ``functional_from_config`` replays them - every call names
  a call of its layer that exists (node index) and an output that call has (tensor index), and no call depends on
  itself (Keras would loop for ever);
- :func:`weight_problem`: a stored weight's shape against what the layer's config makes (``units=20`` makes an
  LSTM kernel ``[input, 80]``).
"""
from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["argument_problems", "graph_problems", "weight_problem", "VARIABLE_SHAPES"]

COUNTS = frozenset({"units", "filters", "input_dim", "output_dim", "num_heads", "key_dim", "depth_multiplier", "n"})
"""Arguments that are a count: a positive integer (``value_dim`` too, or None)."""
SIZES = frozenset({"kernel_size", "strides", "pool_size", "dilation_rate"})
"""Arguments that are one positive integer or a list of them (None: a pooling layer's strides default)."""
FLAGS = frozenset({"trainable", "use_bias", "return_sequences", "return_state", "go_backwards", "stateful",
                   "unroll", "mask_zero", "reset_after", "unit_forget_bias"})
"""Arguments that are booleans in every layer that has them."""
NORMALIZATIONS = frozenset({"BatchNormalization", "LayerNormalization", "GroupNormalization"})
"""Layers whose ``center`` and ``scale`` are flags (``Rescaling``'s ``scale`` is a number)."""
RATES = frozenset({"Dropout", "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D", "GaussianDropout",
                   "AlphaDropout"})
"""Layers whose ``rate`` Keras 3 refuses outside [0, 1]."""
MULTI_OUTPUT = frozenset({"MultiHeadAttention", "GroupedQueryAttention", "Bidirectional", "RNN"})
"""Layers whose number of outputs depends on how they are called (attention scores, states)."""

VARIABLE_SHAPES: dict[str, dict[str, dict[int, tuple[int, str]]]] = {
    "Dense": {"kernel": {-1: (1, "units")}, "bias": {0: (1, "units")}},
    "Embedding": {"embeddings": {0: (1, "input_dim"), 1: (1, "output_dim")}},
    "LSTMCell": {"kernel": {-1: (4, "units")}, "recurrent_kernel": {0: (1, "units"), -1: (4, "units")},
                 "bias": {-1: (4, "units")}},
    "GRUCell": {"kernel": {-1: (3, "units")}, "recurrent_kernel": {0: (1, "units"), -1: (3, "units")},
                "bias": {-1: (3, "units")}},
    "SimpleRNNCell": {"kernel": {-1: (1, "units")}, "recurrent_kernel": {0: (1, "units"), -1: (1, "units")},
                      "bias": {-1: (1, "units")}},
    **{f"Conv{n}D": {"kernel": {-1: (1, "filters")}, "bias": {0: (1, "filters")}} for n in (1, 2, 3)},
    **{f"Conv{n}DTranspose": {"kernel": {-2: (1, "filters")}, "bias": {0: (1, "filters")}} for n in (1, 2, 3)},
    **{f"SeparableConv{n}D": {"pointwise_kernel": {-1: (1, "filters")}, "bias": {0: (1, "filters")}}
       for n in (1, 2)},
}
"""Class -> variable -> {dimension: (multiple, count argument)}: the dimensions of a stored variable the layer's
config fixes (an LSTM cell's kernel is ``[input, 4 * units]``); the others depend on the input."""


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _size(value: Any) -> bool:
    return _count(value) or isinstance(value, list) and bool(value) and all(_count(v) for v in value)


def argument_problems(cls: str, config: dict[str, Any]) -> list[str]:
    """What Keras 3's constructor of ``cls`` would refuse in ``config`` (one sentence per argument)."""
    out = []
    for key, value in config.items():
        if key in COUNTS or key == "value_dim" and value is not None:
            if not _count(value):
                out.append(f"{key}={value!r} is not a positive integer")
        elif key in SIZES and value is not None:
            if not _size(value):
                out.append(f"{key}={value!r} is not a positive integer or a list of them")
        elif key in FLAGS or key in ("center", "scale") and cls in NORMALIZATIONS:
            if not isinstance(value, bool):
                out.append(f"{key}={value!r} is not true or false")
        elif key == "rate" and cls in RATES:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
                out.append(f"rate={value!r} is not a number from 0 to 1")
    return out


# -- the graph ---------------------------------------------------------------------------------------------
def graph_problems(config: dict[str, Any], where: str = "") -> list[str]:
    """What ``functional_from_config`` would fail on (or loop on) in a translated Functional ``config``, and in the
    Functional and Sequential models nested in it; one sentence per problem, naming the layer."""
    from formats.ops.convert.cross.legacy_graph import endpoints, node_inputs

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
    cycle = _cycle(entries, node_inputs)
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
    from formats.ops.convert.cross.legacy_graph import endpoints
    from formats.ops.convert.cross.legacy_model import is_operation

    cls = entry.get("class_name")
    config = entry.get("config") if isinstance(entry.get("config"), dict) else {}
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


def _cycle(entries: dict[str, Any], node_inputs: Any) -> list[str]:
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


# -- the weights ---------------------------------------------------------------------------------------------
def weight_problem(cls: str, variable: str, config: dict[str, Any], shape: tuple[int, ...]) -> str | None:
    """Why a stored ``variable`` of shape ``shape`` cannot be a ``cls`` layer's with ``config`` (None when it
    can, or when ckpt does not know what the config makes)."""
    fixed = VARIABLE_SHAPES.get(cls, {}).get(variable)
    if not fixed:
        return None
    values = {argument: config.get(argument) for _, argument in fixed.values()}
    if not all(_count(v) for v in values.values()):
        return None  # refused with the arguments
    said = ", ".join(f"{k}={v}" for k, v in sorted(values.items()))
    rank = max(d + 1 if d >= 0 else -d for d in fixed)
    if len(shape) < rank:
        return f"its config ({said}) makes {variable} of {rank} or more dimensions, the file holds {list(shape)}"
    wanted = list(shape)
    for dim, (multiple, argument) in fixed.items():
        wanted[dim] = multiple * values[argument]
    if wanted == list(shape):
        return None
    return f"its config ({said}) makes {variable} {wanted}, the file holds {list(shape)}"
