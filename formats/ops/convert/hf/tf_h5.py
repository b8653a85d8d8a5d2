"""Plan ``ckpt convert SRC --to hf`` of transformers 4.x's own TensorFlow weights: ``tf_model.h5`` (or its shards
and ``tf_model.h5.index.json``) beside the ``config.json`` ``save_pretrained`` wrote, as the directory
transformers 5's ``from_pretrained`` reads.

Every weight is named by :mod:`.tf_names`' one rule; ``tf_h5.toml`` says per ``model_type`` what the rule cannot
know (the base class, ``base_model_prefix``, shapes that differ beyond a transpose). The PyTorch class is
``config.json``'s ``architectures`` without ``TF`` (the base class without one). What is planned:

- one row per variable (a variable several layers list, as T5's shared embedding, once: the others are named
  in a warning); the value transposed by its rank, or reshaped where the data says;
- errors, each naming the tensor: a variable outside the model's scopes (a name of two levels or more whose
  level zero is neither the model's scope nor its own next level, as ``shared/shared/...``); two variables
  under one PyTorch name; a word embedding whose shape contradicts ``vocab_size`` and the width fields of the
  configuration; weights saved by another class than ``architectures`` names; an unknown ``model_type``;
- the config: ``config.json`` as it is, ``architectures`` renamed; every other file of the directory (tokenizer,
  vocabulary, generation config, README) copied (``write_options["copy_files"]``).
"""
from __future__ import annotations

import os
import re
import sys

from formats.core.model import Checkpoint, FormatName, TensorEntry
from formats.ops.convert.hf.entries import MappedEntry
from formats.ops.convert.hf.tf_names import (CONV2D, TRANSPOSE, level_zero, snake_case, stored_shard_name,
                                             translate, variable_name)
from formats.ops.convert.plan import WARNING, ConversionPlan, ConvertOptions

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["is_tf_h5", "plan_tf_h5", "models", "TF_INDEX", "CONFIG"]

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tf_h5.toml")
CONFIG = "config.json"
TF_INDEX = "tf_model.h5.index.json"
_WEIGHT_FILE = re.compile(r"(tf_model.*\.h5|tf_model\.h5\.index\.json|.*\.safetensors|model\.safetensors\.index\.json|"
                          r"pytorch_model.*\.bin|pytorch_model\.bin\.index\.json|flax_model.*\.msgpack|"
                          r"flax_model\.msgpack\.index\.json|.*\.ckpt.*|.*\.h5|.*\.keras)\Z")
_VOCAB_NAMES = ("word_embeddings.weight", "shared.weight", "wte.weight", "embed_tokens.weight", "tokens_embed.weight")
_WIDTH_FIELDS = ("hidden_size", "d_model", "n_embd", "dim", "embedding_size", "embed_dim", "emb_dim", "d_embed",
                 "input_embedding_size", "emb_size")
_models: dict[str, Any] = {}


def _load() -> dict[str, Any]:
    if not _models:
        if sys.version_info >= (3, 11):
            import tomllib
        else:  # Python 3.10
            import tomli as tomllib
        with open(DATA, "rb") as f:
            _models.update(tomllib.load(f))
    return _models


def models() -> dict[str, Any]:
    """``tf_h5.toml``'s ``[models]``: model_type -> base class, prefix, drop / rename / reshape rules."""
    return dict(_load()["models"])


def models_defaults() -> dict[str, Any]:
    """``tf_h5.toml``'s ``[defaults]``: the rules every model type gets first."""
    return dict(_load().get("defaults", {}))


def _directory(source: Checkpoint) -> str:
    return source.path if os.path.isdir(source.path) else os.path.dirname(os.path.abspath(source.path))


def _read_json(path: str) -> Any:
    from formats.core.bounded_json import load_json

    with open(path, "rb") as f:
        return load_json(f.read((64 << 20) + 1), path, "the file", max_bytes=64 << 20)


