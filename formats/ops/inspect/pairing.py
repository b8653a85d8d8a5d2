"""Pairing the names a target misses with the names a checkpoint has instead (``doctor``'s suggestions).

Pairs are found in stages, most certain first, and every stage keeps the pairs *scope-consistent*: once
a checkpoint scope (a variable's parent path, ``dnn/hiddenlayer_0``) is paired with a target scope
(``dense``), its other variables only pair into that scope, and no other scope pairs into it.

1. **whole scopes**: a checkpoint scope whose model variables all lack a target name, and a target
   scope whose model variables are all missing, holding the same leaves (after the known renames
   ``weights`` -> ``kernel``, ``biases`` -> ``bias``) with the same shapes and dtypes. A set of leaves
   held by one scope on each side pairs them; several scopes alike on both sides (equally many) pair
   in natural order (``hiddenlayer_2`` before ``hiddenlayer_10``, ``dense_1`` before ``dense_2``).
2. **known renames**: the same name up to ``weights`` -> ``kernel``, ``biases`` -> ``bias``.
3. **unique shapes**: the only unpaired model variable of its shape and dtype on each side.
4. **similar names**: the same shape, dtype and slot kind, and a ``difflib`` ratio >= 0.6.
5. **slots follow their variable**: a paired variable's optimizer slots pair with the target's slots
   of the same suffix under the paired name.

Optimizer state only pairs with optimizer state (stages 4 and 5), never by shape alone.
"""
from __future__ import annotations

import difflib
import re
from collections import defaultdict

from formats.core.model import TensorEntry
from formats.core.records import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["Pair", "pair_names", "KNOWN_RENAMES", "layer_order"]

KNOWN_RENAMES = {"weights": "kernel", "biases": "bias"}


@record(frozen=True)
class Pair:
    """``candidate`` (a checkpoint name) probably is ``missing`` (a target name), for ``reason``."""

    missing: str
    candidate: str
    reason: str


