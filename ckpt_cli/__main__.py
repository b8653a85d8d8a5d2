"""``python -m ckpt_cli``: the same entry as the ``ckpt`` command (scripts/ckpt, :func:`ckpt_cli.fast.main`)."""
import gc

if __name__ == "__main__":
    gc.freeze()  # as scripts/ckpt: the start-up's objects go to the permanent generation, collections skip them

from ckpt_cli.fast import main  # noqa: E402

if __name__ == "__main__":
    main()
