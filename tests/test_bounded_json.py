"""The nesting depth of JSON read from files (:mod:`formats.core.bounded_json`): measured without numpy for a
skeleton up to 1 MiB (``ckpt ls`` of a small safetensors file imported numpy for its header alone), with numpy
beyond; both give the depth counted one character at a time, strings left out."""
from __future__ import annotations

import json
import random

import pytest

from formats.core import bounded_json


def _oracle(text: str) -> int:
    """The deepest nesting, counted character by character outside strings (escapes honoured)."""
    depth = deepest = 0
    inside = escaped = False
    for ch in text:
        if inside:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                inside = False
        elif ch == '"':
            inside = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


_STRINGS = ['"\\\\\\"["', '"a\\\\"', '"\\u0022["', '"\\\\\\\\"', '"{\\\\\\"}\\\\"', '"\\n]\\t"', '"\\ud800{"', '"\\\\u0022"']
"""Strings whose escapes a measure must pair as a reader does: a backslash and a quote, a backslash ending the
string, a quote spelled in hex, two backslashes, brackets between escaped quotes, other escapes."""


def _texts() -> list[str]:
    rng = random.Random(38)
    texts = ["", "1", "[]", "{}", '"[[["', '["]", "[", {"a": "\\"[{"}]', "]]][[", "[[[]]]" * 3, "{" * 70 + "}" * 70]
    for _ in range(300):
        texts.append("".join(rng.choice(['[', ']', '{', '}', '"a"', '"[\\"]"', ', ', '1', '"é"', '"\\\\"', *_STRINGS])
                             for _ in range(rng.randint(0, 40))))
    value: object = 0
    for i in range(30):
        value = [value, {"k": value}] if i % 2 else {"x": [value]}
    for _ in range(100):  # valid JSON whose strings hold escapes and brackets
        nested: object = rng.choice(["[", '"', "\\", 'x"]\\', "\u00e9"])
        for _ in range(rng.randint(0, 12)):
            nested = rng.choice([[nested], {rng.choice(['k"', "\\[", "{"]): nested}, [nested, '"]]\\']])
        texts.append(json.dumps(nested))
    return texts + [json.dumps(value)]


@pytest.mark.parametrize("small", [True, False])
def test_the_depth_is_the_depth_counted_by_hand(small, monkeypatch):
    if not small:
        monkeypatch.setattr(bounded_json, "_SMALL", -1)  # every text through numpy
    for text in _texts():
        assert bounded_json.nesting_depth(text) == max(0, _oracle(text)), text
