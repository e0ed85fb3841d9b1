"""``fabricdoc k8s``: Node Problem Detector plugin status, node taints and their removal, and an NPD config."""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from typing import Any

from fabricdoc.cli import args as a
from fabricdoc.errors import ConfigError, FabricdocError
from fabricdoc.model.verdict import EXIT_FAULTS, EXIT_OK

NPD_HELP = """npd:
  Run by Node Problem Detector's custom plugin monitor on each node. Prints one
  line of at most --max-chars bytes, 'fabricdoc: OK|FAIL|UNKNOWN ...', the
  fault kind and its stable tag first ('fabricdoc: FAIL nic down 3fa2c1 on
  gpu017 ...'), and exits 0 (fabric OK for this node), 1 (problem: the node is
  in the drain list or a finding on it is above --max-severity) or 2 (unknown:
  report unreadable, stale or dated in the future, node not in it). The node is
  --node, else $NODE_NAME (set it from the downward API), else the hostname.
"""
TAINTS_HELP = """taints:
  A JSON list of {node, key, value, effect}, one per host to drain (or
  'kubectl taint' lines with --format kubectl). With --apply, each taint is
  run (kubectl argv, no shell, --timeout each) on nodes the cluster has and
  that do not carry it already.
  exit codes: 0 nothing to taint; 1 hosts to taint (printed, or tainted with
  --apply); 2 could not run (unreadable or stale report, a refused node name,
  kubectl failed).
"""
UNTAINT_HELP = """untaint:
  Removes fabricdoc's taint (--key) from nodes whose findings cleared: reads
  the nodes that carry the key now ('kubectl get nodes -o json', or a saved
  copy with --nodes-json) and prints 'kubectl taint nodes NODE KEY:EFFECT-'
  for each one the report tested and no longer drains. A tainted node the
  report did not test keeps its taint (said on stderr); taints with other keys
  (an admin's) are never touched. Nothing is changed without --apply.
  exit codes: 0 removals printed or applied (or none to make); 2 could not run
  (unreadable or stale report, kubectl failed, a refused node name, a removal
  that failed).
"""
CONFIG_HELP = """npd-config:
  Prints an NPD custom-plugin-monitor JSON that runs 'fabricdoc k8s npd REPORT'
  with the given options. The command NPD runs is --command PATH (as the node
  or NPD's image has it, e.g. /usr/local/bin/fabricdoc), else 'fabricdoc' as
  found on PATH here; neither, or a PATH one inside a virtual environment
  (the nodes do not have it): exit 2. REPORT is the report's absolute path as
  NPD sees it. --max-report-age-h, --policy, --max-severity, --min-confidence,
  --map and --host-rule are passed on to 'k8s npd'.
  exit codes: 0 printed; 2 could not run (no command, a virtual environment's,
  a relative path, a bad duration).
"""
STALE_HELP = """stale reports:
  --max-report-age-h H (default 24; 0: no age limit) refuses a report older
  than H hours; a report dated more than 5 minutes in the future is refused
  whatever H is. npd answers unknown (exit 2); taints and untaint change
  nothing and exit 2, one line on stderr.
"""
NAMES_HELP = """node names:
  --map FILE and --host-rule REGEX REPLACEMENT turn the report's host names
  into Kubernetes node names. A name that is not a lowercase DNS-1123 name is
  refused, never run; names only ever travel as one argv element, no shell.
"""
EPILOG = "\n".join((NPD_HELP, TAINTS_HELP, UNTAINT_HELP, CONFIG_HELP, STALE_HELP, NAMES_HELP))

KEY_HELP = "the taint key fabricdoc owns (default fabricdoc.io/fabric-fault)"


