"""A Keras 2 ``model_config`` as a Keras 3 ``config.json``: models, their layers' calls and names.

- **Functional** models keep their layers (each through :class:`~formats.ops.convert.cross.legacy_config.Translator`)
  and calls. A call Keras 2 wrote as ``[[layer, node, tensor, kwargs], ...]`` stays so: Keras 3 reads that
  form (``functional.deserialize_node``'s legacy case) when no tensor hides in ``kwargs``. A call passing
  tensors as keyword arguments (``MultiHeadAttention``'s ``value``) is written in Keras 3's form, each tensor
  with its shape: the one the layer recorded (``query_shape``, ``value_shape``, ``key_shape``) or the model
  input's; any other is refused, ckpt does not infer shapes. ``x + y`` between two layer outputs (a tf-keras
  ``TFOpLambda``) becomes the merge layer computing it (``Add``); ``x + 3.0`` between a layer output and a number
  (MobileNetV3's hard-swish) becomes the Keras 3 operation that computes it (``keras.src.ops.numpy.Add``), called
  in the legacy form with the number as its second operand (``[[layer, node, tensor, {"x2": 3.0}]]``: the form
  needs no shape, which tf-keras's ``model.save`` does not record); a number first only where the operands may
  swap (``2.0 * x``). Node indices follow Keras 3: Keras 2 numbered
  the calls of a nested Functional model, and of a Sequential built with an input, from 1 (node 0 was the
  model's own); Keras 3 numbers calls from 0, but for a Functional model in ``input_layers``/``output_layers``
  (``functional_from_config``'s ``get_tensor`` takes 1 off). One model input or output is written bare, as
  Keras 3 writes a single tensor.
- **Sequential** models keep their layers; an ``InputLayer`` is added where Keras 2 kept the input shape on the
  first layer (``batch_input_shape``), and ``build_input_shape`` is the input's.
- **build_config**: written where the Keras 2 config fixes a layer's input shapes (:meth:`_Graph.build_config`).
- **Names**: Keras 3 refuses ``/`` in a name (DenseNet's ``conv1/conv``): it becomes ``_``, made unique within
  the model, every reference following.
"""
from __future__ import annotations

from formats.concepts.keras_layers import KERAS2_CONSTANT_OPERATIONS, KERAS2_OPERATIONS, KERAS3_OPERATIONS_MODULE
from formats.core.records import field, record
from formats.core.names import unused_name
from formats.ops.convert.cross.legacy_checks import argument_problems
from formats.ops.convert.cross.legacy_config import MODELS, Translator, keras3_class, layer_object

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["LegacyModel", "translate_model", "KERAS_TENSOR", "is_reference", "is_operation"]

KERAS_TENSOR = "__keras_tensor__"
"""The ``class_name`` of a tensor in a Keras 3 call (``{"shape", "dtype", "keras_history"}``)."""
_CONSTANT = "_CONSTANT_VALUE"
_SHAPES = {"query": "query_shape", "value": "value_shape", "key": "key_shape"}
_COMPUTE = {"mixed_float16": "float16", "mixed_bfloat16": "bfloat16"}
_COMMUTATIVE = ("Add", "Multiply")
"""Operations whose operands may swap, exactly (``2.0 * x`` is ``x * 2.0`` in IEEE arithmetic)."""


@record
class LegacyModel:
    """A translated model: its Keras 3 ``config`` (what ``config.json`` holds), the top-level layers renamed
    (``{Keras 2 name: Keras 3 name}``) and the ``refusals`` (why it cannot be translated; empty when it can)."""

    config: dict[str, Any] | None
    renamed: dict[str, str] = field(default_factory=dict)
    refusals: list[str] = field(default_factory=list)


def translate_model(config: Any) -> LegacyModel:
    """Translate a Keras 2 ``model_config`` (a ``Functional``/``Model`` or ``Sequential``)."""
    translator = _ModelTranslator()
    top = translator.model(config, "")
    return LegacyModel(top if not translator.t.refusals else None, translator.top_renamed or {},
                       translator.t.refusals)


def is_reference(value: Any, scope: dict[str, Any] | None = None) -> bool:
    """Whether ``value`` is a Keras 2 tensor reference ``[layer, node, tensor(, kwargs)]`` (naming a layer of
    ``scope``, when given), as tf-keras tells them in a call's keyword arguments."""
    return (isinstance(value, list) and len(value) in (3, 4) and isinstance(value[0], str)
            and isinstance(value[1], int) and isinstance(value[2], int) and (scope is None or value[0] in scope))


