"""Widgets of the fabricdoc TUI: the virtual report table, text panels, history sparklines."""