def is_tf_h5(source: Checkpoint, options: ConvertOptions) -> bool:
    """Whether ``source`` is transformers' TF weights: Keras 2 weights (or transformers' shards) beside a
    ``config.json`` with a ``model_type``, and no model map asked for."""
    if options.family or options.model_map:
        return False
    if source.format not in (FormatName.KERAS2_H5.value, FormatName.KERAS3_SHARDED.value):
        return False
    if source.format == FormatName.KERAS3_SHARDED.value and os.path.basename(source.path) != TF_INDEX:
        return False
    if re.fullmatch(r"tf_model(-\d+-of-\d+)?\.h5|tf_model\.h5\.index\.json", os.path.basename(source.path)):
        return True  # transformers' own file names: a missing or unreadable config.json is this planner's error
    config = options.model_config or os.path.join(_directory(source), CONFIG)
    try:
        doc = _read_json(config)
    except Exception:  # noqa: BLE001 - not ours: another planner reports the file
        return False
    return isinstance(doc, dict) and isinstance(doc.get("model_type"), str)


def _variables(source: Checkpoint) -> dict[str, str]:
    """Each key -> its variable's whole name."""
    if source.format == FormatName.KERAS3_SHARDED.value:
        index = _read_json(source.path)
        whole = {stored_shard_name(name): name for name in (index.get("weight_map") or {})}
        return {key: whole.get(key, key) for key in source}
    return {key: variable_name(key) for key in source}


def _pt_class(config: dict[str, Any], spec: dict[str, Any]) -> tuple[str, str | None]:
    """The PyTorch class and the TF class the config names (None when it names none)."""
    names = config.get("architectures") or []
    if not names or not isinstance(names[0], str):
        return spec["base"], None
    name = names[0]
    tf = name if name.startswith("TF") else f"TF{name}"
    return tf[2:], tf


def _config_out(config: dict[str, Any], cls: str) -> dict[str, Any]:
    out = dict(config)
    out["architectures"] = [cls]
    return out


def plan_tf_h5(source: Checkpoint, options: ConvertOptions) -> ConversionPlan:
    """Plan writing transformers TF weights ``source`` as a transformers 5 model directory."""
    plan = ConversionPlan(source.path, FormatName.HF.value)
    config_path = options.model_config or os.path.join(_directory(source), CONFIG)
    if not os.path.isfile(config_path):
        plan.add("config", config_path, f"missing model configuration: no {CONFIG} beside {source.path} (the one "
                 "save_pretrained wrote with the weights); give it with --config FILE")
        return plan
    config = _read_json(config_path)
    model_type = config.get("model_type") if isinstance(config, dict) else None
    if not isinstance(model_type, str):
        plan.add("config", config_path, f"{config_path}: no model_type: not the config.json transformers writes")
        return plan
    spec = models().get(model_type)
    if spec is None:
        plan.add("family", config_path, f"model_type {model_type!r} had no TensorFlow class in transformers 4.x "
                 f"(ckpt knows {len(models())}: {', '.join(sorted(models()))})")
        return plan
    cls, tf_cls = _pt_class(config, spec)
    strip = f"{spec['prefix']}." if cls == spec["base"] and not spec.get("keep_prefix") else ""
    out_config = _config_out(config, cls)
    variables = _variables(source)
    _check_scope(plan, variables, tf_cls, config_path)
    seen: dict[str, str] = {}
    for key in source:
        var = variables[key]
        entry = source[key]
        if var in seen:
            _twin(plan, key, seen[var], source)
            continue
        seen[var] = key
        try:
            tf_name = translate(var, len(entry.shape), strip)
        except ValueError as exc:
            plan.add("unmapped", key, str(exc))
            continue
        _add(plan, key, entry, tf_name, spec, out_config)
    if not plan.rows and not plan.errors:
        plan.add("missing", source.path, "no weights in the file")
    _check_config(plan, config, config_path)
    plan.check_collisions()
    plan.write_options = {"config": out_config, "max_shard_size": options.max_shard_size,
                          "copy_files": _other_files(_directory(source), config_path)}
    plan.details = {"family": f"transformers-tf:{model_type}", "class": cls, "config_source": config_path,
                    "copied": [os.path.basename(p) for p in plan.write_options["copy_files"]], "map": DATA}
    return plan


