"""CLI commands, one module each; see perfmodel/cli.py."""
