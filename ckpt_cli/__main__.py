"""``python -m ckpt_cli``: the same entry as the ``ckpt`` console script (:func:`ckpt_cli.fast.main`)."""
from ckpt_cli.fast import main

if __name__ == "__main__":
    main()
