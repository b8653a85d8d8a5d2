"""``ckpt convert --to hf`` of TAPAS fine-tuned with an aggregation head (WTQ, WikiSQL; ``--hf-task``) and of GPT-1 as
OpenAI released it (the ``openai-npy`` reader), numpy only (the transformers 5 side is
tests/interop/test_hf_transformers5.py, driven by cases.json).

Expected keys, shapes, values and config fields are the oracle's (``tests/data/hf/golden/<case>``, written by
``generators/make_originals_e.py``: transformers 4.57.6's ``load_tf_weights_in_tapas`` with its converter's
``--task`` configuration, ``load_tf_weights_in_openai_gpt``); the release's arrays are also cut out of the shards
here with numpy alone, as that loader does. Bad inputs are copies of those files, changed.
"""
from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import numpy as np
import pytest

import formats
from formats.core.errors import CheckpointError

from .hf_edits import refused, rewritten, written_equal

HF_DATA = Path(__file__).parent / "data" / "hf"
RELEASE = HF_DATA / "openai_gpt"
TAPAS_CASES = {"tapas_wtq": "wtq", "tapas_wikisql": "wikisql-supervised"}
TASK_FIELDS = ("num_aggregation_labels", "use_answer_as_supervision", "answer_loss_cutoff", "cell_selection_preference",
               "huber_loss_delta", "init_cell_selection_weights_to_zero", "select_one_column",
               "allow_empty_column_selection", "temperature")
TAPAS_FIELDS = ("type_vocab_sizes", "reset_position_index_per_cell", "hidden_size", "num_hidden_layers",
                "num_attention_heads", "intermediate_size", "max_position_embeddings", "vocab_size")
GPT1_FIELDS = ("vocab_size", "n_positions", "n_embd", "n_layer", "n_head", "afn", "layer_norm_epsilon")
GPT1_TIED = {"lm_head.weight": "transformer.tokens_embed.weight"}


def _golden(case: str) -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file

    golden = load_file(str(HF_DATA / "golden" / case / "model.safetensors"))
    return {k: v for k, v in golden.items() if k not in GPT1_TIED}


def _oracle_config(case: str) -> dict:
    return json.loads((HF_DATA / "golden" / case / "config.json").read_text())


def _convert(run_cli, src: Path, out: Path, *options: str):
    result = run_cli("convert", src, "-o", out, "--to", "hf", *options)
    assert result.exit_code == 0, result.output
    return result


def _written_equal_golden(out: Path, case: str) -> dict:
    return written_equal(out, _golden(case))


# --- TAPAS with an aggregation head ---------------------------------------------------------------------------------

@pytest.mark.parametrize("case", sorted(TAPAS_CASES))
def test_tapas_aggregation_head_converts_to_the_oracles_tensors_and_task_config(run_cli, tmp_path: Path,
                                                                                  case: str) -> None:
    out = tmp_path / "hf"
    _convert(run_cli, HF_DATA / case / "model.ckpt-3", out, "--hf-task", TAPAS_CASES[case])
    config, oracle = _written_equal_golden(out, case), _oracle_config(case)
    for name in (*TASK_FIELDS, *TAPAS_FIELDS, "architectures", "model_type"):
        assert config[name] == oracle[name] and type(config[name]) is type(oracle[name]), name
    assert config["architectures"] == ["TapasForQuestionAnswering"]


def test_tapas_aggregation_plan_rows_and_notes(run_cli, tmp_path: Path) -> None:
    result = run_cli("convert", HF_DATA / "tapas_wtq/model.ckpt-3", "-o", tmp_path / "hf", "--to", "hf", "--dry-run",
                     "--json", "--hf-task", "wtq")
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    assert {r["key"]: r["shape"] for r in plan["rows"]} == {k: list(v.shape) for k, v in _golden("tapas_wtq").items()}
    rows = {r["source"]: r for r in plan["rows"]}
    assert (rows["output_weights_agg"]["key"], rows["output_weights_agg"]["transform"]) == (
        "aggregation_classifier.weight", None)  # already [out, in], as load_tf_weights_in_tapas leaves it
    assert [p["message"] for p in plan["problems"]] == [
        "num_aggregation_labels = 4 from the shape of output_weights_agg", "1 tensor left out: training step counter"]
    assert plan["details"]["config"]["temperature"] == 0.0352513 and not (tmp_path / "hf").exists()


