"""What ``drain`` and ``resume`` share: Slurm tool flags and printing the planned commands."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from fabricdoc.cli import args as a

NAME_HELP = """node names:
  The report names hosts as the fabric does. --map FILE maps them to Slurm node
  names (YAML with 'names:' and 'rules:', or two columns 'FABRIC_NAME SLURM_NAME');
  --host-rule REGEX REPLACEMENT rewrites names that fully match REGEX, e.g.
  --host-rule '(\\S+) mlx5_\\d+' '\\1' turns 'gpu017 mlx5_0' into 'gpu017'.
  Map entries win over rules; unmapped names pass unchanged. A name that is not
  a plain hostname (letters, digits, '.', '_', '-') is refused, never run.
"""


def add_slurm_args(p: argparse.ArgumentParser) -> None:
    a.add_names(p)
    a.add_apply(p)
    p.add_argument("--scontrol", default="scontrol", metavar="PATH", help="scontrol to run (default: from PATH)")
    p.add_argument("--sinfo", default="sinfo", metavar="PATH", help="sinfo to run (default: from PATH)")
    p.add_argument("--slurm-conf", metavar="FILE", help="slurm.conf for the commands (sets SLURM_CONF)")
    a.add_max_report_age(p)
    a.add_timeout(p, 30.0)
    a.add_json(p)


def slurm_tools(args: argparse.Namespace) -> Any:
    from fabricdoc.sources.slurm import SlurmTools

    return SlurmTools(sinfo=args.sinfo, scontrol=args.scontrol, timeout_s=args.timeout, slurm_conf=args.slurm_conf)


def mode_of(args: argparse.Namespace, report: Any) -> str:
    """"comment" with --comment-only or when the report's drain policy says so, else "drain"."""
    if getattr(args, "comment_only", False):
        return "comment"
    return str((report.drain_policy or {}).get("mode", "drain"))


def slurm_now(args: argparse.Namespace, command: str, comments: bool = False,
              required: bool = False) -> tuple[Any, dict[str, Any] | None]:
    """The Slurm tools and what Slurm says about its nodes now (states, reasons, reservations,
    comments). Without --apply (and unless ``required``) a Slurm that cannot be asked gives None
    and a warning: the printed commands are then not checked against an admin's drains."""
    from fabricdoc.errors import FabricdocError
    from fabricdoc.model.text import escape
    from fabricdoc.scheduler.slurm import NodeNow
    from fabricdoc.scheduler.slurm import slurm_now as join

    tools = slurm_tools(args)
    try:
        now = join(tools.nodes(), tools.reservations())
        if comments:
            notes = tools.comments()
            now = {n: NodeNow(v.state, v.reason, notes.get(n, ""), v.reservation) for n, v in now.items()}
    except FabricdocError as exc:
        if args.apply or required:
            raise
        print(f"fabricdoc {command}: warning: cannot ask Slurm ({escape(str(exc))}): these commands are NOT "
              "checked against nodes an admin drained, downed or reserved", file=sys.stderr)
        return tools, None
    return tools, now


def emit(command: str, actions: list[Any], skipped: list[Any], results: list[Any] | None, as_json: bool) -> None:
    """Print the plan: commands on stdout, refusals and kept nodes on stderr (JSON on stdout with --json)."""
    from fabricdoc.model.text import escape

    if as_json:
        done = {r.action.node: r for r in results or []}
        doc = {
            "actions": [
                {
                    "action": act.action, "node": act.node, "fabric_name": act.fabric_name, "reason": act.reason,
                    "findings": list(act.findings), "argv": list(act.argv),
                    **({"applied": done[act.node].ok, "returncode": done[act.node].returncode,
                        "output": done[act.node].output} if act.node in done else {}),
                }
                for act in actions
            ],
            "skipped": [{"fabric_name": s.fabric_name, "node": s.node, "why": s.why, "refused": s.refused}
                        for s in skipped],
        }  # fmt: skip
        print(json.dumps(doc, indent=2))
        return
    for s in skipped:
        if s.refused:
            print(f"fabricdoc {command}: refused: {escape(s.why)}", file=sys.stderr)
        else:
            verb = "not drained" if command == "drain" else "kept"
            print(f"fabricdoc {command}: {verb} {escape(s.node or s.fabric_name)}: {escape(s.why)}", file=sys.stderr)
    if results is None:
        for act in actions:
            print(act.display())
        return
    for r in results:
        status = "ok" if r.ok else f"FAILED ({escape(r.output or 'exit ' + str(r.returncode))})"
        print(f"{r.action.display()}  # {status}")
