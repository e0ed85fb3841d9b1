"""``python -m fabricdoc``: the same as the ``fabricdoc`` command."""

import sys


def run() -> int:
    """The command, with Ctrl-C during start-up (before main's own handling) one line and exit 130."""
    try:
        from fabricdoc.cli.main import main
    except KeyboardInterrupt:
        print("fabricdoc: interrupted", file=sys.stderr)
        return 130
    return main()


if __name__ == "__main__":
    sys.exit(run())
