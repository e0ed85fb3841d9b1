"""The ``fabricdoc`` command: parses arguments, runs one subcommand, turns every error into one line.

Each subcommand lives in ``fabricdoc/cli/<name>.py`` with ``register(subparsers)``
(which sets ``func``) and imports nothing heavy until it runs, so ``--help`` and
``fabricdoc probe`` start fast. Library code raises; only this module prints an
error and chooses the exit code.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
import traceback
from typing import Any

from fabricdoc.cli.args import EXIT_CODES
from fabricdoc.errors import FabricdocError

EXIT_HEALTHY = 0
EXIT_FAULTS = 1
EXIT_CANNOT_RUN = 2
EXIT_INTERRUPTED = 130

COMMANDS = ("sweep", "analyze", "probe", "impact", "tui", "drain", "resume", "gate", "k8s", "exporter",
            "history", "schema")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fabricdoc",
        description="Find the broken or congested part of an InfiniBand or RoCE fabric "
        "before it costs a training job its throughput.",
        epilog=EXIT_CODES + "\nFABRICDOC_DEBUG=1 (or --debug) shows the traceback of an unexpected error.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"fabricdoc {_version()}",
                        help="print fabricdoc's version and exit")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an unexpected error")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"fabricdoc.cli.{name}").register(sub)
    return parser


def _version() -> str:
    from fabricdoc import __version__

    return __version__


def _escape(text: str) -> str:
    from fabricdoc.model.text import escape

    return escape(text)


def _terminate_handler(owner: int) -> Any:
    """A SIGTERM handler that stops this run the way Ctrl-C does (children ended, results kept).

    A process forked from this one (a library's helper in another network
    namespace) inherits the handler; there SIGTERM keeps its default meaning,
    so the child dies instead of running this process's clean-up as its own.
    """

    def _terminate(signum: int, frame: object) -> None:
        if os.getpid() != owner:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        raise KeyboardInterrupt

    return _terminate


def main(argv: list[str] | None = None) -> int:
    """Run one command; the previous SIGTERM handler is put back when it returns."""
    on_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate_handler(os.getpid())) if on_main else None
    try:
        return _main(argv)
    finally:
        if on_main and previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _main(argv: list[str] | None) -> int:
    where = "fabricdoc"
    debug = os.environ.get("FABRICDOC_DEBUG", "") not in ("", "0")
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return EXIT_CANNOT_RUN
        debug = debug or args.debug
        where = f"fabricdoc {args.command}"
        return int(args.func(args))
    except FabricdocError as exc:
        print(f"{where}: error: {_escape(str(exc))}", file=sys.stderr)
        return EXIT_CANNOT_RUN
    except KeyboardInterrupt:
        from fabricdoc.sources.processes import stop_all

        stopped = stop_all()
        more = f"; stopped {stopped} test process group(s)" if stopped else ""
        print(f"{where}: interrupted{more}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (``| head``): not success. Keep Python from complaining at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_CANNOT_RUN
    except Exception as exc:  # a bug: one line, "could not run", never the faults-found code
        if debug:
            traceback.print_exc()
        print(f"{where}: internal error: {type(exc).__name__}: {_escape(str(exc))} "
              "(FABRICDOC_DEBUG=1 shows the traceback)", file=sys.stderr)
        return EXIT_CANNOT_RUN


if __name__ == "__main__":
    sys.exit(main())
