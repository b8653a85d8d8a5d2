"""Optional tier: the tokenizer ``ckpt convert PRESET --to hf`` writes for a keras-hub preset, loaded by transformers
5's ``AutoTokenizer`` as vLLM and SGLang load it (issue 37, item 4).

Oracle: ``tests/data/keras_hub/<case>/golden/tokens.json``, the ids the original transformers 5 tokenizer gave on
fixed texts (with and without its special tokens) before keras-hub's own converter made the preset's tokenizer
from it (``tests/data/keras_hub/generators/make_tokenizers.py``, which also checked keras-hub's ids equal them).
``nfkc_tokenizer``'s oracle is keras-hub's tokenizer itself (sentencepiece normalizing by ``nmt_nfkc``, which no
transformers class does). Where keras-hub's tokenizer differs from that transformers one (BERT's accents: ``keras_hub_only``), keras-hub's
ids, which the model was tuned with. Loaded offline from the output directory alone; the test environment has no sentencepiece, so Gemma's
``tokenizer.json`` is what loads. Needs transformers >= 5; skipped where it is missing.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.interop.hf5 import transformers5

pytestmark = pytest.mark.interop

_, transformers = transformers5(need_torch=False)

KERAS_HUB = Path(__file__).resolve().parent.parent / "data" / "keras_hub"
CLASSES = {"bert": "BertTokenizer", "gpt2": "GPT2Tokenizer", "gemma": "GemmaTokenizer",
           "llama": "TokenizersBackend", "llama_tied": "TokenizersBackend", "llama2_tokenizer": "TokenizersBackend",
           "nfkc_tokenizer": "TokenizersBackend"}
ALONE = {"llama2_tokenizer": "llama", "nfkc_tokenizer": "gemma"}
"""Tokenizers alone -> the preset whose weights the test gives them."""


@pytest.mark.parametrize("case", sorted(CLASSES))
def test_autotokenizer_gives_the_original_tokenizers_ids(run_cli, tmp_path: Path, monkeypatch, case: str) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "hf"
    preset = KERAS_HUB / case / "preset"
    if case in ALONE:  # a tokenizer alone: another preset's weights with it
        from tests.test_hf_keras_hub_tokenizer import llama2_preset, nfkc_preset

        preset = (llama2_preset if case == "llama2_tokenizer" else nfkc_preset)(tmp_path)
    result = run_cli("convert", preset, "-o", out, "--to", "hf")
    assert result.exit_code == 0, result.output
    golden = json.loads((KERAS_HUB / case / "golden" / "tokens.json").read_text())
    tokenizer = transformers.AutoTokenizer.from_pretrained(out)
    assert type(tokenizer).__name__ == CLASSES[case]
    assert [tokenizer(text)["input_ids"] for text in golden["texts"]] == golden["input_ids"]
    assert [tokenizer(text, add_special_tokens=False)["input_ids"] for text in golden["texts"]] == \
        golden["input_ids_without_special_tokens"]
    only = golden.get("keras_hub_only")
    if only:  # where keras-hub's tokenizer differs from the transformers one it came from, keras-hub's ids
        assert [tokenizer(t, add_special_tokens=False)["input_ids"] for t in only["texts"]] == only["keras_hub_ids"]
    config = transformers.AutoConfig.from_pretrained(out)
    model_config = json.loads((KERAS_HUB / ALONE.get(case, case) / "golden" / "config.json").read_text())
    for name in ("bos_token_id", "eos_token_id", "pad_token_id"):
        token = getattr(tokenizer, name)
        if model_config.get(name) is not None:
            assert getattr(config, name) == model_config[name] == token, name
    text = golden["texts"][1]
    decoded = tokenizer.decode(tokenizer(text)["input_ids"], skip_special_tokens=True)
    assert decoded == (text.lower() if case == "bert" else text)
