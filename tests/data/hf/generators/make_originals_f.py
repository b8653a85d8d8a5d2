"""BERT-generation: Google's bertseq2seq TF Hub modules' variables, and the oracle's answer for them (issue 37).

    /work/origa-venv/bin/python tests/data/hf/generators/make_originals_f.py [checkpoints] [golden] [case ...]
        [--out DIR]

(case: bert_generation_encoder, bert_generation_decoder, bert_generation_bert2bert)

(the oracle venv: tensorflow-cpu 2.21, torch==2.13.0 CPU, transformers 4.57.6; default: both steps, every case
below). Step ``checkpoints`` writes tests/data/hf/<case>/, step ``golden`` writes tests/data/hf/golden/<case>/ (or
DIR/<case>/) with make_golden.py's own functions.

A bertseq2seq module is a TF1 ``hub.Module``; transformers 4.x's ``load_tf_weights_in_bert_generation`` (run by
convert_tf_hub_seq_to_seq_bert_to_pytorch.py with ``model_class="bert"``) reads the module's ``variable_map``: the
names of its variables, of which it drops the first two path components ("module/bert/" in its comment). The
checkpoints here hold those names (``module/bert/embeddings/...``, ``module/bert/encoder|decoder/layer_N/...``) in a
TF1 name-based checkpoint (``tf.compat.v1.train.Saver``), ``global_step`` beside them. The oracle venv has neither
``tensorflow_hub`` nor ``tensorflow_text``, which the loader imports: this script puts stand-ins in
``sys.modules`` (:func:`hub_stand_in`): ``hub.Module(path).variable_map`` maps every variable name of the checkpoint
at ``path`` to a ``tf.compat.v1`` variable initialised from it, and the loader runs unchanged on that.

- ``bert_generation_encoder``: an encoder module (embeddings: word, position, LayerNorm; ``encoder/layer_N/``:
  ``attention/self/query|key|value``, ``attention/output/dense``, ``attention/output/LayerNorm``,
  ``intermediate/dense``, ``output/dense``, ``output/LayerNorm``), as ``BertGenerationEncoder`` (``is_encoder=True``).
- ``bert_generation_decoder``: a decoder module (the stack named ``decoder``; each layer also
  ``attention/encdec/query|key|value`` and ``attention/encdec_output/dense|LayerNorm``), as ``BertGenerationDecoder``
  (``is_encoder_named_decoder=True``): the loader fills ``model.bert``; the lm head is not in the module
  (``lm_head.bias`` stays at its initial zeros, ``lm_head.decoder.weight`` is tied to the word embeddings).

Configuration: the script built ``BertConfig.from_pretrained("google-bert/bert-large-cased", vocab_size=...,
max_position_embeddings=512, is_decoder=True, add_cross_attention=True)`` for both; the oracle here builds a
``BertGenerationConfig`` with the module's own sizes (hidden 32, 4 heads, intermediate 48, 2 layers, vocab 40,
positions 16; hidden_act gelu, layer_norm_eps 1e-12, as bert-large-cased), ``is_decoder`` and
``add_cross_attention`` true for the decoder only (the script's encoder had them too: a causal mask and
cross-attention parameters no module fills). 32 is not BERT's 64 per head: ``ckpt convert`` is given
``--hparam num_attention_heads=4`` (cases.json ``convert_options``). The decoder's inputs add
``encoder_hidden_states`` (batch 2, length 6, hidden) so that the cross-attention weights reach the outputs.
"""
from __future__ import annotations

import sys
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402

from tfwrite import clean, save_tf1, value  # noqa: E402

ROOT = HERE.parent
SEEDS = {"bert_generation_encoder": 49, "bert_generation_decoder": 50}
SIZES = {"vocab_size": 40, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
         "intermediate_size": 48, "max_position_embeddings": 16}
"""The tiny modules' sizes."""
CASES: dict[str, dict] = {
    "bert_generation_encoder": {
        "family": "bert_generation", "layout": "tf-hub-module", "checkpoint": "bert_generation_encoder/model.ckpt-5",
        "config": "bert_generation_encoder/model.ckpt-5.index", "class": "BertGenerationEncoder",
        "loader": "load_tf_weights_in_bert_generation", "convert_options": ["--hparam", "num_attention_heads=4"],
        "golden_made_by": "make_originals_f.py"},
    "bert_generation_decoder": {
        "family": "bert_generation", "layout": "tf-hub-module", "checkpoint": "bert_generation_decoder/model.ckpt-5",
        "config": "bert_generation_decoder/model.ckpt-5.index", "class": "BertGenerationDecoder",
        "loader": "load_tf_weights_in_bert_generation", "convert_options": ["--hparam", "num_attention_heads=4"],
        "golden_made_by": "make_originals_f.py", "untouched": ["lm_head.bias", "lm_head.decoder.bias"]},
}


