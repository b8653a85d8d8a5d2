"""``ckpt graph``: exact dot and Mermaid text for small corpus checkpoints, errors, JSON."""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from formats.ops.inspect.graph_drawing import DrawEdge, DrawNode, Drawing

from .conftest import CORPUS

LIST_EXAMPLE = CORPUS / "seed_keras2/tf_list_example-1"
SEED = CORPUS / "seed_slots/tf_ckpts/ckpt-5"

LIST_DOT = """\
digraph checkpoint {
  node [shape=box];
  n0 [label="root", color=black, fontcolor=black];
  n1 [label="listed", color=black, fontcolor=black];
  n2 [label="mapped", color=black, fontcolor=black];
  n3 [label="save_counter", color=blue, fontcolor=blue];
  n4 [label="0", color=blue, fontcolor=blue];
  n5 [label="1", color=blue, fontcolor=blue];
  n0 -> n1 [label="listed"];
  n0 -> n2 [label="mapped"];
  n0 -> n3 [label="save_counter"];
  n1 -> n4 [label="0"];
  n1 -> n5 [label="1"];
  n2 -> n4 [label="one"];
  n2 -> n5 [label="two"];
}
"""

SEED_MERMAID = """\
flowchart TD
  n0["root"]
  n1["iterator"]
  n2["net"]
  n3["optimizer"]
  n4["step"]
  n5["save_counter"]
  n6["l1"]
  n7["iter"]
  n8["beta_1"]
  n9["beta_2"]
  n10["decay"]
  n11["learning_rate"]
  n12["kernel"]
  n13["bias"]
  n14["m"]
  n15["m"]
  n16["v"]
  n17["v"]
  n0 -->|"iterator"| n1
  n0 -->|"net"| n2
  n0 -->|"optimizer"| n3
  n0 -->|"step"| n4
  n0 -->|"save_counter"| n5
  n2 -->|"l1"| n6
  n3 -->|"iter"| n7
  n3 -->|"beta_1"| n8
  n3 -->|"beta_2"| n9
  n3 -->|"decay"| n10
  n3 -->|"learning_rate"| n11
  n3 -.->|"m"| n14
  n3 -.->|"m"| n15
  n3 -.->|"v"| n16
  n3 -.->|"v"| n17
  n6 -->|"kernel"| n12
  n6 -->|"bias"| n13
  n12 -.-> n14
  n13 -.-> n15
  n12 -.-> n16
  n13 -.-> n17
  classDef optimizer stroke:#d62728,color:#d62728
  class n3 optimizer
  classDef variable stroke:#1f77b4,color:#1f77b4
  class n4,n5,n7,n8,n9,n10,n11,n12,n13 variable
  classDef slot stroke:#ff7f0e,color:#ff7f0e
  class n14,n15,n16,n17 slot
  linkStyle 11,12,13,14,17,18,19,20 stroke:#ff7f0e
"""


def test_dot_of_the_list_example(run_cli) -> None:
    result = run_cli("graph", LIST_EXAMPLE)
    assert result.exit_code == 0
    assert result.stdout == LIST_DOT


def test_mermaid_of_the_guide_checkpoint(run_cli) -> None:
    result = run_cli("graph", "--format", "mermaid", SEED)
    assert result.exit_code == 0
    assert result.stdout == SEED_MERMAID


def test_dot_of_the_guide_checkpoint_colours_and_dashes(run_cli) -> None:
    lines = run_cli("graph", SEED).stdout.splitlines()
    assert '  n3 [label="optimizer", color=red, fontcolor=red];' in lines
    assert '  n12 [label="kernel", color=blue, fontcolor=blue];' in lines
    assert '  n14 [label="m", color=orange, fontcolor=orange];' in lines
    dashed = [line.strip() for line in lines if "style=dashed" in line]
    assert dashed == [
        'n3 -> n14 [label="m", style=dashed, color=orange];', 'n3 -> n15 [label="m", style=dashed, color=orange];',
        'n3 -> n16 [label="v", style=dashed, color=orange];', 'n3 -> n17 [label="v", style=dashed, color=orange];',
        "n12 -> n14 [style=dashed, color=orange];", "n13 -> n15 [style=dashed, color=orange];",
        "n12 -> n16 [style=dashed, color=orange];", "n13 -> n17 [style=dashed, color=orange];"]


def test_keras_optimizer_slots_are_orange_and_linked_to_their_variable(run_cli) -> None:
    doc = json.loads(run_cli("graph", "--json", CORPUS / "seed_keras2/tf_ckpts/ckpt-10").stdout)
    kinds = {n["id"]: n["kind"] for n in doc["nodes"]}
    assert [i for i, k in kinds.items() if k == "slot"] == [15, 16, 17, 18]
    assert [i for i, k in kinds.items() if k == "optimizer"] == [3]
    dashed = [(e["src"], e["dst"], e["label"]) for e in doc["edges"] if e["dashed"]]
    assert dashed == [(13, 15, ""), (13, 16, ""), (14, 17, ""), (14, 18, "")]
    assert len(doc["nodes"]) == 19 and sum(not e["dashed"] for e in doc["edges"]) == 23


def test_name_based_checkpoint_has_no_graph(run_cli) -> None:
    result = run_cli("graph", CORPUS / "tf1_adam/model.ckpt-200")
    assert result.exit_code == 3
    assert result.stderr.splitlines() == [
        f"ckpt: error: {CORPUS / 'tf1_adam/model.ckpt-200'}: a tf-name checkpoint has no object graph to draw",
        "  hint: `ckpt ls --tree` shows any checkpoint as a tree"]


def test_missing_path_is_a_clean_error(run_cli, tmp_path) -> None:
    result = run_cli("graph", tmp_path / "nope")
    assert result.exit_code == 3 and result.stderr.startswith("ckpt: error: ")


def test_labels_are_escaped() -> None:
    drawing = Drawing([DrawNode(0, 'a"b\\c', "object"), DrawNode(1, "<x&y>", "variable")],
                      [DrawEdge(0, 1, 'say "hi"')])
    assert drawing.to_dot().splitlines()[2:5] == [
        '  n0 [label="a\\"b\\\\c", color=black, fontcolor=black];',
        '  n1 [label="<x&y>", color=blue, fontcolor=blue];',
        '  n0 -> n1 [label="say \\"hi\\""];']
    assert drawing.to_mermaid().splitlines()[1:4] == [
        '  n0["a#quot;b\\c"]', '  n1["#lt;x#amp;y#gt;"]', '  n0 -->|"say #quot;hi#quot;"| n1']


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz not installed")
def test_graphviz_accepts_the_output(run_cli) -> None:
    text = run_cli("graph", CORPUS / "keras2_tagger/tagger_tf/ckpt").stdout
    svg = subprocess.run(["dot", "-Tsvg"], input=text, capture_output=True, text=True, check=True).stdout
    assert "<svg" in svg
