"""The original configuration of a TensorFlow model, found beside its checkpoint and translated into the
``config.json`` transformers reads.

Originals: BERT's ``bert_config.json``, ALBERT's ``albert_config.json``, ELECTRA's hparams, GPT-2's
``hparams.json`` (JSON), and T5's ``operative_config.gin`` (gin: ``name = value`` lines, macros and
``Scope.parameter`` bindings). A family file's ``[config]`` table says how each ``config.json`` field is made::

    [config]
    copy = ["hidden_size", "vocab_size"]     # same name in both
    rename = { n_positions = "n_ctx" }        # config.json field = original field
    require = ["hidden_size"]                 # a missing one is an error naming it
    defaults = { layer_norm_eps = 1e-12, num_decoder_layers = "=num_layers" }  # when the original lacks it
    set = { activation_function = "gelu_new" }  # always
    from_shapes = { vocab_size = "shared/embedding:0" }  # dimension 0 of that tensor, when the original lacks it
    flatten = ["model_hparam_overrides"]      # nested fields laid over the top-level ones
    [config.presets.model_size.small]         # fields a value of a field stands for (ELECTRA's model sizes)
    hidden_size = 256
"""
from __future__ import annotations

import ast
import os
from typing import Any

from formats.core.bounded_json import load_json
from formats.core.errors import CorruptCheckpointError, InputReadError

__all__ = ["find_config", "read_config", "translate", "parse_gin", "ConfigError"]


class ConfigError(InputReadError):
    """An original configuration that is missing or cannot be read."""


def find_config(checkpoint: str, names: list[str]) -> str | None:
    """The first of ``names`` in the checkpoint's directory (and its parent: a release's ``model.ckpt`` may
    sit in a subdirectory), or None."""
    base = checkpoint if os.path.isdir(checkpoint) else os.path.dirname(os.path.abspath(checkpoint))
    for folder in (base, os.path.dirname(base)):
        for name in names:
            candidate = os.path.join(folder, name)
            if os.path.isfile(candidate):
                return candidate
    return None


MAX_JSON_BYTES = 64 << 20
"""Largest JSON configuration or model map read (the ones these families ship are a few KB)."""


def read_config(path: str, kind: str) -> dict[str, Any]:
    """The original configuration at ``path``: ``json`` (an object) or ``gin``."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(path, f"cannot read the model configuration ({getattr(exc, 'strerror', None) or exc})") from None
    if kind == "gin" or path.endswith(".gin"):
        return parse_gin(text)
    try:
        doc = load_json(text, path, "the model configuration", max_bytes=MAX_JSON_BYTES)
    except CorruptCheckpointError as exc:
        raise ConfigError(path, f"not a JSON model configuration: {exc.message}") from None
    if not isinstance(doc, dict):
        raise ConfigError(path, "not a JSON model configuration: expected an object")
    return doc


def parse_gin(text: str) -> dict[str, Any]:
    """The bindings of a gin file: ``d_model = 512`` -> ``{"d_model": 512}``; ``Scope.param = 'x'`` kept
    under ``Scope.param`` and, when no macro has the name, under ``param`` too. Values are Python literals;
    others (``@ref``, ``%MACRO``) are kept as text. Continued lines (open brackets) are joined."""
    out: dict[str, Any] = {}
    plain: dict[str, Any] = {}
    pending = ""
    for line in text.splitlines():
        line = line.split("#", 1)[0].rstrip() if not pending else line.rstrip()
        if not line.strip():
            continue
        pending = f"{pending} {line.strip()}" if pending else line.strip()
        if pending.count("[") > pending.count("]") or pending.count("(") > pending.count(")"):
            continue
        name, sep, value = pending.partition("=")
        pending = ""
        if not sep:
            continue
        name, value = name.strip(), value.strip()
        try:
            parsed: Any = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            parsed = value
        if "." in name or "/" in name:
            out[name] = parsed
            plain.setdefault(name.replace("/", ".").rsplit(".", 1)[-1], parsed)
        else:
            out[name] = parsed
    for name, value in plain.items():
        out.setdefault(name, value)
    return out


def _expanded(original: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    """The original's fields over a preset's (``presets.model_size.small``: ELECTRA's model sizes), and the nested
    tables named in ``flatten`` (ELECTRA's ``model_hparam_overrides``) over both."""
    out: dict[str, Any] = {}
    for field_name, presets in spec.get("presets", {}).items():
        chosen = presets.get(str(original.get(field_name)))
        if isinstance(chosen, dict):
            out.update(chosen)
    out.update(original)
    for name in spec.get("flatten", []):
        if isinstance(original.get(name), dict):
            out.update(original[name])
    return out


def translate(original: dict[str, Any], spec: dict[str, Any], shapes: dict[str, tuple[int, ...]],
              overrides: dict[str, Any]) -> tuple[dict[str, Any], list[str], list[str]]:
    """``config.json``'s fields from the original's by ``spec`` (the family's ``[config]``), ``overrides``
    (``--hparam``) last; also the required fields that are missing, and notes (fields taken from shapes)."""
    from formats.ops.convert.hf.family import evaluate

    original = _expanded(original, spec)
    out: dict[str, Any] = {}
    notes: list[str] = []
    for name in spec.get("copy", []):
        if name in original:
            out[name] = original[name]
    for name, source in spec.get("rename", {}).items():
        if source in original:
            out[name] = original[source]
    for name, value in spec.get("defaults", {}).items():
        if isinstance(value, str) and value.startswith("="):  # computed from other fields ("=4*hidden_size")
            if name not in out:
                try:
                    out[name] = evaluate(value[1:], {**out, **overrides})
                except (KeyError, ValueError):
                    pass
            continue
        out.setdefault(name, value)
    for name, where in spec.get("from_shapes", {}).items():
        if name in out or name in overrides:
            continue
        key, _, dim = where.rpartition(":")
        if key in shapes and int(dim) < len(shapes[key]):
            out[name] = shapes[key][int(dim)]
            notes.append(f"{name} = {out[name]} from the shape of {key}")
    out.update(overrides)
    out.update(spec.get("set", {}))
    missing = [name for name in spec.get("require", []) if name not in out]
    return out, missing, notes