def layer_order(name: str) -> list[object]:
    """Sort key comparing the digit runs inside names as numbers (``dense_2`` before ``dense_10``,
    ``hiddenlayer_9`` before ``hiddenlayer_10``): how Keras and Estimators number layers. Unlike the
    key order of numeric ``/`` segments (``vars/2`` before ``vars/10``) used for Keras 3 variables."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def known_rename(name: str) -> str:
    """``name`` with the known renames applied segment by segment (``a/weights`` -> ``a/kernel``)."""
    return "/".join(KNOWN_RENAMES.get(s, s) for s in name.split("/"))


def _scope(name: str) -> str:
    return name.rpartition("/")[0]


class _Pairing:
    """The state of one pairing: what is left on each side and which scopes go together."""

    def __init__(self, have: dict[str, TensorEntry], want: dict[str, TensorEntry], missing: list[str],
                 free: list[str], slot: Callable[[str], str | None], is_state: Callable[[TensorEntry], bool]):
        self.have, self.want, self.slot, self.is_state = have, want, slot, is_state
        self.missing = list(missing)
        self.free = list(free)
        self.scopes: dict[str, str] = {}  # checkpoint scope -> target scope
        self.pairs: list[Pair] = []

    # -- bookkeeping ------------------------------------------------------------------------------
    def variables(self, names: list[str]) -> list[str]:
        """The model variables (not optimizer state) among ``names``."""
        return [n for n in names if not self.is_state(self.have.get(n) or self.want[n])]

    def fits(self, missing: str, candidate: str) -> bool:
        """Same shape, dtype and kind, and consistent with the scopes paired so far."""
        a, b = self.have[candidate], self.want[missing]
        if (a.shape, a.dtype, self.is_state(a), self.slot(candidate)) != \
                (b.shape, b.dtype, self.is_state(b), self.slot(missing)):
            return False
        if self.slot(candidate) is not None:
            return True  # slots follow their variables (stage 5), or pair by name alone
        mine, theirs = _scope(candidate), _scope(missing)
        paired = self.scopes.get(mine)
        if paired is not None:
            return paired == theirs
        return theirs not in self.scopes.values()

    def accept(self, missing: str, candidate: str, reason: str) -> None:
        self.pairs.append(Pair(missing, candidate, reason))
        self.missing.remove(missing)
        self.free.remove(candidate)
        if self.slot(candidate) is None:
            self.scopes.setdefault(_scope(candidate), _scope(missing))

    # -- stages -----------------------------------------------------------------------------------
    def whole_scopes(self) -> None:
        mine = self._scope_signatures(self.have, self.free, lambda n: n not in self.want)
        theirs = self._scope_signatures(self.want, self.missing, lambda n: n not in self.have)
        for signature, targets in sorted(theirs.items(), key=lambda item: layer_order(item[1][0])):
            sources = mine.get(signature, [])
            if not sources or len(sources) != len(targets):
                continue
            alike = "" if len(targets) == 1 else f"; {len(targets)} scopes alike, paired in order"
            for source, target in zip(sorted(sources, key=layer_order), sorted(targets, key=layer_order)):
                if source in self.scopes or target in self.scopes.values():
                    continue
                why = "known rename" if source == target else \
                    f"whole scope {source or '(root)'} -> {target or '(root)'}: same variables, shapes and dtypes{alike}"
                for leaf in self._leaves(source):
                    new = f"{target}/{known_rename(leaf)}" if target else known_rename(leaf)
                    old = f"{source}/{leaf}" if source else leaf
                    if new in self.missing and old in self.free:
                        self.accept(new, old, why)
                self.scopes[source] = target

    def _leaves(self, scope: str) -> list[str]:
        names = self.variables(self.free)
        return sorted(n[len(scope) + 1:] if scope else n for n in names if _scope(n) == scope)

    def _scope_signatures(self, entries: dict[str, TensorEntry], names: list[str],
                          unmatched: Callable[[str], bool]) -> dict[tuple[tuple[str, ...], ...], list[str]]:
        """Signature (the sorted (leaf, shape, dtype)s) -> scopes whose model variables are all unmatched."""
        complete: dict[str, bool] = defaultdict(lambda: True)
        for name, entry in entries.items():
            if not self.is_state(entry):
                complete[_scope(name)] &= unmatched(name)
        content: dict[str, list[tuple[str, ...]]] = defaultdict(list)
        for name in self.variables(names):
            entry = entries[name]
            content[_scope(name)].append((known_rename(name.rpartition("/")[2]), str(entry.shape), entry.dtype))
        out: dict[tuple[tuple[str, ...], ...], list[str]] = defaultdict(list)
        for scope, leaves in content.items():
            if complete[scope]:
                out[tuple(sorted(leaves))].append(scope)
        return out

    def known_renames(self) -> None:
        for name in list(self.missing):
            pool = [c for c in self.free if known_rename(c) != c and known_rename(c) == name and self.fits(name, c)]
            if pool:
                self.accept(name, pool[0], "known rename")

    def unique_shapes(self) -> None:
        def groups(entries: dict[str, TensorEntry], names: list[str]) -> dict[tuple[object, ...], list[str]]:
            out: dict[tuple[object, ...], list[str]] = defaultdict(list)
            for n in self.variables(names):
                out[(tuple(entries[n].shape), entries[n].dtype)].append(n)
            return out

        mine = groups(self.have, self.free)
        for kind, names in sorted(groups(self.want, self.missing).items(), key=lambda item: item[1][0]):
            sources = mine.get(kind, [])
            if len(names) == 1 and len(sources) == 1 and self.fits(names[0], sources[0]):
                self.accept(names[0], sources[0], "the only unpaired variable of this shape and dtype on each side")

    def similar_names(self) -> None:
        for name in list(self.missing):
            pool = [c for c in self.free if self.fits(name, c)]
            close = difflib.get_close_matches(name, pool, n=1, cutoff=0.6)
            if close:
                ratio = difflib.SequenceMatcher(None, name, close[0]).ratio()
                self.accept(name, close[0], f"same shape and dtype, similar name ({ratio:.2f})")

    def slots_follow(self) -> None:
        for pair in list(self.pairs):
            for candidate in list(self.free):
                if not candidate.startswith(pair.candidate + "/") or self.slot(candidate) is None:
                    continue
                name = pair.missing + candidate[len(pair.candidate):]
                if name in self.missing and self.fits(name, candidate):
                    self.accept(name, candidate, f"slot of {pair.candidate}, follows it")


def pair_names(have: dict[str, TensorEntry], want: dict[str, TensorEntry], missing: list[str], free: list[str],
               slot: Callable[[str], str | None], is_state: Callable[[TensorEntry], bool]) -> list[Pair]:
    """Pairs (target name, checkpoint name, reason) for the ``missing`` target names among the ``free``
    checkpoint names; ``slot(name)`` is a name's slot suffix (None for variables), ``is_state(entry)``
    whether it is optimizer state. See the module doc for the stages."""
    pairing = _Pairing(have, want, missing, free, slot, is_state)
    pairing.whole_scopes()
    pairing.known_renames()
    pairing.slots_follow()
    pairing.unique_shapes()
    pairing.similar_names()
    pairing.slots_follow()
    return sorted(pairing.pairs, key=lambda p: layer_order(p.missing))