def test_tapas_aggregation_head_without_a_task_is_one_error_naming_the_option(run_cli, tmp_path: Path) -> None:
    assert refused(run_cli, HF_DATA / "tapas_wtq/model.ckpt-3", tmp_path) == [
        "error: config: hf_task: the checkpoint holds an aggregation head (output_weights_agg), whose task's "
        "hyperparameters (temperature, answer_loss_cutoff...) are not in the checkpoint: name its task with "
        "--hf-task wikisql-supervised|wtq"]


@pytest.mark.parametrize("src, task, message", [
    ("tapas_wtq", "sqa", "--hf-task sqa builds a model without the aggregation parameters the checkpoint holds; its "
                         "tensors fit --hf-task wikisql-supervised|wtq"),
    ("tapas_sqa", "wtq", "--hf-task wtq builds a model with aggregation parameters, which the checkpoint lacks; its "
                         "tensors fit --hf-task sqa"),
    ("tapas_sqa", "WTQ", "--hf-task WTQ: the tapas map has no such task (it knows sqa, tabfact, wikisql-supervised, "
                         "wtq)"),
])
def test_a_task_that_does_not_fit_is_one_error(run_cli, tmp_path: Path, src: str, task: str, message: str) -> None:
    assert refused(run_cli, HF_DATA / src / "model.ckpt-3", tmp_path, "--hf-task", task) == [
        f"error: config: hf_task: {message}"]


def test_a_family_without_tasks_refuses_one(run_cli, tmp_path: Path) -> None:
    assert refused(run_cli, RELEASE, tmp_path, "--hf-task", "wtq") == [
        "error: config: hf_task: --hf-task wtq: the openai_gpt map has no such task (it knows none)"]


def test_hf_task_outside_hf_is_a_usage_error(run_cli, tmp_path: Path) -> None:
    result = run_cli("convert", HF_DATA / "tapas_wtq/model.ckpt-3", "-o", tmp_path / "o", "--to", "tf-object",
                     "--hf-task", "wtq")
    assert result.exit_code == 2 and not (tmp_path / "o").exists()
    assert result.stderr.splitlines()[-1] == ("Error: --hf-task applies to --to hf (or safetensors with a model map) "
                                              "only")


def test_the_existing_heads_take_their_own_task(run_cli, tmp_path: Path) -> None:
    for case, task in (("tapas_sqa", "sqa"), ("tapas_tabfact", "tabfact")):
        out = tmp_path / case
        _convert(run_cli, HF_DATA / case / "model.ckpt-3", out, "--hf-task", task)
        config = _written_equal_golden(out, case)
        assert not set(TASK_FIELDS) & set(config), case  # TapasConfig's defaults, as the converter left them


def test_hparam_still_overrides_a_task_field(run_cli, tmp_path: Path) -> None:
    out = tmp_path / "hf"
    _convert(run_cli, HF_DATA / "tapas_wtq/model.ckpt-3", out, "--hf-task", "wtq", "--hparam", "temperature=0.5")
    config = json.loads((out / "config.json").read_text())
    assert config["temperature"] == 0.5 and config["answer_loss_cutoff"] == 0.664694


def test_an_aggregation_head_the_config_contradicts_names_the_shape(run_cli, tmp_path: Path) -> None:
    src = rewritten(HF_DATA / "tapas_wtq/model.ckpt-3", tmp_path / "c", {"output_bias_agg": np.zeros(3, np.float32)},
                    ["bert_config.json"])
    assert refused(run_cli, src, tmp_path, "--hf-task", "wtq") == [
        "error: config: num_aggregation_labels=4: the configuration contradicts the shapes: 'output_bias_agg' [3] does "
        "not fit 'aggregation_classifier.bias' [4] (candidates: output_bias_agg)"]


# --- GPT-1's release --------------------------------------------------------------------------------------------------

