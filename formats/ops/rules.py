"""Rename rules shared by ``convert``, ``rename``, ``diff`` and ``doctor``.

A rule rewrites a name (a TF1-style variable name, or an object path):

- ``map``: ``OLD=NEW`` with prefix semantics on whole ``/``-separated segments, like
  ``tf.compat.v1.train.init_from_checkpoint``'s ``{'old_scope/': 'new_scope/'}``:
  ``dnn/hiddenlayer_0=dense`` turns ``dnn/hiddenlayer_0/kernel`` into ``dense/kernel`` and leaves
  ``dnn/hiddenlayer_01/kernel`` alone. An empty OLD matches every name (NEW is prepended).
- ``regex``: ``PATTERN=REPL`` with Python ``re.sub`` semantics (``\\1`` back-references).
- ``add-prefix`` / ``strip-prefix``: a segment prefix added to every name, or removed from the names
  under it (``--strip-prefix net`` turns ``net/l1/kernel`` into ``l1/kernel`` and leaves the name
  ``net`` itself alone: an object path or key cannot become empty, and in an object-based checkpoint
  the edge ``net`` keeps its place while its children move up to the root).

Rules are tried in order; the first that matches a name rewrites it and no later rule applies.
A :class:`RuleSet` remembers which rules matched nothing, so callers can warn about them.
Rules files are TOML or JSON: ``{"rules": [{"map": ["old", "new"]}, {"regex": ["pat", "repl"]},
{"add-prefix": "model"}, {"strip-prefix": "tower_0"}]}`` (TOML: ``[[rules]]`` tables with one key each).
"""
from __future__ import annotations

import os
import sys

from formats.core.records import field, record
from formats.core.errors import InputReadError, UsageError

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["Rule", "RuleSet", "RuleError", "parse_pair", "load_rules", "build_rules", "dump_rules", "specific_first"]

KINDS = ("map", "regex", "add-prefix", "strip-prefix")


class RuleError(UsageError):
    """A rule that cannot be parsed or compiled (the path is the rules file, if any)."""


@record(frozen=True)
class Rule:
    """One rewrite: ``kind`` is one of map, regex, add-prefix, strip-prefix."""

    kind: str
    old: str
    new: str = ""

    def __str__(self) -> str:
        if self.kind in ("add-prefix", "strip-prefix"):
            return f"--{self.kind} {self.old}"
        return f"--{self.kind} {self.old}={self.new}"

    def apply(self, name: str) -> str | None:
        """The rewritten name, or None when this rule does not match ``name``."""
        if self.kind == "map":
            return _map_prefix(name, self.old.strip("/"), self.new.strip("/"))
        if self.kind == "regex":
            import re  # only for --regex rules (start-up)

            new, count = re.subn(self.old, self.new, name)
            return new if count else None
        if self.kind == "add-prefix":
            return f"{self.old.strip('/')}/{name}" if self.old.strip("/") else name
        return _strip_prefix(name, self.old.strip("/"))


def _map_prefix(name: str, old: str, new: str) -> str | None:
    if not old:
        return f"{new}/{name}" if new else name
    if name == old:
        return new
    if name.startswith(old + "/"):
        rest = name[len(old) + 1:]
        return f"{new}/{rest}" if new else rest
    return None


def _strip_prefix(name: str, prefix: str) -> str | None:
    """``name`` without the segment prefix ``prefix``; None unless ``name`` lies strictly under it."""
    if prefix and name.startswith(prefix + "/"):
        return name[len(prefix) + 1:]
    return None


@record
class RuleSet:
    """An ordered list of rules; :meth:`apply` rewrites a name with the first rule that matches."""

    rules: list[Rule] = field(default_factory=list)
    _used: set[int] = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.rules)

    def apply(self, name: str) -> str:
        """``name`` rewritten by the first matching rule (unchanged when none matches)."""
        for i, rule in enumerate(self.rules):
            new = rule.apply(name)
            if new is not None:
                self._used.add(i)
                return new
        return name

    def unused(self) -> list[Rule]:
        """Rules that have matched nothing so far."""
        return [r for i, r in enumerate(self.rules) if i not in self._used]