def _unique_names(names: list[str]) -> dict[str, str]:
    """``{name: name with "/" replaced by "_"}``, each new name unique among all of ``names``."""
    taken = set(names)
    out: dict[str, str] = {}
    for name in names:
        if "/" not in name:
            continue
        out[name] = unused_name(name.replace("/", "_"), taken)
    return out


class _ModelTranslator:
    """Models and their graphs; the layers' own configs are :attr:`t`'s."""

    def __init__(self) -> None:
        self.t = Translator()
        self.t.model = self.model
        self.top_renamed: dict[str, str] | None = None

    def model(self, obj: Any, where: str) -> dict[str, Any] | None:
        """A serialized Keras 2 model in Keras 3's form (None when refused)."""
        cls = keras3_class(str(obj.get("class_name"))) if isinstance(obj, dict) else ""
        config = obj.get("config") if isinstance(obj, dict) else None
        if cls == "Sequential" and isinstance(config, (dict, list)):
            return layer_object(cls, self.sequential(config, where))
        if cls == "Functional" and isinstance(config, dict) and isinstance(config.get("layers"), list):
            return layer_object(cls, _Graph(self, config, where).translate())
        what = f"a {cls} model" if cls in MODELS else f"class {cls or obj!r}"
        self.t.refuse(where, f"{what} has no layers in its config (a subclassed model: Keras 3 needs its code)")
        return None

    def check_model(self, trainable: Any, where: str) -> None:
        """A refusal for a model argument Keras 3 refuses (``trainable`` that is not a boolean)."""
        for problem in argument_problems("Functional", {"trainable": trainable}):
            self.t.refuse(where, f"the model's {problem} (Keras 3 refuses it)")

    def renamed(self, names: list[str], where: str) -> dict[str, str]:
        """The names of one model's layers Keras 3 refuses, renamed (reported for the top-level model)."""
        found = _unique_names(names)
        if not where and self.top_renamed is None:
            self.top_renamed = found
        return found

    def sequential(self, config: Any, where: str) -> dict[str, Any]:
        """A Sequential model's config: layers (an ``InputLayer`` first where Keras 2 kept the shape on the first
        layer), ``build_input_shape``."""
        entries = config.get("layers") if isinstance(config, dict) else config
        entries = entries if isinstance(entries, list) else []
        name = str(config.get("name", "sequential")) if isinstance(config, dict) else "sequential"
        names = [str(_config_of(e).get("name", "")) for e in entries]
        renames = self.renamed(names, where)
        layers: list[Any] = []
        for entry, old in zip(entries, names):
            inner = f"{where}/{old}" if where else old
            first = _config_of(entry)
            if not layers and "batch_input_shape" in first and keras3_class(str(entry.get("class_name"))) != "InputLayer":
                dtype = first.get("dtype")
                layers.append(layer_object("InputLayer", {
                    "batch_shape": first["batch_input_shape"], "dtype": dtype if isinstance(dtype, str) else "float32",
                    "sparse": False, "name": f"{old}_input"}))
            layer = self.t.layer(entry, inner)
            if layer is not None:
                _set_name(layer, renames.get(old, old))
                layers.append(layer)
        trainable = config.get("trainable", True) if isinstance(config, dict) else True
        self.check_model(trainable, where or name)
        out: dict[str, Any] = {"name": name, "trainable": trainable, "layers": layers}
        build = config.get("build_input_shape") if isinstance(config, dict) else None
        if build is None and layers and layers[0].get("class_name") == "InputLayer":
            build = layers[0]["config"].get("batch_shape")
        if build is not None:
            out["build_input_shape"] = build
        return out


def _config_of(entry: Any) -> dict[str, Any]:
    config = entry.get("config") if isinstance(entry, dict) else None
    return config if isinstance(config, dict) else {}


def _set_name(layer: dict[str, Any], name: str) -> None:
    config = layer.get("config")
    if isinstance(config, dict):
        config["name"] = name


