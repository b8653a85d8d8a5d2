"""Every example the documentation shows runs: each ``Examples:`` block of every command's ``--help`` (and the
root's), and every ``ckpt ...`` line of the code blocks of README.md and docs/*.md (tests/documentation.py).

How an example runs
-------------------
Each block (one command's examples, one code block of the documentation) runs in order in its own empty working
directory, in-process (``CliRunner``), so a line may use what an earlier line of the same block wrote (``doctor
--write-rules fix.json`` then ``convert --rules fix.json``). A line is split like a shell line: quotes and
globs as bash treats them; after the ``ckpt`` part, ``| jq ...`` requires JSON on stdout, ``| other`` and ``> file``
take stdout (a ``> file`` inside the working directory is written, so later lines can read it), ``&& ...`` /
``|| ...`` accept exit status 0 or 1 (the example is about the status), and a ``# ...`` comment may state the
exit status (``# exit 1: ...``). Otherwise an example passes with exit status 0.

Placeholders: the mapping table
-------------------------------
Input paths in examples are placeholders (``run/model.ckpt-200``, ``runs/exp1/tf_ckpts``, ``keras/ckpt``...).
Before a line runs, every input path it names (a value of a checkpoint or ``click.Path`` parameter that is
not an output: see ``OUTPUT_PARAMS``) must exist in the working directory, or be a placeholder of
``PLACEHOLDERS`` (the path itself, or a folder above it: ``run/tf_ckpts/ckpt-5`` is inside ``run/tf_ckpts``),
which is then made there from the corpus (``Corpus``: a prefix's files, a file, or a folder), by a function
(``Built``) or by a ckpt command (``Ckpt``). URLs (``s3://bucket/...``, ``gs://``, ``https://host/...``) run
against fsspec's in-memory filesystem: ``URL_HOSTS`` maps each to a ``memory://`` root and the part after the
host is a placeholder like any other (``REMOTE_PLACEHOLDERS``). An input that is neither fails the test:
a new example must use a known placeholder, or add one here.

When merging a new command or option: an input parameter typed ``CHECKPOINT`` or ``click.Path`` needs
nothing; a new *output* parameter goes into ``OUTPUT_PARAMS``; a new placeholder path goes into
``PLACEHOLDERS`` (reuse the corpus wherever it fits).
"""
from __future__ import annotations

import glob
import json
import os
import re
import shlex
import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import numpy as np
import pytest
from click.testing import CliRunner

from ckpt_cli.help import example_lines
from ckpt_cli.main import COMMANDS, cli, hoist_global_options

from .conftest import CORPUS
from .documentation import all_code_blocks, doc_name

KERAS_LEGACY = Path(__file__).parent / "data" / "keras_legacy"
HF_DATA = Path(__file__).parent / "data" / "hf"
OUTPUT_PARAMS = {"out", "rules_out"}
"""Parameters that name outputs: never placeholders, never required to exist."""


# -- how placeholders are made ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Corpus:
    """A corpus path (relative to tests/data/corpus): a checkpoint prefix (its files are copied), a file, or a
    folder (copied whole)."""

    rel: str

    def make(self, target: Path, workdir: Path) -> None:
        source = CORPUS / self.rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target)
        elif source.is_file():
            shutil.copyfile(source, target)
        else:
            for f in glob.glob(glob.escape(str(source)) + ".*"):
                shutil.copyfile(f, target.parent / (target.name + f[len(str(source)):]))


@dataclass(frozen=True)
class Built:
    """Made by ``build(target)``."""

    build: Callable[[Path], Any]

    def make(self, target: Path, workdir: Path) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        self.build(target)


