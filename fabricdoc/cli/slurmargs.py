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
    p.add_argument("--apply", action="store_true", help="run the scontrol commands (default: only print them)")
    p.add_argument("--scontrol", default="scontrol", metavar="PATH", help="scontrol to run (default: from PATH)")
    p.add_argument("--sinfo", default="sinfo", metavar="PATH", help="sinfo to run (default: from PATH)")
    p.add_argument("--slurm-conf", metavar="FILE", help="slurm.conf for the commands (sets SLURM_CONF)")
    a.add_timeout(p, 30.0)
    a.add_json(p)


def slurm_tools(args: argparse.Namespace) -> Any:
    from fabricdoc.sources.slurm import SlurmTools

    return SlurmTools(sinfo=args.sinfo, timeout_s=args.timeout, slurm_conf=args.slurm_conf)


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
            print(f"fabricdoc {command}: kept {escape(s.node)}: {escape(s.why)}", file=sys.stderr)
    if results is None:
        for act in actions:
            print(act.display())
        return
    for r in results:
        status = "ok" if r.ok else f"FAILED ({escape(r.output or 'exit ' + str(r.returncode))})"
        print(f"{r.action.display()}  # {status}")
