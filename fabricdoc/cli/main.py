"""The ``fabricdoc`` command: parses arguments, runs one subcommand, turns every error into one line.

Each subcommand lives in ``fabricdoc/cli/<name>.py`` with ``register(subparsers)``
(which sets ``func``) and imports nothing heavy until it runs. The command's module
itself is imported only when its command is named (:data:`COMMANDS` holds the line
``fabricdoc --help`` lists for it), so ``--help`` and ``fabricdoc probe`` start fast.
Library code raises; only this module prints an error and chooses the exit code.
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
from fabricdoc.model.verdict import EXIT_CANNOT_RUN, EXIT_INTERRUPTED

COMMANDS: dict[str, str] = {
    # name: the line `fabricdoc --help` lists, the same as the module's own add_parser help (a test holds it)
    "sweep": "sweep a fabric: counters, bandwidth tests, localization, verdict",
    "watch": "sweep every --every seconds into the history store and the report file the exporter serves",
    "analyze": "build a report from saved records (probe output, nccl-tests logs, NCCL debug logs, an ibdiagnet run)",
    "probe": "collect this host's counters, link state, flaps and GPU health as JSON records",
    "impact": "predict AllReduce bus bandwidth and job failure cost from a report",
    "compare": "compare two reports: new, cleared and persisting findings, drains, busbw, tests, coverage",
    "tui": "interactive terminal view of a report or a live sweep",
    "drain": "print (or --apply) scontrol commands that drain the report's faulty hosts",
    "resume": "print (or --apply) scontrol commands that resume nodes whose findings cleared",
    "gate": "exit 0 if a job's hosts are healthy enough to start on, else 1 with reasons",
    "k8s": "Kubernetes output: Node Problem Detector plugin status, node taints and their removal",
    "exporter": "serve Prometheus metrics (verdict, findings, drain list, port counters and states)",
    "history": "store reports in the local sweep history and show rates, flaps and failure rates",
    "schema": "print the JSON Schema of the report (fabricdoc.report/v1)",
    "summary": "print a short Markdown or plain-text summary of a report, or of some findings, for a ticket",
}


class _Commands(argparse._SubParsersAction):
    """The subcommands, each a placeholder (name and help line) until it is named on the
    command line: then its module is imported and registers its real parser."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        self.load(values[0])
        super().__call__(parser, namespace, values, option_string)

    def placeholder(self, name: str) -> None:
        self.add_parser(name, help=COMMANDS[name], add_help=False).set_defaults(_placeholder=True)

    def load(self, name: str) -> None:
        """Put the command's real parser in place of its placeholder (the listing keeps its order)."""
        stub = self._name_parser_map.get(name)
        if stub is None or not stub.get_default("_placeholder"):
            return
        del self._name_parser_map[name]
        listing = list(self._choices_actions)
        importlib.import_module(f"fabricdoc.cli.{name}").register(self)
        self._choices_actions[:] = listing


def build_parser(lazy: bool = False) -> argparse.ArgumentParser:
    """The ``fabricdoc`` parser. ``lazy``: a command's module is imported only when the command is
    parsed (what ``main`` uses); otherwise every command's parser is built now."""
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
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", action=_Commands)
    for name in COMMANDS:
        sub.placeholder(name)
        if not lazy:
            sub.load(name)
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
        parser = build_parser(lazy=True)
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