def _twin(plan: ConversionPlan, key: str, first: str, source: Checkpoint) -> None:
    a, b = source[first], source[key]
    if tuple(a.shape) != tuple(b.shape) or a.dtype != b.dtype:
        plan.add("collision", key, f"{key!r} {list(b.shape)} {b.dtype} and {first!r} {list(a.shape)} {a.dtype} are "
                 "one variable of different shapes")
        return
    plan.add("dropped", key, f"{key!r} left out: the variable {first!r} holds, listed again by another layer",
             WARNING, [key])


def _check_scope(plan: ConversionPlan, variables: dict[str, str], tf_cls: str | None, config_path: str) -> None:
    """Errors for variables outside the model's scopes, and for weights of another class than the config's."""
    scopes: dict[str, list[str]] = {}
    for key, var in variables.items():
        zero = level_zero(var)
        if zero is not None:
            scopes.setdefault(zero, []).append(key)
    own = snake_case(tf_cls) if tf_cls else max(scopes, key=lambda s: len(scopes[s]), default=None)
    if own is not None and own not in scopes and scopes:
        main = max(scopes, key=lambda s: len(scopes[s]))
        plan.add("family", config_path, f"config.json's architectures names {tf_cls}, whose weights are under "
                 f"{own!r}, but the weights are under {main!r} (another class's): give the class that saved them")
        return
    for zero, keys in scopes.items():
        if zero == own:
            continue
        for key in keys:
            parts = [p for p in variables[key].split("/") if p]
            if parts[1] != zero:
                plan.add("unmapped", key, f"unmapped tensor {key!r}: the variable {variables[key]!r} is outside the "
                         f"model's scope {own!r}")


