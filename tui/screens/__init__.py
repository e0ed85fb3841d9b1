"""Screens of the fabricdoc TUI: the main screen and one module per tab of it, detail, dialogs, sweep."""
