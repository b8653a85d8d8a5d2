"""A model family's map, read from its data file (``families/<name>.toml``, or a user's ``--rules FILE``).

The file says, as data::

    family = "bert"                      # the name --family takes
    model_type = "bert"                  # config.json's model_type
    config_files = ["bert_config.json"]  # the original configuration, looked for beside the checkpoint
    config_format = "json"               # json, or gin (T5's operative_config.gin)

    [[layouts]]                          # one source layout or more (BERT: TF1 name-based, TF2 Model Garden)
    name = "tf1"
    detect = "bert/encoder/layer_{i:d}/attention/self/query/kernel"
    [[layouts.map]]                      # a source name -> a target parameter, with the transforms
    from = "bert/encoder/layer_{i:d}/attention/self/{p:query|key|value}/kernel"
    to = "bert.encoder.layer.{i}.attention.self.{p}.weight"
    ops = ["transpose"]                  # reshape, transpose (in order); dtype = "float32" casts
    [[layouts.drop]]                     # a source name left out on purpose, and why
    match = "{*}/adam_m"
    why = "Adam first moment (optimizer slot)"

    [[params]]                           # every parameter of the target class, its shape from the config
    name = "bert.encoder.layer.{i}.attention.self.{p:query|key|value}.weight"
    shape = ["hidden_size", "hidden_size"]
    each = { i = "num_hidden_layers" }
    group = "base"                       # classes choose groups
    [[tied]]                             # a parameter transformers ties to another (not stored)
    name = "cls.predictions.decoder.weight"
    to = "bert.embeddings.word_embeddings.weight"
    when = "tie_word_embeddings"         # optional, as a parameter's ``when`` (``a!=b``, ``flag``, ``!flag``)
    [[classes]]                          # the target classes, the first whose groups the source fills wins
    name = "BertForPreTraining"
    groups = ["base", "pretraining"]
    strip = ""                           # a prefix the class's own names lack (BertModel: "bert.")
    [[variants]]                         # optional: T5 v1.0 / v1.1, told apart by a name
    name = "v1.1"
    detect = "encoder/block_{i:03d}/layer_001/DenseReluDense/wi_0/kernel"
    set = { feed_forward_proj = "gated-gelu" }  # config.json fields
    groups = ["gated"]                   # parameter groups it adds to the class's
                                         # (detect may be a list: each pattern matches a key; refuse = "why":
                                         # a source the map recognises and does not convert, one error;
                                         # composite + [[variants.halves]]: two models in one source, as
                                         # transformers' composite class, :mod:`.composite`)

A layout may also carry its own ``config_files`` (``[]``: none; every field from the shapes), ``config_format``
and ``[layouts.config]`` (used instead of the family's), ``config_class`` (the ``class_name`` a keras-hub
``config.json`` must name), and ``like`` + ``prefix``: the map and drop rules of the layout named ``like``, for
source names that carry ``prefix`` before them (a TF Hub SavedModel holds the Model Garden encoder as the
``layer_with_weights-0`` of the model it exports). Object-based checkpoints and SavedModels are matched by every
object path of each variable (:func:`formats.ops.convert.hf.names.source_names`), not only the stored key.

A map rule's ``concat = { over = "p", axis = 1 }`` joins the tensors of every word of ``{p:a|b|c}`` into its one
``to`` (:mod:`.joins`). A map rule's ``source_shape`` (config expressions) makes a ``reshape`` invertible for ``--to tf-name``;
a map rule's ``split = { i = "n_layer" }`` maps one source tensor to one target per value of ``{i}`` (a
placeholder of ``to`` only), the source's first axis holding the parts in order (XLNet's ``r_w_bias``
[n_layer, n_head, d_head] as each layer's [n_head, d_head]); ``zero_rows = ["pad_token_id"]`` writes those rows
(config expressions) as zeros (Pegasus's script zeroes the padding token's embedding); a parameter's
``zeros = "why"`` writes it as zeros when no source tensor fills it (a bias the original model does not have),
with a warning naming it and why; ``also = ["..."]`` copies the source to more parameters (BigBird-Pegasus's
one position table, the encoder's and the decoder's); ``config_from = { field = "placeholder" }`` records a
placeholder's value in config.json (XLNet's fine-tuning task, which ``--to tf-name`` needs to name the head back);
``into = { axis = 1, at = "n_embd", size = "n_embd" }`` makes the source one piece of the target, at that offset
along that axis (ImageGPT's q, k and v projections side by side in c_attn; the pieces must tile the target);
``detect_automatically = false`` keeps a map out of family detection (ELECTRA's generator shares the
discriminator's names).
A map rule's ``locate = { i = "block_sizes" }`` reads ``{i}`` as a global layer number over consecutive blocks of
those sizes (a list field) and gives ``to`` ``{i_block}`` and ``{i_layer}``, the block and the layer within it;
past the last block, ``{i_block}`` is the number of blocks and ``{i_layer}`` counts on from 0 (Funnel-Transformer
numbers its encoder layers, then its decoder's, globally; transformers by block). A parameter's ``locate`` is the
same: ``encoder.blocks.{i_block}.{i_layer}.ffn.linear_1.weight`` with ``locate = { i = "block_sizes" }`` is one
parameter per layer of every block.

A parameter's ``shape`` may name an item of a list field: ``type_vocab_sizes[6]`` (TAPAS's seven token-type
tables, one size each).

Patterns: ``{name}`` is one name part (no ``/``), ``{name:d}`` digits, ``{name:03d}`` three digits,
``{name:d+4}`` digits whose value is the placeholder's plus 4, ``{name:_d}`` Keras's suffix of a
repeated name (none for 0, ``_1``, ``_2``, ...), ``{name:a|b}`` one of the words,
``{=expr}`` the configuration's value of ``expr`` (``num_hidden_layers+4``), ``{*}`` anything (slashes too).
The same placeholders fill ``to`` (numbers plain; a ``/`` in a value becomes ``.``, the separator of parameter
names, and back in the reverse direction). The configuration's translation is :mod:`.config`'s.
"""
from __future__ import annotations