def register(sub: argparse._SubParsersAction) -> None:
    from fabricdoc.scheduler.k8s import DEFAULT_TAINT_KEY, EFFECTS

    p = sub.add_parser(
        "k8s",
        help="Kubernetes output: Node Problem Detector plugin status, node taints and their removal",
        description="Kubernetes forms of a fabricdoc report.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    views = p.add_subparsers(dest="view", metavar="VIEW", required=True)

    def add_kubectl(q: argparse.ArgumentParser) -> None:
        q.add_argument("--key", default=DEFAULT_TAINT_KEY, metavar="KEY", help=KEY_HELP)
        a.add_apply(q)
        q.add_argument("--kubectl", default="kubectl", metavar="PATH", help="kubectl to run (default: from PATH)")
        a.add_timeout(q, 30.0)
        a.add_max_report_age(q)
        a.add_names(q)

    def view(name: str, summary: str, *epilogs: str) -> argparse.ArgumentParser:
        return views.add_parser(name, help=summary, description=summary, epilog="\n".join(epilogs),
                                formatter_class=argparse.RawDescriptionHelpFormatter)

    npd = view("npd", "NPD custom plugin: exit 0 OK / 1 problem / 2 unknown, one line on stdout",
               NPD_HELP, STALE_HELP, NAMES_HELP)
    a.add_report(npd)
    a.add_node(npd)
    npd.add_argument("--max-chars", type=int, default=80, metavar="N",
                     help="message length limit in bytes (NPD max_output_length, default 80)")
    a.add_max_report_age(npd)
    npd.add_argument("--stale-after-h", dest="max_report_age_h", type=float, default=argparse.SUPPRESS, help=a.HIDDEN)
    a.add_policy(npd)
    a.add_names(npd)
    npd.set_defaults(func=run_npd)

    t = view("taints", "taints for the report's hosts to drain (printed; run with --apply)",
             TAINTS_HELP, STALE_HELP, NAMES_HELP)
    a.add_report(t)
    t.add_argument("--effect", default="NoSchedule", choices=EFFECTS, help="taint effect (default NoSchedule)")
    t.add_argument("--format", default="json", choices=("json", "kubectl"), help="JSON list or kubectl lines (default json)")
    add_kubectl(t)
    t.set_defaults(func=run_taints)

    u = view("untaint", "remove fabricdoc's taints from nodes whose findings cleared (printed; run with --apply)",
             UNTAINT_HELP, STALE_HELP, NAMES_HELP)
    a.add_report(u)
    u.add_argument("--nodes-json", metavar="FILE",
                   help="a saved 'kubectl get nodes -o json' to plan from instead of asking the cluster (not with --apply)")
    add_kubectl(u)
    a.add_json(u)
    u.set_defaults(func=run_untaint)

    c = view("npd-config", "print an NPD custom plugin monitor config that runs 'fabricdoc k8s npd'",
             CONFIG_HELP, STALE_HELP, NAMES_HELP)
    a.add_report(c)
    c.add_argument("--command", metavar="PATH",
                   help="absolute path of fabricdoc where NPD runs (default: 'fabricdoc' found on PATH here)")
    c.add_argument("--invoke-interval", default="5m", metavar="DURATION", help="how often NPD runs the check (default 5m)")
    c.add_argument("--interval", dest="invoke_interval", help=a.HIDDEN)
    c.add_argument("--plugin-timeout", default="1m", metavar="DURATION",
                   help="NPD kills a check running longer than this (Go duration, default 1m)")
    a.add_max_report_age(c)
    a.add_policy(c)
    a.add_names(c)
    c.set_defaults(func=run_config)


# -- running kubectl -----------------------------------------------------------


def _runner(args: argparse.Namespace) -> Any:
    from fabricdoc.sources.kubectl import Kubectl

    return Kubectl(args.kubectl, args.timeout).run


def cluster_nodes(args: argparse.Namespace) -> dict[str, list[dict[str, str]]]:
    """The cluster's nodes and their taints: ``kubectl get nodes -o json`` now, or the saved --nodes-json."""
    from fabricdoc.model.inputs import read_text
    from fabricdoc.model.text import escape
    from fabricdoc.sources.kubectl import parse_kubectl_nodes

    saved = getattr(args, "nodes_json", None)
    if saved:
        return parse_kubectl_nodes(read_text(saved, "kubectl get nodes -o json"), saved)
    argv = [args.kubectl, "get", "nodes", "-o", "json"]
    code, out, err = _runner(args)(argv)
    if code is None:
        raise FabricdocError(f"kubectl get nodes: timed out after {args.timeout:g}s")
    if code != 0:
        last = next((ln for ln in reversed(err.splitlines()) if ln.strip()), f"exit status {code}")
        raise FabricdocError(f"kubectl get nodes failed: {escape(last.strip())[:200]}")
    return parse_kubectl_nodes(out, "kubectl get nodes -o json")


def _load(args: argparse.Namespace) -> Any:
    """The report, refused (one line, exit 2) when older than --max-report-age-h or dated in the future."""
    from fabricdoc.report.report import Report
    from fabricdoc.scheduler.k8s import refuse_stale

    report = Report.load(a.report_path(args))
    refuse_stale(report, max_age(args))
    return report


def max_age(args: argparse.Namespace) -> float:
    """--max-report-age-h, checked (0: no age limit)."""
    return a.max_report_age(args)


def _say(view: str, kept: list[Any]) -> None:
    from fabricdoc.model.text import escape

    for k in kept:
        what = "refused" if k.refused else f"kept {escape(k.node)}"
        print(f"fabricdoc k8s {view}: {what}: {escape(k.why)}", file=sys.stderr)


def _results(done: list[Any]) -> None:
    import shlex

    from fabricdoc.model.text import escape

    for r in done:
        status = "ok" if r.ok else f"FAILED ({escape(r.output or 'exit ' + str(r.returncode))})"
        print(f"{shlex.join(r.argv)}  # {status}")


# -- the views ---------------------------------------------------------------


def run_npd(args: argparse.Namespace) -> int:
    from fabricdoc.cli.common import name_map
    from fabricdoc.cli.gate import policy_of
    from fabricdoc.report.report import Report
    from fabricdoc.scheduler import k8s

    if args.max_chars < 20:
        raise ConfigError(f"--max-chars {args.max_chars} is too small to say anything: give 20 or more")
    node = args.node or os.environ.get("NODE_NAME") or socket.gethostname()
    try:
        policy = policy_of(args)
        report = Report.load(a.report_path(args))
        code, msg = k8s.npd_status(report, node, policy, name_map(args), max_age(args))
    except (FabricdocError, ValueError) as exc:
        code, msg = k8s.NPD_UNKNOWN, f"fabricdoc: UNKNOWN cannot check: {exc}"
    print(k8s.shorten(msg, args.max_chars))
    return code


def _kubernetes(args: argparse.Namespace) -> Any:
    """The Kubernetes back end with this command's names, taint key and effect, and kubectl."""
    from fabricdoc.cli.common import name_map
    from fabricdoc.scheduler.protocol import back_end

    return back_end("k8s", names=name_map(args), key=args.key, effect=getattr(args, "effect", "NoSchedule"),
                    kubectl=args.kubectl)


def run_taints(args: argparse.Namespace) -> int:
    from fabricdoc.cli.common import why_exit_2
    from fabricdoc.scheduler import k8s

    report = _load(args)
    scheduler = _kubernetes(args)
    ts, refused = scheduler.plan_drain(report)
    _say("taints", refused)
    done = None
    if args.apply:
        todo, kept = scheduler.plan_drain(report, cluster_nodes(args))
        _say("taints", [k for k in kept if not k.refused])  # the refused ones were said above
        done = scheduler.apply(todo, _runner(args))
    if args.format == "json":
        ran = {r.argv[3]: r for r in done or []}
        rows = [t.to_dict() | ({"applied": ran[t.node].ok, "returncode": ran[t.node].returncode,
                                "output": ran[t.node].output} if t.node in ran else {}) for t in ts]
        print(json.dumps(rows, indent=2))
    elif done is not None:
        _results(done)
    else:
        for line in k8s.kubectl_lines(ts, args.kubectl):
            print(line)
    if refused or (done and not all(r.ok for r in done)):
        return why_exit_2(args.command, len(refused),
                          sum(1 for r in done or [] if not r.ok))
    return EXIT_FAULTS if ts else EXIT_OK


def run_untaint(args: argparse.Namespace) -> int:
    from fabricdoc.cli.common import why_exit_2
    from fabricdoc.scheduler import k8s

    if args.apply and args.nodes_json:
        raise ConfigError("--nodes-json is for printing a plan: --apply reads the nodes from the cluster now")
    report = _load(args)
    nodes = cluster_nodes(args)
    scheduler = _kubernetes(args)
    actions, kept = scheduler.plan_undrain(report, nodes)
    done = scheduler.apply(actions, _runner(args)) if args.apply else None
    if args.json:
        ran = {r.argv: r for r in done or []}
        rows = []
        for act in actions:
            argv = tuple(act.kubectl_argv(args.kubectl))
            r = ran.get(argv)
            rows.append(act.to_dict() | {"argv": list(argv)}
                        | ({"applied": r.ok, "returncode": r.returncode, "output": r.output} if r else {}))
        print(json.dumps({"actions": rows, "kept": [{"node": k.node, "why": k.why, "refused": k.refused} for k in kept]},
                         indent=2))
    else:
        _say("untaint", kept)
        if done is None:
            for line in k8s.kubectl_lines(actions, args.kubectl):
                print(line)
        else:
            _results(done)
    if any(k.refused for k in kept) or (done and not all(r.ok for r in done)):
        return why_exit_2(args.command, sum(1 for k in kept if k.refused), sum(1 for r in done or [] if not r.ok))
    return EXIT_OK


def run_config(args: argparse.Namespace) -> int:
    import shutil

    from fabricdoc.scheduler import k8s

    report = a.report_path(args)
    if not report.startswith("/"):
        raise ConfigError(f"REPORT {report!r} is not an absolute path: give the report's path as NPD on the node sees it")
    command = args.command or shutil.which("fabricdoc")
    if not command:
        raise ConfigError("fabricdoc is not on PATH here: give the path NPD should run with --command "
                          "(e.g. --command /usr/local/bin/fabricdoc)")
    if not args.command and sys.prefix != sys.base_prefix and os.path.realpath(command).startswith(
            os.path.realpath(sys.prefix) + os.sep):
        raise ConfigError(f"{command} is inside this virtual environment ({sys.prefix}), which the nodes "
                          "do not have: give --command with the path NPD should run on the nodes")
    cmd_args = ["k8s", "npd", report, "--max-report-age-h", f"{max_age(args):g}"]
    for flag, value in (("--policy", args.policy), ("--max-severity", args.max_severity),
                        ("--min-confidence", args.min_confidence), ("--map", args.map)):
        if value is not None:
            cmd_args += [flag, str(value)]
    for rx, rep in args.host_rule:
        cmd_args += ["--host-rule", rx, rep]
    cfg = k8s.npd_config(command, cmd_args, args.invoke_interval, args.plugin_timeout)
    print(json.dumps(cfg, indent=2))
    return EXIT_OK
