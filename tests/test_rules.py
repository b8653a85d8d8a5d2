"""Rename rules: prefix maps on whole segments, regexes, prefixes, files, first match wins."""
from __future__ import annotations

import pytest

from formats.ops.rules import RuleError, build_rules, dump_rules, load_rules, parse_pair


def test_map_has_segment_prefix_semantics():
    rules = build_rules(maps=["dnn/hiddenlayer_0=dense", "dnn/logits/=dense_2/"])
    assert rules.apply("dnn/hiddenlayer_0/kernel") == "dense/kernel"
    assert rules.apply("dnn/hiddenlayer_0") == "dense"
    assert rules.apply("dnn/hiddenlayer_01/kernel") == "dnn/hiddenlayer_01/kernel"
    assert rules.apply("dnn/logits/bias/Adagrad") == "dense_2/bias/Adagrad"
    assert rules.unused() == []


def test_first_matching_rule_wins_and_unused_rules_are_reported():
    rules = build_rules(maps=["a=b", "a/x=c", "nothing=here"])
    assert rules.apply("a/x/k") == "b/x/k"
    assert [str(r) for r in rules.unused()] == ["--map a/x=c", "--map nothing=here"]


def test_regex_and_prefixes():
    rules = build_rules(regexes=[r"^(.*)/weights$=\1/kernel"], strip_prefix="tower_0")
    assert rules.apply("layer/weights") == "layer/kernel"
    assert rules.apply("tower_0/dense/bias") == "dense/bias"
    assert build_rules(add_prefix="model").apply("dense/bias") == "model/dense/bias"


def test_bad_rules_are_clean_errors(tmp_path):
    with pytest.raises(RuleError, match="needs OLD=NEW"):
        parse_pair("map", "no-equals")
    with pytest.raises(RuleError, match="bad regular expression"):
        parse_pair("regex", "(unclosed=x")
    bad = tmp_path / "r.json"
    bad.write_text("{not json")
    with pytest.raises(RuleError, match="not a valid rules file") as info:
        load_rules(bad)
    assert info.value.path == str(bad)


def test_rules_files_toml_json_and_round_trip(tmp_path):
    toml = tmp_path / "r.toml"
    toml.write_text('[[rules]]\nmap = ["dnn/hiddenlayer_0", "dense"]\n[[rules]]\nregex = "^x=y"\n')
    rules = load_rules(toml)
    assert [(r.kind, r.old, r.new) for r in rules] == [("map", "dnn/hiddenlayer_0", "dense"), ("regex", "^x", "y")]
    js = tmp_path / "r.json"
    js.write_text(dump_rules(rules))
    assert load_rules(js) == rules
    ruleset = build_rules(maps=["a=b"], rules_file=str(js))
    assert [r.kind for r in ruleset.rules] == ["map", "regex", "map"]


def test_strip_prefix_leaves_the_prefix_itself_alone():
    rules = build_rules(strip_prefix="net/")
    assert rules.apply("net/l1/kernel") == "l1/kernel"
    assert rules.apply("net") == "net"  # never the empty name
    assert rules.apply("network/l1") == "network/l1"
    assert rules.unused() == []


def test_specific_rules_first():
    from formats.ops.rules import Rule, RuleSet, specific_first

    rules = [Rule("map", "dnn", "model"), Rule("regex", "^x$", "y"), Rule("map", "dnn/logits/kernel", "head/w"),
             Rule("map", "dnn/logits", "head"), Rule("strip-prefix", "tower_0")]
    ordered = specific_first(rules)
    assert [str(r) for r in ordered] == ["--map dnn/logits/kernel=head/w", "--regex ^x$=y", "--map dnn/logits=head",
                                         "--map dnn=model", "--strip-prefix tower_0"]
    ruleset = RuleSet(ordered)
    assert [ruleset.apply(n) for n in ("dnn/logits/kernel", "dnn/logits/bias", "dnn/h0/bias")] == [
        "head/w", "head/bias", "model/h0/bias"]
    assert ruleset.unused() == [rules[1], rules[4]]