import os
import re
import sys
from formats.core.records import field, record

from formats.core.errors import InputReadError, UsageError

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Family", "Layout", "MapRule", "DropRule", "Param", "Pattern", "FamilyError", "load_family",
           "family_names", "read_family_file", "FAMILIES_DIR", "evaluate", "holds", "locate", "global_index", "PLACEHOLDER", "is_model_map"]

FAMILIES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "families")
PLACEHOLDER = re.compile(r"\{([^{}]*)\}")


class FamilyError(UsageError):
    """A model map file that cannot be read as one (the path is the file)."""


def evaluate(expr: str, values: dict[str, Any]) -> int:
    """``expr`` (``hidden_size``, ``4*n_embd``, ``hidden_size/64``, ``num_hidden_layers+4``, ``12``, and
    ``max(1,hidden_size/64)`` as a whole expression; ``type_vocab_sizes[6]``, an item of a list field) with ``values`` (``/`` divides without remainder); KeyError
    naming a field ``values`` lacks, ValueError for a field that is not an integer."""
    expr = expr.replace(" ", "")
    if expr.startswith("max(") and expr.endswith(")"):
        return max(evaluate(arg, values) for arg in expr[4:-1].split(","))
    total = 0
    for term in expr.replace(" ", "").replace("-", "+-").split("+"):
        if not term:
            continue
        sign, term = (-1, term[1:]) if term.startswith("-") else (1, term)
        product, op = 1, "*"
        for factor in re.split(r"([*/])", term):
            if factor in ("*", "/"):
                op = factor
                continue
            item = re.fullmatch(r"(\w+)\[(\d+)\]", factor)  # one item of a list field: type_vocab_sizes[6]
            value = _item(values, item.group(1), int(item.group(2))) if item else int(factor) if factor.isdigit() \
                else values[factor]
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{factor} is {value!r}, not an integer")
            product = product * value if op == "*" else product // value
        total += sign * product
    return total


def _item(values: dict[str, Any], name: str, index: int) -> Any:
    """Item ``index`` of the list field ``name`` (KeyError when absent, ValueError when not a list that long)."""
    items = values[name]
    if not isinstance(items, list) or not 0 <= index < len(items):
        raise ValueError(f"{name} is {items!r}, not a list with an item {index}")
    return items[index]


def _sizes(values: dict[str, Any], name: str) -> list[int]:
    sizes = values[name]
    if not isinstance(sizes, list) or not sizes or not all(type(n) is int and n > 0 for n in sizes):
        raise ValueError(f"{name} is {sizes!r}, not a list of block sizes")
    return sizes


