"""Subcommands of the `fabricdoc` CLI, one module each (see fabricdoc.cli)."""
