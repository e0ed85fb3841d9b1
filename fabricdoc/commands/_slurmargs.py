"""Arguments shared by ``drain`` and ``resume``: the name map, host rules and Slurm tool paths."""

from __future__ import annotations

import argparse
import json
import sys

from fabricdoc.slurm import HostRule, NameMap, Skipped, SlurmAction, load_name_map

NAME_HELP = """node names:
  The report names hosts as the fabric does. --map FILE maps them to Slurm node
  names (YAML with 'names:' and 'rules:', or two columns 'FABRIC_NAME SLURM_NAME');
  --host-rule REGEX REPLACEMENT rewrites names that fully match REGEX, e.g.
  --host-rule '(\\S+) mlx5_\\d+' '\\1' turns 'gpu017 mlx5_0' into 'gpu017'.
  Map entries win over rules; unmapped names pass unchanged. A name that is not
  a plain hostname (letters, digits, '.', '_', '-') is refused, never run.
"""


def add_name_args(p: argparse.ArgumentParser) -> None:
    """--map and --host-rule: how fabric host names become Slurm node names."""
    p.add_argument("--map", metavar="FILE", help="fabric name -> Slurm node name map (YAML or two-column text)")
    p.add_argument(
        "--host-rule",
        nargs=2,
        action="append",
        default=[],
        metavar=("REGEX", "REPLACEMENT"),
        help="rewrite fabric names that fully match REGEX (repeatable; after --map rules)",
    )


def add_slurm_args(p: argparse.ArgumentParser) -> None:
    add_name_args(p)
    p.add_argument("--apply", action="store_true", help="run the scontrol commands (default: only print them)")
    p.add_argument("--scontrol", default="scontrol", help="scontrol to run (default: from PATH)")
    p.add_argument("--sinfo", default="sinfo", help="sinfo to run (default: from PATH)")
    p.add_argument("--slurm-conf", metavar="FILE", help="slurm.conf for the commands (sets SLURM_CONF)")
    p.add_argument("--timeout", type=float, default=30.0, metavar="S", help="timeout per Slurm command (default 30)")
    p.add_argument("--json", action="store_true", help="print the plan (and results) as JSON")


def name_map(args: argparse.Namespace) -> NameMap:
    base = load_name_map(args.map) if args.map else NameMap()
    return base.with_rules(HostRule.of(rx, rep) for rx, rep in args.host_rule)


def emit(command: str, actions: list[SlurmAction], skipped: list[Skipped], results, as_json: bool) -> None:
    """Print the plan: commands on stdout, refusals and kept nodes on stderr (JSON on stdout with --json)."""
    if as_json:
        done = {r.action.node: r for r in results or []}
        doc = {
            "actions": [
                {
                    "action": a.action,
                    "node": a.node,
                    "fabric_name": a.fabric_name,
                    "reason": a.reason,
                    "findings": list(a.findings),
                    "argv": list(a.argv),
                    **(
                        {"applied": done[a.node].ok, "returncode": done[a.node].returncode, "output": done[a.node].output}
                        if a.node in done
                        else {}
                    ),
                }
                for a in actions
            ],
            "skipped": [{"fabric_name": s.fabric_name, "node": s.node, "why": s.why, "refused": s.refused} for s in skipped],
        }
        print(json.dumps(doc, indent=2))
        return
    for s in skipped:
        label = "refused" if s.refused else "kept"
        print(f"fabricdoc {command}: {label}: {s.why}" if s.refused else f"fabricdoc {command}: {label} {s.node}: {s.why}", file=sys.stderr)
    if results is None:
        for a in actions:
            print(a.display())
        return
    for r in results:
        status = "ok" if r.ok else f"FAILED ({r.output or 'exit ' + str(r.returncode)})"
        print(f"{r.action.display()}  # {status}")