def locate(index: int, values: dict[str, Any], name: str) -> tuple[int, int]:
    """The block and the layer within it of global layer ``index`` over blocks of the sizes ``values[name]``
    (past the last block: the number of blocks, and the count on from 0); KeyError, ValueError as :func:`evaluate`."""
    sizes = _sizes(values, name)
    for block, size in enumerate(sizes):
        if index < size:
            return block, index
        index -= size
    return len(sizes), index


def global_index(block: int, layer: int, values: dict[str, Any], name: str) -> int:
    """The global layer number of ``layer`` in ``block`` (the inverse of :func:`locate`)."""
    return sum(_sizes(values, name)[:block]) + layer


def holds(condition: str | None, values: dict[str, Any]) -> bool:
    """Whether ``condition`` holds for ``values``: None (always), ``a!=b``, ``a==b`` (fields or integers),
    ``flag`` or ``!flag`` (a boolean field, true when absent), ``?field`` / ``!?field`` (the field is given / is
    not: XLNet's num_labels, known only from a classifier's shape)."""
    if condition is None:
        return True
    if condition.lstrip("!").startswith("?"):
        return (condition.lstrip("!")[1:] in values) != condition.startswith("!")
    for op in ("!=", "=="):
        if op in condition:
            left, right = (evaluate(side.strip(), values) for side in condition.split(op, 1))
            return (left != right) if op == "!=" else (left == right)
    negate = condition.startswith("!")
    return bool(values.get(condition.lstrip("!"), True)) != negate


@record
class Pattern:
    """A name pattern (see the module docstring), compiled once the configuration is known."""

    text: str

    def kinds(self) -> dict[str, str]:
        """Each named placeholder's kind (``{p:query|key}`` -> ``{"p": "query|key"}``; ``""`` when it has none)."""
        out = {}
        for m in PLACEHOLDER.finditer(self.text):
            name, _, kind = m.group(1).partition(":")
            if not name.startswith("=") and name != "*":
                out[name] = kind
        return out

    def regex(self, config: dict[str, Any], kinds: dict[str, str] | None = None) -> re.Pattern[str]:
        """The anchored regular expression of the pattern for ``config``; ``kinds`` gives placeholders without
        a kind of their own one (a map's ``to`` read backwards takes its ``from``'s words)."""
        out, at = [], 0
        for m in PLACEHOLDER.finditer(self.text):
            out.append(re.escape(self.text[at:m.start()]))
            spec = m.group(1)
            if kinds and ":" not in spec and kinds.get(spec):
                spec = f"{spec}:{kinds[spec]}"
            out.append(self._group(spec, config))
            at = m.end()
        out.append(re.escape(self.text[at:]))
        return re.compile("".join(out) + r"\Z")

    @staticmethod
    def _group(spec: str, config: dict[str, Any]) -> str:
        if spec == "*":
            return r".+"
        if spec.startswith("="):
            return re.escape(str(evaluate(spec[1:], config)))
        name, _, kind = spec.partition(":")
        if not kind:
            return rf"(?P<{name}>[^/]+)"
        if kind == "_d":
            return Pattern._suffix_group(name)
        if "|" in kind or not re.fullmatch(r"0?\d*d(\+\d+)?", kind):
            return rf"(?P<{name}>{'|'.join(re.escape(w) for w in kind.split('|'))})"
        width = re.match(r"0(\d+)d", kind)
        return rf"(?P<{name}>\d{{{width.group(1)}}})" if width else rf"(?P<{name}>\d+)"

    @staticmethod
    def _suffix_group(name: str) -> str:
        return rf"(?P<{name}>(?:_[1-9]\d*)?)"

    def values(self, match: re.Match[str]) -> dict[str, str]:
        """The placeholders' values of a match, offsets (``{i:d+4}``) taken off and numbers made plain."""
        found = dict(match.groupdict())
        for m in PLACEHOLDER.finditer(self.text):
            name, _, kind = m.group(1).partition(":")
            if name in found and kind == "_d":
                found[name] = found[name][1:] or "0"
                continue
            if name in found and re.fullmatch(r"0?\d*d(\+\d+)?", kind or "x"):
                offset = int(kind.partition("+")[2] or 0)
                found[name] = str(int(found[name]) - offset)
        return found

    def fill(self, values: dict[str, str], config: dict[str, Any]) -> str:
        """The pattern with its placeholders replaced by ``values`` (for ``to``: ``{i}`` is the number)."""
        def one(m: re.Match[str]) -> str:
            spec = m.group(1)
            if spec.startswith("="):
                return str(evaluate(spec[1:], config))
            name, _, kind = spec.partition(":")
            value = values[name]
            if kind == "_d":
                return "" if value == "0" else f"_{value}"
            width = re.match(r"0(\d+)d", kind)
            offset = int(kind.partition("+")[2] or 0) if re.fullmatch(r"0?\d*d(\+\d+)?", kind or "x") else 0
            if width or offset:
                number = int(value) + offset
                return f"{number:0{width.group(1)}d}" if width else str(number)
            return value
        return PLACEHOLDER.sub(one, self.text)