def _release_arrays(directory: Path) -> list[np.ndarray]:
    """load_tf_weights_in_openai_gpt's reading, with numpy alone: the shards concatenated, split at the shapes'
    cumulative sizes."""
    shapes = json.loads((directory / "params_shapes.json").read_text())
    flat = np.concatenate([np.load(directory / f"params_{n}.npy") for n in range(10)])
    parts = np.split(flat, np.cumsum([int(np.prod(s)) for s in shapes]))[:-1]
    return [p.reshape(s) for p, s in zip(parts, shapes)]


def test_the_release_reads_as_the_loader_cuts_it() -> None:
    arrays = _release_arrays(RELEASE)
    with formats.open_checkpoint(RELEASE) as ckpt:
        assert ckpt.format == "openai-npy" and len(ckpt) == len(arrays) == 26
        keys = list(ckpt)
        assert keys[:4] == ["model/we/positions", "model/we/tokens", "model/h0/attn/c_attn/w", "model/h0/attn/c_attn/b"]
        assert keys[-1] == "model/h1/ln_2/b"
        for key, array in zip(keys, arrays):
            entry = ckpt[key]
            assert entry.shape == array.shape and entry.dtype == "float32", key
            assert entry.read().tobytes() == array.tobytes(), key
            assert b"".join(bytes(c) for c in entry.byte_chunks(100)) == array.tobytes(), key  # across shard borders
            assert np.concatenate(list(entry.iter_chunks(7))).tobytes() == array.tobytes(), key
        straddling = [k for k in keys if len(set(ckpt[k].files)) > 1]
        assert straddling  # the ten-way split cuts through arrays
        assert ckpt.metadata == {"arrays": 26, "shards": 10, "names": "GPT-1's order (no parameters_names.json)"}


def test_the_release_converts_to_the_oracles_tensors_and_config(run_cli, tmp_path: Path) -> None:
    out = tmp_path / "hf"
    result = _convert(run_cli, RELEASE, out)
    config, oracle = _written_equal_golden(out, "openai_gpt"), _oracle_config("openai_gpt")
    for name in (*GPT1_FIELDS, "architectures", "model_type"):
        assert config[name] == oracle[name], name
    assert [line for line in result.output.splitlines() if line.startswith("warning")] == [
        "warning: config: vocab_size: vocab_size = 50 from the shape of model/we/tokens",
        "warning: config: n_positions: n_positions = 16 from the shape of model/we/positions",
        "warning: config: n_embd: n_embd = 24 from the shape of model/we/tokens",
        "warning: config: n_layer: n_layer = 2, the number of source tensors named model/h{n:d}/attn/c_attn/w"]


def _copy_release(tmp_path: Path, name: str = "release") -> Path:
    folder = tmp_path / name
    shutil.copytree(RELEASE, folder)
    return folder


def test_the_names_file_beside_the_shards_names_the_same_arrays(run_cli, tmp_path: Path) -> None:
    release = _copy_release(tmp_path)
    names = (["model/we:0"] + [f"model/h{i}/{p}:0" for i in range(2) for p in (
        "attn/c_attn/w", "attn/c_attn/b", "attn/c_proj/w", "attn/c_proj/b", "ln_1/g", "ln_1/b", "mlp/c_fc/w",
        "mlp/c_fc/b", "mlp/c_proj/w", "mlp/c_proj/b", "ln_2/g", "ln_2/b")] + ["model/clf/w:0", "model/clf/b:0"])
    (release / "parameters_names.json").write_text(json.dumps(names))
    with formats.open_checkpoint(release) as ckpt, formats.open_checkpoint(RELEASE) as plain:
        assert list(ckpt) == list(plain)
        assert ckpt.metadata["names"] == "parameters_names.json"
        assert ckpt.metadata["names_without_arrays"] == ["model/clf/w:0", "model/clf/b:0"]
    _convert(run_cli, release, tmp_path / "hf")
    _written_equal_golden(tmp_path / "hf", "openai_gpt")


def test_n_head_from_hparam_and_one_that_does_not_divide(run_cli, tmp_path: Path) -> None:
    out = tmp_path / "hf"
    _convert(run_cli, RELEASE, out, "--hparam", "n_head=4")
    assert json.loads((out / "config.json").read_text())["n_head"] == 4
    assert refused(run_cli, RELEASE, tmp_path, "--hparam", "n_head=5") == [
        "error: config: n_head: n_head=5 does not divide n_embd=24: transformers 5 needs n_embd to be a multiple of "
        "n_head"]


