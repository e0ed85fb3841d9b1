"""The CLI's one vocabulary: every option that means the same thing in several subcommands is defined here once.

A flag has one spelling, one metavar and one help text wherever it appears
(a test walks the parser to hold that). Old spellings that scheduler configs
and scripts already use are kept as hidden aliases.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from fabricdoc.errors import ConfigError
from fabricdoc.model.verdict import exit_codes_help

HIDDEN = argparse.SUPPRESS
EXIT_CODES = exit_codes_help()  # the verdicts and exit codes, as fabricdoc.model.verdict declares them

FINDING_IDS = """finding ids:
  every finding has one name, six hex digits such as 3fa2c1 (eight or more on the rare clash of
  two findings in one report): the first digits of the sha256 of its key kind:component:fault,
  where component is fabric ids and ports (GUID/port on InfiniBand), never labels. The same fault
  on the same part has the same id in every sweep; the report, the JSON, the TUI, drain and gate
  reasons (fd:<fault> <id>), the NPD message, /metrics and the history all show it.
"""

HISTORY_ENV = "FABRICDOC_HISTORY"
HISTORY_HELP = (f"the sweep history store (SQLite file; default ${HISTORY_ENV}). With neither, sweep, analyze "
                "and exporter use no history (no drain confirmation across sweeps, no counter series), history "
                "and tui use ~/.local/share/fabricdoc/history.sqlite; impact reads a history only when --history "
                "is given")



def positive_hours(text: str) -> float:
    """A job length in hours: a finite number above 0 (a zero-hour job costs nothing to lose)."""
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of hours") from None
    if not math.isfinite(value) or not 0 < value <= 24 * 366:
        raise argparse.ArgumentTypeError(f"{text!r}: a job length is more than 0 and at most a year of hours")
    return value


def positive_count(text: str) -> int:
    """A count of at least 1 (tests at once, say): zero or a negative count would run nothing."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give at least 1")
    return value


def add_report(p: argparse.ArgumentParser, *, required: bool = True) -> None:
    """The report a command reads: a positional REPORT, with ``--report FILE`` kept as a hidden alias."""
    p.add_argument("report", nargs="?", metavar="REPORT",
                   help="a fabricdoc JSON report (from 'fabricdoc sweep -o' or 'fabricdoc analyze -o')")
    p.add_argument("--report", dest="report_option", metavar="FILE", help=HIDDEN)
    p.set_defaults(report_required=required)


def report_path(args: argparse.Namespace) -> str | None:
    """The report named positionally or by ``--report``; ConfigError when both or (if required) neither."""
    pos, opt = getattr(args, "report", None), getattr(args, "report_option", None)
    if pos and opt and pos != opt:
        raise ConfigError(f"two reports given ({pos} and --report {opt}): give one")
    path = pos or opt
    if not path and getattr(args, "report_required", True):
        raise ConfigError("no report given: name a report file (REPORT)")
    return path


def add_history(p: argparse.ArgumentParser, *aliases: str, from_env: bool = True, **kw: Any) -> None:
    """``--history DB``: the sweep history store, default ``$FABRICDOC_HISTORY`` (``aliases`` are hidden old
    spellings; ``from_env=False`` keeps the default None, as impact needs)."""
    if from_env and "default" not in kw:
        kw["default"] = os.environ.get(HISTORY_ENV) or None
    p.add_argument("--history", metavar="DB", help=HISTORY_HELP, **kw)
    for alias in aliases:
        p.add_argument(alias, dest="history", metavar="DB", help=HIDDEN, **kw)


def add_json(p: argparse.ArgumentParser, *, suppress_default: bool = False) -> None:
    """``--json``: machine-readable output instead of text."""
    extra: dict[str, Any] = {"default": argparse.SUPPRESS} if suppress_default else {}
    p.add_argument("--json", action="store_true", help="print JSON instead of text", **extra)


