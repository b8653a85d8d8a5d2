"""``ckpt run``: run a Python script with ckpt's TensorFlow stand-in (formats.tf) as ``tensorflow``."""
from __future__ import annotations

import click

from ..help import command


@command(short_help="Run a checkpoint-reading TensorFlow script without TensorFlow.",
         context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("script", type=click.Path(dir_okay=False))
@click.argument("args", nargs=-1, type=click.UNPROCESSED, metavar="[ARGS]...")
@click.pass_context
def run(ctx: click.Context, script: str, args: tuple[str, ...]) -> None:
    """Run a Python script with ckpt's TensorFlow stand-in installed as 'tensorflow'.

    The script runs as 'python SCRIPT ARGS...' would run it, except that
    'import tensorflow' (and tensorflow.compat.v1) gives formats.tf: tf.train's
    latest_checkpoint, get_checkpoint_state, list_variables, load_variable,
    load_checkpoint, NewCheckpointReader, checkpoints_iterator, tf.errors,
    tf.io.gfile and the dtypes, on every format ckpt reads. Anything else of
    TensorFlow raises one error naming it. The exit status is the script's.

    \b
    Examples:
      ckpt run convert_bert_checkpoint.py --tf_checkpoint_path model.ckpt-200
      ckpt run inspect.py runs/exp1/tf_ckpts
    """
    from formats.tf.standin import run_script

    ctx.exit(run_script([script, *args]))