@dataclass(frozen=True)
class Ckpt:
    """Made by a ckpt command run in the working directory; ``{out}`` is the placeholder's path, and other
    ``{placeholder}``s are made first."""

    args: tuple[str, ...]

    def make(self, target: Path, workdir: Path) -> None:
        args = []
        for arg in self.args:
            if arg == "{out}":
                args.append(str(target))
            elif arg.startswith("{"):  # made beside the working directory, not in it
                deps = workdir.parent / "deps"
                deps.mkdir(exist_ok=True)
                args.append(str(materialize(arg[1:-1], deps)))
            else:
                args.append(arg)
        result = CliRunner().invoke(cli, args, catch_exceptions=False)
        assert result.exit_code == 0, f"making {target}: {result.output}"


DNN10 = {"dense": {"kernel": (4, 10), "bias": (10,)}, "dense_1": {"kernel": (10, 10), "bias": (10,)},
         "dense_2": {"kernel": (10, 3), "bias": (3,)}}


def _keras_template(target: Path) -> None:
    """What tf-keras ``Checkpoint(model=Sequential([Dense(10), Dense(10), Dense(3)]), optimizer=Adagrad)``
    writes: the estimator's layers under Keras names."""
    from .keras_templates import tf_keras_checkpoint

    tf_keras_checkpoint(target, DNN10, "Adagrad", ["accumulator"])


_SCRIPT = """\
import argparse
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--tf_checkpoint_path")
parser.add_argument("path", nargs="?")
args, _ = parser.parse_known_args()
if args.tf_checkpoint_path:
    for name, shape in tf.train.list_variables(args.tf_checkpoint_path):
        print(name, shape, tf.train.load_variable(args.tf_checkpoint_path, name).dtype)
else:
    print(tf.train.latest_checkpoint(args.path))
"""


def _script(target: Path) -> None:
    """A checkpoint script as people write them: ``tf.train`` only (for ``ckpt run``), with the checkpoint its
    example names as a script argument (``model.ckpt-200``) beside it."""
    target.write_text(_SCRIPT)
    Corpus(ESTIMATOR).make(target.parent / "model.ckpt-200", target.parent)


def _tapas_release(case: str) -> Callable[[Path], None]:
    """A TAPAS fine-tuning as google-research/tapas's zips hold it (``model.ckpt`` + ``bert_config.json``), from the
    test data's ``case`` (``model.ckpt-3``)."""
    def build(target: Path) -> None:
        target.mkdir(parents=True)
        for f in (HF_DATA / case).iterdir():
            if f.name.startswith("model.ckpt-3") or f.name == "bert_config.json":
                shutil.copyfile(f, target / f.name.replace("model.ckpt-3", "model.ckpt"))
    return build


def _bertseq2seq_variables(target: Path) -> None:
    """A bertseq2seq module's ``variables/variables`` bundle (the name-based checkpoint of its directory), from the
    test data's BERT-generation encoder module (``model.ckpt-5``); ``target`` is the prefix."""
    target.parent.mkdir(parents=True)
    for f in (HF_DATA / "bert_generation_encoder").glob("model.ckpt-5.*"):
        shutil.copyfile(f, target.parent / f.name.replace("model.ckpt-5", target.name))


def _model_scoped(target: Path) -> None:
    """An object-based checkpoint whose objects live under ``model/`` (for ``--regex '^model/(.*)=\\1'``)."""
    from .keras_templates import tf_keras_checkpoint

    tf_keras_checkpoint(target, {"dense": {"kernel": (4, 3), "bias": (3,)}}, "Adam", ["m", "v"])


def _renamed_estimator(target: Path, scopes: dict[str, str] | None = None) -> None:
    """The estimator's checkpoint (slots included) with ``dnn/hiddenlayer_0`` as ``dense``, ``hiddenlayer_1``
    as ``dense_1``, ``logits`` as ``dense_2`` (or ``scopes``): what a renamed program would write."""
    import formats

    if scopes is None:
        scopes = {"dnn/hiddenlayer_0": "dense", "dnn/hiddenlayer_1": "dense_1", "dnn/logits": "dense_2"}
    with formats.open_checkpoint(CORPUS / ESTIMATOR) as ckpt:
        values = {k: ckpt[k].read() for k in ckpt}
    renamed = {}
    for key, value in values.items():
        scope = next((s for s in scopes if key.startswith(s + "/")), None)
        renamed[scopes[scope] + key[len(scope):] if scope else key] = value
    formats.write_checkpoint(str(target), renamed)


