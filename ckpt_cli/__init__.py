"""ckpt's command line: parse arguments, call :mod:`formats`, render the result objects."""
import sys

if sys.argv[:1] == ["-m"]:  # `python -m ckpt_cli`, this package imported while runpy locates __main__: Ctrl-C
    try:  # is handled from here on, as the launcher's first statement does (ckpt_cli.interrupt)
        from ckpt_cli.interrupt import install

        install()
    except KeyboardInterrupt:  # Ctrl-C before the handler was in place
        from ckpt_cli.interrupt import interrupted

        interrupted()
