"""``fabricdoc k8s``: Node Problem Detector plugin status, node taints, and an NPD config for them."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import sys

from fabricdoc.cli import args as a
from fabricdoc.errors import FabricdocError

EPILOG = """npd:
  Run by Node Problem Detector's custom plugin monitor on each node. Prints one
  short line and exits 0 (fabric OK for this node), 1 (problem: the node is in
  the drain list or a finding on it is above --max-severity) or 2 (unknown:
  report unreadable or stale, node not in it). The node is --node, else
  $NODE_NAME (set it from the downward API), else the hostname.

taints:
  A JSON list of {node, key, value, effect}, one per host to drain (or
  'kubectl taint' lines with --format kubectl; nothing is run).

npd-config:
  Prints an NPD custom-plugin-monitor JSON that runs 'fabricdoc k8s npd'.
"""


def register(sub: argparse._SubParsersAction) -> None:
    from fabricdoc.scheduler.k8s import DEFAULT_TAINT_KEY, EFFECTS

    p = sub.add_parser(
        "k8s",
        help="Kubernetes output: Node Problem Detector plugin status and node taints",
        description="Kubernetes forms of a fabricdoc report.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    views = p.add_subparsers(dest="view", metavar="VIEW", required=True)
    npd = views.add_parser("npd", help="NPD custom plugin: exit 0 OK / 1 problem / 2 unknown, one line on stdout")
    a.add_report(npd)
    a.add_node(npd)
    npd.add_argument("--max-chars", type=int, default=80, metavar="N", help="message length limit (NPD max_output_length)")
    npd.add_argument("--stale-after-h", type=float, metavar="H", help="report older than this: unknown (exit 2)")
    a.add_policy(npd)
    a.add_names(npd)
    npd.set_defaults(func=run_npd)

    t = views.add_parser("taints", help="taints for the report's hosts to drain")
    a.add_report(t)
    t.add_argument("--key", default=DEFAULT_TAINT_KEY, metavar="KEY", help=f"taint key (default {DEFAULT_TAINT_KEY})")
    t.add_argument("--effect", default="NoSchedule", choices=EFFECTS, help="taint effect (default NoSchedule)")
    t.add_argument("--format", default="json", choices=("json", "kubectl"), help="JSON list or kubectl lines (default json)")
    a.add_names(t)
    t.set_defaults(func=run_taints)

    c = views.add_parser("npd-config", help="print an NPD custom plugin monitor config")
    a.add_report(c)
    c.add_argument("--invoke-interval", default="5m", metavar="DURATION", help="how often NPD runs the check (default 5m)")
    c.add_argument("--interval", dest="invoke_interval", help=a.HIDDEN)
    c.set_defaults(func=run_config)


def run_npd(args: argparse.Namespace) -> int:
    from fabricdoc.cli.common import name_map
    from fabricdoc.cli.gate import policy_of
    from fabricdoc.report.report import Report
    from fabricdoc.scheduler import k8s

    node = args.node or os.environ.get("NODE_NAME") or socket.gethostname()
    try:
        policy = policy_of(args)
        report = Report.load(a.report_path(args))
        code, msg = k8s.npd_status(report, node, policy, name_map(args), args.stale_after_h)
    except (FabricdocError, ValueError) as exc:
        code, msg = k8s.NPD_UNKNOWN, f"fabricdoc: cannot check: {exc}"
    print(k8s.shorten(msg, args.max_chars))
    return code


def run_taints(args: argparse.Namespace) -> int:
    from fabricdoc.cli.common import name_map
    from fabricdoc.model.text import escape
    from fabricdoc.report.report import Report
    from fabricdoc.scheduler import k8s

    try:
        ts, refused = k8s.taints(Report.load(a.report_path(args)), name_map(args), args.key, args.effect)
    except ValueError as exc:
        raise FabricdocError(str(exc)) from None
    for _, why in refused:
        print(f"fabricdoc k8s: refused: {escape(why)}", file=sys.stderr)
    if args.format == "json":
        print(k8s.taints_json(ts))
    else:
        for line in k8s.kubectl_lines(ts):
            print(line)
    return 2 if refused else (1 if ts else 0)


def run_config(args: argparse.Namespace) -> int:
    from fabricdoc.scheduler import k8s

    exe = shutil.which("fabricdoc") or "/usr/local/bin/fabricdoc"
    print(json.dumps(k8s.npd_config(exe, ["k8s", "npd", a.report_path(args)], args.invoke_interval), indent=2))
    return 0
