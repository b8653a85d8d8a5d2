"""Checks that must not lie (issue 36, section 5): a check compares every tensor the conversion should have written,
and a conversion that would write fewer of the source's model tensors than it holds is not a success."""
from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

from .conftest import edited_model_config

TAGGER = Path(__file__).parent / "data" / "corpus" / "keras2_tagger" / "tagger_model.h5"
LSTM = ["model_weights/lstm/lstm/lstm_cell/bias:0", "model_weights/lstm/lstm/lstm_cell/kernel:0",
        "model_weights/lstm/lstm/lstm_cell/recurrent_kernel:0"]


def _without(archive: Path, group: str, out: Path) -> None:
    """A copy of a .keras archive whose weights lack ``group`` (a layer lost on the way)."""
    import h5py

    with zipfile.ZipFile(archive) as zin, zipfile.ZipFile(out, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename == "model.weights.h5":
                buffer = io.BytesIO(data)
                with h5py.File(buffer, "r+") as f:
                    del f[group]
                data = buffer.getvalue()
            zout.writestr(info, data)


def test_diff_match_converted_reports_the_layers_an_output_lost(run_cli, tmp_path: Path) -> None:
    whole, lost = tmp_path / "whole.keras", tmp_path / "lost.keras"
    assert run_cli("convert", TAGGER, "-o", whole, "--to", "keras").exit_code == 0
    right = run_cli("diff", "--match", "converted", "--json", TAGGER, whole)
    assert right.exit_code == 0, right.output
    doc = json.loads(right.stdout)
    assert (doc["only_in_a"], doc["only_in_b"], doc["changed"], doc["same"]) == ([], [], [], 12)
    _without(whole, "layers/lstm", lost)
    result = run_cli("diff", "--match", "converted", "--json", TAGGER, lost)
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    assert (doc["only_in_a"], doc["only_in_b"], doc["changed"], doc["same"]) == (LSTM, [], [], 9)
    text = run_cli("diff", "--match", "converted", TAGGER, lost)
    assert text.exit_code == 1
    assert [line.split()[:4] for line in text.stdout.splitlines() if line.startswith("model_weights/")] == \
        [[key, "only", "in", "A"] for key in LSTM]
    assert "identical" not in text.stdout and "has no place in the template" not in text.stderr


def test_to_keras_refuses_to_leave_out_layers_its_outputs_do_not_reach(run_cli, tmp_path: Path) -> None:
    def outputs_are_the_input(config: dict) -> None:
        config["config"]["output_layers"] = [["tokens", 0, 0]]

    src = edited_model_config(TAGGER, tmp_path / "tagger_model.h5", outputs_are_the_input)
    out = tmp_path / "model.keras"
    result = run_cli("convert", src, "-o", out, "--to", "keras")
    assert result.exit_code == 1, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error")]
    counts = {"embed": 1, "lstm": 3, "bn": 4, "head": 4}
    assert [e.split(" (candidates: ")[0] for e in errors] == [
        f"error: unused: {name}: layer {name!r} is not connected to the model's outputs: Keras 3 would leave it out "
        f"of the model, and its {n} weight(s) with it" for name, n in counts.items()]
    assert errors[1].endswith(f"(candidates: {LSTM[1]}; {LSTM[2]}; {LSTM[0]})")  # every left-out weight by name
    assert result.stderr.splitlines()[-1].endswith("nothing written")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tagger_model.h5"]
