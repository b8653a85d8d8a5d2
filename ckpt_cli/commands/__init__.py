"""One module per subcommand; each parses options, calls formats, renders."""
