"""The Textual app over a fabricdoc Report (only this package imports textual)."""
