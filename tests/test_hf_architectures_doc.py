"""The README's list of what ``convert --to hf`` converts is the maps' (issue 37: "lists every supported
architecture, generated from the maps, checked by a test").

``scripts/gen_hf_architectures.py`` writes the block from the data files; this test regenerates it from the data
files the installed package holds and compares, and checks the list against the test data independently: every
model type of a tiny transformers 4.x TF model under ``tests/data/hf_h5`` is listed, and every family map the
package ships is a row.
"""
from __future__ import annotations

import importlib.util
import json
import re

from .installed import ROOT, package_dir

SCRIPT = ROOT / "scripts" / "gen_hf_architectures.py"


def _script():
    spec = importlib.util.spec_from_file_location("gen_hf_architectures", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _readme_block() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start, end = text.index("<!-- hf-architectures -->"), text.index("<!-- /hf-architectures -->")
    return text[start:end + len("<!-- /hf-architectures -->")]


def test_the_readme_block_is_what_the_installed_maps_give() -> None:
    hf = package_dir("formats") / "ops" / "convert" / "hf"
    assert _readme_block() == _script().block(hf), "run python scripts/gen_hf_architectures.py"


def test_every_tested_tf_model_type_and_every_family_is_listed() -> None:
    block = _readme_block()
    listed = set(re.findall(r"`([a-z0-9_-]+)`\*?(?:,|\.)", block.split("\n")[2]))
    tested = {json.loads(p.read_text(encoding="utf-8"))["model_type"]
              for p in (ROOT / "tests" / "data" / "hf_h5").glob("*/config.json")}
    assert tested and tested <= listed
    rows = set(re.findall(r"^\| `([a-z0-9_]+)` \|", block, flags=re.M))
    shipped = {p.stem for p in (package_dir("formats") / "ops" / "convert" / "hf" / "families").glob("*.toml")}
    assert rows == shipped