def _renamed_run(target: Path) -> None:
    """A model_dir whose latest checkpoint is the estimator's with ``dnn/hiddenlayer_0`` renamed ``dense``."""
    target.mkdir()
    _renamed_estimator(target / "model.ckpt-200", {"dnn/hiddenlayer_0": "dense"})
    (target / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-200"\n')


def _remote_run(target: Path) -> None:
    """A run folder as a bucket holds it: ``ckpt-100`` (with a tensor ``dense/kernel``) and its state file."""
    import formats

    target.mkdir(parents=True)
    formats.write_checkpoint(str(target / "ckpt-100"), {"dense/kernel": np.arange(12, dtype=np.float32).reshape(4, 3),
                                                        "dense/bias": np.ones(3, np.float32)})
    (target / "checkpoint").write_text('model_checkpoint_path: "ckpt-100"\nall_model_checkpoint_paths: "ckpt-100"\n')


def _runs(target: Path) -> None:
    """A tree of runs: ``exp1/tf_ckpts`` (a CheckpointManager folder) and ``exp2`` (an Estimator model_dir)."""
    Corpus("seed_slots/tf_ckpts").make(target / "exp1" / "tf_ckpts", target)
    Corpus("tf1_estimator").make(target / "exp2", target)


ESTIMATOR = "tf1_estimator/model.ckpt-200"
PLACEHOLDERS: dict[str, Any] = {
    # TF1 Estimator checkpoints (name-based, Adagrad)
    "model.ckpt-200": Corpus(ESTIMATOR),
    "run/model.ckpt-200": Corpus(ESTIMATOR),
    "tf1/model.ckpt-200": Corpus(ESTIMATOR),
    "old/model.ckpt-200": Corpus(ESTIMATOR),
    "model_dir": Corpus("tf1_estimator"),
    "run_a": Corpus("tf1_estimator"),
    "run_b": Corpus("tf1_estimator"),
    "old": Corpus("tf1_estimator"),
    "new": Built(lambda t: _renamed_run(t)),
    "new/model.ckpt-1": Built(_renamed_estimator),
    # TF2 CheckpointManager folders (object-based, legacy Adam slots)
    "run/tf_ckpts": Corpus("seed_slots/tf_ckpts"),
    "tf_ckpts": Corpus("seed_slots/tf_ckpts"),
    "run_a/tf_ckpts": Corpus("seed_slots/tf_ckpts"),
    "run_b/tf_ckpts": Corpus("seed_slots/tf_ckpts"),
    # the Training-checkpoints guide's program on TF >= 2.16 (Keras 3 layers sharing full names)
    "guide/tf_ckpts": Corpus("tf216_guide/two_dense/tf_ckpts"),
    "runs": Built(_runs),
    "runs/exp1/tf_ckpts": Corpus("seed_slots/tf_ckpts"),
    "ckpt-5": Built(_model_scoped),
    # conversions of the Estimator's checkpoint
    "converted/ckpt-1": Ckpt(("convert", "{model.ckpt-200}", "-o", "{out}", "--to", "tf-object")),
    "converted/ckpt": Ckpt(("convert", "{model.ckpt-200}", "-o", "{out}", "--to", "tf-object")),
    "tf2/ckpt-1": Ckpt(("convert", "{model.ckpt-200}", "-o", "{out}", "--to", "tf-object")),
    "keras/ckpt": Built(_keras_template),
    # Keras files
    "model.weights.h5": Corpus("keras3_tagger/tagger.weights.h5"),
    "tagger_weights.h5": Corpus("keras2_tagger/tagger_weights.h5"),
    "tagger_tf/ckpt": Corpus("keras2_tagger/tagger_tf/ckpt"),
    "tagger_model.h5": Corpus("keras2_tagger/tagger_model.h5"),
    "tagger.weights.h5": Corpus("keras3_tagger/tagger.weights.h5"),
    "keras3/converted.weights.h5": Ckpt(("convert", "{tagger_weights.h5}", "-o", "{out}", "--to", "keras3-h5",
                                         "--template", "{keras3/tagger.weights.h5}")),
    "keras3/tagger.weights.h5": Corpus("keras3_tagger/tagger.weights.h5"),
    "full.h5": Built(lambda t: shutil.copyfile(KERAS_LEGACY / "cnn" / "full.h5", t)),  # a tf-keras model.save .h5
    # a CheckpointManager run of three checkpoints (ckpt average)
    "run/ckpt-8": Corpus("seed_keras2/tf_ckpts/ckpt-8"),
    "run/ckpt-9": Corpus("seed_keras2/tf_ckpts/ckpt-9"),
    "run/ckpt-10": Corpus("seed_keras2/tf_ckpts/ckpt-10"),
    # scripts that read checkpoints through tf.train only (ckpt run)
    "uncased_L-12_H-768_A-12": Built(lambda t: shutil.copytree(HF_DATA / "bert", t)),  # convert --to hf
    "tests/data/hf/bert": Built(lambda t: shutil.copytree(HF_DATA / "bert", t)),
    "tests/data/hf/xlnet": Built(lambda t: shutil.copytree(HF_DATA / "xlnet", t)),
    "tests/data/hf_h5/bert_seqcls": Built(lambda t: shutil.copytree(HF_DATA.parent / "hf_h5" / "bert_seqcls", t)),
    "bert_en_uncased_L-12_H-768_A-12_4": Built(lambda t: shutil.copytree(HF_DATA.parent / "tfhub" / "bert", t)),
    "gemma_2b_en": Built(lambda t: shutil.copytree(HF_DATA.parent / "keras_hub" / "gemma" / "preset", t)),
    "tapas_wtq_base": Built(_tapas_release("tapas_wtq")),  # convert --to hf --hf-task
    "tapas_wikisql_base": Built(_tapas_release("tapas_wikisql")),
    "finetune-transformer-lm/model": Built(lambda t: shutil.copytree(HF_DATA / "openai_gpt", t)),  # GPT-1's release
    "bertseq2seq_encoder": Built(lambda t: _bertseq2seq_variables(t / "variables" / "variables")),  # BERT-generation
    "my-tf-bert-classifier": Built(lambda t: shutil.copytree(HF_DATA.parent / "hf_h5" / "bert_seqcls", t)),  # tf_model.h5
    "convert_bert_checkpoint.py": Built(_script),
    "convert_bert_original_tf_checkpoint_to_pytorch.py": Built(_script),
    "inspect.py": Built(_script),
    # the README's transcripts name the corpus itself
    "tests/data/corpus": Built(lambda t: os.symlink(CORPUS, t)),
}
REMOTE_PLACEHOLDERS: dict[str, Any] = {
    "bucket/run": Built(_remote_run),
    "bucket/tf1/model.ckpt-200": Corpus(ESTIMATOR),
    "host/run": Built(_remote_run),
    "bucket/train/ckpt-8": Corpus("seed_keras2/tf_ckpts/ckpt-8"),
    "bucket/train/ckpt-9": Corpus("seed_keras2/tf_ckpts/ckpt-9"),
    "bucket/train/ckpt-10": Corpus("seed_keras2/tf_ckpts/ckpt-10"),
}
URL_HOSTS = ("s3://", "gs://", "https://")
"""URL schemes run against ``memory://<unique>/``: ``s3://bucket/x`` is ``REMOTE_PLACEHOLDERS['bucket/x']``."""


def exists(path: Path) -> bool:
    """Whether ``path`` is there: a file, a folder, or a checkpoint prefix (``path.index``, ``path.*``)."""
    return os.path.lexists(path) or bool(glob.glob(glob.escape(str(path)) + ".*"))


def materialize(path: str, workdir: Path) -> Path:
    """Make the placeholders ``path`` needs (itself, or the folders above it) under ``workdir``; the path."""
    target = workdir / path
    if exists(target):
        return target
    parts = Path(path).parts
    for i in range(1, len(parts) + 1):
        name = "/".join(parts[:i])
        recipe = PLACEHOLDERS.get(name)
        if recipe is not None and not exists(workdir / name):
            recipe.make(workdir / name, workdir)
    return target


# -- reading examples ---------------------------------------------------------------------------------------
@dataclass
class Example:
    """One example line: the ckpt argv, what follows it in the shell line, the exit statuses it may end with."""

    line: str
    argv: list[str]
    pipe: str = ""
    redirect: str = ""
    statuses: tuple[int, ...] = (0,)


def _split_comment(line: str) -> tuple[str, str]:
    """(code, comment): as bash, a ``#`` starting a word outside quotes starts the comment."""
    quote = ""
    for i, c in enumerate(line):
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i], line[i + 1:]
    return line, ""


