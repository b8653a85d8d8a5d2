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
    from_shapes = { vocab_size = "shared/embedding:0" }  # dimension 0 of that tensor (or of the first name a
                                              # pattern such as "model/regression_{t}/logit/kernel" matches)
    from_presence = { tie_word_embeddings = "!decoder/logits/kernel" }  # whether that tensor is there (! absent),
                                              # when the original lacks it
    divides = { hidden_size = "num_attention_heads" }  # hidden_size must be a multiple (checked: .check)
    flatten = ["model_hparam_overrides"]      # nested fields laid over the top-level ones
    count = { num_hidden_layers = "layer_with_weights-0/layer_with_weights-{n:d}/_output_dense/kernel{*}" }
                                              # how many source names match (a model map pattern)
    unsupported = ["rope_frequency_adjustment_factor"]  # original fields the map cannot carry: absent or null
    only = { use_post_ffw_norm = [false] }    # original fields the map carries only with these values
    [config.presets.model_size.small]         # fields a value of a field stands for (ELECTRA's model sizes)
    hidden_size = 256
"""
from __future__ import annotations

import ast
import os

from formats.core.bounded_json import load_json
from formats.core.errors import CorruptCheckpointError, InputReadError

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["find_config", "read_config", "translate", "parse_gin", "ConfigError", "UnsupportedConfigError"]


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
    """The original configuration at ``path``: ``json`` (an object), ``keras-hub`` (a preset's ``config.json``:
    the backbone's ``config`` object, with its ``class_name``), ``keras-metadata:NODE`` (a Keras SavedModel's
    ``keras_metadata.pb``: the configuration of the Keras object at ``NODE``) or ``gin``."""
    if kind.startswith("keras-metadata:"):
        from formats.ops.convert.hf.keras_metadata import read_keras_metadata

        return read_keras_metadata(path, kind.partition(":")[2])
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(path, f"cannot read the model configuration ({getattr(exc, 'strerror', None) or exc})") from None
    if kind == "gin" or path.endswith(".gin"):
        return parse_gin(text, path)
    try:
        doc = load_json(text, path, "the model configuration", max_bytes=MAX_JSON_BYTES)
    except CorruptCheckpointError as exc:
        raise ConfigError(path, f"not a JSON model configuration: {exc.message}") from None
    if not isinstance(doc, dict):
        raise ConfigError(path, "not a JSON model configuration: expected an object")
    if kind == "keras-hub":
        if not isinstance(doc.get("config"), dict):
            raise ConfigError(path, "not a keras-hub preset configuration: no \"config\" object")
        return {**doc["config"], "class_name": doc.get("class_name")}
    return doc


_OPENING = {"]": "[", ")": "(", "}": "{"}


def _scan(line: str, stack: list[tuple[str, int]], number: int) -> tuple[str, str | None]:
    """``line`` without its comment, the brackets it opens pushed onto ``stack`` (with ``number``, the line they
    open on) and those it closes popped; brackets and ``#`` inside quotes are text. Also what is wrong (a closing
    bracket that closes nothing, or another kind), else None."""
    quote = ""
    escaped = False
    for at, char in enumerate(line):
        if quote:
            escaped = char == "\\" and not escaped
            if char == quote and not escaped:
                quote = ""
            continue
        if char in "'\"":
            quote = char
        elif char == "#":
            return line[:at], None
        elif char in "[({":
            stack.append((char, number))
        elif char in _OPENING:
            if not stack or stack[-1][0] != _OPENING[char]:
                return line, f"{char!r} closes no {_OPENING[char]!r}"
            stack.pop()
    return line, None


def parse_gin(text: str, path: str = "") -> dict[str, Any]:
    """The bindings of a gin file: ``d_model = 512`` -> ``{"d_model": 512}``; ``Scope.param = 'x'`` kept
    under ``Scope.param`` and, when no macro has the name, under ``param`` too. Values are Python literals;
    others (``@ref``, ``%MACRO``) are kept as text. Continued lines (open brackets) are joined, in time linear in
    the text; a bracket that is never closed, or closed by another kind, is a :class:`ConfigError` naming
    ``path`` and the line (gin refuses such a file, and everything after it would be lost)."""
    out: dict[str, Any] = {}
    plain: dict[str, Any] = {}
    pending: list[str] = []
    stack: list[tuple[str, int]] = []
    for number, line in enumerate(text.splitlines(), 1):
        line, wrong = _scan(line, stack, number)
        if wrong is not None:
            raise ConfigError(path, f"line {number}: not a gin configuration: {wrong}")
        if not line.strip():
            continue
        pending.append(line.strip())
        if stack:
            continue
        name, sep, value = " ".join(pending).partition("=")
        pending = []
        if not sep:
            continue
        name, value = name.strip(), value.strip()
        try:
            parsed: Any = ast.literal_eval(value)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            parsed = value
        if "." in name or "/" in name:
            out[name] = parsed
            plain.setdefault(name.replace("/", ".").rsplit(".", 1)[-1], parsed)
        else:
            out[name] = parsed
    if stack:
        raise ConfigError(path, f"line {stack[0][1]}: not a gin configuration: {stack[0][0]!r} is never closed "
                                "(everything after it would be one binding)")
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


class UnsupportedConfigError(ValueError):
    """An original configuration field whose value a model map cannot carry (``field`` names it)."""

    def __init__(self, field_name: str, value: Any, allowed: str) -> None:
        super().__init__(f"{field_name} = {json_text(value)} ({allowed})")
        self.field, self.value, self.allowed = field_name, value, allowed


def _check_supported(original: dict[str, Any], spec: dict[str, Any]) -> None:
    """:class:`UnsupportedConfigError` naming an original field whose value the map cannot carry into
    ``config.json`` (a keras-hub Llama's rope scaling, a Gemma 2's soft caps): converting it anyway would change
    the model's outputs."""
    for name in spec.get("unsupported", []):
        if original.get(name) is not None:
            raise UnsupportedConfigError(name, original[name], "only null")
    for name, allowed in spec.get("only", {}).items():
        if name in original and original[name] not in allowed:
            raise UnsupportedConfigError(name, original[name], f"only {' or '.join(json_text(a) for a in allowed)}")


