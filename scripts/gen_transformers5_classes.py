"""Write ``formats/ops/convert/hf/transformers5.toml``: every model class transformers 5 has, per ``model_type``.

    /work/venv/bin/python scripts/gen_transformers5_classes.py

(any environment with transformers >= 5). The classes are those of transformers' auto mappings
(``transformers.models.auto.modeling_auto``'s ``*_MAPPING_NAMES``: every ``AutoModelFor...`` a config.json's
``model_type`` can open) and each model module's ``__all__`` (classes such as ``ElectraForPreTraining`` that no
auto mapping names), the ones ``transformers`` exports; ``--to hf`` refuses to write a ``config.json`` whose
``architectures`` names a class not listed for its ``model_type`` (:mod:`formats.ops.convert.hf.check`).
``tests/interop/test_hf_config_checks.py`` checks the file against the installed transformers.
"""
from __future__ import annotations

import importlib
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "formats" / "ops" / "convert" / "hf" / "transformers5.toml"


def classes_by_model_type() -> dict[str, list[str]]:
    """model_type -> the sorted model classes transformers (>= 5) exports for it."""
    import transformers
    from transformers.models.auto import configuration_auto, modeling_auto

    found: dict[str, set[str]] = {}
    for name in dir(modeling_auto):
        if name.endswith("_MAPPING_NAMES"):
            for model_type, value in getattr(modeling_auto, name).items():
                found.setdefault(model_type, set()).update(value if isinstance(value, (list, tuple)) else [value])
    for model_type in configuration_auto.CONFIG_MAPPING_NAMES:
        module_name = configuration_auto.model_type_to_module_name(model_type)
        try:
            module = importlib.import_module(f"transformers.models.{module_name}.modeling_{module_name}")
        except Exception:  # noqa: BLE001 - a model without a PyTorch module (or one needing extras)
            continue
        found.setdefault(model_type, set()).update(getattr(module, "__all__", []))
    return {t: sorted(c for c in names if not c.endswith(("Config", "PreTrainedModel", "PretrainedModel"))
                      and isinstance(getattr(transformers, c, None), type))
            for t, names in sorted(found.items())}


def main() -> None:
    import transformers

    if int(transformers.__version__.split(".")[0]) < 5:
        sys.exit(f"needs transformers >= 5, found {transformers.__version__}")
    lines = ["# Every model class transformers 5 has, per config.json model_type: written by",
             "# scripts/gen_transformers5_classes.py (do not edit by hand). `--to hf` checks a config.json's",
             "# architectures against it before anything is written.",
             f'transformers = "{transformers.__version__}"', "", "[classes]"]
    for model_type, names in classes_by_model_type().items():
        if names:
            lines.append(f'"{model_type}" = [{", ".join(chr(34) + n + chr(34) for n in names)}]')
    OUT.write_text("\n".join(lines) + "\n")
    print(OUT, len(lines) - 6, "model types")


if __name__ == "__main__":
    main()