def parse_example(line: str) -> Example:
    """Split a documented shell line into the ckpt command, its pipe/redirect and the expected exit statuses."""
    code, comment = _split_comment(line)
    lexer = shlex.shlex(code, posix=True, punctuation_chars="|&;<>")
    lexer.whitespace_split = True
    lexer.commenters = ""
    tokens = list(lexer)
    assert tokens[0] == "ckpt", line
    example = Example(line, [])
    rest = tokens[1:]
    for i, token in enumerate(rest):
        if token in ("|", "&&", "||", ">", ";"):
            example.argv = rest[:i]
            tail = rest[i + 1:]
            if token == "|":
                example.pipe = " ".join(tail)
            elif token == ">":
                example.redirect = tail[0]
            else:
                example.statuses = (0, 1)
            break
    else:
        example.argv = rest
    stated = re.search(r"\bexit (?:status )?(\d)\b", comment)
    if stated:
        example.statuses = (int(stated.group(1)),)
    return example


def help_blocks() -> list[tuple[str, list[str]]]:
    """(id, example lines) for the root's help and every command's."""
    ctx = click.Context(cli)
    blocks = [("help:ckpt", example_lines(cli))]
    blocks += [(f"help:{name}", example_lines(cli.get_command(ctx, name))) for name in sorted(COMMANDS)]
    return blocks


