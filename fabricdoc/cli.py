"""The `fabricdoc` command: a thin layer that parses arguments and prints one line per error.

Each subcommand lives in ``fabricdoc/commands/<name>.py`` with ``register(subparsers)``
(which sets ``func``) and is found by listing that package, so adding a command
touches no other file.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from fabricdoc import commands
from fabricdoc.errors import FabricdocError

EXIT_HEALTHY = 0
EXIT_FAULTS = 1
EXIT_CANNOT_RUN = 2

EPILOG = """exit codes:
  0  the fabric (or the checked hosts) is healthy
  1  faults were found
  2  fabricdoc could not run (bad input, missing tool, ...): one line on stderr says why
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fabricdoc",
        description="Find the broken or congested part of an InfiniBand or RoCE fabric "
        "before it costs a training job its throughput.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from fabricdoc import __version__

    parser.add_argument("--version", action="version", version=f"fabricdoc {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"fabricdoc.commands.{info.name}")
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_CANNOT_RUN
    try:
        return int(args.func(args))
    except FabricdocError as exc:
        print(f"fabricdoc {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_CANNOT_RUN
    except KeyboardInterrupt:
        print(f"fabricdoc {args.command}: interrupted; finished results were kept", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_HEALTHY


if __name__ == "__main__":
    sys.exit(main())