def test_the_release_is_not_taken_for_gpt2(run_cli, tmp_path: Path) -> None:
    plan = json.loads(run_cli("convert", RELEASE, "-o", tmp_path / "o", "--to", "hf", "--dry-run", "--json").stdout)
    assert plan["details"]["family"] == "openai_gpt" and plan["details"]["class"] == "OpenAIGPTLMHeadModel"
    assert plan["details"]["tied"] == GPT1_TIED


def test_ls_and_verify_the_release(run_cli) -> None:
    result = run_cli("ls", RELEASE)
    assert result.exit_code == 0 and result.stdout.splitlines()[-1] == (
        f"{RELEASE}: openai-npy, 26 tensors, 16,032 parameters, 62.6 KiB")
    assert run_cli("ls", RELEASE / "params_shapes.json").exit_code == 0
    verified = run_cli("verify", RELEASE)
    assert verified.exit_code == 0 and "checked 26 tensors" in verified.stdout


# --- hostile releases -------------------------------------------------------------------------------------------------

def _damage_missing(d: Path) -> None:
    (d / "params_3.npy").unlink()


def _damage_no_shards(d: Path) -> None:
    for n in range(10):
        (d / f"params_{n}.npy").unlink()


def _damage_json(d: Path) -> None:
    (d / "params_shapes.json").write_text("[[16, 24], oops")


def _damage_extra_shape(d: Path) -> None:
    shapes = json.loads((d / "params_shapes.json").read_text())
    (d / "params_shapes.json").write_text(json.dumps(shapes + [[2]]))


def _damage_not_a_shape(d: Path) -> None:
    shapes = json.loads((d / "params_shapes.json").read_text())
    (d / "params_shapes.json").write_text(json.dumps([[16, -24]] + shapes[1:]))


def _damage_float64(d: Path) -> None:
    np.save(d / "params_2.npy", np.load(d / "params_2.npy").astype(np.float64))


def _damage_cut(d: Path) -> None:
    raw = (d / "params_9.npy").read_bytes()
    (d / "params_9.npy").write_bytes(raw[:-4])


def _damage_trailing(d: Path) -> None:
    with open(d / "params_0.npy", "ab") as f:
        f.write(b"\0\0\0\0")


def _damage_header(d: Path) -> None:
    (d / "params_5.npy").write_bytes(b"not an npy file at all")


def _damage_names(d: Path) -> None:
    (d / "parameters_names.json").write_text(json.dumps(["model/we:0", "model/h0/attn/c_attn/w:0"]))


