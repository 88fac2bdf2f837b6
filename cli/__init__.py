"""The `dockyard` command-line client: talks to Dockyard's REST API only (never imports Django)."""
