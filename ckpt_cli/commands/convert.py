"""``ckpt convert``: name-based <-> object-based checkpoints, generically or onto a template."""
from __future__ import annotations

import click

from formats.ops.convert.targets import TARGETS

from ..completion import CHECKPOINT
from ..help import WRITER_EXIT_STATUS, command
from ..options import READ_BACK_JOBS, ByteSize, jobs_option, link_option, rule_options, write_options


@command(short_help="Convert between checkpoint formats (TF1 <-> TF2, Keras, npz...).",
         exit_status=WRITER_EXIT_STATUS)
@click.argument("src", type=CHECKPOINT)
@click.option("-o", "--output", "out", required=True, type=click.Path(), metavar="OUT",
              help="Output checkpoint prefix (or file, for file formats).")
@click.option("--to", "to", required=True, type=click.Choice(sorted(TARGETS)),
              help="Output format (each is described above).")
@click.option("--template", type=CHECKPOINT, metavar="T",
              help="A checkpoint or weights file the target program wrote for the same model: the output "
                   "takes its layout and keys, SRC's values (--to keras3-h5 needs one unless SRC is Keras 3 "
                   "weights).")
@rule_options("SRC's")
@click.option("--allow-missing", is_flag=True, help="Template variables with no source keep the template's value.")
@click.option("--drop-optimizer", is_flag=True,
              help="keras3-h5: leave optimizer state out (both the source's and the template's variables).")
@click.option("--slot-names", type=click.Choice(["tf2", "tf1"]), default="tf2", show_default=True,
              help="tf-name: slot names as in TF2 (<var>/m) or TF1 (<var>/Adam, <var>/Adam_1, beta1_power, "
                   "global_step: what a TF1 optimizer restores).")
@click.option("--learning-rate", type=float, metavar="LR",
              help="The learning rate optimizer state was trained with, when neither checkpoint stores it "
                   "(Momentum slots are scaled by it between TF1 and Keras).")
@click.option("--hparam", "hparams", multiple=True, metavar="NAME=VALUE", callback=lambda c, p, v: _hparams(v),
              help="An optimizer hyperparameter neither checkpoint stores (beta_1=0.9, beta_2=0.999; "
                   "iterations=N for the step count); repeatable.")
@click.option("--max-shard-size", type=ByteSize(), metavar="SIZE",
              help="keras3-h5: write sharded weights (OUT a *.weights.json) with at most SIZE bytes of tensors "
                   "per shard (500MB, 2GB, ...), as Keras' save_weights(max_shard_size=...) does.")
@write_options()
@link_option()
@jobs_option(READ_BACK_JOBS)
@click.pass_context
def convert(ctx: click.Context, src: str, out: str, to: str, template: str | None, maps: tuple[str, ...],
            regexes: tuple[str, ...], rules_file: str | None, allow_missing: bool, drop_optimizer: bool, slot_names: str,
            learning_rate: float | None, hparams: dict[str, float], max_shard_size: int | None,
            dry_run: bool, as_json: bool, force: bool, no_verify: bool, update_state: bool, verbose: bool,
            link: bool, jobs: int) -> None:
    """Convert SRC to another format: --to names one of six targets.

    \b
      tf-object    TensorFlow 2 object-based bundle (tf.train.Checkpoint)
      tf-name      TensorFlow 1 name-based bundle (tf.compat.v1.train.Saver)
      keras2-h5    Keras 2 save_weights .h5
      keras3-h5    Keras 3 .weights.h5, or sharded *.weights.json: needs
                   --template unless SRC is itself Keras 3 weights
      npz          numpy .npz of every numeric tensor, with a provenance record
      safetensors  .safetensors of every numeric tensor, with a provenance record

    --template T is a file the target program wrote for the same model (e.g.
    with model.save_weights): the output takes T's layout and keys, and SRC's
    values (tf-object, keras2-h5, keras3-h5; npz and safetensors take none).
    Each template variable takes SRC's tensor whose name (after
    --map/--regex/--rules) equals its full_name.

    Optimizer state: tf-object and tf-name carry it (slots follow their
    variables; --slot-names picks tf-name's TF2 or TF1 names); keras3-h5 fills
    the template's optimizer variables, when it has them; keras2-h5 holds model
    weights only; npz and safetensors keep every tensor under its key. It is
    converted by meaning where TF1, tf-keras and Keras 3 keep different numbers
    (Momentum's accumulator x -learning_rate, iterations from global_step or
    beta1_power), and the plan shows each transform.

    Without a template, --to tf-object makes one object per name segment of a
    TF1 name-based checkpoint, each variable's full_name set to its original
    name; --to tf-name gives every variable its full_name as key. Every problem
    (missing variables, shape or dtype mismatches, optimizer state with no
    equivalent or a missing hyperparameter, unused tensors, rules that matched
    nothing) is reported before anything is written.

    \b
    Examples:
      ckpt convert model.ckpt-200 -o tf2/ckpt-1 --to tf-object
      ckpt convert model.ckpt-200 -o tf2/ckpt-1 --to tf-object --template keras/ckpt --dry-run \\
          --map dnn/hiddenlayer_0=dense --map dnn/hiddenlayer_1=dense_1 --map dnn/logits=dense_2
      ckpt convert tf_ckpts/ckpt-5 -o tf1/model.ckpt --to tf-name --slot-names tf1 \\
          --hparam beta_1=0.9 --hparam beta_2=0.999
      ckpt convert model.weights.h5 -o sharded/model.weights.json --to keras3-h5 --max-shard-size 2GB
    """
    from .converting import run_convert

    if learning_rate is not None:
        hparams = {**hparams, "learning_rate": learning_rate}
    if max_shard_size is not None and to != "keras3-h5":
        raise click.UsageError("--max-shard-size applies to --to keras3-h5 only")
    if max_shard_size is not None and not out.endswith(".json"):
        raise click.UsageError(f"--max-shard-size writes sharded weights: name OUT *.weights.json, not {out!r}")
    ctx.exit(run_convert(src, out, to, template=template, maps=maps, regexes=regexes, rules_file=rules_file,
                         allow_missing=allow_missing, drop_optimizer=drop_optimizer, slot_names=slot_names,
                         hparams=hparams,
                         max_shard_size=max_shard_size, dry_run=dry_run, as_json=as_json, force=force,
                         no_verify=no_verify, update_state=update_state, link=link, jobs=jobs,
                         verbose=verbose))


def _hparams(values: tuple[str, ...]) -> dict[str, float]:
    """``("beta_1=0.9",)`` -> ``{"beta_1": 0.9}``; a usage error for anything else."""
    out: dict[str, float] = {}
    for text in values:
        name, sep, value = text.partition("=")
        try:
            number = float(value)
        except ValueError:
            number = float("nan")
        if not sep or not name.isidentifier() or number != number or number in (float("inf"), float("-inf")):
            raise click.BadParameter(f"{text!r} is not NAME=NUMBER (e.g. beta_1=0.9)", param_hint="--hparam")
        out[name] = number
    return out

