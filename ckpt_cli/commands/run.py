"""``ckpt run``: run a Python script with ckpt's TensorFlow stand-in (formats.tf) as ``tensorflow``."""
from __future__ import annotations

from ..spec import FILE, UNPROCESSED, Arg, Command

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from ..environment import Environment
    from ..spec import Params


def run(env: Environment, p: Params) -> int:
    """``ckpt run SCRIPT ARGS...``: the script's exit status."""
    from formats.tf.standin import run_script

    return run_script([p.script, *p.args])


SPEC = Command(
    "run", runner=run, passes_on=True,
    short_help="Run a checkpoint-reading TensorFlow script without TensorFlow.",
    help="""Run a Python script with ckpt's TensorFlow stand-in installed as 'tensorflow'.

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
    """,
    arguments=(Arg("script", type=FILE), Arg("args", nargs=-1, required=False, type=UNPROCESSED, metavar="[ARGS]...")),
)
