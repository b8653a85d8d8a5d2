"""Write the list of what ``ckpt convert --to hf`` converts into README.md, from the maps themselves.

The block between ``<!-- hf-architectures -->`` and ``<!-- /hf-architectures -->`` in README.md is generated
from ``formats/ops/convert/hf/tf_h5.toml`` (the model types of transformers' own TF weights whose PyTorch base
class transformers 5 has, per ``transformers5.toml``) and ``formats/ops/convert/hf/families/*.toml`` (the
original releases: each family's source layouts and classes). ``tests/test_hf_architectures_doc.py`` fails when
the README's block is not what this prints.

    python scripts/gen_hf_architectures.py          # rewrite README.md's block
    python scripts/gen_hf_architectures.py --check  # exit 1 when it differs
"""
from __future__ import annotations

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HF = ROOT / "formats" / "ops" / "convert" / "hf"
START, END = "<!-- hf-architectures -->", "<!-- /hf-architectures -->"

LAYOUTS = {"tf1": "TF1 name-based", "tf2-model-garden": "Model Garden (TF2)", "mesh-tf": "Mesh TensorFlow",
           "tfhub-saved-model": "TF Hub SavedModel", "tfhub-saved-model-v2": "TF Hub SavedModel (v2 export)",
           "keras-hub": "keras-hub preset", "t5x": "T5X", "openai-npy": "OpenAI npy shards (params_N.npy)",
           "tf-hub-module": "TF1 Hub module variables (name-based)"}
"""How the README names a family's source layout (a layout not listed here is shown by its own name)."""


def _load(path: Path) -> dict:
    with path.open("rb") as f:
        return tomllib.load(f)


def tf_h5_model_types(hf: Path = HF) -> list[str]:
    """The ``model_type``s of ``tf_h5.toml`` whose PyTorch base class transformers 5 has, sorted."""
    classes = _load(hf / "transformers5.toml")["classes"]
    models = _load(hf / "tf_h5.toml")["models"]
    return sorted(name for name, spec in models.items() if spec["base"] in classes.get(name, ()))


def families(hf: Path = HF) -> list[tuple[str, list[str], list[str]]]:
    """(family, its layouts as the README names them, its classes) for every shipped family map, by name."""
    rows = []
    for path in sorted((hf / "families").glob("*.toml")):
        spec = _load(path)
        layouts = list(dict.fromkeys(LAYOUTS.get(str(layout.get("name")), str(layout.get("name")))
                                     for layout in spec.get("layouts", [])))
        classes = list(dict.fromkeys([*(str(c["name"]) for c in spec.get("classes", [])),  # TAPAS's QA class twice
                                      *(str(v["composite"]["class"]) for v in spec.get("variants", [])
                                        if "composite" in v)]))  # a bert2bert module: EncoderDecoderModel
        rows.append((str(spec["family"]), layouts, classes))
    return rows


def tested_model_types(data: Path = ROOT / "tests" / "data" / "hf_h5") -> set[str]:
    """The ``model_type``s of the tiny transformers 4.x TF models the tests convert (``tests/data/hf_h5``)."""
    import json

    return {json.loads(p.read_text(encoding="utf-8"))["model_type"] for p in data.glob("*/config.json")}


def block(hf: Path = HF) -> str:
    """The README's generated block, markers included."""
    types, tested = tf_h5_model_types(hf), tested_model_types()
    lines = [START,
             f"**transformers' own TensorFlow weights** (`tf_model.h5`, or its shards, beside its `config.json`): "
             f"{len(types)} model types, as the class `config.json`'s `architectures` names (`TFBertForSequenceClassification` "
             "-> `BertForSequenceClassification`); each tested on a tiny model of its own (`tests/data/hf_h5/`), but those "
             "marked * (they share another type's rules):",
             ", ".join(f"`{t}`" + ("" if t in tested else "*") for t in types) + ".",
             "",
             "**Original TensorFlow releases** (a map per family, `formats/ops/convert/hf/families/`):",
             "",
             "| family | source layouts | classes |",
             "| --- | --- | --- |"]
    for family, layouts, classes in families(hf):
        lines.append(f"| `{family}` | {', '.join(layouts)} | {', '.join(f'`{c}`' for c in classes)} |")
    lines.append(END)
    return "\n".join(lines)


def rewrite(readme: str, hf: Path = HF) -> str:
    """``readme`` with its block replaced by :func:`block`'s (ValueError without the markers)."""
    start, end = readme.index(START), readme.index(END) + len(END)
    return readme[:start] + block(hf) + readme[end:]


def main(argv: list[str]) -> int:
    readme = ROOT / "README.md"
    text = readme.read_text(encoding="utf-8")
    new = rewrite(text)
    if "--check" in argv:
        return 0 if new == text else 1
    readme.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
