"""The dockyard subcommands, one module per noun."""