def module_shapes(stack: str) -> dict[str, list[int]]:
    """The module's variable names (with the two leading components the loader drops) and shapes."""
    h, f, p = SIZES["hidden_size"], SIZES["intermediate_size"], "module/bert"
    out = {f"{p}/embeddings/word_embeddings": [SIZES["vocab_size"], h],
           f"{p}/embeddings/position_embeddings": [SIZES["max_position_embeddings"], h],
           f"{p}/embeddings/LayerNorm/gamma": [h], f"{p}/embeddings/LayerNorm/beta": [h]}
    attentions = ["attention/self/query", "attention/self/key", "attention/self/value", "attention/output/dense"]
    if stack == "decoder":
        attentions += ["attention/encdec/query", "attention/encdec/key", "attention/encdec/value",
                       "attention/encdec_output/dense"]
    norms = ["attention/output/LayerNorm", "output/LayerNorm"] + (["attention/encdec_output/LayerNorm"]
                                                                  if stack == "decoder" else [])
    for i in range(SIZES["num_hidden_layers"]):
        layer = f"{p}/{stack}/layer_{i}"
        for a in attentions:
            out.update({f"{layer}/{a}/kernel": [h, h], f"{layer}/{a}/bias": [h]})
        out.update({f"{layer}/intermediate/dense/kernel": [h, f], f"{layer}/intermediate/dense/bias": [f],
                    f"{layer}/output/dense/kernel": [f, h], f"{layer}/output/dense/bias": [h]})
        for n in norms:
            out.update({f"{layer}/{n}/gamma": [h], f"{layer}/{n}/beta": [h]})
    return out


def make_checkpoint(case: str) -> None:
    d = ROOT / case
    clean(d)
    stack = "decoder" if case.endswith("decoder") else "encoder"
    tensors = {n: value(SEEDS[case], n, sh) for n, sh in module_shapes(stack).items()}
    print(save_tf1(d / "model.ckpt", tensors, global_step=5, write_checkpoint_file=True), len(tensors), "variables")


def hub_stand_in() -> None:
    """``tensorflow_hub`` and ``tensorflow_text`` stand-ins in ``sys.modules``: ``hub.Module(path)`` is the
    checkpoint at ``path`` as TF1 graph variables, ``variable_map`` naming each by its checkpoint name."""
    import tensorflow as tf

    class Module:
        def __init__(self, path: str) -> None:
            v1 = tf.compat.v1
            self.variable_map = {name: v1.Variable(tf.train.load_variable(path, name), name=name)
                                 for name, _ in tf.train.list_variables(path)}

    sys.modules["tensorflow_hub"] = types.SimpleNamespace(Module=Module)  # type: ignore[assignment]
    sys.modules["tensorflow_text"] = types.ModuleType("tensorflow_text")


