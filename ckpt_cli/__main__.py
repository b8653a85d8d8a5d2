"""``python -m ckpt_cli``: the same entry as the ``ckpt`` command (scripts/ckpt, :func:`ckpt_cli.fast.main`),
Ctrl-C handled first of all as there (:mod:`ckpt_cli.interrupt`)."""
if __name__ == "__main__":
    try:
        from ckpt_cli.interrupt import install

        install()
    except KeyboardInterrupt:  # Ctrl-C before the handler was in place
        from ckpt_cli.interrupt import interrupted

        interrupted()

import gc  # noqa: E402
import sys  # noqa: E402

if __name__ == "__main__":
    gc.freeze()  # as scripts/ckpt: the start-up's objects go to the permanent generation, collections skip them

    from ckpt_cli.importer import install as find_own_modules

    find_own_modules()  # as scripts/ckpt: ckpt's own modules from their .pyc without importlib's general search

from ckpt_cli.fast import end_process, main  # noqa: E402

if __name__ == "__main__":
    status: int | str | None = None
    try:
        main()
    except SystemExit as done:
        status = done.code
    end_process(status, sys._getframe())  # as scripts/ckpt