SCRATCH = "$(mktemp -d)"
"""A documentation block may begin ``out=$(mktemp -d)`` so that run from the repository root it writes into a scratch
directory; here every block already runs in an empty working directory, so the scratch directory is that one."""


def shell_assignments(line: str) -> dict[str, str]:
    """``NAME=VALUE`` assignments of a line (``a=1; b=$(mktemp -d)``), comments left out; ``$(mktemp -d)`` -> ``.``."""
    found = {}
    for part in line.split("#", 1)[0].split(";"):
        match = re.fullmatch(r"\s*([A-Za-z_]\w*)=(\$\(mktemp -d\)|\S+)\s*", part)
        if match:
            found[match.group(1)] = "." if match.group(2) == SCRATCH else match.group(2)
    return found


def substitute(line: str, variables: dict[str, str]) -> str:
    """``$NAME`` and ``${NAME}`` of the block's assignments replaced by their values."""
    return re.sub(r"\$\{?([A-Za-z_]\w*)\}?", lambda m: variables.get(m.group(1), m.group(0)), line)


def doc_blocks() -> list[tuple[str, list[str]]]:
    """(id, ckpt lines) for each code block of the documentation (README.md and docs/*.md) holding some: in a
    transcript (``$ `` lines) only the ``$ ckpt`` lines; elsewhere the lines starting with ``ckpt ``; ``\\``
    continues a line."""
    out = []
    for block in all_code_blocks():
        lines = block.lines
        transcript = any(line.startswith("$ ") for line in lines)
        found, i, variables = [], 0, {}
        while i < len(lines):
            line = lines[i].strip()
            while line.endswith("\\") and i + 1 < len(lines):
                i += 1
                line = line[:-1].rstrip() + " " + lines[i].strip()
            if transcript:
                line = line[2:] if line.startswith("$ ") else ""
            variables.update(shell_assignments(line))
            if line.startswith("ckpt "):
                found.append(substitute(line, variables))
            i += 1
        if found:
            out.append((f"{doc_name(block.page)}:{block.number}", found))
    return out


