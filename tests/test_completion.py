"""Shell completion: the committed scripts are current, and paths and keys complete as users expect."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ckpt_cli.completion import checkpoint_candidates, completion_script

from .conftest import CORPUS
from .installed import LAUNCHER, child_env

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_committed_completion_scripts_match_the_cli(shell):
    committed = (ROOT / "completions" / f"ckpt.{shell}").read_text()
    assert committed == completion_script(shell), "run: python scripts/gen_completions.py"


def test_bash_script_keeps_completing_after_a_directory():
    assert "compopt -o nospace" in completion_script("bash")


def _complete(*words: str) -> list[str]:
    env = dict(os.environ, COMP_WORDS=" ".join(["ckpt", *words]), COMP_CWORD=str(len(words)),
               _CKPT_COMPLETE="bash_complete")
    out = subprocess.run([sys.executable, "-m", "ckpt_cli"], env=env, capture_output=True, text=True, check=True)
    return [line.split(",", 1)[1] for line in out.stdout.splitlines() if line]


def test_paths_complete_to_prefixes_not_index_and_data_files():
    folder = CORPUS / "tf1_adam"
    assert checkpoint_candidates(f"{folder}/model") == [f"{folder}/model.ckpt-1", f"{folder}/model.ckpt-200"]
    assert checkpoint_candidates(f"{CORPUS}/keras3_tagger/t") == [f"{CORPUS}/keras3_tagger/tagger.keras",
                                                                    f"{CORPUS}/keras3_tagger/tagger.weights.h5"]
    assert checkpoint_candidates(f"{CORPUS}/seed_sl") == [f"{CORPUS}/seed_slots/"]


def test_commands_options_paths_and_keys_through_the_shell_protocol():
    assert _complete("ve") == ["verify"]
    assert _complete("ls", "--so") == ["--sort"]
    assert _complete("ls", f"{CORPUS}/seed_slots/tf_ckpts/ckpt-") == [
        f"{CORPUS}/seed_slots/tf_ckpts/ckpt-3", f"{CORPUS}/seed_slots/tf_ckpts/ckpt-4",
        f"{CORPUS}/seed_slots/tf_ckpts/ckpt-5"]
    assert _complete("show", f"{CORPUS}/seed_slots/tf_ckpts/ckpt-5", "net/l1/b") == [
        "net/l1/bias/.ATTRIBUTES/VARIABLE_VALUE", "net/l1/bias/.OPTIMIZER_SLOT/optimizer/m/.ATTRIBUTES/VARIABLE_VALUE",
        "net/l1/bias/.OPTIMIZER_SLOT/optimizer/v/.ATTRIBUTES/VARIABLE_VALUE"]
    assert _complete("show", f"{CORPUS}/nope", "x") == []  # an unreadable path completes nothing, quietly


def test_completion_command_prints_the_script(run_cli):
    result = run_cli("completion", "fish")
    assert result.exit_code == 0 and result.stdout == completion_script("fish")


def _bash_complete(words: list[str], cwd: Path) -> list[str]:
    """Run the committed bash completion function as bash would, with ``ckpt`` being this checkout's CLI."""
    shim = cwd / "bin"
    shim.mkdir(exist_ok=True)
    (shim / "ckpt").write_text(f'#!/bin/sh\nexec "{sys.executable}" "{LAUNCHER}" "$@"\n')
    (shim / "ckpt").chmod(0o755)
    # as bash hands them over: each word as typed, escapes included
    script = (f'source "{ROOT}/completions/ckpt.bash"\n'
              f"COMP_WORDS=({' '.join(map(_sh, words))}); COMP_CWORD={len(words) - 1}\n"
              "_ckpt_completion ckpt 2>/dev/null\n"
              'printf "%s\\n" "${COMPREPLY[@]}"\n')
    env = child_env(PATH=f"{shim}:{os.environ['PATH']}")
    out = subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, check=True)
    return [x for x in out.stdout.splitlines() if x]


def _sh(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def test_bash_escapes_paths_with_spaces(tmp_path):
    """Issue 14 #13: `ckpt ls my<TAB>` must insert `my\\ runs/`, one word, not `my runs/`."""
    (tmp_path / "my runs").mkdir()
    (tmp_path / "my runs" / "ckpt-1.index").write_bytes(b"")
    assert _bash_complete(["ckpt", "ls", "my"], tmp_path) == ["my\\ runs/"]
    assert _bash_complete(["ckpt", "ls", "my\\ runs/ck"], tmp_path) == ["my\\ runs/ckpt-1"]


def test_keys_complete_for_stats_extract_trend_and_diff():
    prefix = f"{CORPUS}/seed_slots/tf_ckpts/ckpt-5"
    kernel = ["net/l1/kernel/.ATTRIBUTES/VARIABLE_VALUE",
              "net/l1/kernel/.OPTIMIZER_SLOT/optimizer/m/.ATTRIBUTES/VARIABLE_VALUE",
              "net/l1/kernel/.OPTIMIZER_SLOT/optimizer/v/.ATTRIBUTES/VARIABLE_VALUE"]
    assert _complete("stats", prefix, "net/l1/k") == kernel
    assert _complete("extract", prefix, "net/l1/k") == kernel
    assert _complete("trend", f"{CORPUS}/seed_slots/tf_ckpts", "net/l1/k") == kernel  # the latest checkpoint
    assert _complete("diff", prefix, f"{CORPUS}/tf1_adam/model.ckpt-1", "--strip-prefix-b", "dnn/logits/k") == [
        "dnn/logits/kernel", "dnn/logits/kernel/Adam", "dnn/logits/kernel/Adam_1"]