@record
class MapRule:
    """``from`` (a source name pattern) -> ``to`` (a target parameter), with ``ops`` and an optional cast."""

    source: Pattern
    target: Pattern
    ops: tuple[str, ...] = ()
    dtype: str | None = None
    source_shape: list[str] | None = None
    split: dict[str, str] | None = None
    zero_rows: list[str] | None = None
    also: list[Pattern] = field(default_factory=list)
    config_from: dict[str, str] = field(default_factory=dict)
    into: dict[str, Any] | None = None
    concat: dict[str, Any] | None = None
    locate: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.source.text} -> {self.target.text}"


@record
class DropRule:
    """Source names left out on purpose, and ``why``."""

    match: Pattern
    why: str


@record
class Layout:
    """One source layout of a family: how to recognise it, its map and drop rules."""

    name: str
    detect: list[Pattern]
    maps: list[MapRule]
    drops: list[DropRule]
    prefix: str = ""
    config: dict[str, Any] | None = None
    config_files: list[str] | None = None
    config_format: str | None = None
    config_class: list[str] = field(default_factory=list)


@record
class Param:
    """A target parameter pattern with its shape (config expressions), the config fields it repeats over
    (``each``: placeholder -> count field) and its ``group``."""

    name: Pattern
    shape: list[str]
    each: dict[str, str] = field(default_factory=dict)
    group: str = "base"
    when: str | None = None
    zeros: str | None = None
    locate: dict[str, str] = field(default_factory=dict)


@record
class Family:
    """A model family's map, as read from its file (``path``)."""

    name: str
    path: str
    model_type: str
    config_files: list[str]
    config_format: str
    layouts: list[Layout]
    params: list[Param]
    tied: dict[str, str]
    classes: list[dict[str, Any]]
    config: dict[str, Any]
    variants: list[dict[str, Any]]
    tied_when: dict[str, str] = field(default_factory=dict)
    raw: dict[str, Any] = field(repr=False, default_factory=dict)

    def layout_of(self, keys: list[str], config: dict[str, Any]) -> Layout | None:
        """The first layout one of whose ``detect`` patterns matches a key of ``keys``."""
        for layout in self.layouts:
            for pattern in layout.detect:
                regex = pattern.regex(config)
                if any(regex.match(k) for k in keys):
                    return layout
        return None


def family_names() -> list[str]:
    """The families shipped with ckpt (their file names), sorted."""
    return sorted(f[:-5] for f in os.listdir(FAMILIES_DIR) if f.endswith(".toml"))


def read_family_file(path: str) -> dict[str, Any]:
    """A family file's TOML as a dict (FamilyError, InputReadError for a file that is not one)."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise InputReadError(path, f"cannot read model map ({exc.strerror})", errno=exc.errno) from None
    if path.endswith(".json"):
        from formats.core.bounded_json import load_json
        from formats.core.errors import CorruptCheckpointError

        try:
            doc = load_json(raw, path, "the model map", max_bytes=64 << 20)
        except CorruptCheckpointError as exc:
            raise FamilyError(path, f"not a valid model map (JSON): {exc.message}") from None
        if not isinstance(doc, dict):
            raise FamilyError(path, "not a valid model map: expected an object")
        return doc
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10
        import tomli as tomllib
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise FamilyError(path, f"not a valid model map (TOML): {exc}") from None


def load_family(name_or_path: str) -> Family:
    """A shipped family by name (``bert``) or a user's map file by path."""
    if os.sep in name_or_path or name_or_path.endswith((".toml", ".json")):
        return _parse(read_family_file(name_or_path), name_or_path)
    if name_or_path not in family_names():
        raise FamilyError("", f"unknown model family {name_or_path!r} (ckpt knows {', '.join(family_names())})")
    path = os.path.join(FAMILIES_DIR, f"{name_or_path}.toml")
    return _parse(read_family_file(path), path)