class _Graph:
    """One Functional model's config: its layers, their calls and the model's inputs and outputs."""

    def __init__(self, owner: _ModelTranslator, config: dict[str, Any], where: str) -> None:
        self.owner, self.config, self.where = owner, config, where
        self.t = owner.t
        self.entries = [e for e in config["layers"] if isinstance(e, dict)]
        self.names = [str(e.get("name", _config_of(e).get("name", ""))) for e in self.entries]
        self.by_name = dict(zip(self.names, self.entries))
        self.renames = owner.renamed(self.names, where)
        self.offset = {name: 1 for name, e in self.by_name.items() if _starts_with_input(e)}
        self.call_offset = {**self.offset, **{name: 1 for name, e in self.by_name.items()
                                              if keras3_class(str(e.get("class_name"))) == "Functional"}}

    def translate(self) -> dict[str, Any]:
        """The Keras 3 Functional config."""
        layers = [layer for layer in (self.layer(e, n) for e, n in zip(self.entries, self.names)) if layer]
        out: dict[str, Any] = {"name": str(self.config.get("name", "functional"))}
        if "trainable" in self.config:
            out["trainable"] = self.config["trainable"]
            self.owner.check_model(out["trainable"], self.where or out["name"])
        out.update(layers=layers, input_layers=self.endpoints("input_layers"),
                   output_layers=self.endpoints("output_layers"))
        return out

    def inner(self, name: str) -> str:
        return f"{self.where}/{name}" if self.where else name

    def layer(self, entry: dict[str, Any], name: str) -> dict[str, Any] | None:
        cls = keras3_class(str(entry.get("class_name")))
        nodes = entry.get("inbound_nodes") or []
        if cls == "TFOpLambda" and _config_of(entry).get("function") in {**KERAS2_OPERATIONS,
                                                                          **KERAS2_CONSTANT_OPERATIONS}:
            return self.operation(entry, name, nodes)
        layer = self.t.layer(entry, self.inner(name))
        if layer is None:
            return None
        new = self.renames.get(name, name)
        _set_name(layer, new)
        build = self.build_config(name, cls, nodes)
        if build is not None:
            layer["build_config"] = build
        layer["name"] = new
        layer["inbound_nodes"] = [self.node(n, name, cls) for n in (nodes if isinstance(nodes, list) else [])]
        return layer

    def build_config(self, name: str, cls: str, nodes: Any) -> dict[str, Any] | None:
        """The ``build_config`` Keras 3 writes for a layer (``Layer.get_build_config``: the shapes of its first
        call's tensors), where the Keras 2 config fixes them: a ``MultiHeadAttention``'s recorded
        ``query_shape``/``value_shape`` (and ``key_shape`` when called with a key), or the shape of the model input
        a layer is called on. None elsewhere (ckpt does not infer shapes; Keras 3 builds such a layer when the
        model calls it)."""
        if cls in MODELS or not isinstance(nodes, list) or not nodes:
            return None
        config = _config_of(self.by_name[name])
        first = [nodes[0]] if is_reference(nodes[0]) else nodes[0]
        if not isinstance(first, list) or not first or not all(isinstance(d, list) and len(d) == 4 for d in first):
            return None  # a call in another form (node() says what is wrong with it)
        inputs = first
        kwargs = inputs[-1][3] if isinstance(inputs[-1][3], dict) else {}
        if cls == "MultiHeadAttention":
            wanted = ["query_shape", "value_shape"] + (["key_shape"] if len(inputs) > 2 or "key" in kwargs else [])
            shapes = {k: config.get(k) for k in wanted}
            return {"shapes_dict": shapes} if all(isinstance(v, list) for v in shapes.values()) else None
        if len(inputs) != 1 or self.holds_tensors(kwargs) or not is_reference(inputs[0][:3], self.by_name):
            return None
        producer = self.by_name[inputs[0][0]]
        shape = _config_of(producer).get("batch_input_shape", _config_of(producer).get("batch_shape"))
        if keras3_class(str(producer.get("class_name"))) != "InputLayer" or not isinstance(shape, list):
            return None
        return {"input_shape": shape}

    # -- references -----------------------------------------------------------------------------------
    def ref(self, value: Any, where: str, endpoint: bool = False) -> list[Any]:
        """A Keras 2 reference ``[layer, node, tensor]`` in a call (or, ``endpoint``, a model input or output) with
        Keras 3's name and node index."""
        if not is_reference(value, self.by_name):
            self.t.refuse(where, f"a call names {value!r}, which is not a layer of the model")
            return list(value[:3]) if isinstance(value, list) else [str(value), 0, 0]
        offset = (self.offset if endpoint else self.call_offset).get(value[0], 0)
        name, node, tensor = value[0], value[1] - offset, value[2]
        return [self.renames.get(name, name), node, tensor]

    def endpoints(self, key: str) -> Any:
        value = self.config.get(key)
        where = self.inner(key)
        if is_reference(value):
            return self.ref(value, where, endpoint=True)
        if isinstance(value, list):
            refs = [self.endpoints_of(v, where) for v in value]
            return refs[0] if len(refs) == 1 and is_reference(value[0]) else refs
        if isinstance(value, dict):
            return {k: self.endpoints_of(v, where) for k, v in value.items()}
        self.t.refuse(where, f"the model's {key} are not tensor references")
        return []

    def endpoints_of(self, value: Any, where: str) -> Any:
        if is_reference(value):
            return self.ref(value, where, endpoint=True)
        if isinstance(value, list):
            return [self.endpoints_of(v, where) for v in value]
        return {k: self.endpoints_of(v, where) for k, v in value.items()} if isinstance(value, dict) else value

    # -- calls ------------------------------------------------------------------------------------------
    def inputs_of(self, data: Any, where: str) -> list[list[Any]] | None:
        """A Keras 2 call's inputs ``[[layer, node, tensor, kwargs], ...]`` (one bare input wrapped)."""
        if is_reference(data):
            data = [data]
        if not isinstance(data, list) or not data or not all(
                is_reference(d) or isinstance(d, list) and d and d[0] == _CONSTANT for d in data):
            self.t.refuse(where, f"a call {data!r} is not in a form ckpt reads")
            return None
        if any(d[0] == _CONSTANT for d in data):
            self.t.refuse(where, "a call takes a constant as its input, which Keras 3's config cannot hold")
            return None
        return [list(d) if len(d) == 4 else [*d, {}] for d in data]

    def node(self, data: Any, name: str, cls: str) -> Any:
        """One call of the layer ``name`` in Keras 3's config."""
        where = self.inner(name)
        if isinstance(data, dict):  # already Keras 3's form (a Keras 3 .h5): rename the tensors' layers
            return self.renamed_tensors(data, where)
        inputs = self.inputs_of(data, where)
        if inputs is None:
            return []
        kwargs = inputs[-1][3] if isinstance(inputs[-1][3], dict) else {}
        if not self.holds_tensors(kwargs):
            return [[*self.ref(d[:3], where), d[3]] for d in inputs]
        config = _config_of(self.by_name[name])
        first = [self.tensor(d[:3], config.get("query_shape") if cls == "MultiHeadAttention" else None, where)
                 for d in inputs]
        args = [first[0] if len(first) == 1 else first]
        out = {k: self.tensor(v, config.get(_SHAPES.get(k, "")) if cls == "MultiHeadAttention" else None, where)
               if is_reference(v, self.by_name) else v for k, v in kwargs.items()}
        return {"args": args, "kwargs": out}

    def holds_tensors(self, value: Any) -> bool:
        if is_reference(value, self.by_name):
            return True
        if isinstance(value, dict):
            return any(self.holds_tensors(v) for v in value.values())
        return isinstance(value, list) and any(self.holds_tensors(v) for v in value)

    def tensor(self, ref: list[Any], shape: Any, where: str) -> dict[str, Any]:
        """A Keras 3 tensor in a call: its shape (``shape``, else the model input's) and dtype."""
        producer = self.by_name[ref[0]]
        config = _config_of(producer)
        is_input = keras3_class(str(producer.get("class_name"))) == "InputLayer"
        if shape is None and is_input:
            shape = config.get("batch_input_shape", config.get("batch_shape"))
        if not isinstance(shape, list):
            self.t.refuse(where, f"a call passes the output of {ref[0]!r} as a keyword argument; Keras 3's config "
                                 "records that tensor's shape, which ckpt cannot tell")
            shape = []
        dtype = config.get("dtype")
        if isinstance(dtype, dict):
            dtype = _config_of(dtype).get("name")
        dtype = _COMPUTE.get(str(dtype), dtype) if isinstance(dtype, str) else "float32"
        return {"class_name": KERAS_TENSOR, "config": {"shape": shape, "dtype": dtype,
                                                       "keras_history": self.ref(ref[:3], where)}}

    def renamed_tensors(self, value: Any, where: str) -> Any:
        if isinstance(value, dict):
            if value.get("class_name") == KERAS_TENSOR and isinstance(value.get("config"), dict):
                history = value["config"].get("keras_history")
                return {**value, "config": {**value["config"], "keras_history": self.ref(history, where)}}
            return {k: self.renamed_tensors(v, where) for k, v in value.items()}
        return [self.renamed_tensors(v, where) for v in value] if isinstance(value, list) else value

    def operation(self, entry: dict[str, Any], name: str, nodes: Any) -> dict[str, Any] | None:
        """A tf-keras ``TFOpLambda``: ``x + y`` between two layer outputs as the Keras 3 merge layer of the two
        tensors, ``x + 3.0`` with a number as the Keras 3 operation."""
        where = self.inner(name)
        function = str(_config_of(entry).get("function"))
        calls = []
        for data in nodes if isinstance(nodes, list) else []:
            call = self.operands(data, where)
            if call is None:
                return None
            calls.append(call)
        if calls and all(is_reference(y, self.by_name) and not first for _, y, first in calls) \
                and function in KERAS2_OPERATIONS:
            return self.merge_layer(entry, name, [[[*self.ref(x, where), {}], [*self.ref(y[:3], where), {}]]
                                                  for x, y, _ in calls])
        cls = KERAS2_CONSTANT_OPERATIONS.get(function)
        if calls and cls and all(_is_number(y) and (not first or cls in _COMMUTATIVE) for _, y, first in calls):
            new = self.renames.get(name, name)
            return {"module": KERAS3_OPERATIONS_MODULE, "class_name": cls, "config": {"name": new},
                    "registered_name": cls, "name": new,
                    "inbound_nodes": [[[*self.ref(x, where), {"x2": y}]] for x, y, _ in calls]}
        self.t.refuse(where, f"tf.{function} is translated between two layer outputs "
                             f"({', '.join(sorted(KERAS2_OPERATIONS))}) or from a layer output and a number "
                             f"({', '.join(sorted(KERAS2_CONSTANT_OPERATIONS))}; a number first only for "
                             f"{' and '.join(sorted(_COMMUTATIVE))}); this call: {nodes!r}")
        return None

    def operands(self, data: Any, where: str) -> tuple[list[Any], Any, bool] | None:
        """One call of a ``TFOpLambda`` as ``(x, y, whether the number came first)``: ``x`` a tensor reference,
        ``y`` what tf-keras passed as ``y`` (another reference, a number; None for anything else)."""
        single = data[0] if isinstance(data, list) and len(data) == 1 and isinstance(data[0], list) else data
        if isinstance(single, list) and len(single) == 4 and single[0] == _CONSTANT and isinstance(single[3], dict):
            kwargs, y = single[3], single[2]  # 2.0 - x: tf-keras wrote the number as the input, the tensor as y
            x: Any = kwargs.get("y")
            if set(kwargs) - {"y", "name"} or kwargs.get("name") is not None or not is_reference(x, self.by_name):
                return [], None, True
            return list(x[:3]), y, True
        inputs = self.inputs_of(data, where)
        if inputs is None:
            return None
        kwargs = inputs[0][3] if isinstance(inputs[0][3], dict) else {}
        if len(inputs) != 1 or set(kwargs) - {"y", "name"} or kwargs.get("name") is not None:
            return inputs[0][:3], None, False
        return inputs[0][:3], kwargs.get("y"), False

    def merge_layer(self, entry: dict[str, Any], name: str, calls: list[Any]) -> dict[str, Any]:
        """``x + y`` as the Keras 3 merge layer (``Add``) called on the two tensors."""
        config = _config_of(entry)
        new = self.renames.get(name, name)
        dtype = config.get("dtype")
        layer = layer_object(KERAS2_OPERATIONS[config["function"]], {
            "name": new, "trainable": bool(config.get("trainable", True)),
            "dtype": self.t.dtype(dtype if dtype is not None else "float32", self.inner(name))})
        layer.update(name=new, inbound_nodes=calls)
        return layer


def is_operation(entry: Any) -> bool:
    """Whether a translated config entry is a Keras 3 operation (no layer: no variables, not in ``model.layers``)."""
    return isinstance(entry, dict) and entry.get("module") == KERAS3_OPERATIONS_MODULE


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _starts_with_input(entry: dict[str, Any]) -> bool:
    """Whether a Keras 2 Sequential in a Functional model had an input of its own: tf-keras then numbers its
    calls from 1 (node 0 is its own input's), Keras 3 from 0."""
    if keras3_class(str(entry.get("class_name"))) != "Sequential":
        return False
    config = entry.get("config")
    layers = config.get("layers") if isinstance(config, dict) else config
    if not isinstance(layers, list) or not layers or not isinstance(layers[0], dict):
        return False
    return layers[0].get("class_name") == "InputLayer" or "batch_input_shape" in _config_of(layers[0])
