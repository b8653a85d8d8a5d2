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


def _by_every_key(keys: list[str]) -> dict[str, NameRole]:
    """The roles with every key in a set, each slot's variable looked up in it (the reference)."""
    from formats.concepts import roles

    keyset = set(keys)
    out = {k: roles.classify_name(k, keyset) for k in keyset if roles.may_not_be_variable(k)}
    for k, r in out.items():
        if r.role is Role.SLOT and k.endswith("/RMSProp_1") and f"{r.slot_of}/RMSProp_2" in keyset:
            out[k] = NameRole(Role.SLOT, slot_of=r.slot_of, optimizer="RMSProp", slot_name="mg")
    roles._keras_state(out, sorted(keyset))
    return {k: out.get(k, NameRole(Role.VARIABLE)) for k in sorted(keyset)}


@pytest.mark.parametrize("seed", range(300))
def test_slots_are_told_by_the_keys_asked_about_as_by_every_key(seed: int) -> None:
    """Slots whose variable is present or not, centered RMSProp (its second slot present or not), optimizer
    scalars, tf-keras state, keys given twice, in any order: the roles found by looking up only the keys asked about
    (a slot's variable, a second RMSProp slot) are those found with every key in a set."""
    import random

    rng = random.Random(seed)
    names = ["w", "v", "a/b", "dense/kernel", "", "Adam"]
    lasts = ["", "/Adam", "/Adam_1", "/RMSProp", "/RMSProp_1", "/RMSProp_2", "/Momentum", "/ITERATOR_STATE",
             "/beta1_power", "/m"]
    extras = ["global_step", "save_counter", "beta1_power", "iteration", "learning_rate", "Adam/iter", "Adam/net/k/m",
              "m/dense/kernel", "_CHECKPOINTABLE_OBJECT_GRAPH", "RMSProp_1", "/Adam"]
    keys = [n + last for n in rng.sample(names, rng.randrange(1, len(names) + 1)) for last in lasts
            if rng.random() < 0.5 and (n + last)]
    keys += rng.sample(extras, rng.randrange(0, 4))
    keys += rng.sample(keys, min(len(keys), rng.randrange(0, 2)))  # a key given twice
    rng.shuffle(keys)
    assert classify_names(keys) == _by_every_key(keys)
    assert classify_names(iter(keys), every=False) == {k: r for k, r in _by_every_key(keys).items()
                                                       if r != NameRole(Role.VARIABLE)}