def make_golden_case(case: str, out: Path = ROOT / "golden") -> None:
    import make_golden as mg
    import torch

    transformers = mg.transformers
    decoder = case.endswith("decoder")

    def config_of(spec: dict):
        extra = {"is_decoder": True, "add_cross_attention": True} if decoder else {}
        return transformers.BertGenerationConfig(**SIZES, hidden_act="gelu", layer_norm_eps=1e-12, **extra)

    plain_inputs = mg.inputs_for

    def load(spec: dict, model, config, prefix: str, tf2_script) -> None:
        from transformers.models.bert_generation.modeling_bert_generation import load_tf_weights_in_bert_generation

        hub_stand_in()
        import tensorflow as tf

        with tf.Graph().as_default():  # the loader disables eager execution and runs a v1 Session
            load_tf_weights_in_bert_generation(model, prefix, model_class="bert", is_encoder_named_decoder=decoder,
                                               is_encoder=not decoder)

    def inputs_for(spec: dict, config) -> dict:
        got = plain_inputs(spec, config)
        if decoder:
            rng = np.random.default_rng(20261125)
            got["encoder_hidden_states"] = rng.standard_normal((2, 6, config.hidden_size)).astype(np.float32)
        return got

    def outputs_of(model, inputs: dict, family: str) -> dict:
        kwargs = {k: torch.from_numpy(v) for k, v in inputs.items()}
        with torch.no_grad():
            result = model(**kwargs, use_cache=False, output_hidden_states=True)
        got: dict = {}
        for key, val in result.items():
            if isinstance(val, torch.Tensor):
                got[key] = val.numpy()
            elif isinstance(val, tuple):
                got.update({f"{key}.{i}": t.numpy() for i, t in enumerate(val)})
        return got

    plain_trace = mg.trace_sources

    def trace_sources(state: dict, prefix: str) -> tuple[dict[str, str], list[str]]:
        sources, unused = plain_trace(state, prefix)
        for key, found in sources.items():  # the decoder's lm head: no module variable, the loader's initial zeros
            if found == "-" and not state[key].detach().numpy().any():
                sources[key] = "zeros (no checkpoint variable: the loader's initial ones)"
        return sources, unused

    mg.CONFIGS["bert_generation"] = config_of
    mg.load, mg.inputs_for, mg.outputs_of, mg.trace_sources = load, inputs_for, outputs_of, trace_sources
    mg.CASES.update(CASES)
    record = mg.make(case, CASES[case], out, None)
    print(case, "untouched:", record["untouched"], "messages:", record["loader_messages"],
          "not in state dict:", record["checkpoint_variables_not_in_state_dict"])


BERT2BERT = "bert_generation_bert2bert"
"""A module holding both stacks (a bert2bert: ``module/bert/encoder/...`` and ``module/bert/decoder/...``, one
embedding table), not in cases.json (its class, EncoderDecoderModel, is no BERT-generation class): its tests are
tests/test_hf_bert2bert.py and tests/interop/test_hf_bert2bert_transformers5.py."""
BERT2BERT_SEED = 51


def make_bert2bert_checkpoint() -> None:
    """tests/data/hf/bert_generation_bert2bert/: the encoder module's variables and the decoder module's, the
    embeddings once (both stacks read them)."""
    d = ROOT / BERT2BERT
    clean(d)
    shapes = {**module_shapes("encoder"), **module_shapes("decoder")}
    tensors = {n: value(BERT2BERT_SEED, n, sh) for n, sh in shapes.items()}
    print(save_tf1(d / "model.ckpt", tensors, global_step=5, write_checkpoint_file=True), len(tensors), "variables")