def _rules(spec: dict[str, Any], kind: str, config: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``kind`` rules of a model type (after every model type's ``[defaults]``) whose ``when`` holds and
    whose ``classes`` (a regular expression) matches the PyTorch class."""
    rules = [*models_defaults().get(kind, []), *spec.get(kind, [])]
    for sub in config.values():  # a composite's parts (encoder, decoder): their model types' rules too
        if isinstance(sub, dict) and models().get(str(sub.get("model_type"))) not in (None, spec):
            rules += models()[str(sub["model_type"])].get(kind, [])
    cls = config.get("architectures", [""])[0]
    return [r for r in rules if _holds(r.get("when"), config) and re.search(r.get("classes", ""), cls)]


def _holds(when: str | None, config: dict[str, Any]) -> bool:
    """``field=value`` (the config's field, as text, is value), ``field!=value`` (is not; an absent field is
    ``None``) or None."""
    if when is None:
        return True
    negate = "!=" in when
    name, _, value = when.replace("!=", "=").partition("=")
    return (str(config.get(name.strip())) == value.strip()) != negate


def _add(plan: ConversionPlan, key: str, entry: TensorEntry, tf_name: Any, spec: dict[str, Any],
         config: dict[str, Any]) -> None:
    name, shape, ops = tf_name.name, tuple(entry.shape), []
    for rule in _rules(spec, "drop", config):
        if re.search(rule["match"], name):
            plan.add("dropped", key, f"{key!r} ({name}) left out: {rule['why']}", WARNING, [key])
            return
    axes: list[int] | None = None
    for rule in _rules(spec, "rename", config):
        if re.search(rule["match"], name):
            try:
                to = _filled(rule["to"], config)
            except ValueError as exc:
                plan.add("unmapped", key, f"unmapped tensor {key!r} ({name}): {exc}")
                return
            name, axes = re.sub(rule["match"], to, name), rule.get("permute")
            break
    if axes is not None:
        shape, ops = tuple(shape[a] for a in axes), [f"permute({','.join(str(a) for a in axes)})"]
    elif tf_name.op == TRANSPOSE:
        shape, ops = shape[::-1], [TRANSPOSE]
    elif tf_name.op == CONV2D:
        shape, ops = (shape[3], shape[2], shape[0], shape[1]), [CONV2D]
    for rule in _rules(spec, "reshape", config):
        if re.search(rule["match"], name):
            if "permute" in rule:
                shape, ops = tuple(entry.shape[a] for a in rule["permute"]), [
                    f"permute({','.join(str(a) for a in rule['permute'])})"]
            else:
                try:
                    new = _reshaped(shape, rule["to"], config)
                except (KeyError, ValueError) as exc:
                    plan.add("config", key, f"{key!r} ({name}) {list(entry.shape)}: the configuration gives no "
                             f"shape for it: {exc}")
                    return
                if _count(new) != _count(shape):
                    plan.add("config", key, f"{key!r} ({name}) {list(entry.shape)}: the configuration makes it "
                             f"{list(new)}: the configuration does not describe these weights")
                    return
                if new != shape:
                    shape, ops = new, [*ops, "reshape"]
            break
    value = MappedEntry(entry, name, shape, entry.dtype, tuple(ops)) if ops else entry
    plan.add_row(key, name, value, shape, entry.dtype, "", " + ".join(ops))


def _filled(to: str, config: dict[str, Any]) -> str:
    """A rename's ``to`` (or a reshape's dimension) with each ``{last_true(field)}`` replaced by the index of the last true item of
    the configuration's list ``field`` (CvT's ``cls_token``: the stage holding the class token); ValueError
    naming the field when it is no list of booleans or has no true item."""
    def last_true(match: re.Match[str]) -> str:
        field = match.group(1)
        items = config.get(field)
        if not isinstance(items, list) or not all(isinstance(i, bool) for i in items):
            raise ValueError(f"config.json's {field} is {items!r}, not a list of booleans (one per stage)")
        if True not in items:
            raise ValueError(f"config.json's {field} is {items!r}: no stage holds it, yet the weights have it")
        return str(len(items) - 1 - items[::-1].index(True))

    return re.sub(r"\{last_true\((\w+)\)\}", last_true, to)


def _reshaped(shape: tuple[int, ...], to: Any, config: dict[str, Any]) -> tuple[int, ...]:
    if to == "squeeze":
        return tuple(d for d in shape if d != 1)
    return tuple(_count(shape) if d == "n" else _evaluate(d, config) for d in to)


def _count(shape: tuple[int, ...]) -> int:
    count = 1
    for d in shape:
        count *= d
    return count


def _evaluate(expr: Any, config: dict[str, Any]) -> int:
    from formats.ops.convert.hf.family import evaluate

    return expr if isinstance(expr, int) else evaluate(_filled(str(expr), config), config)


def _check_config(plan: ConversionPlan, config: dict[str, Any], config_path: str) -> None:
    """An error for a word embedding whose rows are not ``vocab_size`` or whose width no width field gives."""
    vocab = config.get("vocab_size")
    widths = {config[f] for f in _WIDTH_FIELDS if isinstance(config.get(f), int)}
    for row in plan.rows:
        if len(row.shape) != 2 or not row.key.endswith(_VOCAB_NAMES) or "position" in row.key:
            continue
        wrong = []
        if isinstance(vocab, int) and row.shape[0] != vocab:
            wrong.append(f"vocab_size={vocab}")
        if widths and row.shape[1] not in widths:
            wrong.append(", ".join(f"{f}={config[f]}" for f in _WIDTH_FIELDS if isinstance(config.get(f), int)))
        if wrong:
            plan.add("config", "; ".join(wrong), f"{config_path}: {'; '.join(wrong)} contradicts "
                     f"{row.source!r} {list(row.shape)}: the configuration does not describe these weights")
        return


def _other_files(directory: str, config_path: str) -> list[str]:
    """Every file of ``directory`` but weights and the config (tokenizer, vocabulary, generation config,
    README), sorted."""
    out = []
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if name == CONFIG or os.path.abspath(path) == os.path.abspath(config_path) or not os.path.isfile(path):
            continue
        if _WEIGHT_FILE.match(name) or name.startswith("."):
            continue
        out.append(path)
    return out
