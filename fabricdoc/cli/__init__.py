"""The ``fabricdoc`` command: one module per subcommand, the shared vocabulary in args.py, main() in main.py."""