# -- running them -------------------------------------------------------------------------------------------
def _command(argv: list[str]) -> tuple[click.Command, list[str]]:
    """The command of ``argv`` and its own arguments (global options before or after it set aside)."""
    argv = hoist_global_options(cli, click.Context(cli), argv)
    at = next(i for i, a in enumerate(argv) if not a.startswith("-"))
    command = cli.get_command(click.Context(cli), argv[at])
    assert command is not None, f"no command {argv[at]!r}"
    return command, argv[at + 1:]


def input_paths(argv: list[str]) -> list[str]:
    """The values of the command's input path parameters (checkpoints, rules files, templates...)."""
    from ckpt_cli.completion import CheckpointPath

    command, rest = _command(argv)
    ctx = command.make_context(command.name or "", list(rest), resilient_parsing=True)
    found = []
    for param in command.params:
        if param.name in OUTPUT_PARAMS or not isinstance(param.type, (CheckpointPath, click.Path)):
            continue
        value = ctx.params.get(param.name or "")
        values = value if isinstance(value, (list, tuple)) else [value]
        found += [str(v) for v in values if v not in (None, "")]
    return found


def _remote(token: str, root: str) -> str:
    """``s3://bucket/x`` -> ``memory://root/bucket/x``, made from REMOTE_PLACEHOLDERS when it is an input."""
    for scheme in URL_HOSTS:
        if token.startswith(scheme):
            return f"memory://{root}/{token[len(scheme):]}"
    return token


def _upload_remote(path: str, root: str, workdir: Path) -> bool:
    import fsspec

    fs = fsspec.filesystem("memory")
    rest = path[len(f"memory://{root}/"):].rstrip("/")
    parts = rest.split("/")
    for i in range(1, len(parts) + 1):
        name = "/".join(parts[:i])
        recipe = REMOTE_PLACEHOLDERS.get(name)
        if recipe is not None:
            local = workdir.parent / "remote" / name
            if not exists(local):
                recipe.make(local, workdir)
                for f in sorted(local.parent.glob(local.name + "*")):
                    fs.put(str(f), f"memory://{root}/{name}{f.name[len(local.name):]}", recursive=True)
            return True
    return fs.exists(path) or fs.exists(path.rstrip("/") + ".index")


_CLUSTER: list[Any] = []


@pytest.fixture(autouse=True, scope="module")
def _close_the_cluster():
    """The in-process cluster's threads end with this module's tests, not with the test process (tests of other
    modules may run after these in the same process: pytest-xdist)."""
    yield
    while _CLUSTER:
        _CLUSTER.pop().close()


def _executor(token: str) -> str:
    """A ``dask://HOST:PORT`` of an example runs on an in-process Dask cluster of two workers (threads of this
    process, so they see fsspec's memory:// filesystem the URLs are moved to); on local threads without Dask.
    Worker processes and a real S3 API: tests/remote/test_dask.py."""
    if not token.startswith("dask://"):
        return token
    try:
        from distributed import LocalCluster
    except ImportError:
        return "local"
    if not _CLUSTER:
        import atexit

        _CLUSTER.append(LocalCluster(processes=False, n_workers=2, threads_per_worker=1, dashboard_address=None))
        atexit.register(_CLUSTER[0].close)  # and closed after this module's tests (_close_the_cluster)
    return _CLUSTER[0].scheduler_address