def make_bert2bert_golden(out: Path = ROOT / "golden") -> None:
    """golden/bert_generation_bert2bert/: transformers 4.x's bert2bert recipe (the google/bert2bert_* and
    roberta2roberta_* model cards' conversion), each half by its own loader run, unchanged: the encoder a
    ``BertGenerationEncoder`` loaded with ``is_encoder=True`` (the decoder stack skipped), the decoder a
    ``BertGenerationDecoder`` (``is_decoder``, ``add_cross_attention``) loaded with ``is_encoder_named_decoder=True``
    (the encoder stack skipped), then ``EncoderDecoderModel(encoder=..., decoder=...)`` (``tie_encoder_decoder``
    false: the stacks are not shared). Written as make_golden.py writes a case: the state dict (tied tensors
    included), save_pretrained's config.json, inputs (with ``decoder_input_ids``) and eval-mode outputs,
    oracle.json (what was left at init, each tensor's checkpoint variable by value)."""
    import make_golden as mg
    import torch

    transformers = mg.transformers
    from transformers.models.bert_generation.modeling_bert_generation import load_tf_weights_in_bert_generation

    torch.manual_seed(0)
    torch.set_num_threads(1)
    prefix = str(ROOT / BERT2BERT / "model.ckpt-5")
    common = {**SIZES, "hidden_act": "gelu", "layer_norm_eps": 1e-12}
    encoder = transformers.BertGenerationEncoder(transformers.BertGenerationConfig(**common))
    decoder = transformers.BertGenerationDecoder(
        transformers.BertGenerationConfig(**common, is_decoder=True, add_cross_attention=True))
    initial = {**{f"encoder.{k}": v.detach().clone() for k, v in encoder.state_dict().items()},
               **{f"decoder.{k}": v.detach().clone() for k, v in decoder.state_dict().items()}}
    hub_stand_in()
    import tensorflow as tf

    handler = mg._Messages()
    hf_logger = mg.logging.getLogger("transformers")
    hf_logger.addHandler(handler)
    transformers.logging.set_verbosity_info()
    try:
        for half, kwargs in ((encoder, {"is_encoder": True}), (decoder, {"is_encoder_named_decoder": True})):
            with tf.Graph().as_default():  # the loader disables eager execution and runs a v1 Session
                load_tf_weights_in_bert_generation(half, prefix, model_class="bert", **kwargs)
    finally:
        hf_logger.removeHandler(handler)
        transformers.logging.set_verbosity_warning()
    model = transformers.EncoderDecoderModel(encoder=encoder, decoder=decoder)
    model.eval()
    state = model.state_dict()
    record: dict = {"case": BERT2BERT, "checkpoint": f"{BERT2BERT}/model.ckpt-5", "class": "EncoderDecoderModel",
                    "loader": "load_tf_weights_in_bert_generation",
                    "loader_applied_to": "encoder: BertGenerationEncoder (is_encoder=True); decoder: "
                                         "BertGenerationDecoder (is_encoder_named_decoder=True); then "
                                         "EncoderDecoderModel(encoder=encoder, decoder=decoder)",
                    "versions": {"transformers": transformers.__version__, "torch": torch.__version__,
                                 "tensorflow": tf.__version__},
                    "loader_messages": [m for m in mg._noteworthy(handler.lines) if " layer " not in m]}
    skipped = [m for m in mg._noteworthy(handler.lines) if " layer " in m]  # each half's other stack, per variable
    record["loader_skipped_other_stack"] = {
        "encoder": sum(m.endswith(" for encoder") for m in skipped),
        "decoder": sum(m.endswith(" for decoder") for m in skipped)}
    record["untouched"] = sorted(k for k, v in state.items() if v.dtype.is_floating_point
                                 and torch.equal(v, initial[k]))
    record["state_dict_keys"] = len(state)
    record["sources"], record["checkpoint_variables_not_in_state_dict"] = mg.trace_sources(state, prefix)
    for key, found in record["sources"].items():  # the decoder's lm head: no module variable, the initial zeros
        if found == "-" and not state[key].detach().numpy().any():
            record["sources"][key] = "zeros (no checkpoint variable: the loader's initial ones)"
    d = out / BERT2BERT
    d.mkdir(parents=True, exist_ok=True)
    mg.save_file({k: v.detach().clone().contiguous() for k, v in state.items()}, str(d / "model.safetensors"),
                 metadata={"format": "pt"})
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp)
        (d / "config.json").write_text((Path(tmp) / "config.json").read_text())
    rng = np.random.default_rng(20261124)
    ids = rng.integers(3, SIZES["vocab_size"], size=(2, 8)).astype(np.int64)
    mask = np.ones((2, 8), np.int64)
    mask[1, 5:] = 0
    decoder_ids = rng.integers(3, SIZES["vocab_size"], size=(2, 5)).astype(np.int64)
    inputs = {"input_ids": ids, "attention_mask": mask, "decoder_input_ids": decoder_ids}
    np.savez(d / "inputs.npz", **inputs)
    kwargs = {k: torch.from_numpy(v) for k, v in inputs.items()}
    with torch.no_grad():
        result = model(**kwargs, use_cache=False, output_hidden_states=True)
    outputs: dict = {}
    for key, val in result.items():
        if isinstance(val, torch.Tensor):
            outputs[key] = val.numpy()
        elif isinstance(val, tuple):
            outputs.update({f"{key}.{i}": t.numpy() for i, t in enumerate(val)})
    np.savez(d / "outputs.npz", **outputs)
    (d / "oracle.json").write_text(mg.json.dumps(record, indent=2) + "\n")
    print(BERT2BERT, "untouched:", record["untouched"], "skipped:", record["loader_skipped_other_stack"],
          "not in state dict:", record["checkpoint_variables_not_in_state_dict"])


def main(argv: list[str]) -> None:
    out = Path(argv[argv.index("--out") + 1]) if "--out" in argv else ROOT / "golden"
    steps = [a for a in argv if a in ("checkpoints", "golden")] or ["checkpoints", "golden"]
    cases = [a for a in argv if a in CASES or a == BERT2BERT] or [*CASES, BERT2BERT]
    for case in cases:
        if "checkpoints" in steps:
            make_bert2bert_checkpoint() if case == BERT2BERT else make_checkpoint(case)
        if "golden" in steps:
            make_bert2bert_golden(out) if case == BERT2BERT else make_golden_case(case, out)


if __name__ == "__main__":
    main(sys.argv[1:])