def add_output(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write the JSON document (report or records) to FILE, atomically")


def add_job_hosts(p: argparse.ArgumentParser) -> None:
    p.add_argument("--job-hosts", metavar="FILE",
                   help="the job's hosts: Slurm hostlists (gpu[001-016]) separated by spaces or lines, "
                   "'#' comments, '-' for stdin")


def add_job_cost(p: argparse.ArgumentParser) -> None:
    p.add_argument("--hours", type=positive_hours, default=24.0, metavar="H",
                   help="planned job length in hours, for the job-cost figures (default 24; more than 0)")
    p.add_argument("--checkpoint-minutes", type=float, metavar="MIN",
                   help="minutes one checkpoint takes to write (default 5); sets the Young/Daly interval")


def add_judging(p: argparse.ArgumentParser) -> None:
    """How findings are judged: threshold rules and the slow ratio."""
    p.add_argument("--rules", metavar="FILE",
                   help="TOML threshold rules over the defaults ([[rule]] counter/op/value/fault/severity)")
    p.add_argument("--slow-ratio", type=_ratio, default=None, metavar="R",
                   help="a test below R x what healthy tests of its shape reach on this fabric is slow. Default: "
                   "learned from the tests themselves: slow means further below the healthy tests' median than "
                   "their spread explains (2.5 spreads, at least 7%%); see the report's expectations")


def _ratio(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{text}: must be in (0, 1]")
    return value


def add_max_report_age(p: argparse.ArgumentParser) -> None:
    """``--max-report-age-h``: how old a report may be and still be acted on."""
    from fabricdoc.scheduler.freshness import DEFAULT_MAX_AGE_H

    p.add_argument("--max-report-age-h", type=float, default=None, metavar="H",
                   help=f"refuse a report older than H hours (default {DEFAULT_MAX_AGE_H:g}; 0: no limit); "
                   "one dated in the future is always refused")


def max_report_age(args: argparse.Namespace) -> float:
    """--max-report-age-h, or the default when not given."""
    from fabricdoc.scheduler.freshness import DEFAULT_MAX_AGE_H

    value = getattr(args, "max_report_age_h", None)
    if value is None:
        return DEFAULT_MAX_AGE_H
    if not value >= 0:  # also NaN
        from fabricdoc.errors import ConfigError

        raise ConfigError(f"--max-report-age-h {value:g} must be 0 (no age limit) or more hours")
    return float(value)


def add_apply(p: argparse.ArgumentParser) -> None:
    """``--apply``: make the printed changes; without it nothing is changed."""
    p.add_argument("--apply", action="store_true", help="run the printed commands (default: only print them)")


def add_comment_only(p: argparse.ArgumentParser) -> None:
    """``--comment-only``: Slurm node comments instead of drains (drain writes them, resume clears them)."""
    p.add_argument("--comment-only", action="store_true",
                   help="comment-only mode: fabricdoc's word goes in the node's comment (scontrol update "
                   "comment=...), never its state; resume clears fabricdoc's comments")


def add_drain_policy(p: argparse.ArgumentParser) -> None:
    """The brakes on the drain list (see fabricdoc/report/drain_policy.py)."""
    p.add_argument("--drain-policy", metavar="FILE",
                   help="TOML drain policy: mode (drain|comment), max_drain or min_cap/cap_pct (default "
                   "max(4, 0.5%% of hosts) per sweep), confirm_sweeps of confirm_window (with --history), "
                   "maintenance = [hostlists or NODE/PORT]; held-back drains are listed in the report")


def drain_policy_of(args: argparse.Namespace) -> Any:
    """The DrainPolicy of --drain-policy, or None (the default policy)."""
    path = getattr(args, "drain_policy", None)
    if not path:
        return None
    from fabricdoc.report.drain_policy import load_drain_policy

    return load_drain_policy(path)


def add_no_topology(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-topology", action="store_true", help="leave the fabric's topology out of the JSON report")


def add_timeout(p: argparse.ArgumentParser, default: float) -> None:
    p.add_argument("--timeout", type=float, default=default, metavar="S",
                   help="seconds before one external tool run is killed (default %(default)g)")


def add_fabric(p: argparse.ArgumentParser, default: str | None = None) -> None:
    """``--fabric SPEC``: which fabric (analyze keeps ``--topology`` as a hidden alias)."""
    p.add_argument("--fabric", default=default, metavar="SPEC",
                   help="which fabric: a bundled name (demo), a fabric file (YAML, or saved ibnetdiscover output); "
                   "sweep also takes sim:PATH, ib, ibsim:NETFILE and roce (see 'fabricdoc sweep --help')")


def add_node(p: argparse.ArgumentParser) -> None:
    p.add_argument("--node", metavar="NAME",
                   help="this node's name (default: $NODE_NAME, else the network namespace, else the hostname)")


def add_policy(p: argparse.ArgumentParser) -> None:
    """The gate policy: a TOML file and the flags that override its keys."""
    from fabricdoc.model.severity import SEVERITIES

    p.add_argument("--policy", metavar="FILE", help="gate policy TOML (keys: see 'fabricdoc gate --help')")
    p.add_argument("--max-severity", choices=(*SEVERITIES, "none"),
                   help="findings above this severity fail ('none': any finding fails)")
    p.add_argument("--min-confidence", type=float, metavar="C", help="findings less certain than C (0..1) are ignored")


def add_names(p: argparse.ArgumentParser) -> None:
    """--map and --host-rule: how fabric host names become scheduler node names."""
    p.add_argument("--map", metavar="FILE", help="fabric name -> scheduler node name map (YAML or two-column text)")
    p.add_argument("--host-rule", nargs=2, action="append", default=[], metavar=("REGEX", "REPLACEMENT"),
                   help="rewrite fabric names that fully match REGEX (repeatable; after --map entries)")


def add_progress(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    add_quiet(p)


QUIET_HELP = ("print only the one verdict line, no progress (gate: nothing when it passes); the exit code says "
              "the same, and -o / --json still write everything")


def add_quiet(p: argparse.ArgumentParser) -> None:
    """-q/--quiet, the same wherever a command prints a verdict."""
    p.add_argument("-q", "--quiet", action="store_true", help=QUIET_HELP)