def prepare(example: Example, workdir: Path, root: str) -> list[str]:
    """The argv to run: URLs moved to memory://, inputs made from placeholders, globs expanded, a Dask
    scheduler's address replaced by an in-process cluster's."""
    argv = [_executor(_remote(t, root)) for t in example.argv]
    inputs = set(input_paths(argv))
    out = []
    for token in argv:
        if token in inputs and token.startswith("memory://"):
            assert _upload_remote(token, root, workdir), f"{example.line}: unmapped remote input {token!r}"
        elif token in inputs:
            materialize(token, workdir)  # the placeholders it names or lies in (a glob: the folders above it)
            paths = (sorted(glob.glob(token, root_dir=workdir)) or [token]) if any(c in token for c in "*?[") \
                else [token]
            for p in paths:
                assert exists(materialize(p, workdir)), (
                    f"{example.line}: input {p!r} is no placeholder (add it to PLACEHOLDERS in {__file__})")
            out += paths
            continue
        out.append(token)
    return out


def run_example(example: Example, workdir: Path, root: str) -> None:
    argv = prepare(example, workdir, root)
    result = CliRunner().invoke(cli, argv, catch_exceptions=False)
    assert result.exit_code in example.statuses, (
        f"{example.line}\n  ran: ckpt {shlex.join(argv)}\n  exit {result.exit_code}, expected "
        f"{' or '.join(map(str, example.statuses))}\n{result.stdout}{result.stderr}")
    if example.pipe.startswith("jq"):
        json.loads(result.stdout)
    if example.redirect and not example.redirect.startswith(("~", "$", "/")):
        target = workdir / example.redirect
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(result.stdout)


BLOCKS = help_blocks() + doc_blocks()


@pytest.mark.parametrize("lines", [lines for _, lines in BLOCKS], ids=[name for name, _ in BLOCKS])
def test_documented_examples_run(lines, tmp_path, monkeypatch):
    workdir = tmp_path / "work"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    root = f"examples-{uuid.uuid4().hex[:8]}"
    for line in lines:
        run_example(parse_example(line), workdir, root)


def test_doc_block_variables():
    assert shell_assignments("out=$(mktemp -d); c=tests/data/corpus  # scratch") == {"out": ".", "c": "tests/data/corpus"}
    assert substitute("ckpt ls $c/x -o ${out}/y $HOME", {"out": ".", "c": "corpus"}) == "ckpt ls corpus/x -o ./y $HOME"
    lines = dict(doc_blocks())
    assert not [line for block in lines.values() for line in block if "$out" in line or "$c/" in line]


def test_every_command_has_runnable_examples():
    named = {name.split(":", 1)[1] for name, lines in help_blocks() if lines}
    assert named == {"ckpt", *COMMANDS}


def test_input_paths_of_a_line():
    assert input_paths(["-q", "verify", "x", "--against", "y", "--match", "name", "--rules", "r.json"]) == \
        ["x", "y", "r.json"]
    assert input_paths(["ls", "a", "b", "--no-color"]) == ["a", "b"]
    assert input_paths(["doctor", "c", "--against", "t", "--write-rules", "out.json"]) == ["c", "t"]


def test_an_unknown_placeholder_fails(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(AssertionError, match="is no placeholder"):
        run_example(parse_example("ckpt ls somewhere/else/ckpt-1"), tmp_path, "x")


@pytest.mark.parametrize("line, argv, pipe, redirect, statuses", [
    ("ckpt -q diff a b && echo same", ["-q", "diff", "a", "b"], "", "", (0, 1)),
    ("ckpt graph x | dot -Tsvg > g.svg", ["graph", "x"], "dot -Tsvg > g.svg", "", (0,)),
    ("ckpt trend d --json > t.json", ["trend", "d", "--json"], "", "t.json", (0,)),
    ("ckpt diff a b   # exit 1: they differ", ["diff", "a", "b"], "", "", (1,)),
    ("ckpt stats 'dnn/*' x # all", ["stats", "dnn/*", "x"], "", "", (0,)),
    ("ckpt ls \"a b\" -q  # it's quiet", ["ls", "a b", "-q"], "", "", (0,)),
])
def test_parse_example(line, argv, pipe, redirect, statuses):
    example = parse_example(line)
    assert (example.argv, example.pipe, example.redirect, example.statuses) == (argv, pipe, redirect, statuses)
