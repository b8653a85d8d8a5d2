"""Object-based checkpoints laid out as tf-keras writes ``tf.train.Checkpoint(model=, optimizer=)``, built
without TensorFlow: the model's layers as ``model/layer_with_weights-N/<weight>``, and the optimizer as
the current tf-keras optimizers keep it (``optimizer/_iterations``, ``_learning_rate``, ``_variables/N``
named ``<Optimizer>/<slot>/<variable>``; index 0 is the iterations) or as the legacy ``OptimizerV2``
does (``optimizer/iter``, hyperparameters as children, slot variables ``<variable>/.OPTIMIZER_SLOT/
optimizer/<slot>`` named ``<Optimizer>/<variable>/<slot>``). The layouts are those of the tf-keras 2.21
checkpoints listed in the module docs of ``tests/interop/programs/keras_train.py``."""
from __future__ import annotations

from pathlib import Path

import numpy as np

import formats
from formats.concepts.object_graph import ChildRef
from formats.ops.convert.graph_build import GraphBuilder

Layers = dict[str, dict[str, tuple[int, ...]]]


def tf_keras_checkpoint(prefix: Path, layers: Layers, optimizer: str, slots: list[str], *, legacy: bool = False,
                        prefixed: bool = True, hypers: dict[str, float] | None = None, step: int = 0,
                        values: dict[str, np.ndarray] | None = None, untrained: tuple[str, ...] = ()
                        ) -> dict[str, str]:
    """Write the checkpoint; returns ``{"<variable>" or "<variable>:<slot>" or "step"/hyper: key}``.

    ``values`` (same naming) fill tensors; everything else is zeros (hyperparameters from ``hypers``).
    ``untrained`` variables (``layer/weight``, batch statistics) get no slots, as a non-trainable one has none.
    """
    values = values or {}
    hypers = {"learning_rate": 0.05} if hypers is None else hypers
    builder, tensors, keys = GraphBuilder(), {}, {}
    model = builder.object(["model"])
    variables = {}
    for i, (layer, weights) in enumerate(layers.items()):
        node = builder.child(model, f"layer_with_weights-{i}")
        for weight, shape in weights.items():
            name = f"{layer}/{weight}"
            variables[name] = builder.child(node, weight)
            keys[name] = builder.variable(variables[name], name)
            tensors[keys[name]] = values.get(name, np.zeros(shape, np.float32))
    opt = builder.object(["optimizer"])
    trained = {name: node for name, node in variables.items() if name not in untrained}
    if legacy:
        _legacy(builder, opt, optimizer if prefixed else "", slots, hypers, trained, keys)
    else:
        _current(builder, opt, optimizer, slots, hypers, trained, keys, prefixed)
    for label, key in keys.items():
        if key in tensors:
            continue
        if label == "step":
            tensors[key] = np.asarray(values.get("step", step), np.int64)
        elif label in hypers:
            tensors[key] = np.asarray(hypers[label], np.float32)
        else:
            var = label.split(":")[0]
            shape = next(s for layer, ws in layers.items() for w, s in ws.items() if f"{layer}/{w}" == var)
            tensors[key] = values.get(label, np.zeros(shape, np.float32))
    formats.write_checkpoint(str(prefix), tensors, builder.encode())
    return keys


def _current(builder: GraphBuilder, opt: int, optimizer: str, slots: list[str], hypers: dict[str, float],
             variables: dict[str, int], keys: dict[str, str], prefixed: bool) -> None:
    iterations = builder.child(opt, "_iterations")
    keys["step"] = builder.variable(iterations, "iteration")
    if "learning_rate" in hypers:
        keys["learning_rate"] = builder.variable(builder.child(opt, "_learning_rate"), "learning_rate")
    listed = builder.child(opt, "_variables")
    builder.nodes[listed].children.append(ChildRef(iterations, "0"))
    n = 1
    for var, _ in variables.items():
        for slot in slots:
            node = builder.child(listed, str(n))
            name = f"{optimizer}/{slot}/{var}" if prefixed else f"{slot}/{var}"
            keys[f"{var}:{slot}"] = builder.variable(node, name)
            n += 1


def _legacy(builder: GraphBuilder, opt: int, optimizer: str, slots: list[str], hypers: dict[str, float],
            variables: dict[str, int], keys: dict[str, str]) -> None:
    scope = f"{optimizer}/" if optimizer else ""  # weights made outside apply_gradients have no scope
    keys["step"] = builder.variable(builder.child(opt, "iter"), f"{scope}iter")
    for hyper in hypers:
        keys[hyper] = builder.variable(builder.child(opt, hyper), f"{scope}{hyper}")
    for slot in slots:
        for var, node in variables.items():
            keys[f"{var}:{slot}"] = builder.slot(opt, node, slot, f"{scope}{var}/{slot}")
