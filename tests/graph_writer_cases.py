"""The command lines of ``test_graph_writers.py``: every writer that goes through the object-graph path
(``convert --to tf-object``, ``convert --to tf-name`` of an object-based bundle, ``rename`` and ``edit`` of
both layouts) on the 10k-tensor scale bundles and on checkpoints TensorFlow wrote (``tests/data/corpus``).
``tests/data/graph_writers/golden.json`` holds the SHA-256 of every file each wrote at 68bca3f, before the
graph writers were made cheaper per tensor (issue 38): the same bytes must come out."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from formats import write_checkpoint

CORPUS = Path(__file__).parent / "data" / "corpus"
SCALE = 10_000

CASES: dict[str, list[str]] = {
    "name_to_object": ["convert", "{name}", "--to", "tf-object", "-o", "{out}/ckpt-1"],
    "object_to_name": ["convert", "{object}", "--to", "tf-name", "-o", "{out}/ckpt-1"],
    "rename_name": ["rename", "{name}", "-o", "{out}/ckpt-1", "--map", "model=net"],
    "rename_object": ["rename", "{object}", "-o", "{out}/ckpt-1", "--map", "model=net"],
    "rename_object_move": ["rename", "{object}", "-o", "{out}/ckpt-1", "--map", "model/layer_3=model/layer_0/inner",
                           "--rename-full-names"],
    "edit_name": ["edit", "{name}", "-o", "{out}/ckpt-1", "--exclude", "model/layer_0/*"],
    "edit_object": ["edit", "{object}", "-o", "{out}/ckpt-1", "--exclude", "model/layer_0/*"],
    "adam_to_object": ["convert", "{corpus}/tf1_adam/model.ckpt-200", "--to", "tf-object", "-o", "{out}/ckpt-1"],
    "adagrad_to_object": ["convert", "{corpus}/tf1_estimator/model.ckpt-200", "--to", "tf-object",
                          "-o", "{out}/ckpt-1", "--map", "dnn=net"],
    "partitioned_to_object": ["convert", "{corpus}/tf1_partitioned/model.ckpt-200", "--to", "tf-object",
                              "-o", "{out}/ckpt-1"],
    "slots_to_name": ["convert", "{corpus}/seed_slots/tf_ckpts/ckpt-5", "--to", "tf-name", "-o", "{out}/ckpt-1"],
    "slots_to_name_tf1": ["convert", "{corpus}/seed_slots/tf_ckpts/ckpt-5", "--to", "tf-name", "-o", "{out}/ckpt-1",
                          "--slot-names", "tf1"],
    "slots_rename": ["rename", "{corpus}/seed_slots/tf_ckpts/ckpt-5", "-o", "{out}/ckpt-1", "--map", "net/l1=net/dense"],
    "slots_drop_optimizer": ["edit", "{corpus}/seed_slots/tf_ckpts/ckpt-5", "-o", "{out}/ckpt-1", "--drop-optimizer"],
    "keras2_exclude": ["edit", "{corpus}/seed_keras2/tf_ckpts/ckpt-10", "-o", "{out}/ckpt-1", "--exclude", "net/*"],
    "dtypes_rename": ["rename", "{corpus}/tf2_mixed/all_dtypes/ckpt-1", "-o", "{out}/ckpt-1", "--add-prefix", "top"],
    "dtypes_to_name": ["convert", "{corpus}/tf2_mixed/all_dtypes/ckpt-1", "--to", "tf-name", "-o", "{out}/ckpt-1"],
    "sharded_rename": ["rename", "{corpus}/tf2_mixed/sharded/ckpt", "-o", "{out}/ckpt-1", "--add-prefix", "top"],
    "two_dense_rename": ["rename", "{corpus}/tf216_guide/two_dense/tf_ckpts/ckpt-10", "-o", "{out}/ckpt-1",
                         "--map", "net/l1=net/first"],
    "hostile_to_object": ["convert", "{hostile}", "--to", "tf-object", "-o", "{out}/ckpt-1"],
    "hostile_rename": ["rename", "{hostile_object}", "-o", "{out}/ckpt-1", "--map", "uni=net"],
    "saved_model_to_object": ["convert", "{corpus}/saved_models/module/1", "--to", "tf-object", "-o", "{out}/ckpt-1"],
}
"""Case name -> ``ckpt`` arguments (``{name}``, ``{object}``: the scale bundles; ``{corpus}``; ``{out}``: a new folder)."""


def scale_bundles(folder: Path, run_cli) -> dict[str, str]:
    """``{"name": prefix, "object": prefix}``: ``benchmarks/generate.py``'s ``scale_name_10k`` and the same
    converted by ``convert --to tf-object`` (itself the case ``name_to_object``, checked by its bytes)."""
    name = str(folder / "name" / "ckpt-1")
    write_checkpoint(name, ((f"model/layer_{i // 100}/unit_{i % 100}/w", np.full((4,), i, np.float32))
                            for i in range(SCALE)), force=True, verify=False)
    obj = str(folder / "object" / "ckpt-1")
    result = run_cli("convert", name, "--to", "tf-object", "-o", obj)
    assert result.exit_code == 0, result.output
    hostile = str(folder / "hostile" / "ckpt-1")
    write_checkpoint(hostile, [(key, np.full((2,), i, np.float32)) for i, key in enumerate(HOSTILE)], force=True,
                     verify=False)
    hostile_object = str(folder / "hostile_object" / "ckpt-1")
    result = run_cli("convert", hostile, "--to", "tf-object", "-o", hostile_object)
    assert result.exit_code == 0, result.output
    return {"name": name, "object": obj, "hostile": hostile, "hostile_object": hostile_object}


HOSTILE = ["uni/\u00e9t\u00e9/\u00df", "uni/a.b/c..d", "uni/bytes\udcff/w", "evil/\x1b[31mred", "dot.ted/x",
           "uni/\u00e9t\u00e9/a.Sb", "uni/\u202eright", "k/Adam", "k", "k/Adam_1", "beta1_power", "save_counter/x"]
"""Names a graph must escape (``.``, ``/`` in a local name), show as safe text (an undecodable byte), or read as
optimizer slots."""


def argv(case: str, bundles: dict[str, str], out: str) -> list[str]:
    """The arguments of ``case`` with its placeholders filled."""
    return [a.format(corpus=CORPUS, out=out, **bundles) for a in CASES[case]]


def written(out: str) -> dict[str, str]:
    """Relative path -> SHA-256 of every file under ``out``."""
    files = {}
    for root, _, names in os.walk(out):
        for f in names:
            path = os.path.join(root, f)
            files[os.path.relpath(path, out)] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return files
