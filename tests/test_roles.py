"""A tensor keeps its role (variable, slot, optimizer state, iterator, save counter) whatever layout holds it:
name-based, object-based, and across `ckpt convert --to tf-object|tf-name`."""
from __future__ import annotations

from collections import Counter

import pytest

import formats
from formats.concepts.roles import NameRole, Role, classify_names, keras_scalar

from .conftest import CORPUS

SLOTS = CORPUS / "seed_slots" / "tf_ckpts" / "ckpt-5"


def _roles(prefix) -> dict[str, str]:
    """TF1-style name -> role, the object graph left out."""
    with formats.open_checkpoint(prefix) as ckpt:
        return {e.name: str(e.role) for k, e in ckpt.items() if e.role != "object_graph"}


@pytest.mark.parametrize("source, to", [
    (CORPUS / "tf1_estimator" / "model.ckpt-200", "tf-object"),
    (CORPUS / "tf1_adam" / "model.ckpt-200", "tf-object"),
    (SLOTS, "tf-name"),
])
def test_roles_survive_conversion(run_cli, tmp_path, source, to):
    out = tmp_path / "out" / "ckpt"
    assert run_cli("convert", source, "-o", out, "--to", to).exit_code == 0
    before, after = _roles(source), _roles(out)
    # a name-based -> object-based conversion adds tf.train.Checkpoint's save_counter
    assert Counter(after.values()) == Counter(before.values()) + Counter(["save_counter"] if to == "tf-object" else [])
    if to == "tf-object":  # the names are kept: each tensor keeps its role
        assert after == {**before, "save_counter": "save_counter"}


def test_global_step_is_optimizer_state_in_both_layouts(run_cli, tmp_path):
    source = CORPUS / "tf1_estimator" / "model.ckpt-200"
    out = tmp_path / "obj" / "ckpt-1"
    assert run_cli("convert", source, "-o", out, "--to", "tf-object").exit_code == 0
    with formats.open_checkpoint(source) as a, formats.open_checkpoint(out) as b:
        assert a["global_step"].role == b["global_step/.ATTRIBUTES/VARIABLE_VALUE"].role == Role.OPTIMIZER


def test_tf_keras_state_in_a_name_based_checkpoint(run_cli, tmp_path):
    out = tmp_path / "tf1" / "model.ckpt"
    assert run_cli("convert", SLOTS, "-o", out, "--to", "tf-name").exit_code == 0
    with formats.open_checkpoint(out) as ckpt:
        roles = {k: (str(e.role), e.slot_of, e.slot_name) for k, e in ckpt.items()}
    assert roles == {
        **{f"Adam/{h}": ("optimizer", None, None) for h in ("iter", "beta_1", "beta_2", "decay", "learning_rate")},
        **{f"net/dense/{v}/{s}": ("slot", f"net/dense/{v}", s) for v in ("kernel", "bias") for s in ("m", "v")},
        "net/dense/kernel": ("variable", None, None), "net/dense/bias": ("variable", None, None),
        "Variable": ("variable", None, None), "iterator/ITERATOR_STATE": ("iterator", None, None),
        "save_counter": ("save_counter", None, None)}
    back = tmp_path / "tf2" / "ckpt"  # back to object-based: the slots are slot variables again
    result = run_cli("convert", out, "-o", back, "--to", "tf-object")
    assert result.exit_code == 0 and "also a scope" not in result.stdout
    assert _roles(back) == {k: v[0] for k, v in roles.items()}


def test_keras_names_need_keras_optimizer_state():
    plain = classify_names(["attn", "attn/v", "m/dense/kernel", "dense/kernel", "learning_rate"])
    assert {str(r.role) for r in plain.values()} == {"variable"}
    current = classify_names(["dense/kernel", "Adam/m/dense/kernel", "m/dense/kernel", "iteration", "learning_rate"])
    assert current == {"dense/kernel": NameRole(Role.VARIABLE), "iteration": NameRole(Role.OPTIMIZER),
                       "learning_rate": NameRole(Role.OPTIMIZER),
                       "Adam/m/dense/kernel": NameRole(Role.SLOT, "dense/kernel", "Adam", "m"),
                       "m/dense/kernel": NameRole(Role.SLOT, "dense/kernel", None, "m")}
    assert [keras_scalar(n) for n in ("Adam/iter", "Nadam/momentum_cache", "SGD/momentum", "Adam/rho", "Foo/iter",
                                      "iteration", "a/Adam/iter")] == ["Adam", "Nadam", "SGD", None, None, "", None]


KEY_SETS = [
    ["attn", "attn/v", "m/dense/kernel", "dense/kernel", "learning_rate"],
    ["dense/kernel", "Adam/m/dense/kernel", "m/dense/kernel", "iteration", "learning_rate"],
    ["w", "w/RMSProp", "w/RMSProp_1", "w/RMSProp_2", "v", "v/RMSProp", "v/RMSProp_1", "global_step"],
    ["Adam/iter", "Adam/beta_1", "Adam/learning_rate", "net/k", "Adam/net/k/m", "Adam/net/k/v", "x/Adam",
     "save_counter", "_CHECKPOINTABLE_OBJECT_GRAPH", "it/ITERATOR_STATE", "beta1_power", "k/Momentum"],
]


@pytest.mark.parametrize("keys", KEY_SETS + ["tf1_adam/model.ckpt-200", "tf1_estimator/model.ckpt-200"])
def test_the_roles_beyond_plain_variables_are_those_of_every_key(keys) -> None:
    if isinstance(keys, str):
        with formats.open_checkpoint(CORPUS / keys) as ckpt:
            keys = list(ckpt)
    every = classify_names(keys)
    assert list(every) == sorted(set(keys))
    plain = NameRole(Role.VARIABLE)
    expected = {k: r for k, r in every.items() if r != plain}
    assert classify_names(keys, every=False) == expected
    assert list(classify_names(reversed(keys), every=False)) == sorted(expected)  # in key order, however given