HOSTILE = {
    "missing": (_damage_missing, "params_3.npy", "missing: the release's values are split over params_0.npy to "
                                                 "params_9.npy"),
    "no_shards": (_damage_no_shards, "params_0.npy", "missing: params_shapes.json has no params_N.npy shard beside it"),
    "json": (_damage_json, "params_shapes.json", "the shapes list is not valid JSON (Expecting value: line 1 column 12 "
                                                 "(char 11))"),
    "extra_shape": (_damage_extra_shape, "params_shapes.json", "its 27 shapes need 16,034 values, but params_0.npy to "
                                                               "params_9.npy hold 16,032"),
    "not_a_shape": (_damage_not_a_shape, "params_shapes.json", "item 0 is [16, -24], not a shape (a list of at most 32 "
                                                               "sizes)"),
    "float64": (_damage_float64, "params_2.npy", "holds <f8 [1603], not the one-dimensional little-endian float32 "
                                                 "(<f4) values of the release"),
    "cut": (_damage_cut, "params_9.npy", "declares 1,603 float32 values (6,412 bytes) but holds 6,408 bytes after its "
                                         "header"),
    "trailing": (_damage_trailing, "params_0.npy", "declares 1,604 float32 values (6,416 bytes) but holds 6,420 bytes "
                                                   "after its header"),
    "header": (_damage_header, "params_5.npy", "not a .npy shard: not a .npy array (no \\x93NUMPY magic)"),
    "names": (_damage_names, "parameters_names.json", "lists 2 names, but params_shapes.json's 26 arrays need 25 (the "
                                                      "first name stands for the two embeddings)"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_damaged_release_is_one_line_exit_3_and_nothing_written(run_cli, tmp_path: Path, name: str) -> None:
    damage, file, message = HOSTILE[name]
    release = _copy_release(tmp_path)
    damage(release)
    listed = run_cli("ls", release)
    assert listed.exit_code == 3 and listed.stderr == f"ckpt: error: {release / file}: {message}\n"
    out = tmp_path / "out"
    converted = run_cli("convert", release, "-o", out, "--to", "hf")
    assert converted.exit_code == 3 and converted.stderr == f"ckpt: error: {release / file}: {message}\n"
    assert not out.exists() and not list(tmp_path.glob(".out*"))


def test_a_shard_cut_after_opening_is_an_error_naming_it(tmp_path: Path) -> None:
    release = _copy_release(tmp_path)
    with formats.open_checkpoint(release) as ckpt:
        raw = (release / "params_9.npy").read_bytes()
        (release / "params_9.npy").write_bytes(raw[:len(raw) // 2])
        with pytest.raises(CheckpointError) as err:
            ckpt["model/h1/ln_2/b"].read()
    assert err.value.path == str(release / "params_9.npy") and "the shard ends at data byte" in err.value.message


def test_fuzzed_releases_open_and_read_or_fail_in_one_checkpoint_error(tmp_path: Path) -> None:
    """Bytes of params_shapes.json, of a shard's header and of parameters_names.json overwritten at random: opening
    and reading every array give values or a CheckpointError, nothing else, and never more values than stored."""
    release = _copy_release(tmp_path)
    (release / "parameters_names.json").write_text(json.dumps(
        ["model/we:0"] + [f"model/x{i}:0" for i in range(24)]))
    files = {name: (release / name).read_bytes() for name in ("params_shapes.json", "params_4.npy",
                                                              "parameters_names.json")}
    rng = random.Random(37)
    outcomes = {"read": 0, "refused": 0}
    for _ in range(240):
        name = rng.choice(sorted(files))
        original = files[name]
        at = rng.randrange(min(len(original), 140))
        changed = bytearray(original)
        for k in range(rng.randint(1, 3)):
            changed[min(at + k, len(changed) - 1)] = rng.randrange(256)
        (release / name).write_bytes(bytes(changed))
        try:
            with formats.open_checkpoint(release) as ckpt:
                total = sum(ckpt[k].read().size for k in ckpt)
                assert total == 16_032
            outcomes["read"] += 1
        except CheckpointError:
            outcomes["refused"] += 1
        (release / name).write_bytes(original)
    assert outcomes["read"] and outcomes["refused"]


def test_a_fine_tuned_release_leaves_its_classifier_out_by_name(run_cli, tmp_path: Path) -> None:
    """finetune-transformer-lm's train.py saves its classifier (model/clf/w [n_embd, 1], b [1]) after the blocks;
    parameters_names.json names them: left out with a warning, the rest converts as before."""
    release = _copy_release(tmp_path)
    shapes = json.loads((release / "params_shapes.json").read_text())
    (release / "params_shapes.json").write_text(json.dumps(shapes + [[24, 1], [1]]))
    np.save(release / "params_9.npy", np.concatenate([np.load(release / "params_9.npy"),
                                                      np.arange(25, dtype="<f4")]))
    names = ["model/we:0"] + [f"model/h{i}/{p}:0" for i in range(2) for p in (
        "attn/c_attn/w", "attn/c_attn/b", "attn/c_proj/w", "attn/c_proj/b", "ln_1/g", "ln_1/b", "mlp/c_fc/w",
        "mlp/c_fc/b", "mlp/c_proj/w", "mlp/c_proj/b", "ln_2/g", "ln_2/b")] + ["model/clf/w:0", "model/clf/b:0"]
    (release / "parameters_names.json").write_text(json.dumps(names))
    with formats.open_checkpoint(release) as ckpt:
        assert ckpt["model/clf/w"].read().reshape(-1).tolist() == list(range(24))
        assert "names_without_arrays" not in ckpt.metadata
    result = _convert(run_cli, release, tmp_path / "hf")
    assert ("warning: dropped: model/clf/{*}: 2 tensors left out: finetune-transformer-lm's classifier (train.py's "
            "clf), which OpenAIGPTLMHeadModel has no place for (transformers' loader fails on it)") in result.output
    _written_equal_golden(tmp_path / "hf", "openai_gpt")


def test_transformers_own_tf_weights_take_no_task(run_cli, tmp_path: Path) -> None:
    assert refused(run_cli, HF_DATA.parent / "hf_h5" / "bert_seqcls", tmp_path, "--hf-task", "wtq") == [
        "error: config: hf_task: --hf-task wtq: transformers' own TensorFlow weights carry their task's fields in their "
        "config.json; name no task"]


def test_gpt1_back_to_tf_names_holds_the_releases_arrays(run_cli, tmp_path: Path) -> None:
    hf, back = tmp_path / "hf", tmp_path / "back" / "model.ckpt"
    _convert(run_cli, RELEASE, hf)
    result = run_cli("convert", hf, "-o", back, "--to", "tf-name", "--family", "openai_gpt")
    assert result.exit_code == 0, result.output
    names = ["model/we/positions", "model/we/tokens"] + [f"model/h{i}/{p}" for i in range(2) for p in (
        "attn/c_attn/w", "attn/c_attn/b", "attn/c_proj/w", "attn/c_proj/b", "ln_1/g", "ln_1/b", "mlp/c_fc/w",
        "mlp/c_fc/b", "mlp/c_proj/w", "mlp/c_proj/b", "ln_2/g", "ln_2/b")]
    with formats.open_checkpoint(back) as restored:
        got = {k: restored[k].read() for k in restored}
    assert sorted(got) == sorted(names)
    for name, array in zip(names, _release_arrays(RELEASE)):
        assert got[name].shape == array.shape and got[name].tobytes() == array.tobytes(), name
    diff = run_cli("diff", RELEASE, back)
    assert diff.exit_code == 0 and diff.stdout.splitlines()[-1].endswith("identical (26 tensors; compared bytewise)")


def test_a_release_of_another_shape_is_named_by_position(tmp_path: Path) -> None:
    folder = tmp_path / "other"
    folder.mkdir()
    (folder / "params_shapes.json").write_text(json.dumps([[2, 3], [], [4]]))
    np.save(folder / "params_0.npy", np.arange(5, dtype="<f4"))
    np.save(folder / "params_1.npy", np.arange(5, 11, dtype="<f4"))
    with formats.open_checkpoint(folder / "params_shapes.json") as ckpt:
        assert list(ckpt) == ["params/0", "params/1", "params/2"]
        assert ckpt["params/0"].read().tolist() == [[0, 1, 2], [3, 4, 5]]
        assert ckpt["params/1"].read().tolist() == 6.0 and ckpt["params/2"].read().tolist() == [7, 8, 9, 10]
        assert ckpt["params/0"].files == (str(folder / "params_0.npy"), str(folder / "params_1.npy"))


def test_any_split_of_any_shapes_reads_as_numpy_cuts_it() -> None:
    """Property: whatever the shapes and wherever the shard boundaries fall (empty shards and empty arrays too), every
    array reads as numpy's concatenate-and-split gives it."""
    import tempfile

    from hypothesis import given, settings
    from hypothesis import strategies as st

    shapes_st = st.lists(st.lists(st.integers(0, 5), max_size=3), min_size=1, max_size=8)

    @settings(max_examples=60, deadline=None)
    @given(shapes_st, st.lists(st.integers(0, 200), max_size=4))
    def check(shapes: list[list[int]], cuts: list[int]) -> None:
        total = sum(int(np.prod(s)) for s in shapes)
        flat = np.arange(total, dtype="<f4")
        bounds = sorted(min(c, total) for c in cuts)
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            (folder / "params_shapes.json").write_text(json.dumps(shapes))
            for n, part in enumerate(np.split(flat, bounds)):
                np.save(folder / f"params_{n}.npy", part)
            want = np.split(flat, np.cumsum([int(np.prod(s)) for s in shapes]))[:-1]
            with formats.open_checkpoint(folder) as ckpt:
                assert len(ckpt) == len(shapes)
                for entry, array, shape in zip(ckpt.values(), want, shapes):
                    assert entry.shape == tuple(shape) and entry.read().tobytes() == array.tobytes()
                    assert b"".join(bytes(c) for c in entry.byte_chunks(3)) == array.tobytes()

    check()
