"""ckpt's command line: parse arguments, call :mod:`formats`, render the result objects."""