def parse_pair(kind: str, text: str, source: str = "") -> Rule:
    """``OLD=NEW`` (map, regex) or a bare prefix (add-prefix, strip-prefix) -> a checked :class:`Rule`."""
    if kind not in KINDS:
        raise RuleError(source, f"unknown rule kind {kind!r} (expected one of {', '.join(KINDS)})")
    if kind in ("add-prefix", "strip-prefix"):
        return Rule(kind, text)
    if "=" not in text:
        raise RuleError(source, f"a {kind} rule needs OLD=NEW, got {text!r}")
    old, new = text.split("=", 1)
    if kind == "regex":
        import re  # only for --regex rules (start-up)

        try:
            re.compile(old)
        except re.error as exc:
            raise RuleError(source, f"bad regular expression {old!r}: {exc}") from None
    return Rule(kind, old, new)


def _rule_from_item(item: object, source: str) -> Rule:
    if not isinstance(item, dict) or len(item) != 1:
        raise RuleError(source, f"each rule must be a table with one key ({', '.join(KINDS)}), got {item!r}")
    ((kind, value),) = item.items()
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value):
        return parse_pair(kind, f"{value[0]}={value[1]}", source) if kind in ("map", "regex") \
            else parse_pair(kind, value[0], source)
    if isinstance(value, str):
        return parse_pair(kind, value, source)
    raise RuleError(source, f"rule {kind!r} needs \"OLD=NEW\" or [OLD, NEW], got {value!r}")


def load_rules(path: str | os.PathLike[str]) -> list[Rule]:
    """Rules from a TOML (``.toml``) or JSON file: ``{"rules": [...]}`` or a bare JSON list."""
    source = os.fspath(path)
    try:
        with open(source, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise InputReadError(source, f"cannot read rules file ({exc.strerror})", errno=exc.errno) from None
    try:
        if source.endswith(".toml"):
            if sys.version_info >= (3, 11):
                import tomllib
            else:  # Python 3.10
                import tomli as tomllib
            doc: object = tomllib.loads(raw.decode("utf-8"))
        else:
            import json

            doc = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise RuleError(source, f"not a valid rules file: {exc}") from None
    items = doc.get("rules") if isinstance(doc, dict) else doc
    if not isinstance(items, list):
        raise RuleError(source, 'expected a list of rules under "rules"')
    return [_rule_from_item(item, source) for item in items]


def build_rules(maps: Iterable[str] = (), regexes: Iterable[str] = (), rules_file: str | None = None,
                add_prefix: str | None = None, strip_prefix: str | None = None) -> RuleSet:
    """The RuleSet for command-line options: rules file first, then --map, --regex, then prefixes."""
    rules = load_rules(rules_file) if rules_file else []
    rules += [parse_pair("map", m) for m in maps]
    rules += [parse_pair("regex", r) for r in regexes]
    if strip_prefix:
        rules.append(parse_pair("strip-prefix", strip_prefix))
    if add_prefix:
        rules.append(parse_pair("add-prefix", add_prefix))
    return RuleSet(rules)


def specific_first(rules: Iterable[Rule]) -> list[Rule]:
    """``rules`` ordered so that no rule is shadowed by one before it: a map or strip-prefix rule comes
    before every map or strip-prefix rule whose prefix contains its own (``a/b=x`` before ``a=y``, which
    would otherwise rewrite ``a/b/...`` first and leave ``a/b=x`` matching nothing). Regex and
    add-prefix rules keep their places; the order is otherwise kept."""
    rules = list(rules)
    slots = [i for i, r in enumerate(rules) if r.kind in ("map", "strip-prefix")]
    depth = {i: -len(rules[i].old.strip("/").split("/")) if rules[i].old.strip("/") else 0 for i in slots}
    ordered = sorted(slots, key=lambda i: (depth[i], i))
    out = list(rules)
    for place, i in zip(slots, ordered):
        out[place] = rules[i]
    return out


def dump_rules(rules: Iterable[Rule]) -> str:
    """A JSON rules file for ``rules`` (what ``doctor --write-rules`` writes)."""
    import json

    items = [{r.kind: [r.old, r.new] if r.kind in ("map", "regex") else r.old} for r in rules]
    return json.dumps({"rules": items}, indent=2) + "\n"
