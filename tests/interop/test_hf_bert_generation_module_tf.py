"""Optional tier: a bertseq2seq module as a directory (``saved_model.pb`` beside ``variables/``, what a TF1 hub module
holds; written here by TensorFlow's own ``tf.compat.v1.saved_model.Builder`` with the committed module's variables)
converts with the ``bert_generation`` map to the same tensors as the module's checkpoint: the oracle's
(``tests/data/hf/golden/bert_generation_*``, transformers 4.57.6's ``load_tf_weights_in_bert_generation``). A real
hub module also holds ``tfhub_module.pb`` (not read); ``tensorflow_hub`` itself is not needed."""
from __future__ import annotations

from pathlib import Path

import pytest

tf = pytest.importorskip("tensorflow")

pytestmark = pytest.mark.interop

HF_DATA = Path(__file__).resolve().parent.parent / "data" / "hf"


def _module_directory(prefix: Path, out: Path) -> None:
    v1 = tf.compat.v1
    names = [n for n, _ in tf.train.list_variables(str(prefix))]
    with tf.Graph().as_default():
        variables = [v1.get_variable(n, shape=tf.train.load_variable(str(prefix), n).shape,
                                     dtype=tf.train.load_variable(str(prefix), n).dtype,
                                     initializer=v1.zeros_initializer()) for n in names]
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            for var, name in zip(variables, names):
                var.load(tf.train.load_variable(str(prefix), name), sess)
            builder = v1.saved_model.Builder(str(out))
            builder.add_meta_graph_and_variables(sess, ["serve"])
            builder.save()


@pytest.mark.parametrize("case", ["bert_generation_encoder", "bert_generation_decoder"])
def test_a_module_directory_converts_to_the_oracles_tensors(run_cli, tmp_path: Path, case: str) -> None:
    from safetensors.numpy import load_file

    module = tmp_path / "module"
    _module_directory(HF_DATA / case / "model.ckpt-5", module)
    out = tmp_path / "hf"
    result = run_cli("convert", module, "-o", out, "--to", "hf", "--hparam", "num_attention_heads=4")
    assert result.exit_code == 0, result.output
    written = load_file(str(out / "model.safetensors"))
    golden = {k: v for k, v in load_file(str(HF_DATA / "golden" / case / "model.safetensors")).items()
              if not k.startswith("lm_head.decoder.")}
    assert sorted(written) == sorted(golden)
    for key, value in golden.items():
        assert written[key].shape == value.shape and written[key].tobytes() == value.tobytes(), key