def json_text(value: Any) -> str:
    """``value`` as JSON writes it (``false``, ``1.0``)."""
    import json

    return json.dumps(value)


def translate(original: dict[str, Any], spec: dict[str, Any], shapes: dict[str, tuple[int, ...]],
              overrides: dict[str, Any]) -> tuple[dict[str, Any], list[str], list[str]]:
    """``config.json``'s fields from the original's by ``spec`` (the family's ``[config]``), ``overrides``
    (``--hparam``) last; also the required fields that are missing, and notes (fields taken from shapes or from
    which tensors are there)."""
    from formats.ops.convert.hf.family import evaluate

    original = _expanded(original, spec)
    _check_supported(original, spec)
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
                    out[name] = evaluate(value[1:], {**original, **out, **overrides})
                except (KeyError, ValueError):
                    pass
            continue
        out.setdefault(name, value)
    for name, where in spec.get("from_shapes", {}).items():
        if name in out or name in overrides:
            continue
        key, _, dim = where.rpartition(":")
        if "{" in key:  # a name pattern (XLNet's model/regression_{task}/logit/kernel): the first key it matches
            from formats.ops.convert.hf.family import Pattern

            regex = Pattern(key).regex({})
            key = next((k for k in sorted(shapes) if regex.match(k)), key)
        if key in shapes and int(dim) < len(shapes[key]):
            out[name] = shapes[key][int(dim)]
            notes.append(f"{name} = {out[name]} from the shape of {key}")
    for name, key in spec.get("from_presence", {}).items():
        if name not in out and name not in overrides:
            out[name] = (key.lstrip("!") in shapes) != key.startswith("!")
            notes.append(f"{name} = {out[name]} from the checkpoint: it holds {'no ' * (key.lstrip('!') not in shapes)}"
                         f"{key.lstrip('!')}")
    for name, pattern in spec.get("count", {}).items():
        if name not in out and name not in overrides:
            from formats.ops.convert.hf.family import Pattern

            regex = Pattern(pattern).regex({})
            out[name] = sum(1 for key in shapes if regex.match(key))
            notes.append(f"{name} = {out[name]}, the number of source tensors named {pattern}")
    _computed_defaults(out, spec, original, overrides)  # again: some are computed from fields the shapes gave
    out.update(overrides)
    out.update(spec.get("set", {}))
    missing = [name for name in spec.get("require", []) if name not in out]
    return {k: v for k, v in out.items() if not k.startswith("_")}, missing, notes


def _computed_defaults(out: dict[str, Any], spec: dict[str, Any], original: dict[str, Any],
                       overrides: dict[str, Any]) -> None:
    """The ``defaults`` computed from other fields (``"=_inner_dim/num_heads"``) still missing, now that the shapes
    gave theirs; a field named with a leading ``_`` is such a helper, left out of ``config.json``."""
    from formats.ops.convert.hf.family import evaluate

    for name, value in spec.get("defaults", {}).items():
        if isinstance(value, str) and value.startswith("=") and name not in out:
            try:
                out[name] = evaluate(value[1:], {**original, **out, **overrides})
            except (KeyError, ValueError):
                pass