def _need(doc: dict[str, Any], key: str, kind: type, path: str, where: str = "") -> Any:
    value = doc.get(key)
    if not isinstance(value, kind):
        raise FamilyError(path, f"{where}{key!r} must be a {kind.__name__}, got {value!r}")
    return value


def _parse(doc: dict[str, Any], path: str) -> Family:
    layouts: list[Layout] = []
    for item in _need(doc, "layouts", list, path):
        layouts.append(_layout(item, path, {lay.name: lay for lay in layouts}))
    params = [Param(Pattern(_need(p, "name", str, path, "params: ")), list(_need(p, "shape", list, path, "params: ")),
                    dict(p.get("each", {})), str(p.get("group", "base")), p.get("when"), p.get("zeros"),
                    dict(p.get("locate", {})))
              for p in doc.get("params", [])]
    tied = {_need(t, "name", str, path, "tied: "): _need(t, "to", str, path, "tied: ") for t in doc.get("tied", [])}
    return Family(name=_need(doc, "family", str, path), path=path, model_type=str(doc.get("model_type", doc["family"])),
                  config_files=list(doc.get("config_files", [])), config_format=str(doc.get("config_format", "json")),
                  layouts=layouts, params=params, tied=tied, classes=list(doc.get("classes", [])),
                  config=dict(doc.get("config", {})), variants=list(doc.get("variants", [])),
                  tied_when={t["name"]: t["when"] for t in doc.get("tied", []) if "when" in t}, raw=doc)


def _layout(item: dict[str, Any], path: str, earlier: dict[str, Layout]) -> Layout:
    detect = item.get("detect", [])
    like = item.get("like")
    if like is not None and like not in earlier:
        raise FamilyError(path, f"layout {item.get('name')!r}: 'like' names no earlier layout ({like!r})")
    maps = []
    for rule in item.get("map", []):
        ops = tuple(rule.get("ops", ()))
        bad = [op for op in ops if op not in ("reshape", "transpose") and not re.fullmatch(r"permute:\d+(,\d+)+", op)]
        if bad:
            raise FamilyError(path, f"map {rule.get('from')!r}: unknown op {bad[0]!r} (reshape, transpose, "
                              "permute:AXES)")
        source = Pattern(_need(rule, "from", str, path, "map: "))
        concat = rule.get("concat")
        if concat is not None and (not isinstance(concat, dict) or not isinstance(concat.get("axis"), int)
                                   or "|" not in source.kinds().get(str(concat.get("over")), "")):
            raise FamilyError(path, f"map {rule.get('from')!r}: concat must be {{ over = a placeholder with words, "
                              "axis = an integer }")
        maps.append(MapRule(source, Pattern(_need(rule, "to", str, path, "map: ")), ops, rule.get("dtype"),
                            rule.get("source_shape"), rule.get("split"), rule.get("zero_rows"),
                            [Pattern(str(a)) for a in rule.get("also", [])], dict(rule.get("config_from", {})),
                            rule.get("into"), concat, dict(rule.get("locate", {}))))
    drops = [DropRule(Pattern(_need(d, "match", str, path, "drop: ")), _need(d, "why", str, path, "drop: "))
             for d in item.get("drop", [])]
    if like is not None:
        maps, drops = maps + earlier[like].maps, drops + earlier[like].drops
    files = item.get("config_files")
    return Layout(str(item.get("name", "default")), [Pattern(d) for d in ([detect] if isinstance(detect, str) else detect)],
                  maps, drops, str(item.get("prefix", "")), item.get("config"), None if files is None else list(files),
                  item.get("config_format"), list(item.get("config_class", [])))


def is_model_map(path: str) -> bool:
    """Whether the rules file at ``path`` is a model map (it names a ``family``), not a list of rename rules."""
    try:
        doc = read_family_file(path)
    except FamilyError:
        return False
    return isinstance(doc, dict) and "family" in doc
