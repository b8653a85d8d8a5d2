"""Optional tier: a bert2bert module (``tests/data/hf/bert_generation_bert2bert``: encoder and decoder stacks over one
embedding table) converted by ``ckpt convert --to hf`` and opened by transformers 5 as an ``EncoderDecoderModel``.

The oracle is transformers 4.57.6's bert2bert recipe (``generators/make_originals_f.py``: each half loaded by
``load_tf_weights_in_bert_generation``, joined by ``EncoderDecoderModel(encoder=, decoder=)``): transformers 5 loads
ckpt's directory with ``EncoderDecoderModel`` and with ``AutoModelForSeq2SeqLM`` (``AutoModel`` has no class for
an ``encoder-decoder`` config) with no missing, unexpected or mismatched key; every tensor of its state dict equals
the golden one bitwise (the decoder's lm head tied as transformers 5 ties it); its eval-mode outputs with
``decoder_input_ids`` equal, bitwise, those transformers 5 gives from the oracle's own files, and are within
:data:`TOLERANCE` of 4.57's; greedy generation gives the same tokens from both.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.interop.hf5 import model_outputs, transformers5

pytestmark = pytest.mark.interop

torch, transformers = transformers5()

HF_DATA = Path(__file__).resolve().parent.parent / "data" / "hf"
CASE = "bert_generation_bert2bert"
GOLDEN = HF_DATA / "golden" / CASE
TOLERANCE = 2e-5
"""Largest |difference| from transformers 4.57's outputs, relative to max(1, |value|) (8.1e-6 measured, November 2026,
transformers 5.23.0: its BERT-generation decoder alone is 5.3e-6 from 4.57's, tests/interop/test_hf_transformers5.py)."""


@pytest.fixture
def converted(run_cli, tmp_path: Path) -> Path:
    out = tmp_path / "hf"
    result = run_cli("convert", HF_DATA / CASE / "model.ckpt-5", "-o", out, "--to", "hf",
                     "--hparam", "num_attention_heads=4")
    assert result.exit_code == 0, result.output
    return out


def _fresh(model):
    """Every parameter in memory of its own (a view of the mapped file can take another kernel path)."""
    with torch.no_grad():
        for param in model.parameters():
            param.data = param.data.clone()
    return model.eval()


def _oracle_dir(tmp_path: Path) -> Path:
    where = tmp_path / "oracle"
    where.mkdir()
    for name in ("config.json", "model.safetensors"):
        (where / name).write_bytes((GOLDEN / name).read_bytes())
    return where


@pytest.mark.parametrize("how", ["EncoderDecoderModel", "AutoModelForSeq2SeqLM"])
def test_transformers5_loads_the_directory_with_the_oracles_tensors(converted: Path, how: str) -> None:
    from safetensors.numpy import load_file

    torch.manual_seed(1234)  # a parameter left at its initial value would differ from the oracle's
    model, info = getattr(transformers, how).from_pretrained(converted, output_loading_info=True)
    assert type(model).__name__ == "EncoderDecoderModel"
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"], info
    expected = load_file(str(GOLDEN / "model.safetensors"))
    state = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    assert sorted(state) == sorted(expected)
    for key, value in expected.items():
        assert state[key].dtype == value.dtype and state[key].tobytes() == value.tobytes(), key
    tied = model.decoder.lm_head.decoder.weight
    assert tied.data_ptr() == model.decoder.bert.embeddings.word_embeddings.weight.data_ptr()
    assert model.encoder.embeddings.word_embeddings.weight.data_ptr() != \
        model.decoder.bert.embeddings.word_embeddings.weight.data_ptr()  # not tie_encoder_decoder


def test_transformers5_gives_the_oracles_outputs(converted: Path, tmp_path: Path) -> None:
    cls = transformers.EncoderDecoderModel
    inputs = dict(np.load(GOLDEN / "inputs.npz"))
    assert "decoder_input_ids" in inputs
    wanted = dict(np.load(GOLDEN / "outputs.npz"))
    ours = model_outputs(_fresh(cls.from_pretrained(converted)), inputs, use_cache=False)
    theirs = model_outputs(_fresh(cls.from_pretrained(_oracle_dir(tmp_path))), inputs, use_cache=False)
    assert sorted(ours) == sorted(theirs) == sorted(wanted)
    for key in wanted:
        assert np.array_equal(ours[key], theirs[key]), key
        diff = np.abs(ours[key].astype(np.float64) - wanted[key]) / np.maximum(1.0, np.abs(wanted[key]))
        assert diff.max() <= TOLERANCE, (key, float(diff.max()))


def test_greedy_generation_gives_the_oracles_tokens(converted: Path, tmp_path: Path) -> None:
    inputs = dict(np.load(GOLDEN / "inputs.npz"))
    kwargs = {"input_ids": torch.from_numpy(inputs["input_ids"]),
              "attention_mask": torch.from_numpy(inputs["attention_mask"]),
              "decoder_start_token_id": 2, "pad_token_id": 0, "eos_token_id": 1,  # BertGenerationConfig's bos, pad, eos
              "max_new_tokens": 6, "do_sample": False, "num_beams": 1}
    cls = transformers.EncoderDecoderModel
    with torch.no_grad():
        ours = _fresh(cls.from_pretrained(converted)).generate(**kwargs)
        theirs = _fresh(cls.from_pretrained(_oracle_dir(tmp_path))).generate(**kwargs)
    assert ours.shape[1] > 1 and torch.equal(ours, theirs)
